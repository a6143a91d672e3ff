"""The kernel language's dispatch check: a program run through the cycle
model's dispatcher (:func:`fsa.cycle.model.simulate`, the project's one
model of the decoder, the engines and the semaphores) under several DMA
timings (:func:`check_timings`) and both dispatch modes; a program that can
deadlock or whose semaphore order depends on timing is refused with a
:class:`~fsa.tiles.KernelError`.
"""
from __future__ import annotations

from typing import Iterable, Sequence

from fsa import progress
from fsa.config import FSAConfig
from fsa.cycle import checkcache
from fsa.cycle import model as cm
from fsa.cycle.timing import DEFAULT_DMA, IDEAL_DMA, DmaTiming
from fsa.hw import timing
from fsa.isa import Instruction
from fsa.tiles import KernelError

__all__ = ["check_timings", "check_dispatch"]


def check_timings(cfg: FSAConfig) -> dict[str, DmaTiming]:
    """The DMA timings :func:`check_dispatch` runs a program
    under, by name: the calibrated DMA (:data:`DEFAULT_DMA`), a free one
    (:data:`IDEAL_DMA`: the matrix engine is the slow one) and a slow one
    whose every transfer ends eight times the longest matrix function after
    it starts (the DMA is the slow one)."""
    slow = 8 * max(p.retire for p in timing.plans(cfg))
    return {"calibrated DMA": DEFAULT_DMA, "free DMA": IDEAL_DMA,
            "slow DMA": DmaTiming(slow, slow, DEFAULT_DMA.load_first, DEFAULT_DMA.store_first)}


def check_dispatch(cfg: FSAConfig, instructions: Sequence[Instruction],
                   modes: Iterable[str] | None = None) -> int:
    """Prove a program free of deadlocks and semaphore races in the cycle model.

    Runs :func:`fsa.cycle.model.simulate` with ``races=True`` for each
    dispatch mode (default both: "hardware", the device's decoder with ONE
    pending instruction per engine, and "golden", the golden model's
    unbounded queues filled at once, which exposes semaphore values that two
    engines wait for; a race is also an acquire that may pass before or after
    the release of an instruction that does not acquire the semaphore) and
    each DMA timing of
    :func:`check_timings` (calibrated, free, slow: the DMA
    and the matrix engine each the slower one).

    The verdict is kept (:mod:`fsa.cycle.checkcache`, keyed by the config,
    every field of every instruction, the modes and the package's code): the
    same program is checked once, the later calls get the same cycles or the
    same error without running the model.

    It checks semaphores, not data: a DMA and a matrix instruction that
    touch the same SRAM rows without a semaphore ordering them race on the
    device and are not reported (docs/architecture.md section 9).

    Returns:
        The cycles the model predicts for the device (hardware dispatch,
        calibrated DMA; 0 when `modes` leaves "hardware" out).

    Raises:
        KernelError: a deadlock (which instructions wait for which semaphore
            values, and under which dispatch and timing), a race, no stop
            fence, or a matrix function the config does not have.
    """
    modes = tuple(cm.DISPATCH_MODES if modes is None else modes)
    # (the cache holds the verdicts of this code: not while a test replaces the model)
    if cm.simulate is not _SIMULATE or check_timings is not _TIMINGS:
        return _run_checks(cfg, instructions, modes)
    k = checkcache.key(cfg, instructions, modes)
    verdict = checkcache.lookup(k)
    if verdict is None:
        try:
            verdict = {"cycles": _run_checks(cfg, instructions, modes)}
        except KernelError as e:
            verdict = {"error": str(e)}
        checkcache.store(k, verdict, disk=len(instructions) >= checkcache.DISK_MIN)
    if "error" in verdict:
        raise KernelError(verdict["error"])
    return verdict["cycles"]


def _run_checks(cfg: FSAConfig, instructions: Sequence[Instruction], modes: tuple) -> int:
    """The six (or fewer) runs of :func:`check_dispatch`, a progress bar
    over them when the call has one (:func:`fsa.progress.current`)."""
    rules = {"hardware": "the one-pending-instruction-per-engine rule",
             "golden": "the golden model's unbounded queues"}
    cycles = 0
    timings = check_timings(cfg)
    rep = progress.current()
    bar = None if rep is None else rep.stage(
        f"dispatch check ({len(instructions)} instructions)", len(modes) * len(timings),
        " runs")
    done = 0
    for mode in modes:
        for label, dma in timings.items():
            try:
                r = cm.simulate(cfg, instructions, dma, dispatch=mode, races=True)
            except ValueError as e:         # e.g. a function the config does not have
                raise KernelError(str(e)) from None
            except cm.DispatchError as e:
                if e.kind == "deadlock":
                    msg = (f"deadlock under {rules.get(mode, mode)} ({label}): {e.detail}. Emit "
                           f"the instruction that releases the awaited value earlier in the "
                           f"program (before the next instruction of the waiting engine)")
                else:
                    msg = f"{e} (under {rules.get(mode, mode)}, {label})"
                raise KernelError(msg) from None
            if mode == "hardware" and dma == DEFAULT_DMA:
                cycles = r.cycles
            done += 1
            if bar is not None:
                bar.update(done)
    if bar is not None:
        bar.close()
    return cycles


_SIMULATE, _TIMINGS = cm.simulate, check_timings
