"""Calibration of the cycle model's DMA timing on the RTL.

:func:`calibrate_dma` runs DMA-only programs (:func:`dma_programs`: one LOAD
into the scratchpad or one STORE from the accumulator, 1-8 rows, one beat or
a whole row each, and two long STOREs of one-beat rows, which show the
memory's write rate for single-beat bursts, ``DmaTiming.store_single_group``)
on the simulated device and fits the two ``base`` latencies
of :class:`fsa.cycle.model.DmaTiming` so that :func:`fsa.cycle.model.simulate`
reproduces the device's ``exec`` counter; ``bench/utilisation.py`` records the
result, and ``fsa.cycle.model.DEFAULT_DMA`` holds the fitted values.
"""
from __future__ import annotations

import math

import numpy as np

from fsa import isa
from fsa.config import FSAConfig
from fsa.cycle.model import DmaTiming, simulate
from fsa.simdev import run_on_device

__all__ = ["dma_programs", "timing_for", "calibrate_dma"]


def dma_programs(cfg: FSAConfig) -> list[tuple[str, list]]:
    """DMA-only programs (one DMA instruction + stop) used for calibration."""
    base = cfg.mem_base + 0x1000
    spb = cfg.sa_rows * cfg.e_fmt.width // 8
    acb = cfg.sa_cols * cfg.a_fmt.width // 8
    beat = cfg.axi_data_bits // 8
    out = []
    for func, accum, rowb, max_rows in (("LOAD", False, spb, cfg.spad_rows),
                                        ("STORE", True, acb, cfg.acc_rows)):
        for rows in (1, 2, 4, 8):
            if rows > max_rows:
                continue
            for sz in sorted({beat, rowb}):
                if sz > rowb:
                    continue
                d = isa.Dma(func=isa.DmaFunc[func], repeat=rows, sram_addr=0, sram_stride=1,
                            is_accum=accum, mem_addr=base, mem_stride=256, size=sz)
                out.append((f"{func} {'acc' if accum else 'spad'} rows={rows} size={sz}",
                            [d, isa.Fence(stop=True)]))
    # a long STORE of one-beat rows (one SRAM row read again and again, stride
    # 0): the memory's write path takes them at 4 bursts per 5 cycles
    # (DmaTiming.store_single_group)
    for rows in (8, 16):
        d = isa.Dma(func=isa.DmaFunc.STORE, repeat=rows, sram_addr=0, sram_stride=0,
                    is_accum=True, mem_addr=base, mem_stride=256, size=beat)
        out.append((f"STORE acc rows={rows} size={beat} stride=0", [d, isa.Fence(stop=True)]))
    return out


def timing_for(load_base: int, store_base: int) -> DmaTiming:
    """A DmaTiming with the first-beat offsets derived from the bases."""
    return DmaTiming(load_base, store_base, load_first=max(1, load_base - 1), store_first=3)


def calibrate_dma(cfg: FSAConfig, sim: str = "verilator") -> tuple[DmaTiming, list[dict], dict]:
    """Run the DMA-only programs on the RTL and fit ``load_base`` and
    ``store_base`` (least squares over integer values); also fit exec cycles
    against beats per direction to show the per-beat cost is 1.

    Returns:
        (timing, rows, slopes): rows hold each program's RTL and model cycles.
    """
    img = [(cfg.mem_base, bytes(range(256)) * 64)]
    rows = []
    progs = dma_programs(cfg)
    for name, prog in progs:
        res = run_on_device(cfg, isa.encode(prog), img, [], sim=sim)
        r = res["runs"][-1]
        if r["state"] != "done":
            raise RuntimeError(f"calibration program {name} ended in {r['state']} ({r['error']})")
        d = prog[0]
        beats = d.repeat * math.ceil(d.size / (cfg.axi_data_bits // 8))
        rows.append({"program": name, "func": d.func.name, "beats": beats,
                     "rtl": r["counters"]["exec"]})
    slopes = {}
    for func in ("LOAD", "STORE"):
        sel = [r for r in rows if r["func"] == func]
        A = np.array([[1.0, r["beats"]] for r in sel])
        y = np.array([r["rtl"] for r in sel], float)
        (b0, b1), *_ = np.linalg.lstsq(A, y, rcond=None)
        slopes[func] = float(b1)
    best = {}
    for func in ("LOAD", "STORE"):
        sel = [(r, p) for r, (_, p) in zip(rows, progs) if r["func"] == func]
        errs = []
        for base in range(2, 40):
            t = timing_for(base, base)
            e = sum((simulate(cfg, p, t).cycles - r["rtl"]) ** 2 for r, p in sel)
            errs.append((e, base))
        best[func] = min(errs)[1]
    t = timing_for(best["LOAD"], best["STORE"])
    for r, (_, prog) in zip(rows, progs):
        r["model"] = simulate(cfg, prog, t).cycles
    return t, rows, slopes
