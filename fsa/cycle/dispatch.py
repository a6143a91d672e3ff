"""The kernel language's dispatch check: a program run through the cycle
model's dispatcher (:func:`fsa.cycle.model.simulate`, the project's one
model of the decoder, the engines and the semaphores) under several DMA
timings (:func:`check_timings`) and both dispatch modes; a program that can
deadlock or whose semaphore order depends on timing is refused with a
:class:`~fsa.tiles.KernelError`.
"""
from __future__ import annotations

import multiprocessing as mp
import os
from concurrent.futures import ProcessPoolExecutor, as_completed
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

    Runs :func:`fsa.cycle.model.simulate` with ``races=True`` (and
    ``periodic=True``: the periods of a repeating program are skipped once
    the model's state repeats, :mod:`fsa.cycle.skip`, the same result) for each
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


#: programs from this many instructions are checked by parallel processes
#: (one run each, up to :func:`check_workers`; a smaller program in one)
PARALLEL_MIN = 20_000
#: skip the periods of a repeating program (fsa/cycle/skip.py; False: every
#: cycle, as before it existed -- bench/golden_speed.py --api's "before")
PERIODIC = True
_RULES = {"hardware": "the one-pending-instruction-per-engine rule",
          "golden": "the golden model's unbounded queues"}
_JOB: "tuple | None" = None       # (cfg, instructions) the forked workers read


def check_workers() -> int:
    """Processes a large program's runs may use: ``$FSA_CHECK_WORKERS``, else
    the CPUs this process may run on (at most six: one per run)."""
    env = os.environ.get("FSA_CHECK_WORKERS")
    if env is not None:
        try:
            return max(1, int(env))
        except ValueError:
            raise ValueError(f"FSA_CHECK_WORKERS must be a whole number, got {env!r}") from None
    try:
        n = len(os.sched_getaffinity(0))
    except AttributeError:              # (not on every platform)
        n = os.cpu_count() or 1
    return min(6, n)


def _one(cfg: FSAConfig, instructions, mode: str, label: str, dma: DmaTiming) -> tuple:
    """One run: ("cycles", n) or ("error", the KernelError's message)."""
    try:
        return "cycles", cm.simulate(cfg, instructions, dma, dispatch=mode, races=True,
                                     periodic=PERIODIC).cycles
    except ValueError as e:         # e.g. a function the config does not have
        return "error", str(e)
    except cm.DispatchError as e:
        if e.kind == "deadlock":
            return "error", (f"deadlock under {_RULES.get(mode, mode)} ({label}): {e.detail}. "
                             f"Emit the instruction that releases the awaited value earlier in "
                             f"the program (before the next instruction of the waiting engine)")
        return "error", f"{e} (under {_RULES.get(mode, mode)}, {label})"


def _forked(run: tuple) -> tuple:
    try:
        return _one(*_JOB, *run)
    except Exception as e:          # (raised again in the caller)
        return "raise", e


def _run_checks(cfg: FSAConfig, instructions: Sequence[Instruction], modes: tuple) -> int:
    """The six (or fewer) runs of :func:`check_dispatch`, a progress bar
    over them when the call has one (:func:`fsa.progress.current`).  A
    program of :data:`PARALLEL_MIN` instructions or more runs them in
    forked processes (:func:`check_workers`); the verdict is the same: the
    first failing run in the serial order (modes, then timings) names the
    error."""
    global _JOB
    runs = [(mode, label, dma) for mode in modes for label, dma in check_timings(cfg).items()]
    rep = progress.current()
    bar = None if rep is None else rep.stage(
        f"dispatch check ({len(instructions)} instructions)", len(runs), " runs").clock()
    workers = min(len(runs), check_workers()) if len(instructions) >= PARALLEL_MIN else 1
    results: list = [None] * len(runs)
    try:
        if workers > 1 and "fork" in mp.get_all_start_methods():
            _JOB = (cfg, instructions)
            try:
                with ProcessPoolExecutor(workers, mp_context=mp.get_context("fork")) as pool:
                    futs = {pool.submit(_forked, r): i for i, r in enumerate(runs)}
                    for n, f in enumerate(as_completed(futs), 1):
                        results[futs[f]] = f.result()
                        if bar is not None:
                            bar.update(n)
            finally:
                _JOB = None
        else:
            for i, r in enumerate(runs):
                results[i] = _one(cfg, instructions, *r)
                if bar is not None:
                    bar.update(i + 1)
                if results[i][0] == "error":
                    break
    finally:
        if bar is not None:
            bar.close()
    cycles = 0
    for (mode, _, dma), res in zip(runs, results):
        what, value = res
        if what == "raise":
            raise value
        if what == "error":
            raise KernelError(value)
        if mode == "hardware" and dma == DEFAULT_DMA:
            cycles = value
    return cycles


_SIMULATE, _TIMINGS = cm.simulate, check_timings
