"""The presets' memory systems: does the DMA keep up with the matrix schedule?

Run as ``python bench/memory.py [--quick]`` from the repository root (model
only, no simulator: a few seconds). Prints two tables and writes
``bench/results/memory.json``:

1. For the square presets 4x4 ... 128x128 (fp16 and fp32 elements, fp32
   accumulation) with their default memory system (``fsa.config.memory_system``:
   one AXI beat per scratchpad row up to 512 bits, two scratchpad banks; from
   2048-bit rows 4 AXI ports into 4 banks of each SRAM, a narrow port per
   bank) and
   the narrow-bus ``...Axi64Config`` variants: the cycle model's cycles per
   key block against a free DMA (the matrix schedule alone), and
   ``fsa predict``'s cycles at N = 4096 (seq_q = seq_kv, d = R, not causal)
   against ``--free-dma`` (the issue-14 target: within 3 %).
2. Bus occupancy at N = 4096: the bytes the kernel moves per key block (K and
   V, ``fsa.cyclemodel.dma_demand``) and the share of cycles each AXI channel
   is busy (AR and AW: one address per row, the rows of a tile being one
   burst each; R and W: one beat per cycle; B: one response per write burst),
   averaged over the whole run (Q loads and O stores included), beside the
   narrow-port occupancy of the K/V stream and twice it (the UD dataflow's
   demand).
"""
from __future__ import annotations

import argparse
import math
import time

import common  # noqa: F401  (sets sys.path)
from common import table, write_json

from fsa import config as fconfig
from fsa import cyclemodel as cm

N = 4096


def configs(quick: bool) -> list[str]:
    sizes = (4, 8, 16) if quick else (4, 8, 16, 32, 64, 128)
    out = []
    for n in sizes:
        out += [f"FSA{n}X{n}Fp16Config", f"FSA{n}X{n}Fp32Config"]
        if f"FSA{n}X{n}Fp16Axi64Config" in fconfig.PRESETS:
            out.append(f"FSA{n}X{n}Fp16Axi64Config")
    return out


def channel_use(cfg, n: int, cycles: float) -> dict:
    """Beats / addresses per AXI channel of attention(n, n) (d = R, not
    causal), over `cycles`: K and V per (query block, key block) step, Q per
    query block, O (R rows of C accumulators) per query block."""
    R, C = cfg.sa_rows, cfg.sa_cols
    beat = cfg.axi_data_bits // 8
    nq, nk = n // C, n // R
    per_srow = math.ceil(cfg.spad_row_bytes / beat)
    per_arow = math.ceil(cfg.acc_row_bytes / beat)
    load_rows = nq * (C + nk * 2 * R)
    store_rows = nq * R
    return {"ar": load_rows / cycles, "r": load_rows * per_srow / cycles,
            "aw": store_rows / cycles, "w": store_rows * per_arow / cycles,
            "b": store_rows / cycles}


def main(argv: "list[str] | None" = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="4x4 to 16x16 only")
    args = ap.parse_args(argv)
    t_all = time.perf_counter()
    rows = []
    for name in configs(args.quick):
        cfg = fconfig.get(name)
        ss, free = cm.steady_state(cfg), cm.steady_state(cfg, cm.IDEAL_DMA)
        cyc = cm.predict_cycles(cfg, N, N, False, ss)
        cyc_free = cm.predict_cycles(cfg, N, N, False, free)
        need = cm.dma_demand(cfg)
        rows.append({"config": name, "R": cfg.sa_rows, "C": cfg.sa_cols, "e_type": cfg.e_type,
                     "axi_data_bits": cfg.axi_data_bits, "spad_banks": cfg.spad_banks,
                     "acc_banks": cfg.acc_banks, "mem_ports": cfg.mem_ports, "per_key_block": ss["per_key_block"],
                     "per_key_block_free": free["per_key_block"],
                     "per_query_block": ss["per_query_block"],
                     "per_query_block_free": free["per_query_block"],
                     "N": N, "cycles": cyc, "cycles_free": cyc_free,
                     "vs_free": cyc / cyc_free - 1, "within_3pc": cyc <= 1.03 * cyc_free,
                     "demand": need, "channels": channel_use(cfg, N, cyc)})
    print(f"1. Cycles per key block and at N = {N} (model; fsa predict vs --free-dma)")
    print(table(["config", "AXI bits", "ports", "spad banks", "acc banks", "per key block",
                 "free DMA", f"N={N} cycles", "free DMA", "over free", "within 3 %"],
                [[r["config"], r["axi_data_bits"], r["mem_ports"], r["spad_banks"],
                  r["acc_banks"], r["per_key_block"],
                  r["per_key_block_free"], r["cycles"], r["cycles_free"], 100 * r["vs_free"],
                  "yes" if r["within_3pc"] else "no"] for r in rows],
                ["", "", "", "", "", ".0f", ".0f", ".0f", ".0f", "+.2f", ""]))
    print(f"\n2. Bus occupancy at N = {N} (share of cycles per AXI channel) and the K/V demand")
    print(table(["config", "bytes / key block", "beats / key block", "K/V narrow-port share",
                 "x2 (UD)", "AR", "R", "AW", "W", "B"],
                [[r["config"], r["demand"]["bytes"], r["demand"]["beats"],
                  r["demand"]["occupancy"], r["demand"]["ud_occupancy"]]
                 + [r["channels"][c] for c in ("ar", "r", "aw", "w", "b")] for r in rows],
                ["", "", "", ".3f", ".3f", ".3f", ".3f", ".4f", ".4f", ".4f"]))
    out = write_json("memory", {"quick": args.quick, "N": N, "rows": rows,
                                "seconds": time.perf_counter() - t_all})
    print(f"\nwrote {out.relative_to(common.ROOT)} ({time.perf_counter() - t_all:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
