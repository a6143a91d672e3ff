"""Cycle model of the FSA device's control path (no arithmetic).

Predicts the execution cycles (the device's ``exec`` counter) of a program
from the matrix schedule of :mod:`fsa.plan` (the plans of
:func:`fsa.hw.timing.plans`, which the controller is generated from) and a
two-parameter DMA timing model, by simulating the control state of
``rtl/fsa_core.py`` (its queue, decode, dispatch and semaphore units) and
``rtl/fsa_mxctrl.py`` register for register, with time jumps over quiet
stretches:

* the instruction queue: every word in the queue at ``start``, or, with a
  :class:`HostPush` (``host=``), the first ``inst_queue_size`` words before
  ``start`` and the rest pushed by the host at its rate while the device runs
  (:data:`HARNESS_HOST`: the cocotb harness's rate, measured on the RTL);
* the decoder: one word popped per cycle, a complete instruction dispatched
  in the next cycle into its engine's one-entry pending register (the decoder
  waits while that register is full), fences wait for the engines they name,
  ``stop`` ends the program (``exec`` = the cycle of ``stop`` + 1);
* the matrix controller's issue rule (two slots; the next instruction starts
  the cycle after the previous one's conflict-free cycle when a slot is free,
  blocking functions and ``wait_prev_acc`` wait for both slots; while the
  wave of an instruction whose slot retired early (UD LOAD_Q) runs, only the
  instruction right after it may start), with the plans' ``conflict_free``,
  ``retire``, ``wave_retire`` and ``release`` cycles;
* semaphores (value + held flag, acquire checked combinationally, releases
  visible the cycle after the release pulse);
* the DMA engine: an instruction accepted in cycle ``c`` pulses ``done`` in
  ``c + base + beats`` (``beats`` = rows x ceil(size / beat bytes); ``base``
  per direction) when nothing else uses its SRAM; each beat needs one cycle
  of the SRAM's narrow port, which the matrix engine's reads and write-backs
  of the same bank take first, and a STORE of one-beat rows on one port goes
  at the memory's write rate (:class:`DmaTiming`); up to two LOADs in
  flight, the next one accepted once the sequencer has queued the previous
  one's bursts (:mod:`fsa.cycle.dma`, the rules of ``fsa/hw/dmarules.py``).
  ``base`` is calibrated by
  :func:`fsa.cycle.calibrate.calibrate_dma` from DMA-only programs on the RTL (the cocotbext-axi
  ``AxiRam`` answers at one beat per cycle; a real memory would need its own
  figures).

* program fetch (``fetch=``, :mod:`fsa.cycle.fetch`): the words reach the
  queue as the fetch unit reads them, and DMA LOADs take turns with its
  bursts (with one port a LOAD may start in a burst's last beats), exactly
  as the RTL does.

Not modelled: AXI pauses, DMA bursts split at 4 KiB boundaries, errors; a
host other than a :class:`HostPush` or program fetch (without one, programs
longer than the queue are predicted as if it were deep enough).

The same model is the kernel language's dispatch check
(:func:`fsa.cycle.dispatch.check_dispatch`): :func:`simulate` with ``races=True``
reports a deadlock or two engines that could take the same semaphore value
at once, under the device's dispatch or the golden model's (``dispatch=``,
:data:`DISPATCH_MODES`) and the DMA timings of
:func:`fsa.cycle.dispatch.check_timings`; :mod:`fsa.cycle.predict` runs it on
attention programs (steady state, long-sequence predictions).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from fsa import dataflows, isa
from fsa import plan as fplan
from fsa.config import FSAConfig
from fsa.cycle.dma import DmaEngine
from fsa.cycle.timing import (DEFAULT_DMA, HARNESS_HOST, IDEAL_DMA, PROGRAM_FEEDS,
                              DmaTiming, HostFeed, HostPush, program_feed)
from fsa.cycle.fetch import Fetch, FetchTiming
from fsa.cycle.skip import Skipper
from fsa.hw import timing
from fsa.hw.isa import SEM_IDS

__all__ = ["DmaTiming", "ModelResult", "DispatchError", "DISPATCH_MODES", "simulate",
           "DEFAULT_DMA", "IDEAL_DMA", "HostPush", "HARNESS_HOST", "FetchTiming",
           "PROGRAM_FEEDS", "program_feed"]



def _plans(cfg: FSAConfig) -> list[fplan.Plan]:
    """The plans the matrix controller of `cfg` is generated from."""
    return timing.plans(cfg)


@dataclass
class ModelResult:
    """What :func:`simulate` predicts.

    Attributes:
        cycles: the ``exec`` counter (active cycles).
        counters: predicted ``bubble``, ``mx_active``, ``dma_active``, ``mx``, ``dma``.
        mx_starts: cycle 0 of every matrix instruction (program order).
        dma_spans: (accept cycle, done cycle) of every DMA instruction.
        fetch_bursts: with program fetch, (decision cycle, beats, last beat's
            cycle) of every fetch burst.
    """

    cycles: int
    counters: dict = field(default_factory=dict)
    mx_starts: list = field(default_factory=list)
    dma_spans: list = field(default_factory=list)
    fetch_bursts: list = field(default_factory=list)


def _sram_use(plans: list[fplan.Plan]) -> list[dict]:
    """Per function: {t: ("spad"|"acc_r"|"acc_w", walk index)} of the array ports."""
    out = []
    for p in plans:
        use: dict[int, list] = {}
        for r in p.spad_reads:
            if r.source == "sram":
                use.setdefault(r.cycle, []).append(("spad", r.index))
        reads = {a.cycle: a.index for a in p.acc_reads}
        for a in p.acc_reads:
            use.setdefault(a.cycle, []).append(("acc", a.index))
        for t, cmd in p.acc:
            if cmd in fplan.ACC_WRITE_CMDS:
                # the write-back of cycle t goes to the row read at t - 1
                use.setdefault(t, []).append(("acc", reads.get(t - 1, 0)))
        out.append(use)
    return out




class DispatchError(RuntimeError):
    """The program deadlocks, or (with ``races=True``) races, in :func:`simulate`.

    Attributes:
        kind: "deadlock", "semaphore race" or "no stop" (the program ends
            without a stop fence).
        cycle: the model cycle it was found in.
        detail: the waiting instructions and semaphore values, and (race)
            what to change; the message is ``"<kind> at cycle <cycle>: <detail>"``.
    """

    def __init__(self, kind: str, cycle: int, detail: str):
        super().__init__(f"{kind} at cycle {cycle}: {detail}")
        self.kind, self.cycle, self.detail = kind, cycle, detail


#: How :func:`simulate` dispatches: "hardware" is the device's decoder (one
#: word per cycle, ONE pending instruction per engine, the decoder waits while
#: the next instruction's engine has one); "golden" is the golden model's view
#: (fsa/golden/machine.py): every instruction up to a fence that must wait is
#: queued at once, in unbounded per-engine queues. The engines' timing is the
#: same in both; only "hardware" predicts the device's cycles.
DISPATCH_MODES = ("hardware", "golden")


def simulate(cfg: FSAConfig, instructions: Sequence, dma: DmaTiming = DEFAULT_DMA,
             max_cycles: int = 10**9, dispatch: str = "hardware",
             races: bool = False, host: "HostPush | None" = None,
             fetch: "FetchTiming | None" = None, periodic: bool = False) -> ModelResult:
    """Predict the cycles of `instructions` on `cfg`'s device.

    Args:
        cfg: the config (its plans, SRAM banks and AXI width).
        instructions: :mod:`fsa.isa` instructions, in program order.
        dma: the DMA timing.
        max_cycles: give up after this many cycles.
        dispatch: one of :data:`DISPATCH_MODES` ("hardware" for predictions;
            "golden" for the checks of :func:`fsa.cycle.dispatch.check_dispatch`).
        races: raise when the next matrix and the next DMA instruction could
            both acquire the same semaphore value in the same cycle (which of
            them gets it would depend on timing), or when one could acquire
            a semaphore that another instruction without an acquire of it
            (running, or pending on the other engine) will release (whether
            the acquire comes before that release depends on timing).
        host: how the words beyond the queue's depth arrive (:class:`HostPush`);
            None: every word is in the queue at ``start``.
        fetch: the program is fetched from memory (:class:`fsa.cycle.fetch.FetchTiming`,
            started by ``fetch_start``; not with `host`).
        periodic: skip the periods of a repeating program once the state
            repeats (:mod:`fsa.cycle.skip`: the same result, cycle for
            cycle; without `host` and `fetch` only).

    Raises:
        DispatchError: the program deadlocks (or races, with `races`).
        RuntimeError: no stop within `max_cycles`.
    """
    if dispatch not in DISPATCH_MODES:
        raise ValueError(f"simulate: dispatch must be one of {DISPATCH_MODES}, got {dispatch!r}")
    golden = dispatch == "golden"
    plans = _plans(cfg)
    if host is not None and fetch is not None:
        raise ValueError("simulate: host and fetch exclude each other")
    feed = HostFeed(host, cfg.inst_queue_size) if host is not None else None
    CF = [p.conflict_free for p in plans]
    RET = [p.retire for p in plans]
    # an early-retired instruction's wave (UD LOAD_Q, Plan.slot_last): its
    # slot frees at RET, its actions last until WAVE
    WAVE = [p.wave_retire if p.slot_last is not None else None for p in plans]
    # UD NORM_SCALE / NORM: the third, ACC-only slot; the instruction after
    # one starts the cycle after it only as its partner (a STEP or PVSTEP)
    NORM = [p.func in fplan.NORM_FUNCS for p in plans]
    PARTNER = [p.func in fplan.NORM_PARTNERS for p in plans]
    SLACK = dataflows.get(cfg).norm_slack(cfg.exp2_pieces)
    REL = [p.release for p in plans]
    READ_REL = [p.read_release for p in plans]      # UD early_release (docs/ud.md)

    def rel_at(s) -> int:       # a slot's release cycle offset
        return (READ_REL if getattr(ins[s[2]], "early_release", False) else REL)[s[0]]
    BLOCK = [p.blocking for p in plans]
    USE = _sram_use(plans)
    banks = {"spad": cfg.spad_banks, "acc": cfg.acc_banks}
    ins = list(instructions)
    n = len(ins)
    for i, x in enumerate(ins):
        if isinstance(x, isa.Matrix) and not 0 <= int(x.func) < len(plans):
            why = dataflows.illegal(cfg, x) or f"matrix function code {int(x.func)} is not defined on {cfg.name}"
            raise ValueError(f"instruction {i}: {why} (the decoder reports ILLEGAL_FUNC)")
    size = [isa.SIZES[isa.InstrType.FENCE if isinstance(x, isa.Fence) else
                      isa.InstrType.MATRIX if isinstance(x, isa.Matrix) else isa.InstrType.DMA]
            for x in ins]
    kind = ["f" if isinstance(x, isa.Fence) else "m" if isinstance(x, isa.Matrix) else "d"
            for x in ins]
    fe = Fetch(fetch, cfg, sum(size)) if fetch is not None else None
    LOAD = isa.DmaFunc.LOAD

    val = [0] * SEM_IDS
    held = [False] * SEM_IDS
    pc = 0            # instruction being collected / held in the decode register
    have = 0          # words popped of instruction pc
    dec_full = False
    mxq: list[int] = []     # pending matrix instructions (hardware: at most one)
    dmq: list[int] = []     # pending DMA instructions (hardware: at most one)
    slots = [None, None, None]    # [func, start, index]; slot 2: NORM_FUNCS only
    last = 0                  # the slot of the most recent instruction
    rlast = 0                 # ... of the most recent one in slots 0 and 1
    wave = None               # [start, end] of the last early-retired instruction's wave
    wave_last = False         # ... which is the most recent matrix instruction
    mx_starts: list[int] = []
    cnt = {"bubble": 0, "mx_active": 0, "dma_active": 0, "mx": 0, "dma": 0}

    def acq_ok(x) -> bool:
        return (not x.acquire_valid) or (val[x.sem_id] == x.acquire_value and not held[x.sem_id])

    def fence_ok(fx, mx_idle: bool, dma_idle: bool) -> bool:
        ok = (mx_idle or not fx.mx) and (dma_idle or not fx.dma)
        return ok and (mx_idle and dma_idle if fx.stop else True)

    def waiting(q: list[int], what: str) -> str:
        x = ins[q[0]]
        return (f"{what} instruction {q[0]} waits for semaphore {x.sem_id} == {x.acquire_value} "
                f"(it is {val[x.sem_id]}{', held' if held[x.sem_id] else ''})")

    def port_busy(c: int, mem: str, bank: int) -> bool:
        """The matrix engine uses SRAM `mem` bank `bank` in cycle c."""
        nb = banks[mem]
        for s in slots:
            if s is None:
                continue
            t = c - s[1]
            if t < 0 or t >= RET[s[0]]:
                continue
            for what, idx in USE[s[0]].get(t, ()):
                if what != mem:
                    continue
                if nb == 1:
                    return True
                x = ins[s[2]]
                row = (x.spad_addr + idx * x.spad_stride) if mem == "spad" else \
                    (x.acc_addr + idx * x.acc_stride)
                if row % nb == bank:
                    return True
        return False

    def pending_release(c: int, b: int, what: str) -> None:
        """Raise a race when instruction `b` could acquire its semaphore now
        while another instruction that does not take part in it (no acquire
        of it) will release it: one running (a matrix slot, the DMA's
        in-flight queue) or the other engine's pending one.  Whether `b`
        sees the value before or after that release depends on timing (the
        golden model finishes an engine's instructions one by one, the
        older pending one first)."""
        x = ins[b]
        others = [s[2] for k, s in enumerate(slots) if busy[k] and c <= s[1] + rel_at(s)]
        others += [e["idx"] for e in eng.fl if e["done"] is None or e["done"] >= c]
        others += [q[0] for q in (mxq, dmq) if q and q[0] != b]
        for a in sorted(set(others)):
            y = ins[a]
            if y.release_valid and y.sem_id == x.sem_id and not (
                    y.acquire_valid and y.sem_id == x.sem_id):
                state = "running" if a not in (mxq[:1] + dmq[:1]) else "pending"
                raise DispatchError(
                    "semaphore race", c, f"{what} instruction {b} can acquire semaphore "
                    f"{x.sem_id} = {x.acquire_value} while instruction {a} ({state}, without "
                    f"an acquire of it) will release it (to {y.release_value}); whether {b} "
                    f"sees the value before or after that release depends on timing. Make "
                    f"{a} acquire the semaphore too, or {b} wait for the value {a} releases")

    eng = DmaEngine(cfg, dma, port_busy)     # the DMA engine and its in-flight queue
    dma_spans = eng.spans
    skipper = Skipper(cfg, ins, golden, RET, eng) if periodic and feed is None and fe is None \
        else None
    mark = False
    c = 0
    while True:
        if mark:        # an instruction started: a checkpoint (fsa/cycle/skip.py)
            mark = False
            sig = skipper.signature(c, pc, have, dec_full, mxq, dmq, slots, last, rlast, wave,
                                    wave_last, val, held, eng)
            jump = None if sig is None else skipper.find(sig, c, cnt, len(mx_starts),
                                                         len(dma_spans))
            if jump is not None:
                k, dc, dp, (cnt1, s1, sp1) = jump
                for key in cnt:
                    cnt[key] += k * (cnt[key] - cnt1[key])
                for lst, first in ((mx_starts, s1), (dma_spans, sp1)):
                    period = lst[first:]
                    for i in range(1, k + 1):
                        lst.extend(tuple(t + i * dc for t in x) if isinstance(x, tuple)
                                   else x + i * dc for x in period)
                for q in (mxq, dmq):
                    if q:
                        head = q[0] + k * dp
                        q[:] = [j for j in q if j >= head] if golden else [j + k * dp for j in q]
                for s_ in slots:
                    if s_ is not None and c < s_[1] + RET[s_[0]]:
                        s_[1] += k * dc
                        s_[2] += k * dp
                if wave is not None and wave[1] > c:
                    wave = [wave[0] + k * dc, wave[1] + k * dc]
                skipper.shift_engine(eng, k * dc, k * dp)
                if not golden:
                    pc += k * dp
                c += k * dc
                skipper.skipped += k
        if c > max_cycles:
            raise RuntimeError(f"cycle model: no stop within {max_cycles} cycles")
        # ---------------- combinational view of cycle c
        busy = [s is not None and c < s[1] + RET[s[0]] for s in slots]
        wave_busy = wave is not None and c < wave[1]
        mx_busy = busy[0] or busy[1] or busy[2] or wave_busy
        fr = [(not busy[k]) or (c + 1 >= slots[k][1] + RET[slots[k][0]]) for k in (0, 1, 2)]
        inflight = eng.inflight()
        changed = False
        # matrix issue
        mx_accept = False
        if races and mxq and dmq:
            a, b = ins[mxq[0]], ins[dmq[0]]
            if a.acquire_valid and b.acquire_valid and a.sem_id == b.sem_id and acq_ok(a) \
                    and acq_ok(b):
                raise DispatchError(
                    "semaphore race", c, f"matrix instruction {mxq[0]} and DMA "
                    f"instruction {dmq[0]} can both acquire semaphore {a.sem_id} = "
                    f"{a.acquire_value} at once, so their order depends on timing; give the "
                    f"semaphore more values (a larger n) so that each waiting instruction has "
                    f"its own value")
        if races:
            for q, what in ((mxq, "matrix"), (dmq, "DMA")):
                if q and ins[q[0]].acquire_valid and acq_ok(ins[q[0]]):
                    pending_release(c, q[0], what)
        if mxq:
            x = ins[mxq[0]]
            f = int(x.func)
            if acq_ok(x):
                ls = slots[last]
                ok = (not busy[last]) or (c >= ls[1] + CF[ls[0]])
                lb = busy[last] and BLOCK[ls[0]]
                blocking = BLOCK[f] or bool(x.wait_prev_acc)
                allfree = fr[0] and fr[1] and fr[2]
                bok = allfree or not (blocking or lb)
                # only the instruction right after an early-retired one may
                # start while its wave runs (not a blocking one)
                wok = (not wave_busy) or c + 1 >= wave[1] or (wave_last and not blocking)
                # after a NORM_SCALE / NORM: its partner the cycle after, or
                # anything once it retires
                pok = last != 2 or fr[2] or (PARTNER[f] and not blocking and c < ls[1] + SLACK)
                free = fr[2] if NORM[f] else (fr[0] or fr[1])
                mx_accept = ok and bok and wok and pok and free
        # DMA issue (the engine is ready once done has pulsed; the core's
        # in-flight flag clears the cycle after)
        dm_issue = bool(dmq) and acq_ok(ins[dmq[0]]) and \
            eng.can_accept(c, ins[dmq[0]])
        if fe is not None:
            # a fetch burst waits while a LOAD runs or is accepted; a DMA
            # LOAD waits while a fetch burst is in flight, with one port only
            # until the burst's tail (its beats follow the burst's;
            # rtl/fsa_rdarb.py, fsa.hw.fetch.LOAD_TAIL)
            if dm_issue and ins[dmq[0]].func == LOAD and fe.holds_loads(c):
                dm_issue = False
            loading = eng.loading() or (dm_issue and ins[dmq[0]].func == LOAD)
            if fe.try_issue(c, loading):
                changed = True
        # DMA pushes and beats (fsa/cycle/dma.py): one SRAM narrow-port access
        # per cycle, lost to the array port
        if eng.busy():
            changed = True
            eng.step(c)
        # releases (pulses in cycle c, visible at c + 1)
        rel = []
        for k in (0, 1, 2):
            s = slots[k]
            if busy[k] and c == s[1] + rel_at(s):
                x = ins[s[2]]
                if x.release_valid:
                    rel.append((x.sem_id, x.release_value))
        dm_fin = eng.done_now(c) if inflight else None
        dm_done = dm_fin is not None
        if dm_done and ins[dm_fin["idx"]].release_valid:
            x = ins[dm_fin["idx"]]
            if not any(r[0] == x.sem_id for r in rel):     # the matrix release has priority
                rel.append((x.sem_id, x.release_value))
        # decoder
        stop = False
        pop = (not dec_full) and pc < n and not golden and (feed is None or feed.available(c)) \
            and (fe is None or fe.available(fe.pops, c))
        take_n = 0        # instructions the decoder dispatches at the end of cycle c
        if golden:        # everything up to a fence that must wait, at once
            new_m = new_d = False
            while pc + take_n < n:
                k = kind[pc + take_n]
                if k == "f":
                    fx = ins[pc + take_n]
                    mx_idle = not mxq and not mx_busy and not new_m
                    dma_idle = not dmq and not inflight and not new_d
                    if not fence_ok(fx, mx_idle, dma_idle):
                        break
                    take_n += 1
                    if fx.stop:
                        stop = True
                        break
                else:
                    new_m, new_d = new_m or k == "m", new_d or k == "d"
                    take_n += 1
        elif dec_full:
            k = kind[pc]
            if (k == "m" and not mxq) or (k == "d" and not dmq):
                take_n = 1
            elif k == "f":
                fx = ins[pc]
                if fence_ok(fx, not mxq and not mx_busy, not dmq and not inflight):
                    take_n = 1
                    stop = bool(fx.stop)
        # ---------------- counters for cycle c
        if not mx_busy:
            cnt["bubble"] += 1
        else:
            cnt["mx_active"] += 1
        if inflight:
            cnt["dma_active"] += 1
        if stop:
            return ModelResult(c + 1, cnt, mx_starts, dma_spans,
                               fe.bursts if fe is not None else [])
        # ---------------- next state
        if mx_accept:
            x = ins[mxq[0]]
            if NORM[int(x.func)]:
                take = 2
            else:
                take = (1 - rlast) if (fr[0] and fr[1]) else (1 if fr[1] else 0)
                rlast = take
            slots[take] = [int(x.func), c + 1, mxq[0]]
            last = take
            wave_last = WAVE[int(x.func)] is not None
            if wave_last:
                wave = [c + 1, c + 1 + WAVE[int(x.func)]]
            mx_starts.append(c + 1)
            mark = skipper is not None
            cnt["mx"] += 1
            if x.acquire_valid:
                held[x.sem_id] = True
            mxq.pop(0)
            changed = True
        if dm_done:
            eng.retire(c)
            changed = True
        if dm_issue:
            x = ins[dmq[0]]
            eng.accept(c, dmq[0], x)
            mark = skipper is not None
            cnt["dma"] += 1
            if x.acquire_valid:
                held[x.sem_id] = True
            dmq.pop(0)
            changed = True
        for sid, v in rel:
            val[sid] = v
            held[sid] = False
            changed = True
        if take_n:
            for j in range(pc, pc + take_n):
                if kind[j] == "m":
                    mxq.append(j)
                elif kind[j] == "d":
                    dmq.append(j)
            dec_full = False
            pc += take_n
            changed = True
        elif pop:
            if feed is not None:
                feed.pops.append(c)
            if fe is not None:
                fe.pops += 1
            have += 1
            if have == size[pc]:
                dec_full = True
                have = 0
            changed = True
        if changed:
            c += 1
            continue
        # ---------------- nothing happened: jump to the next time-driven event
        cand = []
        for k in (0, 1, 2):
            s = slots[k]
            if s is not None:
                b = s[1]
                cand += [b + CF[s[0]], b + RET[s[0]] - 1, b + RET[s[0]], b + rel_at(s)]
        if wave is not None:
            cand += [wave[1] - 1, wave[1]]
        if eng.next_done(c) is not None:
            cand.append(eng.next_done(c))
        if feed is not None and not dec_full and pc < n:
            cand.append(feed.arrival())          # the next word reaches the queue
        if fe is not None and fe.next_event(c) is not None:
            cand.append(fe.next_event(c))        # a beat or a word arrives, a burst ends
        cand = [t for t in cand if t > c]
        if not cand:
            waits = [waiting(q, w) for q, w in ((mxq, "matrix"), (dmq, "DMA")) if q]
            if pc < n:
                waits.append(f"the decoder is stuck at instruction {pc}")
            if not waits:
                raise DispatchError("no stop", c, f"the program ({n} instructions) ends without a "
                                    f"stop fence (the device and the golden model report NO_STOP)")
            raise DispatchError("deadlock", c, "; ".join(waits))
        nxt = min(cand)
        span = nxt - c - 1           # cycles c+1 .. nxt-1 look exactly like cycle c
        if span > 0:
            if not mx_busy:
                cnt["bubble"] += span
            else:
                cnt["mx_active"] += span
            if inflight:
                cnt["dma_active"] += span
        c = nxt
