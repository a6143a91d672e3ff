"""cocotb bench of the DMA engine ``rtl/fsa_dma.py`` (driven from
``tb/dma/test_dma.py``).

Parameters come in ``$FSA_DMA_PARAMS`` (JSON: ``config``, the FSAConfig as
``to_dict()``; ``random_instrs``, instructions of the random test); the seed
is cocotb's (``$COCOTB_RANDOM_SEED``).

Parts (cocotb's matrix_multiplier split): the models in tb/dma/models.py, the
driver and checker in tb/dma/bench.py, the instruction lists in
tb/dma/scenarios.py, the cocotb tests here.

* Memory: :class:`fsa.harness.axi_faults.FaultyAxiRam` (cocotbext-axi's ``AxiRam``
  behaviour plus injectable error responses) on every ``m_axi*`` port, all
  sharing one 1 MiB sparse memory and one fault list.  It maps address ``a`` to ``a % size``, so
  the config's window ``[mem_base, mem_base + mem_size)`` (mem_base a
  multiple of 1 MiB) lands at offset ``a - mem_base`` (modulo 1 MiB; the
  tests use the window's first 64 KiB and its last 4 KiB, which do not
  alias).  Optional random ``set_pause_generator`` pauses on all five
  channels; SLVERR / DECERR injection through the memory's fault list
  (``tb.dma.bench.Bench.faults``).
* :class:`tb.dma.models.SramModel`: the scratchpad and the accumulator behind their
  narrow ports (``n_ready`` random when stalling, read data one cycle after
  acceptance, as rtl/fsa_sram.py); it checks the valid/ready rule (a request
  not accepted is held unchanged) and the address / lane ranges.
* :class:`tb.dma.models.AxiMonitor`: every AR/AW handshake of every port (ID 0, INCR, full
  beat size, no 4 KiB crossing, full write strobes), so that the bursts can be
  compared with the expected policy (:func:`tb.dma.models.expected_bursts`).
* Driver and checker (:class:`tb.dma.bench.Bench`): one coroutine does every cycle: drive
  at the falling edge (command, SRAM outputs), sample in ``ReadOnly``.
  Commands are issued back to back; the results (SRAM and memory bytes,
  error code) are compared with ``fsa.golden.machine.Machine.dma`` run from
  the same initial state.

Tests: ``dma_directed`` (no stalls) and ``dma_directed_stalls`` (pauses on
every channel, SRAM stalls), ``dma_random`` (random legal instructions, light
then heavy stalls), ``dma_throughput`` (rows overlap: about a cycle per
one-beat row), ``dma_errors`` (each check error: the golden model's code and
state, busy low, a later command done in 3 cycles without traffic),
``dma_axi_errors`` (SLVERR / DECERR on a read beat / a write response, on
the beat in a range or the first / last beat of a burst; with two LOADs in
flight, ``err_slot`` names the one whose beat failed), ``dma_second_load``
(two LOADs in flight exactly when ``fsa/hw/dmarules.py`` allows it; the later
one wins a row both write).

Every wait has a cycle limit and names what it waited for.
"""
from __future__ import annotations

import cocotb

from fsa.golden.machine import MachineError
from fsa.harness.axi_faults import Fault
from fsa.isa import Dma, DmaFunc
from rtl import fsa_dma
from tb.dma.bench import (bench_params, cycle_limit, fail, pair_with_fault, run_and_compare,
                          run_pairs, start_bench)
from tb.dma.scenarios import (directed, error_cases, load_store_expected, random_instrs,
                              second_load_expected)


@cocotb.test()
async def dma_directed(dut):
    """Directed loads and stores, no stalls; contents and bursts vs the golden model."""
    b = await start_bench(dut, 0.0, "directed")
    b.randomize()
    await run_and_compare(b, directed(b.cfg), "directed", 0.0)


@cocotb.test()
async def dma_directed_stalls(dut):
    """The directed list with random pauses on every AXI channel and SRAM stalls."""
    b = await start_bench(dut, 0.3, "stalls")
    b.randomize()
    await run_and_compare(b, directed(b.cfg), "directed+stalls", 0.3)


@cocotb.test()
async def dma_random(dut):
    """Random legal instructions back to back vs the golden model: with light
    pauses / SRAM stalls (p = 0.25), then heavy ones (p = 0.6)."""
    b = await start_bench(dut, 0.25, "random")
    n = int(bench_params().get("random_instrs", 40))
    for p in (0.25, 0.6):
        b.set_stalls(p)
        b.randomize()
        instrs = random_instrs(b.cfg, b.rng, n)
        await run_and_compare(b, instrs, f"random (stalls {p})", p)


@cocotb.test()
async def dma_throughput(dut):
    """Rows overlap: with a slave that answers at once, a transfer of one-beat
    rows takes about one cycle per row (several bursts in flight), not one
    AXI round trip per row (with ``dma_outstanding`` below 8: at most
    8 / dma_outstanding cycles a row)."""
    b = await start_bench(dut, 0.0, "throughput")
    b.randomize()
    cfg, bb, base = b.cfg, b.bb, b.cfg.mem_base
    n = 32
    cases = [
        ("load 1-beat rows, SRAM stride 0", Dma(DmaFunc.LOAD, repeat=n, sram_addr=0,
                                                sram_stride=0, mem_addr=base + 0x100,
                                                mem_stride=bb, size=bb)),
        ("load 1-beat rows, SRAM stride 1", Dma(DmaFunc.LOAD, repeat=16, sram_addr=0,
                                                sram_stride=1, mem_addr=base + 0x100,
                                                mem_stride=bb, size=bb)),
        ("store 1-beat rows", Dma(DmaFunc.STORE, repeat=n, sram_addr=0, sram_stride=0,
                                  mem_addr=base + 0x800, mem_stride=bb, size=bb)),
        ("load full acc rows", Dma(DmaFunc.LOAD, repeat=cfg.acc_rows, sram_addr=0,
                                   sram_stride=1, is_accum=True, mem_addr=base + 0x1000,
                                   mem_stride=cfg.acc_row_bytes, size=cfg.acc_row_bytes)),
        ("store full acc rows", Dma(DmaFunc.STORE, repeat=cfg.acc_rows, sram_addr=0,
                                    sram_stride=1, is_accum=True, mem_addr=base + 0x2000,
                                    mem_stride=cfg.acc_row_bytes, size=cfg.acc_row_bytes)),
    ]
    problems = []
    for what, ins in cases:
        m = b.golden()
        m.dma(ins)
        await b.run([ins], cycle_limit(cfg, [ins], 0), what)
        cycles = b.done_cycles[-1] - b.accept_cycles[-1]
        beats = ins.repeat * (ins.size // bb)
        dut._log.info("%s: %d rows, %d beats in %d cycles (accept to done)", what, ins.repeat,
                      beats, cycles)
        # one beat per cycle per port at best (an SRAM port shared by all),
        # plus the command / AXI / slave latency; with fewer than 8 bursts in
        # flight (dma_outstanding) a burst of one beat waits for one issued
        # dma_outstanding bursts before, so at most 8 / dma_outstanding
        # cycles a beat (8 cycles covers the slave's AR-to-R and AW-to-B
        # round trips)
        per_beat = max(1, 8 // cfg.dma_outstanding)
        bound = beats * per_beat + 16
        if cycles > bound:
            problems.append(f"{what}: {beats} beats took {cycles} cycles (> {bound})")
        problems += b.compare(m, what)
    fail(problems + b.problems(), "throughput")


@cocotb.test()
async def dma_second_load(dut):
    """Two LOADs back to back into the scratchpad: the second is in flight
    with the first exactly when fsa/hw/dmarules.py allows it (disjoint rows,
    overlapping rows, a negative stride, whole rows of several beats); the
    SRAM ends as in the golden model (the later LOAD wins a row both
    write), without and with pauses on every channel."""
    b = await start_bench(dut, 0.0, "second load")
    cfg, bb, base = b.cfg, b.bb, b.cfg.mem_base
    R, srb = min(8, cfg.spad_rows // 4), cfg.spad_row_bytes

    def ld(sa, n, stride=1, size=bb, mem=0x400):
        return Dma(DmaFunc.LOAD, repeat=n, sram_addr=sa, sram_stride=stride,
                   mem_addr=base + mem, mem_stride=srb, size=size)
    cases = [("disjoint", ld(0, R), ld(R, R, mem=0x4000)),
             ("overlapping", ld(0, R), ld(R // 2, R, mem=0x4000)),
             ("negative stride, disjoint", ld(2 * R - 1, R, -1), ld(2 * R, R, mem=0x4000)),
             ("negative stride, overlapping", ld(2 * R - 1, R, -1), ld(R + 1, R, mem=0x4000)),
             ("whole rows, disjoint", ld(0, R, size=srb), ld(R, R, size=srb, mem=0x4000)),
             ("whole rows, same rows", ld(0, R, size=srb), ld(0, R, size=srb, mem=0x4000)),
             ("one row over and over, then disjoint", ld(0, R, 0), ld(R, R, mem=0x4000)),
             ("disjoint, then one row over and over", ld(0, R), ld(R, R, 0, mem=0x4000))]
    problems, _ = await run_pairs(b, cases, second_load_expected)
    fail(problems + b.problems(), "second load")


@cocotb.test()
async def dma_load_store(dut):
    """A LOAD and a STORE back to back, in both orders: in flight together
    exactly when ``load_store_expected`` says (other SRAM and disjoint
    bytes, bytes that touch without overlapping; not the same SRAM, not
    overlapping bytes, not a LOAD of the bytes the STORE before it writes,
    not a STORE over bytes the LOAD before it reads, with positive and
    negative strides); the SRAMs and the memory end as in the golden model,
    which runs them one after the other, without and with pauses on every
    channel."""
    b = await start_bench(dut, 0.0, "load store")
    cfg, bb, base = b.cfg, b.bb, b.cfg.mem_base
    R = min(8, cfg.spad_rows // 4, cfg.acc_rows // 2)
    srb, arb = cfg.spad_row_bytes, cfg.acc_row_bytes

    def op(func, acc, mem, stride=None, sa=0, n=R):
        rb = arb if acc else srb
        st = rb if stride is None else stride
        return Dma(func, repeat=n, sram_addr=sa + (n - 1 if st < 0 else 0), sram_stride=1
                   if st >= 0 else -1, is_accum=acc, mem_addr=base + mem, mem_stride=st, size=rb)
    L, S = DmaFunc.LOAD, DmaFunc.STORE
    far = 0x4000
    cases = [
        ("load spad, store acc, disjoint", op(L, False, 0x400), op(S, True, far)),
        ("store acc, load spad, disjoint", op(S, True, far), op(L, False, 0x400)),
        ("load acc, store spad, disjoint", op(L, True, 0x400), op(S, False, far)),
        ("load spad, store acc, touching", op(L, False, 0x400),
         op(S, True, 0x400 + R * srb)),
        ("store acc, load spad below it, negative stride", op(S, True, 0x400 + R * arb),
         op(L, False, 0x400, stride=-srb)),
        ("load spad, store acc, same SRAM side", op(L, False, 0x400), op(S, False, far, sa=R)),
        ("load spad, store acc over its bytes", op(L, False, 0x400), op(S, True, 0x400 + srb)),
        ("store acc, load spad of its bytes", op(S, True, 0x400), op(L, False, 0x400 + bb)),
        ("store acc, load spad of its bytes, negative strides", op(S, True, 0x800, stride=-arb),
         op(L, False, 0x800 - 2 * arb, stride=-srb)),
        ("load spad, store acc, last byte shared", op(L, False, 0x400),
         op(S, True, 0x400 + R * srb - bb)),
    ]
    problems, together = await run_pairs(b, cases, load_store_expected)
    if cfg.dma_rw_overlap and not together:
        problems.append("no LOAD and STORE were ever in flight together")
    fail(problems + b.problems(), "load store")


@cocotb.test()
async def dma_errors(dut):
    """Each check error sets err with the golden model's code within a bounded
    number of cycles, leaves busy low, and leaves the SRAMs and memory as the
    golden model (rows before the failing one done); a later command is
    accepted and completes without traffic."""
    b = await start_bench(dut, 0.2, "errors")
    problems = []
    names = fsa_dma.ERR_NAMES
    for name, ins, code in error_cases(b.cfg):
        await b.reset()
        b.randomize()
        m = b.golden()
        try:
            m.dma(ins, 0)
            got_gold = "NONE"
        except MachineError as e:
            got_gold = e.code
        if got_gold != code:
            problems.append(f"{name}: the golden model says {got_gold}, the case expects {code}")
        before = b.marks()
        await b.run([ins], 300 + 20 * ins.repeat * max(1, ins.size // b.bb), name)
        err, hw = int(b.dut.err.value), names.get(int(b.dut.err_code.value), "?")
        if not err or hw != code:
            problems.append(f"{name}: err={err} code={hw}, expected {code}")
        problems += b.compare(m, name)
        # a later (legal) command completes at once, no traffic, the code stays
        marks = b.marks()
        code0 = int(b.dut.err_code.value)
        t0 = b.cyc
        await b.run([Dma(DmaFunc.LOAD, repeat=2, mem_addr=b.cfg.mem_base, mem_stride=b.bb,
                         size=b.bb)], 20, f"{name}: command after the error")
        if b.marks() != marks:
            problems.append(f"{name}: bursts issued after the error")
        if b.done_cycles[-1] - b.accept_cycles[-1] != 3:
            problems.append(f"{name}: the command after the error took "
                            f"{b.done_cycles[-1] - b.accept_cycles[-1]} cycles to done, not 3")
        if int(b.dut.err_code.value) != code0 or not int(b.dut.err.value):
            problems.append(f"{name}: err/err_code changed by the next command")
        dut._log.info("%s: %s after %d bursts; next command done in %d cycles", name, hw,
                      sum(len(m1.ar) + len(m1.aw) for m1 in b.mons) -
                      sum(a + w for a, w in before), b.cyc - t0)
    fail(problems + b.problems(), "error cases")


@cocotb.test()
async def dma_axi_errors(dut):
    """SLVERR / DECERR on a read beat and on a write burst: err with AXI_RD_ERR /
    AXI_WR_ERR, every owed beat and response drained, busy low, no hang; the
    injected error really was answered (the memory's log).  Two LOADs in
    flight with an error in the first / the second, and a LOAD and a STORE in
    either order with an error on either: ``err_slot`` names it."""
    b = await start_bench(dut, 0.2, "axierr")
    cfg = b.cfg
    problems = []
    srb, arb = cfg.spad_row_bytes, cfg.acc_row_bytes
    base = cfg.mem_base
    rd = Dma(DmaFunc.LOAD, repeat=cfg.acc_rows, sram_addr=0, sram_stride=1, is_accum=True,
             mem_addr=base + 0x1000, mem_stride=arb, size=arb)
    wr = Dma(DmaFunc.STORE, repeat=8, sram_addr=0, sram_stride=1, mem_addr=base + 0x2000,
             mem_stride=srb, size=srb)
    bad_rd = base + 0x1000 + 2 * arb + b.bb * (arb // b.bb - 1)    # last beat of row 2
    bad_wr = base + 0x2000 + 3 * srb                                # first beat of row 3
    cases = [   # name, instruction, fault, expected code
        ("slverr_read", rd, Fault("read", bad_rd, bad_rd + b.bb), "AXI_RD_ERR"),
        ("slverr_write", wr, Fault("write", bad_wr, bad_wr + b.bb), "AXI_WR_ERR"),
        ("decerr_read_first_beat", rd, Fault("read", bad_rd, bad_rd + b.bb, resp="DECERR",
                                             beat="first"), "AXI_RD_ERR"),
        ("decerr_write_last_beat", wr, Fault("write", bad_wr, bad_wr + b.bb, resp="DECERR",
                                             beat="last"), "AXI_WR_ERR"),
    ]
    for name, ins, fault, code in cases:
        await b.reset()
        b.randomize()
        b.faults.add(fault)
        try:
            await b.run([ins], 400 + 40 * ins.repeat * max(1, ins.size // b.bb), name)
            injected = list(b.faults.injected)
        finally:
            b.faults.clear()
        if not injected or any(x[4] != fault.resp for x in injected):
            problems.append(f"{name}: the memory injected {injected}, expected {fault.resp}")
        err, hw = int(b.dut.err.value), fsa_dma.ERR_NAMES.get(int(b.dut.err_code.value), "?")
        if not err or hw != code:
            problems.append(f"{name}: err={err} code={hw}, expected {code}")
        # drained: every issued burst's data went through
        for mon, ram in zip(b.mons, b.rams):
            beats_aw = sum(x.beats for x in mon.aw)
            if mon.wbeats != beats_aw:
                problems.append(f"{name}: {mon.prefix}: {mon.wbeats} W beats for {beats_aw} "
                                f"AW beats")
        marks = b.marks()
        await b.run([ins], 20, f"{name}: command after the error")
        if b.marks() != marks:
            problems.append(f"{name}: bursts issued after the error")
        dut._log.info("%s: %s", name, hw)
    # two LOADs in flight (when fsa/hw/dmarules.py allows it; disjoint rows): an
    # AXI error names the queue slot of the instruction whose beat it was
    # (slots are taken in turn from 0 after a reset: the first LOAD has 0)
    R = min(8, cfg.spad_rows // 4)
    l1 = Dma(DmaFunc.LOAD, repeat=R, sram_addr=0, sram_stride=1, mem_addr=base + 0x1000,
             mem_stride=srb, size=srb)
    l2 = Dma(DmaFunc.LOAD, repeat=R, sram_addr=R, sram_stride=1, mem_addr=base + 0x3000,
             mem_stride=srb, size=srb)
    want_both = second_load_expected(cfg, l1, l2)
    limit = 400 + 40 * 2 * R * max(1, srb // b.bb)     # cycles for a pair of R-row instructions
    b.set_stalls(0.0)
    for which, addr, slot in (("first", base + 0x1000 + R * srb - b.bb, 0),
                              ("second", base + 0x3000, 1)):
        name = f"two loads, SLVERR in the {which}"
        both, err, hw, got_slot, injected = await pair_with_fault(
            b, [l1, l2], Fault("read", addr, addr + b.bb), name, limit)
        if not injected:
            problems.append(f"{name}: the memory injected nothing")
        if both != want_both:
            problems.append(f"{name}: in flight together {both}, expected {want_both}")
        if not err or hw != "AXI_RD_ERR" or got_slot != slot:
            problems.append(f"{name}: err={err} code={hw} err_slot={got_slot}, expected "
                            f"AXI_RD_ERR in slot {slot}")
        for mon in b.mons:
            if mon.rbeats != sum(x.beats for x in mon.ar):
                problems.append(f"{name}: {mon.prefix}: {mon.rbeats} R beats for "
                                f"{sum(x.beats for x in mon.ar)} AR beats")
        dut._log.info("%s: %s slot %d (in flight together: %s)", name, hw, got_slot, both)
    # a LOAD and a STORE (in flight together with dma_rw_overlap): an error on
    # either names its slot, whichever of the two came first
    ld = Dma(DmaFunc.LOAD, repeat=R, sram_addr=0, sram_stride=1, mem_addr=base + 0x1000,
             mem_stride=srb, size=srb)
    R2 = min(R, cfg.acc_rows)
    st = Dma(DmaFunc.STORE, repeat=R2, sram_addr=0, sram_stride=1, is_accum=True,
             mem_addr=base + 0x3000, mem_stride=arb, size=arb)
    last_rd = base + 0x1000 + R * srb - b.bb             # the LOAD's last beat
    first_wr = base + 0x3000                               # the STORE's first beat
    for order in ((ld, st), (st, ld)):
        for kind, addr, code in (("read", last_rd, "AXI_RD_ERR"),
                                 ("write", first_wr, "AXI_WR_ERR")):
            victim = ld if kind == "read" else st
            slot = order.index(victim)
            name = (f"{'load, store' if order[0] is ld else 'store, load'}: SLVERR on the "
                    f"{kind}")
            both, err, hw, got_slot, injected = await pair_with_fault(
                b, list(order), Fault(kind, addr, addr + b.bb), name, limit)
            if not injected:
                problems.append(f"{name}: the memory injected nothing")
            if both and not load_store_expected(cfg, *order):
                problems.append(f"{name}: in flight together, expected not")
            if not err or hw != code or got_slot != slot:
                problems.append(f"{name}: err={err} code={hw} err_slot={got_slot}, expected "
                                f"{code} in slot {slot}")
            for mon in b.mons:
                if mon.rbeats != sum(x.beats for x in mon.ar) or \
                        mon.wbeats != sum(x.beats for x in mon.aw):
                    problems.append(f"{name}: {mon.prefix}: not drained")
            dut._log.info("%s: %s slot %d (in flight together: %s)", name, hw, got_slot, both)
    fail(problems + b.problems(), "AXI error cases")
