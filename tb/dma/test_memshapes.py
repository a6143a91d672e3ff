"""The multi-port memory shapes of the large presets (``fsa.config.memory_system``:
scratchpad rows of ``b > 1`` AXI beats get ``min(2b, 8)`` AXI ports, twice
as many scratchpad banks (at most 16) and one accumulator bank per port,
each bank with its own narrow port, a LOAD and a STORE in flight at once)
on small arrays, where a simulator build is cheap: the same ``b`` is
reached with a narrower AXI bus (4x4 fp16 rows on a 32-bit bus are 2 beats,
as 64x64 fp16 rows on the presets' 512-bit bus, and their fp32 accumulator
rows 4 beats, as the preset's).

* ``test_shape_matches_the_presets``: each small shape is the one the
  presets with the same ``b`` get (no simulator);
* ``test_dma_shape``: the DMA unit bench (``tb/dma/tb_dma.py``) on each shape;
* ``test_attention_shape``: attention through ``fsa_top`` bit-equal to the
  golden model and the device counters equal to the cycle model's
  (``tb/attention/test_attention.py``'s ``check_device``): the UD kernel on the b = 2
  and b = 8 UD shapes and the reference kernel on the b = 2 UD build (one
  build each); ``FULL=1`` adds b = 4 and the reference-dataflow builds;
* ``test_random_dma_programs_shape``: random DMA-only programs, memory
  equal to the golden model's and counters equal to the cycle model's (two
  LOADs, or with ``dma_rw_overlap`` a LOAD and a STORE, in flight together);
* ``test_fast_memory_with_loads_and_stores_at_once``: the fast memory path
  equals cocotbext-axi's AxiRam while a LOAD and a STORE share the ports.

The shapes carry the presets' ``dma_rw_overlap``; ``LONG`` keeps it off.
``ONE`` is a one-port config with the per-port DMA
(``fsa.hw.dmarules.per_port_dma``: two banks in each SRAM, each with its own
narrow port, a LOAD and a STORE at once, merged bursts); the unit bench,
UD attention, the random DMA programs, the fast memory path and the long
fetched programs run on it too.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

from fsa import config as fconfig
from fsa.cycle import model as cm
from fsa import isa, kernels, numerics as nx
from fsa.engines import GoldenEngine
from fsa.golden.machine import Machine
from fsa.hw.dmarules import bursts
from fsa.isa import Dma, DmaFunc, Fence
from fsa.report import fa3_inputs
from fsa.simdev import program_address, run_on_device

from tb.common import coverage_report as cov
from fsa import simrun
from tb.common.device import check_device
from tb.common.tier import FULL, SEED
from tb.dma.verilog import dma_verilog


def shape(base: str, axi_bits: int, ud: bool = False, **kw) -> fconfig.FSAConfig:
    """`base` on an `axi_bits` bus with memory_system's shape for rows of
    ``b = row bits / axi_bits`` beats (``min(2b, 8)`` ports, twice as many
    scratchpad banks (at most 16), one accumulator bank per port)."""
    cfg = fconfig.get(base)
    b = cfg.spad_row_bytes * 8 // axi_bits
    ports = min(fconfig.MAX_PRESET_PORTS, 2 * b)
    name = f"{base[:-len('Config')]}Axi{axi_bits}B{b}{'Ud' if ud else ''}Config"
    kw.setdefault("dma_burst_beats", fconfig.burst_beats(b, ports))
    kw.setdefault("dma_rw_overlap", True)
    return cfg.replace(name=name, axi_data_bits=axi_bits, mem_ports=ports,
                       spad_banks=min(16, 2 * ports), acc_banks=ports,
                       dataflow="ud" if ud else "reference", **kw)


#: b -> the small config with that shape: the presets' beats per row for
#: both SRAMs on the smallest array that has them (a device build of 4x4 is
#: a third of 8x8's).  b = 2: 4x4 fp16 on 32 bits (scratchpad rows of 2
#: beats, accumulator rows of 4: the 64x64 fp16 preset's on 512 bits);
#: b = 4: 4x4 fp32 on 32 bits (4 and 4); b = 8: 8x8 fp32 on 32 bits (8 and 8:
#: 4x4 has no such rows on a bus of 32 bits or more).  acc_rows 16 for 8
#: accumulator banks of two rows each, spad_rows 32 for 16 scratchpad banks
SHAPES = {2: shape("FSA4X4Fp16Config", 32),
          4: shape("FSA4X4Fp32Config", 32, acc_rows=16, spad_rows=32),
          8: shape("FSA8X8Fp32Config", 32, acc_rows=16)}
#: a b = 2 shape on the 4x4 fp32 array (16-byte rows on a 64-bit bus: 2
#: beats in both SRAMs, where SHAPES[2] has 8-byte and 16-byte rows) with
#: bursts of up to 256 beats (rows merged up to a 4 KiB
#: boundary; the presets' rule gives it 8-beat bursts) and 256 scratchpad
#: rows (random_dma_program's fill LOAD and dump STORE of the scratchpad are
#: then two 256-beat bursts each), and a memory window
#: that ends 64 bytes before a 4 KiB boundary, so that tb_dma's
#: "mem_range_end" LOAD (4 contiguous rows from 2 rows before the end) would
#: merge past the window: the DMA moves those rows alone, and the first row
#: outside fails as in the golden model.  It keeps the reference's "a STORE
#: waits until nothing is in flight" (dma_rw_overlap off), so that a
#: multi-port device without the overlap stays covered
LONG = shape("FSA4X4Fp32Config", 64, dma_burst_beats=256, spad_rows=256,
             dma_rw_overlap=False).replace(
    name="FSA4X4Fp32Axi64B2M256Config",
    mem_size=fconfig.get("FSA4X4Fp32Config").mem_size - 64)


#: one AXI port with the per-port DMA (fsa.hw.dmarules.per_port_dma): the 4x4
#: fp16 preset (one-beat rows on its 64-bit bus, program fetch a large share
#: of the read channel) with two accumulator banks, so that both SRAMs get a
#: narrow port per bank, a LOAD and a STORE in flight at once and rows
#: merged into bursts of up to 16 beats
ONE = fconfig.get("FSA4X4Fp16Config").replace(
    name="FSA4X4Fp16OnePortOvConfig", acc_banks=2, dma_rw_overlap=True, dma_burst_beats=16)


def _shape(b):
    return {"long": LONG, "one": ONE}[b] if isinstance(b, str) else SHAPES[b]


def _ud(b):
    """The UD build of shape `b`."""
    base = _shape(b)
    return base.replace(name=base.name.replace("Config", "UdConfig"), dataflow="ud")


def test_shape_matches_the_presets():
    """Each small shape is what memory_system gives the presets whose rows
    have the same number of beats (and every b the presets use is here)."""
    seen = set()
    for name in fconfig.names():
        cfg = fconfig.get(name)
        b = cfg.spad_row_bytes * 8 // cfg.axi_data_bits
        if cfg.mem_ports == 1 or "TwoPort" in name:
            continue
        seen.add(b)
        small = SHAPES[b]
        assert small.spad_row_bytes * 8 // small.axi_data_bits == b
        assert (cfg.mem_ports, cfg.spad_banks, cfg.acc_banks) == (
            small.mem_ports, small.spad_banks, small.acc_banks), name
        # merged bursts: the presets' rule on the small shape's tile
        assert cfg.dma_burst_beats == fconfig.burst_beats(b, cfg.mem_ports), name
        assert small.dma_burst_beats == fconfig.burst_beats(b, small.mem_ports)
        assert cfg.dma_rw_overlap and small.dma_rw_overlap, name
    assert seen == set(SHAPES)


@pytest.mark.sim
@pytest.mark.parametrize("b", sorted(SHAPES) + ["long", "one"])
def test_dma_shape(b):
    cfg = _shape(b)
    params = dict(config=cfg.to_dict(), random_instrs=1000 if FULL else 100)
    simrun.run("fsa_dma", dma_verilog(cfg), "tb.dma.tb_dma",
               extra_env={"FSA_DMA_PARAMS": json.dumps(params)}, timeout_s=600)


@pytest.mark.sim
@pytest.mark.parametrize("b,ud,kernel", [
    (2, True, "ud"), (8, True, "ud"),
    # the reference kernel on the b = 2 UD build (the reference functions are
    # unchanged there: tb/attention/test_ud_attention.py checks that such a run equals
    # the reference hardware's, bits and counters); FULL=1 builds the
    # reference-dataflow shapes too
    (2, True, "reference"),
    ("one", True, "ud"),
    pytest.param(4, True, "ud", marks=pytest.mark.full),
    pytest.param(2, False, "reference", marks=pytest.mark.full),
    pytest.param(4, False, "reference", marks=pytest.mark.full),
    pytest.param(8, False, "reference", marks=pytest.mark.full)])
def test_attention_shape(b, ud, kernel):
    if (b == 4 or not ud) and not FULL:
        pytest.skip("long sweep: FULL=1")
    cfg = _ud(b) if ud else _shape(b)
    sq, skv = 16, 24
    rng = np.random.default_rng(SEED)
    q, k, v = (nx.from_float64(fa3_inputs(rng, (n, cfg.sa_rows)), cfg.e_type) for n in (sq, skv, skv))
    prog = kernels.attention(cfg, sq, skv, kernel=kernel)
    assert prog.meta.get("kernel", "reference") == kernel, prog.meta
    gold = GoldenEngine(cfg).run(prog, {"Q": q, "K": k, "V": v})
    image = prog.memory_image({"Q": q, "K": k, "Vt": np.ascontiguousarray(v.T)})
    res = run_on_device(cfg, prog.words(), image, prog.output_regions(), max_cycles=2_000_000,
                        seed=SEED)
    _, checked = check_device(cfg, prog, gold, res, f"{cfg.name} {sq}x{skv}")
    assert checked
    cov.record(prog, res["runs"][-1], config=cfg, cycles_checked=checked,
               what=f"{cfg.name} {sq}x{skv} ({kernel} kernel)")


def random_dma_program(cfg, rng, n: int, region: int):
    """(instructions, memory image, dump) of one random DMA-only program on
    `cfg`: LOADs and STOREs of random rows (strides 1, 2, -1 and 0), whole
    and partial rows, memory strides of a row, of the size, of two rows and
    negative, into and out of both SRAMs, back to back (the DMA's own rules
    order them: a second LOAD is in flight only with disjoint rows, a STORE
    waits for the queue to empty, or with ``dma_rw_overlap`` joins a LOAD of
    the other SRAM and other bytes); then both SRAMs are stored.  The data
    lives at ``mem_base + region * 0x10000``: 16 KiB of random bytes to
    load from, 16 KiB the STOREs write, then the SRAM dumps; with
    ``dma_rw_overlap`` a quarter of the instructions use the other
    direction's area (a STORE over bytes LOADs read, a LOAD of bytes STOREs
    wrote), where the DMA must keep program order."""
    bb = cfg.axi_data_bits // 8
    base = cfg.mem_base + region * 0x10000
    src, out, dump = base, base + 0x4000, base + 0x8000
    span = 0x4000
    srb, arb = cfg.spad_row_bytes, cfg.acc_row_bytes
    # the scratchpad filled from src first (its rows contiguous: one burst per
    # row, or merged ones up to dma_burst_beats)
    ins = [Dma(DmaFunc.LOAD, repeat=cfg.spad_rows, sram_addr=0, sram_stride=1, mem_addr=src,
               mem_stride=srb, size=srb)]
    for _ in range(n):
        accum = bool(rng.integers(0, 4) == 0)
        rows, rb = (cfg.acc_rows, cfg.acc_row_bytes) if accum else (cfg.spad_rows,
                                                                     cfg.spad_row_bytes)
        store = bool(rng.integers(0, 3) == 0)
        repeat = int(rng.integers(1, min(rows, 2 * cfg.sa_rows) + 1))
        sstride = int(rng.choice([1, 1, 1, 2, -1, 0]))
        if sstride == 2 and 2 * (repeat - 1) >= rows:
            sstride = 1
        lo, hi = (0, rows - 1 - sstride * (repeat - 1)) if sstride >= 0 else \
            (repeat - 1, rows - 1)
        size = rb if rng.integers(0, 3) else bb * int(rng.integers(1, rb // bb + 1))
        mstride = int(rng.choice([rb, rb, size, 2 * rb, -rb]))
        ext = abs(mstride) * (repeat - 1) + size
        for _ in range(20):     # no row across a 4 KiB boundary (a split burst: not modelled)
            first = int(rng.integers(0, (span - ext) // bb + 1)) * bb
            if mstride < 0:
                first += abs(mstride) * (repeat - 1)
            if all((first + i * mstride) // 4096 == (first + i * mstride + size - 1) // 4096
                   for i in range(repeat)):
                break
        else:
            mstride, size, first = rb, rb, rb * int(rng.integers(0, (span - rb * repeat) // rb + 1))
        area = out if store else src
        if cfg.dma_rw_overlap and rng.integers(0, 4) == 0:
            area = src if store else out    # bytes the other direction uses: the hazard rule
        ins.append(Dma(DmaFunc.STORE if store else DmaFunc.LOAD, repeat=repeat,
                       sram_addr=int(rng.integers(lo, hi + 1)), sram_stride=sstride,
                       is_accum=accum, mem_addr=area + first,
                       mem_stride=mstride, size=size))
    ins += [Dma(DmaFunc.STORE, repeat=cfg.spad_rows, sram_addr=0, sram_stride=1,
                mem_addr=dump, mem_stride=srb, size=srb),
            Dma(DmaFunc.STORE, repeat=cfg.acc_rows, sram_addr=0, sram_stride=1, is_accum=True,
                mem_addr=dump + cfg.spad_rows * srb, mem_stride=arb, size=arb),
            Fence(dma=True, stop=True)]
    n_dump = 0x4000 + cfg.spad_rows * srb + cfg.acc_rows * arb
    return ins, [(src, rng.bytes(span))], (out, n_dump)


@pytest.mark.sim
@pytest.mark.parametrize("b", [2, 8, "long", "one", "FSA8X8Fp16Config"])
def test_random_dma_programs_shape(b):
    """Random DMA-only programs (random_dma_program) on the multi-port UD
    builds of test_attention_shape, on the one-port one with the per-port
    DMA (ONE), and on the one-port 8x8 preset (two banks, one shared narrow
    port), one after another on one device: the memory each leaves equals
    the golden model's byte for byte, and each run's ``exec`` and
    ``dma_active`` counters equal the cycle model's (two LOADs in flight
    exactly as fsa/hw/dmarules.py and fsa/cycle/dma.py say).  This found the
    cycle model placing a STORE from the scratchpad in the accumulator's
    banks."""
    cfg = fconfig.get(b) if b.__class__ is str and b not in ("long", "one") else _ud(b)
    rng = np.random.default_rng(SEED * 100 + (b if isinstance(b, int) else 0))
    n_prog = 12 if FULL else 4
    progs = [random_dma_program(cfg, rng, 24, k + 1) for k in range(n_prog)]
    if cfg.dma_burst_beats:     # merged bursts really happen (fsa.hw.dmarules.bursts)
        bb = cfg.axi_data_bits // 8
        longest = max(n * (x.size // bb) for ins, _, _ in progs for x in ins
                      if isinstance(x, Dma) for _, n in bursts(x, bb, cfg.dma_burst_beats))
        # (the fill LOAD and the dump STORE of the scratchpad reach the cap)
        assert longest == cfg.dma_burst_beats, longest
    m = Machine(cfg)
    for _, image, _ in progs:
        for addr, data in image:
            m.mem.write(addr, data)
    for ins, _, _ in progs:
        m.run(ins)
    res = run_on_device(cfg, [], [seg for _, image, _ in progs for seg in image],
                        [d for _, _, d in progs], programs=[isa.encode(i) for i, _, _ in progs],
                        max_cycles=400_000, seed=SEED)
    assert len(res["runs"]) == n_prog, res["runs"]
    seconds = mixed = 0
    for k, ((ins, _, (addr, n)), run, got) in enumerate(zip(progs, res["runs"], res["dumps"])):
        what = f"{cfg.name} DMA program {k} (seed {SEED})"
        assert run["state"] == "done", (what, run["state"], run["error"], run["error_index"])
        want = m.mem.read(addr, n)
        diff = np.flatnonzero(np.frombuffer(want, np.uint8) != np.frombuffer(got, np.uint8))
        assert diff.size == 0, f"{what}: bytes at offsets {diff[:8].tolist()} differ from golden"
        model = cm.simulate(cfg, ins)
        assert (run["counters"]["exec"], run["counters"]["dma_active"]) == (
            model.cycles, model.counters["dma_active"]), (what, run["counters"])
        dmas = [x for x in ins if isinstance(x, Dma)]
        for (x0, (a0, d0)), (x1, (a1, _)) in zip(zip(dmas, model.dma_spans),
                                                 zip(dmas[1:], model.dma_spans[1:])):
            if a1 < d0:
                seconds += 1
                mixed += x0.func != x1.func
    # the stream really had LOADs in flight together (else the test shows
    # little), and with dma_rw_overlap a LOAD and a STORE
    assert seconds > 0, "no two DMA instructions were in flight together"
    assert mixed > 0 or not cfg.dma_rw_overlap, "no LOAD and STORE were in flight together"


@pytest.mark.sim
@pytest.mark.parametrize("b", [2, "one"])
def test_fast_memory_with_loads_and_stores_at_once(b):
    """The fast memory path (fsa/fastmem.py: the slaves inside the
    simulation) answers a LOAD and a STORE in flight on one port at once
    as cocotbext-axi's AxiRam does: random DMA programs on the b = 2 shape
    and on ONE (dma_rw_overlap) give the same counters and the same bytes on
    both."""
    if simrun.get_sim() != "verilator":
        pytest.skip("the fast memory path is Verilator only")
    cfg = _ud(b)
    assert cfg.dma_rw_overlap
    rng = np.random.default_rng(SEED * 100 + 11)
    progs = [random_dma_program(cfg, rng, 24, k + 1) for k in range(3)]
    runs = {m: run_on_device(cfg, [], [seg for _, image, _ in progs for seg in image],
                             [d for _, _, d in progs],
                             programs=[isa.encode(i) for i, _, _ in progs], max_cycles=400_000,
                             seed=SEED, mem_model=m) for m in ("axi", "fast")}
    mixed = 0
    for k, (ins, _, _) in enumerate(progs):
        a, f = runs["axi"]["runs"][k], runs["fast"]["runs"][k]
        assert a["state"] == f["state"] == "done", (k, a["state"], f["state"])
        assert f["counters"] == a["counters"], (k, f["counters"], a["counters"])
        spans = cm.simulate(cfg, ins).dma_spans
        dmas = [x for x in ins if isinstance(x, Dma)]
        mixed += sum(1 for i in range(len(dmas) - 1)
                     if spans[i + 1][0] < spans[i][1] and dmas[i].func != dmas[i + 1].func)
    assert runs["fast"]["dumps"] == runs["axi"]["dumps"]
    assert mixed > 0, "no LOAD and STORE were in flight together"


@pytest.mark.sim
@pytest.mark.parametrize("b", [2, "one"])
@pytest.mark.parametrize("kind", ["alternating", "random"])
def test_long_dma_program_fetched_while_loads_and_stores_overlap(kind, b):
    """A DMA program longer than the instruction queue on the b = 2 UD
    shape and on ONE (one port: the fetch bursts and the LOADs share its
    read channel), fetched by the device over port 0's read channel while LOADs and
    STOREs are in flight, together where dma_rw_overlap allows (port 0's
    read arbiter keeps their directions in order: a fetch burst waits for
    the LOADs only): STOREs of the accumulator alternating with LOADs into
    the scratchpad, and a random program; memory equal to the golden
    model's, counters equal to the cycle model's (with program fetch)."""
    cfg = _ud(b)
    rng = np.random.default_rng(SEED * 100 + 12)
    if kind == "random":
        ins, image, (addr, n) = random_dma_program(cfg, rng, 300, 1)
    else:
        srb, arb = cfg.spad_row_bytes, cfg.acc_row_bytes
        addr, n = cfg.mem_base + 0x10000, 0x8000
        ins = []
        r = min(16, cfg.spad_rows // 3)         # LOAD rows (three areas of the scratchpad)
        for k in range(150):
            ins += [Dma(DmaFunc.STORE, repeat=8, sram_addr=0, sram_stride=1, is_accum=True,
                        mem_addr=addr + 0x4000 + (k % 8) * 8 * arb, mem_stride=arb, size=arb),
                    Dma(DmaFunc.LOAD, repeat=r, sram_addr=(k % 3) * r, sram_stride=1,
                        mem_addr=addr + (k % 16) * 16 * srb, mem_stride=srb, size=srb)]
        ins.append(Fence(dma=True, stop=True))
        image = [(addr, rng.bytes(n))]
    words = isa.encode(ins)
    assert len(words) > 2 * cfg.inst_queue_size
    m = Machine(cfg)
    for a, data in image:
        m.mem.write(a, data)
    m.run(ins)
    res = run_on_device(cfg, [], image, [(addr, n)], programs=[words], max_cycles=2_000_000,
                        seed=SEED, fetch=True)
    run = res["runs"][0]
    assert run["state"] == "done", (run["state"], run["error"], run["error_index"])
    got, want = res["dumps"][0], m.mem.read(addr, n)
    diff = np.flatnonzero(np.frombuffer(want, np.uint8) != np.frombuffer(got, np.uint8))
    assert diff.size == 0, f"bytes at offsets {diff[:8].tolist()} differ from golden"
    model = cm.simulate(cfg, ins, fetch=cm.FetchTiming(program_address(cfg, len(words))))
    assert (run["counters"]["exec"], run["counters"]["dma_active"]) == (
        model.cycles, model.counters["dma_active"]), run["counters"]
    dmas = [x for x in ins if isinstance(x, Dma)]
    sp = model.dma_spans
    assert any(sp[i + 1][0] < sp[i][1] and dmas[i].func != dmas[i + 1].func
               for i in range(len(dmas) - 1)), "no LOAD and STORE were in flight together"


@pytest.mark.sim
@pytest.mark.parametrize("b", [2, "one"])
def test_one_beat_stores_with_an_address_fifo(b):
    """STOREs of one-beat rows, also rows that overlap in memory (all on
    port 0, the last row wins), on ports that queue their AW addresses in a
    FIFO (merged bursts, dma_rw_overlap): the memory's write path loses
    nothing there (the one-beat STORE loss of fsa.cycle.timing.DmaTiming is
    the address register's), so the counters equal the cycle model's
    (which said 2 cycles more for 12 such rows before), and memory equals
    the golden model's."""
    cfg = _ud(b)
    bb = cfg.axi_data_bits // 8
    base = cfg.mem_base + 0x10000
    ins = [Dma(DmaFunc.STORE, repeat=12, sram_addr=0, sram_stride=1, mem_addr=base,
               mem_stride=0, size=bb),
           Dma(DmaFunc.STORE, repeat=12, sram_addr=1, sram_stride=1, mem_addr=base + 0x100,
               mem_stride=bb, size=bb),
           Dma(DmaFunc.STORE, repeat=6, sram_addr=0, sram_stride=1, is_accum=True,
               mem_addr=base + 0x400, mem_stride=0, size=bb),
           Fence(dma=True, stop=True)]
    m = Machine(cfg)
    m.run(ins)
    res = run_on_device(cfg, [], [(base, bytes(0x800))], [(base, 0x800)],
                        programs=[isa.encode(ins)], max_cycles=100_000, seed=SEED)
    run = res["runs"][0]
    assert run["state"] == "done", (run["state"], run["error"], run["error_index"])
    want = m.mem.read(base, 0x800)
    assert res["dumps"][0] == want, "memory differs from golden"
    model = cm.simulate(cfg, ins)
    assert (run["counters"]["exec"], run["counters"]["dma_active"]) == (
        model.cycles, model.counters["dma_active"]), (run["counters"], model.cycles)
