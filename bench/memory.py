"""The presets' memory systems: does the DMA keep up with the matrix
schedule, in both dataflows?

Run as ``python bench/memory.py [--quick]`` from the repository root (model
only, no simulator: about a minute, --quick a few seconds). Prints two
tables and writes ``bench/results/memory.json``:

1. For the square presets 4x4 ... 128x128 (fp16 and fp32 elements, fp32
   accumulation), their UD twins (``...UdConfig``: the same memory system,
   the UD kernel) and the narrow-bus ``...Axi64Config`` variants, each with
   its default memory system (``fsa.config.memory_system``: one AXI beat per
   scratchpad row up to 512 bits, two scratchpad banks and a third UD K/V
   slot; rows of b > 1 beats get min(2b, 8) AXI ports into twice as many
   scratchpad banks (at most 16) and one accumulator bank per port, a narrow
   port per bank): the cycle model's cycles per
   key block against a free DMA (the matrix schedule alone), and
   ``fsa predict``'s cycles at N = 4096 (seq_q = seq_kv, d = R, not causal,
   the program fetched from memory; steady-state extrapolation) against
   ``--free-dma`` (the issue-14 target: within 3 %).
2. Bus occupancy at N = 4096: the K/V stream per key block
   (``fsa.cycle.predict.dma_demand``: bytes, beats, the narrow ports they
   spread over, the share of them it needs in the config's key-block period
   and the share of the DMA's one burst per cycle, a K tile's rows merging
   where ``dma_burst_beats`` allows) and the share of cycles each AXI
   channel is busy (AR and AW: one address per burst; R and W: beats; B:
   one response per write burst), averaged over the ports and the whole run (Q loads and O stores
   included, program fetch not).

Table 1b: the presets with ``dma_rw_overlap`` against the same config
without it; table 1c: the one-port presets (two scratchpad banks) against
the per-port DMA on their one port (``fsa.hw.dmarules.per_port_dma``: two
accumulator banks, ``dma_rw_overlap``, merged bursts), which the presets
do not take (see docs/performance.md).
"""
from __future__ import annotations

import argparse
import math
import time

import common  # noqa: F401  (sets sys.path)
from common import table, write_json

from fsa import config as fconfig
from fsa.cycle import model as cm
from fsa.cycle import predict as cpredict

N = 4096
#: the merged-burst cap of table 1c's per-port one-port variants
PER_PORT_BURST = 16


def configs(quick: bool) -> list[str]:
    sizes = (4, 8, 16) if quick else (4, 8, 16, 32, 64, 128)
    out = []
    for n in sizes:
        for fmt in ("Fp16", "Fp32"):
            out += [f"FSA{n}X{n}{fmt}Config", fconfig.ud_twin_name(f"FSA{n}X{n}{fmt}Config")]
        if f"FSA{n}X{n}Fp16Axi64Config" in fconfig.PRESETS:
            out.append(f"FSA{n}X{n}Fp16Axi64Config")
    return out


def channel_use(cfg, n: int, cycles: float) -> dict:
    """Beats / addresses per AXI channel of attention(n, n) (d = R, not
    causal) over `cycles`, averaged over the AXI ports (the bursts go round
    robin over them): K and V per (query block, key block) step, Q per
    query block, O (R rows of C accumulators) per query block; program
    fetch (port 0's AR and R) not counted.  AR / AW count bursts: V^T's and
    O's rows are strided (one burst each), Q's and K's merge where the
    config allows (tensors from a 4 KiB boundary)."""
    R, C = cfg.sa_rows, cfg.sa_cols
    beat = cfg.axi_data_bits // 8
    nq, nk = n // C, n // R
    per_srow = math.ceil(cfg.spad_row_bytes / beat)
    per_arow = math.ceil(cfg.acc_row_bytes / beat)
    load_rows = nq * (C + nk * 2 * R)
    load_bursts = cpredict.tile_bursts(cfg, C, nq) + nq * (cpredict.tile_bursts(cfg, R, nk) + nk * R)
    store_rows = nq * R
    cycles *= cfg.mem_ports
    return {"ar": load_bursts / cycles, "r": load_rows * per_srow / cycles,
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
        ss = cpredict.steady_state(cfg, program="fetch")
        free = cpredict.steady_state(cfg, cm.IDEAL_DMA)
        cyc = cpredict.predict_cycles(cfg, N, N, False, ss)
        cyc_free = cpredict.predict_cycles(cfg, N, N, False, free)
        need = cpredict.dma_demand(cfg)
        # a LOAD and a STORE at once (dma_rw_overlap): the same config without it
        no_ov = None
        if cfg.dma_rw_overlap:
            off = cfg.replace(dma_rw_overlap=False, name=f"{name}NoOverlap")
            no_ov = cpredict.predict_cycles(off, N, N, False, cpredict.steady_state(off, program="fetch"))
        # one port: the per-port DMA (fsa.hw.dmarules.per_port_dma) with two
        # accumulator banks, a LOAD and a STORE at once and merged bursts
        per_port = None
        if cfg.mem_ports == 1 and cfg.spad_banks >= 2:
            pp = cfg.replace(acc_banks=max(2, cfg.acc_banks), dma_rw_overlap=True,
                             dma_burst_beats=PER_PORT_BURST, name=f"{name}PerPort")
            per_port = cpredict.predict_cycles(pp, N, N, False, cpredict.steady_state(pp, program="fetch"))
        ud = cfg.dataflow == "ud"
        period = need["ud_period"] if ud else need["period"]
        rows.append({"config": name, "dataflow": cfg.dataflow, "R": cfg.sa_rows, "C": cfg.sa_cols,
                     "e_type": cfg.e_type, "axi_data_bits": cfg.axi_data_bits,
                     "spad_banks": cfg.spad_banks, "acc_banks": cfg.acc_banks,
                     "mem_ports": cfg.mem_ports, "spad_rows": cfg.spad_rows,
                     "per_key_block": ss["per_key_block"],
                     "per_key_block_free": free["per_key_block"],
                     "per_query_block": ss["per_query_block"],
                     "per_query_block_free": free["per_query_block"],
                     "N": N, "cycles": cyc, "cycles_free": cyc_free,
                     "vs_free": cyc / cyc_free - 1, "within_3pc": cyc <= 1.03 * cyc_free,
                     "demand": need, "key_block_period": period,
                     "narrow_share": need["ud_occupancy"] if ud else need["occupancy"],
                     "dma_burst_beats": cfg.dma_burst_beats,
                     "dma_rw_overlap": cfg.dma_rw_overlap, "cycles_no_overlap": no_ov,
                     "cycles_per_port": per_port,
                     "burst_share": need["bursts"] / period,
                     "channels": channel_use(cfg, N, cyc)})
    print(f"1. Cycles per key block and at N = {N} (model, program fetch; fsa predict vs --free-dma)")
    print(table(["config", "AXI bits", "ports", "spad banks", "acc banks", "spad rows",
                 "burst beats", "ld+st", "per key block", "free DMA", f"N={N} cycles", "free DMA",
                 "over free", "within 3 %"],
                [[r["config"], r["axi_data_bits"], r["mem_ports"], r["spad_banks"],
                  r["acc_banks"], r["spad_rows"], r["dma_burst_beats"],
                  "yes" if r["dma_rw_overlap"] else "-", r["per_key_block"],
                  r["per_key_block_free"], r["cycles"], r["cycles_free"], 100 * r["vs_free"],
                  "yes" if r["within_3pc"] else "no"] for r in rows],
                ["", "", "", "", "", "", "", "", ".2f", ".0f", ".0f", ".0f", "+.2f", ""]))
    ov = [r for r in rows if r["dma_rw_overlap"]]
    print(f"\n1b. A LOAD and a STORE at once (dma_rw_overlap) on and off, N = {N}")
    print(table(["config", "N cycles, on", "over free", "N cycles, off", "over free", "gain"],
                [[r["config"], r["cycles"], 100 * r["vs_free"], r["cycles_no_overlap"],
                  100 * (r["cycles_no_overlap"] / r["cycles_free"] - 1),
                  100 * (r["cycles_no_overlap"] / r["cycles"] - 1)] for r in ov],
                ["", ".0f", "+.2f", ".0f", "+.2f", "+.2f"]))
    one = [r for r in rows if r["cycles_per_port"] is not None]
    print(f"\n1c. One port: the preset against the per-port DMA (two accumulator banks, "
          f"dma_rw_overlap, dma_burst_beats = {PER_PORT_BURST}), N = {N}")
    print(table(["config", "N cycles, preset", "over free", "N cycles, per-port", "over free",
                 "gain"],
                [[r["config"], r["cycles"], 100 * r["vs_free"], r["cycles_per_port"],
                  100 * (r["cycles_per_port"] / r["cycles_free"] - 1),
                  100 * (r["cycles"] / r["cycles_per_port"] - 1)] for r in one],
                ["", ".0f", "+.2f", ".0f", "+.2f", "+.2f"]))
    print(f"\n2. Bus occupancy at N = {N} (share of cycles per AXI channel) and the K/V demand")
    print(table(["config", "bytes / key block", "beats / key block", "bursts / key block",
                 "narrow ports", "period", "narrow-port share", "burst share", "AR", "R", "AW",
                 "W", "B"],
                [[r["config"], r["demand"]["bytes"], r["demand"]["beats"], r["demand"]["bursts"],
                  r["demand"]["lanes"], r["key_block_period"], r["narrow_share"],
                  r["burst_share"]]
                 + [r["channels"][c] for c in ("ar", "r", "aw", "w", "b")] for r in rows],
                ["", "", "", "", "", "", ".3f", ".3f", ".3f", ".3f", ".4f", ".4f", ".4f"]))
    out = write_json("memory", {"quick": args.quick, "N": N, "per_port_burst": PER_PORT_BURST,
                                "rows": rows,
                                "seconds": time.perf_counter() - t_all})
    print(f"\nwrote {out.relative_to(common.ROOT)} ({time.perf_counter() - t_all:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
