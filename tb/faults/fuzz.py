"""Differential fault fuzzing (issue 38 item 2): random decodable programs,
legal and faulty, on the golden model (``fsa/golden/machine.py``) and on the
device (``fsa_top`` through ``fsa.simdev.run_on_device``, many programs per
simulator run, the fast memory path on Verilator), compared program by
program: state, error code, instruction index, wait register and the data
memory after the program.

The programs mix fences (random engine flags), matrix instructions (every
function the config has, with the flags the golden model defines, always
``wait_prev_acc``) and DMA LOADs and STOREs, with faults drawn at random:
an unknown type word, an unknown or other-dataflow function code, a matrix
walk outside its SRAM, a DMA size above the row or not a beat multiple, a
DMA walk outside its SRAM, a misaligned row address or stride, a row outside
the memory window (from the first row or partway), a semaphore waited for
that never comes, a semaphore acquired and never released, reserved bits
set, no stop fence, a program cut inside an instruction.

Everything that the device and the model must agree on is made
deterministic by construction, so that a difference is a bug and not a
race: matrix instructions use the lower half of each SRAM and DMA
instructions the upper half (the memory image depends on the DMA order only,
which is program order), and semaphores are used as chains in program order
(each step acquires the value the step before it released: at any time at
most one instruction can acquire), a chain's first step may release without
acquiring, and a semaphore that gets a waiter for a value it never takes, or
an acquire without a release, is used only by such waiters afterwards.

:func:`minimise` shrinks a failing program (drops instructions, then clears
reserved bits and semaphore headers, while the disagreement persists), one
simulator run per round with every candidate of the round in it.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np

from fsa import isa
from fsa.golden.machine import Deadlock, Machine, MachineError, UnsupportedProgram
from fsa.hw import isa as hwisa
from fsa.isa import Dma, DmaFunc, Fence, Matrix, MxFunc
from fsa.simdev import run_on_device
from fsa.simrun import get_sim

#: bytes of the data region at the bottom of the memory window (DMA rows and
#: the dump compared after every program)
REGION = 0x2000
#: semaphore ids the programs use (few, so that they meet)
SEMS = 4
#: the flags (rev_input, rev_output, delay_output) the golden model defines
FLAGS = {MxFunc.LOAD_STATIONARY: (False, False, False),
         MxFunc.ATTENTION_SCORE: (True, True, True),
         MxFunc.ATTENTION_VALUE: (True, False, True)}
UD_FLAGS = (True, False, True)
#: functions generated only with a walk outside the SRAM (they never run:
#: a legal K or PV part leaves state other programs would have to respect)
BAD_ONLY = (MxFunc.KSTEP, MxFunc.STEP, MxFunc.PVSTEP)
NO_WAIT = {"sem_id": 0, "want": 0, "have": 0}


@dataclass
class Outcome:
    state: str
    error: str
    index: int
    wait: dict
    memory: bytes

    def key(self):
        return (self.state, self.error, self.index, tuple(sorted(self.wait.items())))


class _Sems:
    """The semaphore headers of one program (module docstring)."""

    def __init__(self, rng):
        self.rng = rng
        self.cur = [0] * SEMS
        self.seen = [{0} for _ in range(SEMS)]
        self.dead = [None] * SEMS       # None, "never" or ("held", engine)

    def header(self, engine: str, wait_never: bool = False) -> dict:
        """A random header for an instruction of `engine` ("mx", "dma");
        `wait_never`: a wait for a value its semaphore never takes (if one is
        left)."""
        rng, r = self.rng, float(self.rng.random())
        s = int(rng.integers(0, SEMS))
        cur = self.cur[s]
        if wait_never:
            r = 0.5 if self.dead[s] in (None, "never") else 0.0
        if r < 0.45:
            return {}
        if self.dead[s] is not None and self.dead[s] != "never":
            # a waiter on a semaphore acquired and never released: on the
            # holder's engine only (in order, so it comes after the take; on the
            # other engine both could be pending when the value comes: a race)
            if self.dead[s][1] != engine:
                return {}
            return dict(sem_id=s, acquire_valid=True, acquire_value=cur)
        if self.dead[s] is None and r < 0.49:       # acquired, never released
            self.dead[s] = ("held", engine)
            return dict(sem_id=s, acquire_valid=True, acquire_value=cur)
        never = [v for v in range(8) if v not in self.seen[s]]
        if self.dead[s] == "never" or (r < 0.53 and never):
            if not never:
                return {}
            self.dead[s] = "never"
            h = dict(sem_id=s, acquire_valid=True, acquire_value=int(rng.choice(never)))
            if rng.random() < 0.5:
                h.update(release_valid=True, release_value=int(rng.integers(0, 8)))
            return h
        nxt = (cur + 1) % 8
        if nxt in self.seen[s]:
            return {}
        self.cur[s] = nxt
        self.seen[s].add(nxt)
        if self.seen[s] == {0, nxt} and rng.random() < 0.3:     # a first step: release only
            return dict(sem_id=s, release_valid=True, release_value=nxt)
        return dict(sem_id=s, acquire_valid=True, acquire_value=cur, release_valid=True,
                    release_value=nxt)


def _walk(rng, n: int, lo: int, hi: int, bad: bool, limit: int) -> tuple[int, int]:
    """(start, stride) of an n-row walk inside [lo, hi), or with `bad` one
    that leaves [0, limit)."""
    if bad:
        kind = int(rng.integers(0, 3)) if n > 1 else 0
        if kind == 0:
            return int(rng.integers(limit, limit + 40)), int(rng.integers(-2, 3))
        if kind == 1:               # runs off the top partway: the last row >= limit
            return int(rng.integers(limit - n + 1, limit)), int(rng.integers(1, 4))
        return int(rng.integers(0, n - 1)), -int(rng.integers(1, 4))   # the last row < 0
    for _ in range(20):
        stride = int(rng.choice([1, 1, 0, -1, 2]))
        first, last = 0, stride * (n - 1)
        a_lo, a_hi = lo - min(first, last), hi - 1 - max(first, last)
        if a_lo <= a_hi:
            return int(rng.integers(a_lo, a_hi + 1)), stride
    return lo, 0


def _matrix(cfg, rng, sems: _Sems, bad: bool) -> list[int]:
    R, C = cfg.sa_rows, cfg.sa_cols
    SR, AR = cfg.spad_rows, cfg.acc_rows
    funcs = list(FLAGS) + [MxFunc.ATTENTION_LSE_NORM_SCALE, MxFunc.ATTENTION_LSE_NORM]
    if cfg.dataflow == "ud":
        funcs += [MxFunc.LOAD_Q, MxFunc.NORM_SCALE, MxFunc.NORM]
        if bad:
            funcs += list(BAD_ONLY)
    f = funcs[int(rng.integers(0, len(funcs)))]
    flags = UD_FLAGS if f in (MxFunc.LOAD_Q, *BAD_ONLY) else FLAGS.get(f, (False,) * 3)
    kw = dict(func=f, wait_prev_acc=True, **dict(zip(("rev_input", "rev_output",
                                                      "delay_output"), flags)))
    walks = {MxFunc.LOAD_STATIONARY: (C, 0), MxFunc.LOAD_Q: (C, 0),
             MxFunc.ATTENTION_SCORE: (R, 1), MxFunc.ATTENTION_VALUE: (R, R),
             MxFunc.ATTENTION_LSE_NORM_SCALE: (0, 1), MxFunc.ATTENTION_LSE_NORM: (0, R),
             MxFunc.NORM_SCALE: (0, 1), MxFunc.NORM: (0, R), MxFunc.KSTEP: (R, 0),
             MxFunc.STEP: (2 * R, R + 1), MxFunc.PVSTEP: (R, R + 1)}[f]
    which = [k for k, n in zip(("spad", "acc"), walks) if n]
    wrong = which[int(rng.integers(0, len(which)))] if bad else None
    sn, an = walks
    if sn:
        kw["spad_addr"], kw["spad_stride"] = _walk(rng, sn, 0, SR // 2, wrong == "spad", SR)
    if an == 1:
        kw["acc_addr"] = int(rng.integers(AR, AR + 20)) if wrong == "acc" else \
            int(rng.integers(0, AR // 2))
        kw["acc_stride"] = int(rng.integers(-3, 4))
    elif an:
        kw["acc_addr"], kw["acc_stride"] = _walk(rng, an, 0, AR // 2, wrong == "acc", AR)
    if f in (MxFunc.ATTENTION_SCORE, MxFunc.ATTENTION_VALUE, MxFunc.ATTENTION_LSE_NORM_SCALE,
             MxFunc.ATTENTION_LSE_NORM, MxFunc.NORM_SCALE, MxFunc.NORM, *BAD_ONLY):
        kw["zero"] = bool(rng.integers(0, 2))
    if f == MxFunc.ATTENTION_SCORE:
        kw.update(causal=bool(rng.integers(0, 2)) and R == C, mask_keys=bool(rng.integers(0, 2)))
    # a range fault waiting for a semaphore that never comes: the fault wins
    return isa.encode([Matrix(**kw, **sems.header("mx", bad and rng.random() < 0.4))])


def _dma(cfg, rng, sems: _Sems, bad: str | None) -> list[int]:
    acc = bool(rng.integers(0, 2))
    rows, row_bytes = (cfg.acc_rows, cfg.acc_row_bytes) if acc else (cfg.spad_rows,
                                                                       cfg.spad_row_bytes)
    al, base, top = cfg.mem_align, cfg.mem_base, cfg.mem_base + cfg.mem_size
    rep = int(rng.integers(1, 5))
    size = al * int(rng.integers(1, row_bytes // al + 1))
    mstride = int(rng.choice([1, 1, 2, -1, 0])) * row_bytes
    span = abs(mstride) * (rep - 1) + size
    maddr = base + al * int(rng.integers(0, (REGION - span) // al + 1))
    if mstride < 0:
        maddr += -mstride * (rep - 1)
    saddr, sstride = _walk(rng, rep, rows // 2, rows, bad == "sram", rows)
    if bad == "size":
        size = int(rng.choice([row_bytes + al, row_bytes + 1, min(1023, 4 * row_bytes)]))
    elif bad == "size_align":
        size = int(rng.integers(1, row_bytes)) | 1
    elif bad == "addr_align":
        maddr += int(rng.integers(1, al))
    elif bad == "stride_align":
        mstride = mstride + int(rng.choice([-1, 1, al // 2]))
        rep = max(rep, 2)
        maddr = base + REGION // 2 - REGION // 2 % al
    elif bad == "window":
        maddr = int(rng.choice([base - al * int(rng.integers(1, 8)), top,
                                top + al * int(rng.integers(0, 64)), base - size // 2 - 1]))
        maddr = max(0, maddr - maddr % al)
    elif bad == "window_late":       # leaves the window below its base partway
        maddr, mstride, rep = base + al * int(rng.integers(0, 2)), -row_bytes, max(rep, 3)
    elif bad == "empty":
        if rng.random() < 0.5:
            rep = 0
        else:
            size = 0
    ins = Dma(func=DmaFunc(int(rng.integers(0, 2))), repeat=max(1, rep), sram_addr=saddr,
              sram_stride=sstride, is_accum=acc, mem_addr=maddr, mem_stride=mstride,
              size=max(1, min(1023, size)), **sems.header("dma"))
    words = isa.encode([ins])
    if rep == 0 or size == 0:       # the device's no-op DMA: not a Dma the class allows
        for name, v in (("repeat", rep), ("size", size)):
            f = hwisa.field("DMA", name)
            (w, hi, lo), = f.parts
            if v == 0:
                words[w] &= ~(((1 << (hi - lo + 1)) - 1) << lo)
    return words


def _set_func(words: list[int], kind: str, code: int) -> list[int]:
    (w, hi, lo), = hwisa.field(kind, "func").parts
    mask = ((1 << (hi - lo + 1)) - 1) << lo
    words = list(words)
    words[w] = (words[w] & ~mask) | ((code << lo) & mask)
    return words


def random_program(cfg, rng, n: int) -> list[list[int]]:
    """A random program of about `n` instructions, as the words of each
    instruction (one list per instruction, the last may be cut short)."""
    sems = _Sems(rng)
    fault_p = float(rng.choice([0.0, 0.05, 0.15, 0.3]))
    mx_max = hwisa.mx_func_max(cfg.dataflow)
    out: list[list[int]] = []
    for _ in range(n):
        r = float(rng.random())
        bad = rng.random() < fault_p
        if r < 0.18:
            words = isa.encode([Fence(mx=bool(rng.integers(0, 2)), dma=bool(rng.integers(0, 2)))])
        elif r < 0.55:
            words = _matrix(cfg, rng, sems, bad)
        else:
            kinds = ["sram", "size", "size_align", "addr_align", "stride_align", "window",
                     "window_late", "empty"]
            words = _dma(cfg, rng, sems, kinds[int(rng.integers(0, len(kinds)))] if bad else None)
        if bad and rng.random() < 0.25:             # a decode fault instead
            k = int(rng.integers(0, 3))
            if k == 0:
                words = [int(rng.integers(3, 8)) << 29 | int(rng.integers(0, 1 << 29))]
            elif k == 1:
                mx = _matrix(cfg, rng, sems, False)
                words = _set_func(mx, "MATRIX", int(rng.integers(mx_max + 1, 32)))
            else:
                dm = _dma(cfg, rng, sems, None)
                words = _set_func(dm, "DMA", int(rng.integers(2, 16)))
        if rng.random() < 0.15:                     # reserved bits set
            t = hwisa.TYPE_FIELD.extract([words[0]])
            names = {v: k for k, v in hwisa.TYPES.items()}
            if t in names:
                masks = hwisa.RESERVED_MASKS[names[t]]
                words = [w | (int(rng.integers(0, 1 << 32)) & m) for w, m in zip(words, masks)]
        out.append(words)
    end = float(rng.random())
    if end < 0.85:
        out.append(isa.encode([Fence(mx=True, dma=True, stop=True)]))
    elif end < 0.92 and out and len(out[-1]) > 1:   # cut inside the last instruction
        out[-1] = out[-1][:int(rng.integers(1, len(out[-1])))]
    return out


def flat(prog: list[list[int]]) -> list[int]:
    return [w for ins in prog for w in ins]


def initial_memory(cfg, seed: int) -> bytes:
    return np.random.default_rng(seed).integers(0, 256, REGION, dtype=np.uint8).tobytes()


def golden_run(m: Machine, words: list[int]) -> Outcome:
    """One program on the golden machine `m` (aborted after an error, as the
    device is)."""
    try:
        m.run(words)
        out = Outcome("done", "NONE", 0, dict(NO_WAIT), b"")
    except Deadlock as e:
        out = Outcome("error", "DEADLOCK", e.index, {"sem_id": e.sem_id, "want": e.want,
                                                      "have": e.have}, b"")
        m.abort()
    except UnsupportedProgram:
        raise
    except MachineError as e:
        out = Outcome("error", e.code, e.index, dict(NO_WAIT), b"")
        m.abort()
    out.memory = m.mem.read(m.cfg.mem_base, REGION)
    return out


def generate(cfg, seed: int, count: int, length: tuple[int, int] = (2, 14)):
    """`count` programs for one session and the golden outcome of each (the
    programs run one after another on one machine); programs the golden
    model does not define (UnsupportedProgram) are drawn again."""
    rng = np.random.default_rng(seed)
    m = Machine(cfg)
    m.mem.write(cfg.mem_base, initial_memory(cfg, seed))
    progs, outs = [], []
    while len(progs) < count:
        prog = random_program(cfg, rng, int(rng.integers(*length)))
        keep = copy.deepcopy(m)
        try:
            outs.append(golden_run(m, flat(prog)))
        except UnsupportedProgram:
            m = keep
            continue
        progs.append(prog)
    return progs, outs


def device_runs(cfg, seed: int, progs: list[list[list[int]]], sim: str | None = None) -> list:
    """Run the programs one after another on one device (program fetch; the
    fast memory on Verilator); their outcomes."""
    sim = get_sim(sim)
    res = run_on_device(cfg, [], [(cfg.mem_base, initial_memory(cfg, seed))],
                        [(cfg.mem_base, REGION)], programs=[flat(p) for p in progs],
                        max_cycles=50_000, seed=seed, fetch=True, sim=sim,
                        mem_model="fast" if sim == "verilator" else "axi",
                        name=f"faultfuzz-{cfg.name}-{seed}")
    assert len(res["runs"]) == len(progs), (len(res["runs"]), len(progs))
    return [Outcome(r["state"], r["error"], r["error_index"], r["wait"], r["dumps"][0])
            for r in res["runs"]]


def differences(golden: list[Outcome], rtl: list[Outcome], start: bytes) -> list[tuple[int, str]]:
    """(program, what) for each program whose outcome differs: state, error,
    index, wait register, or what it did to the memory (the bytes it changed
    and their values, so that one difference is not counted again by every
    program after it); `start` is the memory before the first program."""
    out = []
    gp = dp = np.frombuffer(start, np.uint8)
    for k, (g, d) in enumerate(zip(golden, rtl)):
        gm, dm = np.frombuffer(g.memory, np.uint8), np.frombuffer(d.memory, np.uint8)
        gch, dch = gm != gp, dm != dp
        if g.key() != d.key():
            out.append((k, f"golden {g.key()} device {d.key()}"))
        elif (gch != dch).any() or (gm[gch] != dm[gch]).any():
            diff = np.flatnonzero((gch != dch) | (gch & (gm != dm)))
            out.append((k, f"{g.key()}: the program changed memory bytes "
                           f"{diff[:8].tolist()} differently"))
        gp, dp = gm, dm
    return out


def describe(prog: list[list[int]]) -> str:
    """The program as one instruction per line (words and fields)."""
    lines = []
    for k, ins in enumerate(prog):
        hexw = " ".join(f"0x{w:08x}" for w in ins)
        try:
            got = isa.decode_device(ins, 0)
            what = repr(got[0]) if got else "(cut short)"
        except isa.IllegalInstruction as e:
            what = f"{e.code}"
        lines.append(f"  {k}: {hexw}  {what}")
    return "\n".join(lines)


def _candidates(prog: list[list[int]]) -> list[list[list[int]]]:
    """Smaller variants of a program: without a chunk of instructions (halves,
    quarters, ... single ones), or with one instruction's reserved bits clear."""
    cands, n, size = [], len(prog), len(prog) // 2
    while size > 1:
        cands += [prog[:k] + prog[k + size:] for k in range(0, n - size + 1, size)]
        size //= 2
    cands += [prog[:k] + prog[k + 1:] for k in range(n)]
    for k, ins in enumerate(prog):
        t = hwisa.TYPE_FIELD.extract([ins[0]])
        names = {v: n for n, v in hwisa.TYPES.items()}
        if t in names and len(ins) == hwisa.WORDS[names[t]]:
            masks = hwisa.RESERVED_MASKS[names[t]]
            clean = [w & ~m for w, m in zip(ins, masks)]
            if clean != ins:
                cands.append(prog[:k] + [clean] + prog[k + 1:])
    return [c for c in cands if c]


def minimise(cfg, seed: int, prog: list[list[int]], rounds: int = 12,
             sim: str | None = None) -> tuple[list[list[int]], str]:
    """Shrink a program the device and the golden model disagree on (each
    candidate from a fresh golden machine with the session's initial memory,
    all candidates of a round in one simulator run); returns the smallest
    still failing and its difference."""
    best, why = prog, "?"
    for _ in range(rounds):
        cands = [best] + _candidates(best)
        outs = []
        for c in cands:                 # each candidate on a fresh machine
            m = Machine(cfg)
            m.mem.write(cfg.mem_base, initial_memory(cfg, seed))
            try:
                outs.append(golden_run(m, flat(c)))
            except UnsupportedProgram:
                outs.append(None)
        keep = [k for k, o in enumerate(outs) if o is not None]
        rtl = device_runs(cfg, seed, [cands[k] for k in keep], sim)
        bad = {}
        for j, k in enumerate(keep):
            # each device run starts from the memory the one before it left:
            # compare the outcome only (the memory needs a fresh start)
            if outs[k].key() != rtl[j].key() or (j == 0 and outs[k].memory != rtl[j].memory):
                bad[k] = f"golden {outs[k].key()} device {rtl[j].key()}"
        if 0 not in bad and best is not prog:
            break
        if 0 in bad:
            why = bad[0]
        smaller = [k for k in bad if k and (len(flat(cands[k])), k) < (len(flat(best)), 10**9)]
        if not smaller:
            break
        best = cands[min(smaller, key=lambda k: len(flat(cands[k])))]
    return best, why
