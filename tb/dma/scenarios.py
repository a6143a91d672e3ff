"""The DMA bench's instruction lists (tb/dma/tb_dma.py): the directed list,
random legal instructions, the check errors with their expected codes, and
when two instructions may be in flight together (fsa/hw/dmarules.py)."""
from __future__ import annotations

import random

from fsa.config import FSAConfig
from fsa.isa import Dma, DmaFunc

#: the regions of the window the tests initialise and compare (offsets)
LOW = (0, 0x10000)


def directed(cfg: FSAConfig) -> list[Dma]:
    """Loads and stores of several rows, strides of every sign, both SRAMs,
    partial rows, 4 KiB crossings and overlapping rows."""
    bb = cfg.axi_data_bits // 8
    srb, arb = cfg.spad_row_bytes, cfg.acc_row_bytes
    base = cfg.mem_base
    L, S = DmaFunc.LOAD, DmaFunc.STORE
    half_a = max(bb, arb // 2 // bb * bb)
    out = [
        # spad loads: positive stride, 4 rows, full rows
        Dma(L, repeat=4, sram_addr=0, sram_stride=1, mem_addr=base + 0x100, mem_stride=srb,
            size=srb),
        # negative SRAM stride, memory stride larger than a row
        Dma(L, repeat=5, sram_addr=12, sram_stride=-2, mem_addr=base + 0x400, mem_stride=3 * srb,
            size=srb),
        # negative memory stride
        Dma(L, repeat=3, sram_addr=4, sram_stride=1, mem_addr=base + 0x800, mem_stride=-2 * srb,
            size=srb),
        # memory stride 0: one memory row into several SRAM rows
        Dma(L, repeat=3, sram_addr=8, sram_stride=1, mem_addr=base + 0x900, mem_stride=0,
            size=srb),
        # SRAM stride 0: several memory rows into one SRAM row (the last wins)
        Dma(L, repeat=4, sram_addr=2, sram_stride=0, mem_addr=base + 0xA00, mem_stride=srb,
            size=srb),
        # acc loads: full rows, then partial rows (size < row)
        Dma(L, repeat=cfg.acc_rows, sram_addr=0, sram_stride=1, is_accum=True,
            mem_addr=base + 0x1000, mem_stride=arb, size=arb),
        Dma(L, repeat=2, sram_addr=cfg.acc_rows - 1, sram_stride=-1, is_accum=True,
            mem_addr=base + 0x2000, mem_stride=arb + bb, size=half_a),
        # acc stores: positive, negative, partial
        Dma(S, repeat=cfg.acc_rows, sram_addr=0, sram_stride=1, is_accum=True,
            mem_addr=base + 0x3000, mem_stride=arb, size=arb),
        Dma(S, repeat=3, sram_addr=3, sram_stride=-1, is_accum=True, mem_addr=base + 0x3800,
            mem_stride=-arb, size=half_a),
        # store with memory stride 0 (the last row wins) and overlapping rows
        Dma(S, repeat=3, sram_addr=0, sram_stride=1, is_accum=True, mem_addr=base + 0x3C00,
            mem_stride=0, size=arb),
        Dma(S, repeat=3, sram_addr=1, sram_stride=1, is_accum=True, mem_addr=base + 0x3D00,
            mem_stride=bb, size=arb),
        # spad store, SRAM stride 0 (one row to several places)
        Dma(S, repeat=3, sram_addr=5, sram_stride=0, mem_addr=base + 0x4000, mem_stride=srb,
            size=srb),
        # rows crossing 4 KiB boundaries (split bursts), load and store
        Dma(L, repeat=3, sram_addr=1, sram_stride=1, is_accum=True,
            mem_addr=base + 0x5000 - bb, mem_stride=0x1000, size=arb),
        Dma(S, repeat=2, sram_addr=2, sram_stride=1, is_accum=True,
            mem_addr=base + 0x7000 - arb + bb, mem_stride=0x1000, size=arb),
        # the last bytes of the window
        Dma(S, repeat=2, sram_addr=0, sram_stride=1, mem_addr=base + cfg.mem_size - 2 * srb,
            mem_stride=srb, size=srb),
        Dma(L, repeat=2, sram_addr=20, sram_stride=1, mem_addr=base + cfg.mem_size - 2 * srb,
            mem_stride=srb, size=srb),
        # many one-beat rows back to back
        Dma(L, repeat=16, sram_addr=cfg.spad_rows - 16, sram_stride=1, mem_addr=base + 0x8000,
            mem_stride=bb, size=bb),
        Dma(S, repeat=16, sram_addr=cfg.spad_rows - 16, sram_stride=1, mem_addr=base + 0x9000,
            mem_stride=bb, size=bb),
    ]
    return out


def random_instrs(cfg: FSAConfig, rng: random.Random, n: int) -> list[Dma]:
    """`n` random legal instructions inside the low test region."""
    bb = cfg.axi_data_bits // 8
    out = []
    while len(out) < n:
        accum = rng.random() < 0.5
        func = DmaFunc.STORE if rng.random() < 0.45 else DmaFunc.LOAD
        rows = cfg.acc_rows if accum else cfg.spad_rows
        rb = cfg.acc_row_bytes if accum else cfg.spad_row_bytes
        size = bb * rng.randint(1, rb // bb)
        rep = rng.randint(1, min(12, rows))
        sstr = rng.choice([0, 1, 1, -1, 2, -2, 3])
        lo_r = max(0, -sstr * (rep - 1))
        hi_r = rows - 1 - max(0, sstr * (rep - 1))
        if hi_r < lo_r:
            continue
        saddr = rng.randint(lo_r, hi_r)
        mstr = rng.choice([size, size, -size, 0, bb, 2 * size, 0x1000 - bb, -0x1000 + bb,
                           size + bb * rng.randint(0, 8)])
        span = abs(mstr) * (rep - 1) + size
        if span > LOW[1] - LOW[0] - 64:
            continue
        start = rng.randrange(0, LOW[1] - span, bb)
        maddr = cfg.mem_base + start + (abs(mstr) * (rep - 1) if mstr < 0 else 0)
        out.append(Dma(func, repeat=rep, sram_addr=saddr, sram_stride=sstr, is_accum=accum,
                       mem_addr=maddr, mem_stride=mstr, size=size))
    return out


def second_load_expected(cfg: FSAConfig, first: Dma, second: Dma) -> bool:
    """Whether the DMA accepts LOAD `second` while LOAD `first` is in
    flight (fsa/hw/dmarules.py): one port, rows of one beat; several ports (or
    one port with per-port beats, ``per_port_dma``), an SRAM with a narrow
    port per bank and disjoint rows."""
    from fsa.hw.dmarules import second_load_ok, several_port_rules, sram_bank_ports
    bb = cfg.axi_data_bits // 8
    if not several_port_rules(cfg):
        return first.size <= bb and second.size <= bb
    banks = cfg.acc_banks if second.is_accum else cfg.spad_banks
    return sram_bank_ports(cfg, banks) and second_load_ok(first, second)


def load_store_expected(cfg: FSAConfig, first: Dma, second: Dma) -> bool:
    """Whether the DMA accepts `second` while `first` is in flight, one a
    LOAD and the other a STORE: only with the config's ``dma_rw_overlap``,
    and then as :func:`fsa.hw.dmarules.load_store_ok` says (other SRAM,
    disjoint memory bytes)."""
    from fsa.hw.dmarules import load_store_ok
    return bool(cfg.dma_rw_overlap) and load_store_ok(first, second)


def error_cases(cfg: FSAConfig) -> list[tuple[str, Dma, str]]:
    """(name, instruction, expected code name); the golden model must agree."""
    bb = cfg.axi_data_bits // 8
    srb, arb = cfg.spad_row_bytes, cfg.acc_row_bytes
    base, end = cfg.mem_base, cfg.mem_base + cfg.mem_size
    L, S = DmaFunc.LOAD, DmaFunc.STORE
    return [
        ("mem_range_end", Dma(L, repeat=4, sram_addr=0, sram_stride=1, mem_addr=end - 2 * srb,
                              mem_stride=srb, size=srb), "MEM_RANGE"),
        ("mem_range_below", Dma(S, repeat=4, sram_addr=0, sram_stride=1, is_accum=True,
                                mem_addr=base + arb, mem_stride=-arb, size=arb), "MEM_RANGE"),
        ("mem_range_first", Dma(L, repeat=2, sram_addr=0, sram_stride=1,
                                mem_addr=base - 0x1000, mem_stride=srb, size=srb), "MEM_RANGE"),
        ("align_row1", Dma(L, repeat=3, sram_addr=0, sram_stride=1, is_accum=True,
                           mem_addr=base + 0x200, mem_stride=arb + bb // 2, size=arb),
         "DMA_ALIGN"),
        # (0x204 for beats of 8 bytes and more; 0x202 for 4-byte beats)
        ("align_row0", Dma(S, repeat=2, sram_addr=3, sram_stride=1,
                           mem_addr=base + 0x200 + min(4, bb // 2),
                           mem_stride=srb, size=srb), "DMA_ALIGN"),
        ("align_size", Dma(L, repeat=2, sram_addr=3, sram_stride=1, is_accum=True,
                           mem_addr=base + 0x200, mem_stride=arb, size=bb // 2), "DMA_ALIGN"),
        ("size_gt_row", Dma(L, repeat=1, sram_addr=0, sram_stride=1, mem_addr=base + 0x200,
                            mem_stride=0, size=srb + bb), "DMA_SIZE"),
        ("sram_range_last", Dma(L, repeat=3, sram_addr=cfg.spad_rows - 4, sram_stride=2,
                                mem_addr=base + 0x200, mem_stride=srb, size=srb), "DMA_SRAM_RANGE"),
        ("sram_range_neg", Dma(S, repeat=3, sram_addr=1, sram_stride=-1, is_accum=True,
                               mem_addr=base + 0x200, mem_stride=arb, size=arb), "DMA_SRAM_RANGE"),
        ("sram_range_first", Dma(S, repeat=1, sram_addr=cfg.acc_rows, sram_stride=0,
                                 is_accum=True, mem_addr=base + 0x200, mem_stride=0, size=arb),
         "DMA_SRAM_RANGE"),
    ]
