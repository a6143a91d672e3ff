"""Random matrix programs (not a compiler's): the device equals the golden
model on instruction streams no kernel writes.

Each program loads random data into the whole scratchpad and accumulator,
runs random matrix instructions (every function of the config, random
addresses, strides (0 and negative included), ``zero``, ``causal``,
``mask_keys`` (a random ``key_limit`` and softmax scale are set before
the first start), ``reset_max``, ``early_release``), each with
``wait_prev_acc`` (the ISA's rule for an instruction that uses what the
one before it produces in an order the kernels do not use),
then stores the accumulator.  The programs of one test run one after
another on one device without a reset (state carries over: PE registers,
maxima, the ACC scale, ``qreg``), as on one :class:`Machine`; every
accumulator dump is compared raw bit for raw bit and every run's ``exec``
counter with the cycle model.  With ``bad``, some instructions get an
address outside the SRAM: the device's error code and instruction index
equal the golden model's (the device is aborted before the next program,
the golden model too); every other program has one such instruction.

This found three differences between the golden model and the RTL, all
mended in the golden model (fsa/golden/machine.py): accumulator walks with
stride 0 (the hardware reads a row one cycle before writing it, so index
``i`` sees the writes of indices up to ``i - 2``), ATTENTION_SCORE while a
UD K part's scores wait in the bottom row (refused as not modelled: its
upward waves meet them), and the abort on UD hardware (it also resets the
bottom row's maxima and LIFO).

``SEED=n`` changes the programs; ``FUZZ_PROGRAMS=n`` the programs per test
(default 8; 32 with ``FULL=1``).
"""
from __future__ import annotations

import os

import numpy as np
import pytest

from fsa import config as fconfig
from fsa.cycle import model as cm
from fsa import isa
from fsa import numerics as nx
from fsa.golden.machine import Machine, MachineError
from fsa.isa import Dma, DmaFunc, Fence, Matrix, MxFunc
from fsa.simdev import run_on_device

from tb.common.tier import FULL, SEED

pytestmark = pytest.mark.sim

#: wait_prev_acc on every instruction (None: random; such programs differ from the
#: golden model where an instruction overlaps one whose results it uses:
#: docs/architecture.md section 8)
WAIT: "bool | None" = True
UD_FUNCS = (MxFunc.LOAD_Q, MxFunc.KSTEP, MxFunc.STEP, MxFunc.PVSTEP)
REF_FLAGS = {MxFunc.LOAD_STATIONARY: (False, False, False),
             MxFunc.ATTENTION_SCORE: (True, True, True),
             MxFunc.ATTENTION_VALUE: (True, False, True)}
UD_FLAGS = (True, False, True)


def random_program(cfg, rng, n: int, region: int, bad: bool = False):
    """(instructions, memory image, (dump address, bytes)) of one random
    program whose data lives at ``mem_base + region * 0x10000``; with `bad`,
    one of its matrix instructions (at a random place where no UD scores
    wait) addresses a row outside its SRAM."""
    R, C = cfg.sa_rows, cfg.sa_cols
    SR, AR = cfg.spad_rows, cfg.acc_rows
    srb, arb = cfg.spad_row_bytes, cfg.acc_row_bytes
    base = cfg.mem_base + region * 0x10000
    spad_mem, acc_mem, out_mem = base, base + 0x4000, base + 0x8000
    spad = nx.from_float64(rng.standard_normal((SR, R)) * rng.choice([0.5, 2.0, 8.0]), cfg.e_type)
    acc = nx.from_float64(np.abs(rng.standard_normal((AR, C))) + 0.25, cfg.a_type)
    ins = [Dma(func=DmaFunc.LOAD, repeat=SR, sram_addr=0, sram_stride=1, mem_addr=spad_mem,
               mem_stride=srb, size=srb),
           Dma(func=DmaFunc.LOAD, repeat=AR, sram_addr=0, sram_stride=1, is_accum=True,
               mem_addr=acc_mem, mem_stride=arb, size=arb),
           Fence(mx=True, dma=True)]
    funcs = list(REF_FLAGS) + [MxFunc.ATTENTION_LSE_NORM_SCALE, MxFunc.ATTENTION_LSE_NORM]
    if cfg.dataflow == "ud":
        funcs += list(UD_FUNCS) * 2 + [MxFunc.NORM_SCALE, MxFunc.NORM] * 2

    def walk(rows: int, limit: int) -> tuple[int, int]:
        # stride 0 often: a walk whose rows repeat is where the accumulator's
        # read-before-write timing shows
        stride = int(rng.choice([1, 1, -1, 2, -2, 0, 0, 3]))
        lo, hi = (0, limit - 1 - stride * (rows - 1)) if stride >= 0 else \
            (-stride * (rows - 1), limit - 1)
        if hi < lo:
            stride, lo, hi = 1, 0, limit - rows
        return int(rng.integers(lo, hi + 1)), stride

    scores_wait = False         # a UD K part's scores wait for their PV part
    bad_from = int(rng.integers(0, n)) if bad else n + 1
    for pos in range(n):
        f = funcs[int(rng.integers(0, len(funcs)))]
        if f in (MxFunc.STEP, MxFunc.PVSTEP) and not scores_wait:
            f = MxFunc.KSTEP
        if f == MxFunc.ATTENTION_SCORE and scores_wait:    # not defined (its up waves)
            f = MxFunc.PVSTEP
        # an error stops the program here: only where no scores wait (the next
        # program may start with any function)
        inject = pos >= bad_from and not scores_wait
        if inject:
            bad_from = n + 1
        if f in (MxFunc.KSTEP, MxFunc.STEP):
            scores_wait = True
        elif f == MxFunc.PVSTEP:
            scores_wait = False
        wait = WAIT if WAIT is not None else bool(rng.integers(0, 2))
        kw: dict = dict(func=f, wait_prev_acc=wait)
        flags = UD_FLAGS if f in UD_FUNCS else REF_FLAGS.get(f, (False, False, False))
        kw.update(zip(("rev_input", "rev_output", "delay_output"), flags))
        causal = bool(rng.integers(0, 4) == 0) and R == C
        if f == MxFunc.LOAD_STATIONARY or f == MxFunc.LOAD_Q:
            kw["spad_addr"], kw["spad_stride"] = walk(C, SR)
        elif f == MxFunc.ATTENTION_SCORE:
            kw["spad_addr"], kw["spad_stride"] = walk(R, SR)
            kw.update(acc_addr=int(rng.integers(0, AR)), zero=bool(rng.integers(0, 2)),
                      causal=causal, mask_keys=bool(rng.integers(0, 3) == 0))
        elif f == MxFunc.ATTENTION_VALUE:
            kw["spad_addr"], kw["spad_stride"] = walk(R, SR)
            kw["acc_addr"], kw["acc_stride"] = walk(R, AR)
            kw["zero"] = bool(rng.integers(0, 2))
        elif f in (MxFunc.ATTENTION_LSE_NORM_SCALE, MxFunc.NORM_SCALE):
            kw["acc_addr"] = int(rng.integers(0, AR))
            if f == MxFunc.NORM_SCALE:
                kw["zero"] = bool(rng.integers(0, 4) == 0)
        elif f in (MxFunc.ATTENTION_LSE_NORM, MxFunc.NORM):
            kw["acc_addr"], kw["acc_stride"] = walk(R, AR)
        else:                   # KSTEP, STEP, PVSTEP
            n_rows = {MxFunc.KSTEP: R, MxFunc.STEP: 2 * R, MxFunc.PVSTEP: R}[f]
            kw["spad_addr"], kw["spad_stride"] = walk(n_rows, SR)
            if f != MxFunc.KSTEP:
                kw["acc_addr"], kw["acc_stride"] = walk(R + 1, AR)
                kw["zero"] = bool(rng.integers(0, 2))
            if f != MxFunc.PVSTEP:
                kw.update(reset_max=bool(rng.integers(0, 2)), causal=causal)
            kw["early_release"] = bool(rng.integers(0, 2))
        if inject:
            uses = (["spad_addr"] if "spad_addr" in kw else []) + \
                (["acc_addr"] if "acc_addr" in kw else [])     # the rows it walks
            key = uses[int(rng.integers(0, len(uses)))]
            kw[key] = int(rng.integers(SR if key == "spad_addr" else AR, 64))
        ins.append(Matrix(**kw))
    if bad and bad_from <= n:   # no place was free: a LOAD_STATIONARY out of range at the end
        ins.append(Matrix(func=MxFunc.LOAD_STATIONARY, wait_prev_acc=True,
                          spad_addr=int(rng.integers(SR, 64)), spad_stride=1))
    if scores_wait:             # leave no scores behind for the next program
        kw = dict(func=MxFunc.PVSTEP, wait_prev_acc=True, acc_addr=0, acc_stride=1)
        kw.update(zip(("rev_input", "rev_output", "delay_output"), UD_FLAGS))
        ins.append(Matrix(**kw))
    ins += [Fence(mx=True, dma=True),
            Dma(func=DmaFunc.STORE, repeat=AR, sram_addr=0, sram_stride=1, is_accum=True,
                mem_addr=out_mem, mem_stride=arb, size=arb),
            Fence(mx=True, dma=True, stop=True)]
    image = [(spad_mem, spad.tobytes()), (acc_mem, acc.tobytes())]
    return ins, image, (out_mem, AR * arb)


def run_session(cfg, seed: int, programs: int, length: int, bad: bool = False):
    """Run `programs` random programs (with `bad`: every other one with an
    out-of-range row) on one device and on one golden machine, compare;
    returns the number of programs that ended in an error."""
    rng = np.random.default_rng(seed)
    progs = [random_program(cfg, rng, length, k + 1, bad and k % 2 == 0) for k in range(programs)]
    # the host's settings before the first start: a key limit for mask_keys and
    # a softmax scale other than the reset value
    settings = {"key_limit": int(rng.integers(1, cfg.sa_rows + 1))}
    settings["scale_e"], settings["scale_a"] = fconfig.scale_bits(cfg, float(rng.uniform(0.1, 2)))
    # the golden model: one machine, the programs one after another; an
    # error ends its program and the host aborts the device before the next
    m = Machine(cfg)
    for name, value in settings.items():
        m.write_setting(name, value)
    for _, image, _ in progs:
        for addr, b in image:
            m.mem.write(addr, b)
    expect = []
    for ins, _, _ in progs:
        try:
            m.run(ins)
            expect.append(None)
        except MachineError as e:
            expect.append((e.code, e.index))
            m.abort()
    res = run_on_device(cfg, [], [seg for _, image, _ in progs for seg in image],
                        [dump for _, _, dump in progs],
                        programs=[isa.encode(i) for i, _, _ in progs],
                        max_cycles=400_000, seed=seed, settings=settings)
    assert len(res["runs"]) == programs, res["runs"]
    errors = 0
    for k, ((ins, _, (addr, n)), want, run) in enumerate(zip(progs, expect, res["runs"])):
        what = f"{cfg.name} program {k} of seed {seed}"
        if want is not None:
            errors += 1
            assert (run["state"], run["error"], run["error_index"]) == ("error", *want), \
                (what, run["state"], run["error"], run["error_index"], want)
            continue
        assert run["state"] == "done", (what, run["state"], run["error"], run["error_index"])
        assert run["counters"]["exec"] == cm.simulate(cfg, ins).cycles, (what, run["counters"])
    gold = [None if want is not None else m.mem.read(addr, n)
            for (_, _, (addr, n)), want in zip(progs, expect)]
    for k, (g, rtl) in enumerate(zip(gold, res["dumps"])):
        if g is not None:
            diff = np.flatnonzero(np.frombuffer(g, np.uint8) != np.frombuffer(rtl, np.uint8))
            assert diff.size == 0, f"{cfg.name} program {k} of seed {seed}: accumulator bytes " \
                                   f"{diff[:8].tolist()} differ from the golden model"
    return errors


N_PROGRAMS = int(os.environ.get("FUZZ_PROGRAMS", "32" if FULL else "8"))


@pytest.mark.parametrize("name", ["FSA4X4Fp16Config", "FSA4X4Fp16UdConfig"])
def test_random_programs_equal_the_golden_model(name):
    cfg = fconfig.get(name)
    errors = run_session(cfg, SEED * 1000 + 7, N_PROGRAMS, 24)
    assert errors == 0


@pytest.mark.parametrize("name", ["FSA4X4Fp16UdConfig"])
def test_random_programs_with_range_errors(name):
    """Some instructions address rows outside the SRAMs: the same error,
    at the same instruction, as the golden model; the programs after an
    error still equal it (the abort leaves the device as the model)."""
    cfg = fconfig.get(name)
    errors = run_session(cfg, SEED * 1000 + 11, N_PROGRAMS, 24, bad=True)
    assert errors == (N_PROGRAMS + 1) // 2, errors       # every bad program failed
