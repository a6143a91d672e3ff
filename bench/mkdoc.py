"""Write docs/performance.md from the benchmark results (bench/results/*.json).

Run as ``python bench/mkdoc.py`` (``make bench`` runs it last). Every table
is rendered from the latest JSON of its benchmark, with the command that
regenerates it; a benchmark that has not been run is listed as missing.
"""
from __future__ import annotations

import json

import common
from common import md_table

DOC = common.ROOT / "docs" / "performance.md"
RES = common.RESULTS


def load(name: str) -> "dict | None":
    p = RES / f"{name}.json"
    return json.loads(p.read_text()) if p.exists() else None


def stamp(d: dict, cmd: str) -> str:
    mode = "quick" if d.get("quick") else "full"
    when = f"last run {d['when']}, " if "when" in d else ""
    cpus = f", {d['cpus']} CPUs" if "cpus" in d else ""
    return (f"Regenerate: `{cmd}` ({when}{mode} mode{cpus}{', %.0f s' % d['seconds'] if 'seconds' in d else ''}).")


def sec_utilisation(u: dict) -> list[str]:
    out = ["## 1. Utilisation on the RTL, and the cycle model", "",
           stamp(u, "python bench/utilisation.py [--quick]") + " Plot: `python bench/plots.py`.", "",
           "Attention (`fsa.kernels.attention`, seq_q = seq_kv = N, d = R, fp16 elements, fp32 "
           "accumulation, P = 8) through `fsa_top` on " + u["sim"] + " (`SimEngine`), "
           "cycles = the device's `exec` counter (start to stop), utilisation = useful FLOPs / "
           "(cycles x 2RC) with useful FLOPs = 4 d per (query, key) pair the causal mask keeps "
           "(`fsa.kernels.attention_flops`, the definition `fsa run` and `fsa predict` use; the "
           "masked part of the diagonal blocks the kernel runs is not counted). Configs: the presets with a 4096-word instruction queue (`...Q4K`; the "
           "presets' 256 words make the testbench's AXI4-Lite pushes the limit, table 1d): the "
           "presets move one AXI beat per scratchpad row (8x8: 128-bit, 16x16: 256-bit AXI, two "
           "scratchpad banks), the `...Axi64Config` presets keep the former 64-bit bus. "
           "\"model\" is `fsa/cycle/model.py` (below), run on the same program.", "",
           "### 1a. Total cycles", ""]
    rows = [[r["config"], r["N"], "yes" if r["causal"] else "no", r["key_blocks"], r["words"],
             r["rtl_cycles"], r["model_cycles"], r["diff"],
             common.attention_util(r["R"], r["C"], r["N"], r["causal"], r["rtl_cycles"])[1],
             r["rtl_counters"]["bubble"], r["model_counters"]["bubble"],
             r["rtl_counters"]["dma_active"], r["model_counters"]["dma_active"]] for r in u["runs"]]
    out.append(md_table(["config", "N", "causal", "key blocks", "words", "RTL cycles",
                         "model cycles", "model - RTL", "utilisation", "RTL bubble",
                         "model bubble", "RTL dma_active", "model dma_active"], rows,
                        ["", "", "", "", "", "", "", "+d", ".3f", "", "", "", ""]))
    exact = sum(1 for r in u["runs"] if r["diff"] == 0)
    worst = max(abs(r["diff"]) for r in u["runs"])
    out += ["", f"The model predicted {exact} of {len(u['runs'])} runs to the cycle "
            f"(largest difference {worst} cycles).", "",
            "### 1b. Steady state per key block", "",
            f"Measured as (cycles(seq_kv = {2 * u['steady'][0]['a']}R) - cycles(seq_kv = "
            f"{u['steady'][0]['a']}R)) / {u['steady'][0]['a']} with seq_q = C. The reference "
            "schedule's period is C + 2R + P + 4 + max(2R-1, R+C+1) (= 4R + C + P + 5 when R = C, "
            "utilisation 2R/(4R+C+P+5)); the paper quotes ~5N+10 cycles per N x N tile.", ""]
    rows = [[s["config"], s["rtl_per_kb"], s["model_per_kb"], s["model_ideal_dma_per_kb"],
             s["reference_period"], s["paper_5n_plus_10"], s["rtl_util"], s["model_ideal_util"],
             s["reference_formula"]] for s in u["steady"]]
    out.append(md_table(["config", "RTL cycles/key block", "model", "model, free DMA",
                         "reference period", "paper 5N+10", "RTL utilisation",
                         "free-DMA utilisation", "2R/(4R+C+P+5)"], rows,
                        ["", ".1f", ".1f", ".1f", "", "", ".3f", ".3f", ".3f"]))
    out += ["", "The presets move one AXI beat per scratchpad row (128-bit AXI at 8x8, 256 at "
            "16x16) into two row-interleaved scratchpad banks, and the RTL runs at the reference "
            "period. On the narrow-bus presets (`...Axi64Config`: 64-bit AXI, one bank) a K or V "
            "tile (R rows of 2R bytes) takes R^2/4 beats, each also a cycle of the scratchpad's "
            "narrow port, which the array's reads take first: from 8x8 on the DMA, not the "
            "matrix schedule, sets the period (section 1f).", "", "![utilisation](utilisation.png)", "",
            "Left: RTL runs (o non-causal, x causal), the model's steady-state fit (lines) and "
            "2R/(4R+C+P+5) (dotted). Right: the model at N = 4096 against array size.", "",
            "### 1c. DMA calibration of the model", "",
            f"Fitted: LOAD {u['dma_timing']['load_base']} + beats, STORE "
            f"{u['dma_timing']['store_base']} + beats cycles from acceptance to `done` "
            f"(cycles per beat fitted on the RTL: LOAD {u['calibration_slopes']['LOAD']:.3f}, "
            f"STORE {u['calibration_slopes']['STORE']:.3f}; the STORE slope includes the "
            "two long one-beat STOREs, where the memory takes "
            f"{u['dma_timing'].get('store_single_group', 0)} write bursts per "
            f"{u['dma_timing'].get('store_single_group', 0) + 1} cycles on one port, "
            "`DmaTiming.store_single_group`); DMA-only programs (one DMA "
            "instruction + stop):", ""]
    out.append(md_table(["program", "beats", "RTL exec", "model", "model - RTL"],
                        [[r["program"], r["beats"], r["rtl"], r["model"], r["model"] - r["rtl"]]
                         for r in u["calibration"]], ["", "", "", "", "+d"]))
    out += ["", "### 1d. Programs longer than the preset queue", ""]
    if not u["queue_effect"]:
        out += ["(not run in quick mode)", ""]
    out.append(md_table(["config", "queue words", "N", "words", "RTL cycles",
                         "model (all words queued)", "RTL cycles per word"],
                        [[q["config"], q["queue_words"], q["N"], q["words"], q["rtl_cycles"],
                          q["model_cycles"], q["rtl_cycles_per_word"]] for q in u["queue_effect"]],
                        ["", "", "", "", "", "", ".2f"]))
    out += ["", "fsa/harness/device.py fills the queue with a program that does not fit it, starts the "
            "device and pushes the rest during the run, one AXI4-Lite write at a time (about 4 "
            "cycles per word). When the device consumes words faster than that, the run "
            "measures the host's push rate; the model in this table assumes every word is queued (`fsa predict --program queue`).", "",
            "### 1e. The cycle model (`fsa/cycle/model.py`)", "",
            "A register-level model of the control path, no arithmetic: the decoder (one word "
            "per cycle, dispatch into one pending register per engine), semaphores, the matrix "
            "controller's two-slot issue rule with each function's conflict-free / retire / "
            "release cycles from `fsa/plan.py`, the DMA engine (`fsa/cycle/dma.py`: calibrated "
            "base + one beat per cycle, a beat waits while the array uses the same SRAM bank; "
            "two LOADs in flight on one port; a narrow port per bank with several ports), "
            "fences and stop. "
            "Program input: every word in the queue, the harness's AXI4-Lite pushes (`fsa.cycle.model.HARNESS_HOST`) or program fetch (`fsa/cycle/fetch.py`; the default of `fsa predict`, `--program`). Not modelled: AXI pauses, DMA bursts split at 4 KiB boundaries, errors. "
            "Predictions for long sequences use the model's own steady state: cycles = fixed + "
            "query blocks x per-query-block + key-block steps x per-key-block, fitted on four "
            "short programs (2 and 3 query blocks x 12 and 20 key blocks). Besides the RTL "
            "points above, the regression checks the model on every attention run without AXI "
            "pauses (`tb/attention/test_attention.py`: exec, bubble, mx_active and dma_active equal; "
            "configs 4x4 fp16/bf16/fp32/fp16-only, 8x8, 8x4, 4x8, causal and not; more "
            "under FULL=1). "
            "`fsa predict --config CFG --seq-q N --seq-kv M [--causal] [--axi-bits B] "
            "[--free-dma]` prints its prediction for any config and length.", "",
            "Predicted cycles per key block and per query block:", ""]
    out.append(md_table(["config", "DMA", "per key block", "per query block", "fixed"],
                        [[f["config"], f["dma"], f["per_key_block"], f["per_query_block"],
                          f["fixed"]] for f in u["prediction_fits"]], ["", "", ".0f", ".0f", ".0f"]))
    ns = sorted({p["N"] for p in u["predictions"]})
    rows = []
    for name in dict.fromkeys(p["config"] for p in u["predictions"]):
        for label in dict.fromkeys(p["dma"] for p in u["predictions"]):
            sel = {(p["N"], p["causal"]): p for p in u["predictions"]
                   if p["config"] == name and p["dma"] == label}

            def util(p: dict) -> float:        # from the cycles, by the one definition
                return common.attention_util(p["R"], p.get("C", p["R"]), p["N"], p["causal"],
                                             p["cycles"])[1]
            rows.append([name, label] + [util(sel[(n, False)]) for n in ns]
                        + [util(sel[(n, True)]) for n in ns])
    out += ["", "Predicted utilisation (d = R, fp16, P = 8); \"free DMA\" is the matrix "
            "schedule alone:", ""]
    out.append(md_table(["config", "DMA"] + [f"N={n}" for n in ns] + [f"N={n} causal" for n in ns],
                        rows, ["", ""] + [".3f"] * (2 * len(ns))))
    ec = u["extrapolation_check"]
    out += ["", f"Check of the steady-state formula against a direct model run: {ec['config']} "
            f"N = {ec['N']} (preset memory): direct {ec['direct']} cycles, formula "
            f"{ec['formula']:.0f}.", ""]
    return out


def sec_memory(m: dict) -> list[str]:
    """Section 1f: the presets' memory systems (bench/memory.py, model only)."""
    rows = m["rows"]
    old = "dataflow" not in rows[0]          # a memory.json from before the UD twins
    out = ["### 1f. Memory systems of the presets and bus occupancy (model)", "",
           stamp(m, "python bench/memory.py [--quick]"), "",
           "Presets (`fsa.config.memory_system`; a preset and its UD twin `...UdConfig` share "
           "it): one AXI beat per scratchpad row up to 512 bits; with one AXI port two "
           "row-interleaved scratchpad banks; rows of b > 1 beats (32x32 fp32, 64x64, 128x128) "
           "min(2b, 8) AXI ports into pow2(2 x ports) scratchpad (at most 16) and one "
           "accumulator bank per port; for the UD kernel a third K/V slot (`spad_rows` = "
           "C + 6R where that exceeds the reference's 2C + 4R) in all of these; each bank has "
           "its own narrow port (`fsa.hw.dmarules.bank_ports`, "
           "`rtl/fsa_sram_bp.py`); `...Axi64Config`: the 64-bit bus, single bank and "
           "scratchpad every preset had before. The DMA keeps two LOADs in flight (with "
           "several ports when they write disjoint scratchpad rows, `fsa/hw/dmarules.py`); with "
           "one port a LOAD may start in a program-fetch burst's last beats "
           "(`fsa.hw.fetch.LOAD_TAIL`), else LOADs and fetch bursts take turns on port 0's "
           "read channel. Demand per key block "
           "(`fsa.cycle.predict.dma_demand`): one K and one V tile of R rows, 2R^2 e bytes (e bytes "
           "per element) = 2R rows of ceil(Re/W) beats of W bytes, each beat one cycle of a "
           "narrow port of the scratchpad, in 2R AXI bursts (the DMA queues one per cycle) or, "
           "with merged bursts (\"burst beats\" = `dma_burst_beats`, `fsa.hw.dmarules.bursts`: "
           "rows that follow each other in memory and SRAM, K's but not V^T's, in bursts of up "
           "to that many beats, never across 4 KiB; the presets with several ports merge four "
           "rows where a row is at most four beats, `fsa.config.burst_beats`) fewer, in the reference "
           "period 4R + C + P + 5 or the UD period 2R + P + 3. \"over free\" is the cycle model "
           f"at N = {m['N']} (program fetched from memory, the steady-state extrapolation of "
           "`fsa.cycle.predict.steady_state` for every config) against the free DMA (the matrix "
           "schedule alone; target within 3 %). (`fsa predict` extrapolates only beyond 20,000 "
           "key-block steps and runs the model on the whole program below that; the two can "
           "differ slightly where the fit's four short programs miss a pattern of the long one; "
           "measured: the 32x32 fp32, 64x64 fp16 and fp32 and 128x128 fp16 UD rows equal "
           "`fsa predict`'s to the cycle; `fsa predict` gives 32 cycles more for 32x32 fp16 UD "
           "(1,246,783) and 0.16 % more for 128x128 fp32 UD (285,190, +2.35 % over free).)", ""]
    out.append(md_table(["config", "AXI bits", "ports", "spad banks", "acc banks", "spad rows",
                         "burst beats", "ld+st", "cycles / key block", "free DMA",
                         f"N={m['N']} cycles", "free DMA", "over free, %"],
                        [[r["config"], r["axi_data_bits"], r.get("mem_ports", 1), r["spad_banks"],
                          r.get("acc_banks", 1), r.get("spad_rows", ""),
                          r.get("dma_burst_beats", 0), "yes" if r.get("dma_rw_overlap") else "-",
                          r["per_key_block"], r["per_key_block_free"], r["cycles"],
                          r["cycles_free"], 100 * r["vs_free"]] for r in rows],
                        ["", "", "", "", "", "", "", "", ".2f", ".0f", ".0f", ".0f", "+.2f"]))
    if old:
        return out + [""]
    ov = [r for r in rows if r.get("dma_rw_overlap")]
    if ov:
        out += ["", "\"ld+st\": a LOAD and a STORE in flight at once (`dma_rw_overlap`, the "
                "multi-port presets; any config with two banks in each SRAM may set it; each "
                "port a read and a write half, the two instructions of "
                "different SRAMs and disjoint memory bytes, `fsa.hw.dmarules.load_store_ok`). "
                f"With it and without it, N = {m['N']} (the UD kernel's O store from the "
                "accumulator runs under the K/V loads into the scratchpad):", ""]
        out.append(md_table(["config", "N cycles, on", "over free, %", "N cycles, off",
                             "over free, %", "gain, %"],
                            [[r["config"], r["cycles"], 100 * r["vs_free"],
                              r["cycles_no_overlap"],
                              100 * (r["cycles_no_overlap"] / r["cycles_free"] - 1),
                              100 * (r["cycles_no_overlap"] / r["cycles"] - 1)] for r in ov],
                            ["", ".0f", "+.2f", ".0f", "+.2f", "+.2f"]))
    one = [r for r in rows if r.get("cycles_per_port") is not None]
    if one:
        out += ["", "One AXI port can take the same DMA (`fsa.hw.dmarules.per_port_dma`: with "
                "`dma_rw_overlap` or `dma_burst_beats` and two banks in each SRAM, each SRAM "
                "gets a narrow port per bank and the port a read and a write half, as with "
                "several ports). The one-port presets do not take it: against the preset, the "
                "same config with two accumulator banks, `dma_rw_overlap` and bursts of up to "
                f"{m['per_port_burst']} beats gains at most a few tenths of a percent on the "
                "UD twins of 8x8 and "
                "larger (nothing on the reference presets), and loses on the 64-bit 4x4 "
                "fp16 / bf16 ones (there a program-fetch burst then holds the K/V LOADs until "
                "its last beat, `fsa.hw.fetch.loads_wait_whole_burst`, and fetch is a large "
                "share of the read channel), at the cost of a second SRAM bank-port set and "
                "a second DMA port half. (The per-port 4x4 fp32 UD row's figure below the "
                "free DMA is the steady-state fit's error: the whole program at N = 256 takes "
                "79,170 cycles per-port, 79,202 with the preset, 78,548 with a free DMA.) "
                f"N = {m['N']}:", ""]
        out.append(md_table(["config", "N cycles, preset", "over free, %",
                             "N cycles, per-port", "over free, %", "gain, %"],
                            [[r["config"], r["cycles"], 100 * r["vs_free"], r["cycles_per_port"],
                              100 * (r["cycles_per_port"] / r["cycles_free"] - 1),
                              100 * (r["cycles"] / r["cycles_per_port"] - 1)] for r in one],
                            ["", ".0f", "+.2f", ".0f", "+.2f", "+.2f"]))
    out += ["", f"Bus occupancy at N = {m['N']}: the K/V stream per key block (bytes, beats, the "
            "narrow ports they spread over), the share of those narrow ports it needs in the "
            "config's key-block period (above 1 the DMA cannot keep up, whatever its latency) "
            "and the AXI bursts and the share of the DMA's one burst per cycle they need (K "
            "tiles from a 4 KiB boundary); and the share of cycles each AXI "
            "channel is busy, averaged over the ports and the whole run (AR/AW: one address per "
            "burst; R/W: beats; B: one response per write burst; program fetch not counted).", ""]
    out.append(md_table(["config", "bytes / key block", "beats / key block", "bursts / key block",
                         "narrow ports", "period", "narrow-port share", "burst share", "AR", "R",
                         "AW", "W", "B"],
                        [[r["config"], r["demand"]["bytes"], r["demand"]["beats"],
                          r["demand"]["bursts"], r["demand"]["lanes"], r["key_block_period"],
                          r["narrow_share"], r["burst_share"]]
                         + [r["channels"][c] for c in ("ar", "r", "aw", "w", "b")]
                         for r in rows],
                        ["", "", "", "", "", "", ".3f", ".3f", ".3f", ".3f", ".4f", ".4f",
                         ".4f"]))
    miss = [r for r in rows if r["dataflow"] == "ud" and not r["within_3pc"]]
    multi = [r for r in rows if r["dataflow"] == "ud" and r.get("mem_ports", 1) > 1]
    multi_miss = [r for r in multi if not r["within_3pc"]]
    out += ["", "Every reference preset is within 3 % of its matrix schedule. The UD twins need "
            "about twice the bytes per cycle. Rows of b > 1 beats (several ports): with one "
            "DMA instruction in flight each of the two LOADs of a key block paid its fixed "
            "latency (about R + 6 + b cycles: R bursts queued at one per cycle, the first beat 5 "
            "cycles after acceptance, the last row's b beats, done 2 cycles later), 2b + 1 cycles "
            "per key block over the UD period at P = 8 (measured before the change: +5.5 to "
            "+8.1 % over free); the DMA now accepts the V^T LOAD while the K LOAD's beats "
            "arrive (disjoint rows), and the third K/V slot lets the loads run a key block "
            "ahead, so "
            + ("every multi-port UD twin runs at the UD period ("
               + ", ".join(f"{r['config']} {100 * r['vs_free']:+.2f} %" for r in multi) + ")"
               if multi and not multi_miss else
               "the multi-port UD twins miss by: " + ", ".join(
                   f"{r['config']} {100 * r['vs_free']:+.2f} %" for r in multi_miss))
            + ". "
            + ("Those that miss 3 % (" + ", ".join(
                f"{r['config']} {100 * r['vs_free']:+.1f} %" for r in miss) + ") do so "
               "for a reason more ports or banks do not remove:" if miss else
               "Every UD twin is within 3 % (the 64-bit 4x4 and 4x8 ones lost 18-25 % while a "
               "program-fetch burst held the K/V LOADs until its last beat, with one scratchpad "
               "bank and two K/V slots; 4x4 fp32 UD 4 % with 64-word fetch bursts; the 128x128 "
               "ones +4.7 / +4.8 % with one AXI burst per row, before the merged bursts "
               "(`dma_burst_beats`), and 128x128 fp32 UD, whose K/V stream alone keeps the DMA "
               "about 97 % busy, +4.8 % while the UD kernel loaded the next block's Q right "
               "after LOAD_Q, next to the previous block's O store, instead of in the block's "
               "middle step)."), ""]
    if miss:
        out += [
            "* rows of eight beats (128x128 fp32 UD): the K/V stream alone keeps the DMA about "
            "97 % busy in the UD period (narrow-port share above; in the model each 128-row "
            "LOAD takes about 141 cycles and the next one overlaps its last 11), so each query "
            "block's Q load and O store (R rows each) take their time from the steps, now that "
            "the UD normalisation no longer stalls the array (before, they ran while it did: "
            "docs/ud.md). Merged bursts do not help there (measured: +15.6 % with two rows per "
            "burst, +33 % with four: the ports' long bursts meet in the banks); neither would a "
            "STORE that overlaps the LOADs alone (the model with every STORE free of cost: "
            "+3.3 %) or a Q load split into pieces over several steps (+4.8 %). It needs more "
            "narrow-port bandwidth than 8 ports of 512 bits into 16 banks give.", ""]
    return out


def sec_accuracy(a: dict) -> list[str]:
    out = ["## 2. Accuracy against torch SDPA", "", stamp(a, "python bench/accuracy.py [--quick]")
           + " Plot: `python bench/plots.py`.", "",
           "Golden model (`GoldenEngine`, bit-exact with the RTL: the regression compares them "
           "raw bit for raw bit) vs `torch.nn.functional.scaled_dot_product_attention` in "
           "float64 on the same rounded inputs; O in fp32. MAE and mean relative error (relative "
           "to max(|ref|, 1e-6)) are averaged over seeds, max abs is the maximum over seeds. "
           f"Reference FSA (P = 8): MAE ~{a['reference']['mae']:.1e}, max ~"
           f"{a['reference']['max_abs']:.1e} ({a['reference']['note']}).", ""]
    for dist, title in (("fa3", "FlashAttention-3 test distribution (N(0,1) + rare N(0,100) outliers)"),
                        ("randn", "N(0, 1) inputs")):
        out += [f"### {title}", ""]
        rows = [[r["config"], r["N"], "yes" if r["causal"] else "no", r["P"], r["mae"],
                 r["max_abs"], r["mean_rel"], r["seeds"]] for r in a["rows"] if r["inputs"] == dist]
        out.append(md_table(["config", "N", "causal", "P", "MAE", "max abs", "mean rel", "seeds"],
                            rows, ["", "", "", "", ".2e", ".2e", ".2e", ""]))
        out.append("")
    out += ["![error histogram](accuracy_hist.png)", ""]
    return out


def sec_speed(s: "dict | None", c: "dict | None") -> list[str]:
    out = ["## 3. Simulation speed, build and conversion", ""]
    if s:
        out += [stamp(s, "python bench/simspeed.py [--quick]"), "",
                "Attention through `fsa_top` (cocotb; memory axi = cocotbext-axi's AxiRam, fast = "
                "the memory inside the simulation, fsa/fastmem.py); simulated cycles = the "
                "whole cocotb test (reset, program and data loading, run, read-back), cocotb's "
                "sim time / 10 ns; test real s as cocotb reports it; wall = the whole "
                "`SimEngine.run` call (cached build).", ""]
        out.append(md_table(["config", "simulator", "memory", "N", "exec cycles",
                             "simulated cycles", "test real s", "cycles/s", "cycles/CPU s",
                             "SimEngine.run wall s"],
                            [[r["config"], r["sim"], r.get("memory", "axi"), r["N"], r["exec_cycles"],
                              int(r["sim_cycles"]), r["test_real_s"], r["cycles_per_s"],
                              r.get("cycles_per_cpu_s"), r["engine_wall_s"]]
                             for r in s["speed"]],
                            ["", "", "", "", "", "", ".2f", ".0f", ".0f", ".2f"]))
        out += ["", "cycles/CPU s: simulated cycles per CPU second of the simulator process, the "
                "difference of this run and a one-block run (empty where the difference is "
                "within the noise)."]
        bare = [r for r in s.get("bare", []) if "skipped" not in r]
        if bare:
            bb = s.get("bare_before", {})
            out += ["", "The ceiling: the same model in the bare C++ harness "
                    "(bench/harness/fsa_bare.cpp: no cocotb, the AXI memory answered in C++), "
                    "cycles per CPU second of the whole run and of idle cycles after it; "
                    "`before`: the tree before issue 16 item 2 (the PE's FMA evaluated every "
                    "cycle), measured once (bench/simspeed.py `BARE_BEFORE`).", ""]
            cps = {(r["config"], r["N"], r.get("memory", "axi")): r.get("cycles_per_cpu_s")
                   for r in s["speed"] if r["sim"] == "verilator"}

            def slower(r, mem):
                c = cps.get((r["config"], r["N"], mem))
                return r["cycles_per_cpu_s"] / c if c else None
            out += ["\"cocotb slower by\": the bare harness's cycles per CPU second over the "
                    "cocotb run's (same config, N and build flags) with AxiRam and with the "
                    "fast memory path.", ""]
            out.append(md_table(["config", "N", "exec cycles", "cycles/CPU s",
                                 "idle cycles/CPU s", "before (busy / idle)",
                                 "cocotb slower by (axi)", "cocotb slower by (fast)", "= golden"],
                                [[r["config"], r["N"], r["exec_cycles"], r["cycles_per_cpu_s"],
                                  r["idle_cycles_per_cpu_s"],
                                  "%.0f / %.0f" % tuple(bb[r["config"]]) if r["config"] in bb
                                  else "", slower(r, "axi"), slower(r, "fast"), r["bit_exact"]]
                                 for r in bare],
                                ["", "", "", ".0f", ".0f", "", ".2f", ".2f", ""]))
        jobs = s["builds"][0].get("make_jobs", "<cpus>") if s["builds"] else "?"
        out += ["", f"Verilator build of `fsa_top` from scratch (no ccache; cocotb's runner runs "
                f"`make -j{jobs}`), in a child process; peak RSS of the largest build process:", ""]
        out.append(md_table(["config", "Verilog KiB", "build s", "compiler CPU s", "peak RSS MiB",
                             "build dir MiB"],
                            [[r["config"], r["verilog_kb"], r["wall_s"], r["child_cpu_s"],
                              r["peak_child_rss_mb"], r["build_dir_mb"]] for r in s["builds"]],
                            ["", ".0f", ".0f", ".0f", ".0f", ".0f"]))
        out.append("")
    else:
        out += ["(not run: `python bench/simspeed.py`)", ""]
    if c:
        out += [stamp(c, "python bench/convert.py [--quick] [--sizes 4 8 ... 128] [--merge]"), "",
                "MyHDL -> Verilog conversion of every module of `FSA<N>X<N>Fp16Config` "
                "(`rtl.generate.generate(cfg, outdir=<temp>, force=True)`), one cold process "
                "per size. (While MyHDL elaborates, `rtl/convert.py` swaps in an "
                "`inspect.stack()` that skips source lookups, and reads each function's "
                "source once per process instead of once per generator instance: same "
                "Verilog; 128x128 took 451 s with neither, and 30.1 s with the first alone "
                "in the run of 2026-12-02.)", ""]
        out.append(md_table(["config", "PEs", "total s", "CPU s", "fsa_array s", "fsa_idelay s",
                             "fsa_odelay s", "fsa_mxctrl s", "ms per PE", "Verilog KiB",
                             "fsa_array.v KiB", "lines", "peak RSS MiB", "measured"],
                            [[r["config"], r["pes"], r["wall_s"], r.get("cpu_s"),
                              r["module_s"].get("fsa_array"),
                              r["module_s"].get("fsa_idelay"), r["module_s"].get("fsa_odelay"),
                              r["module_s"].get("fsa_mxctrl"), 1000 * r["wall_s"] / r["pes"],
                              sum(r["bytes"].values()) / 1024,
                              r["bytes"].get("fsa_array.v", 0) / 1024, r["lines"],
                              r["peak_rss_mb"], r.get("when", c["when"])] for r in c["rows"]],
                            ["", "", ".1f", ".1f", ".1f", ".1f", ".1f", ".1f", ".1f", ".0f", ".0f",
                             "", ".0f", ""]))
        r16 = next((r for r in c["rows"] if r["R"] == 16), None)
        if r16:
            out += ["", f"16x16 converts in {r16['wall_s']:.1f} s "
                    f"({'under' if r16['wall_s'] < 30 else 'over'} the 30 s target)."]
        fit = [r for r in c["rows"] if r["R"] <= 64]
        if len(fit) >= 3:
            import numpy as np
            x = np.array([r["pes"] for r in fit], float)
            y = np.array([r["wall_s"] for r in fit], float)
            b, a0 = np.polyfit(x, y, 1)
            out.append(f"Least-squares line over 4x4 ... 64x64: {a0:.1f} s + {1000 * b:.2f} ms per PE "
                       "(residuals " + ", ".join(f"{r['R']}x{r['R']} {100 * (yy - (a0 + b * xx)) / yy:+.0f} %"
                                                 for r, xx, yy in zip(fit, x, y)) + ")"
                       + "".join(f"; {r['R']}x{r['R']}: line {a0 + b * r['pes']:.0f} s, measured "
                                 f"{r['wall_s']:.0f} s" for r in c["rows"] if r["R"] > 64) + ".")
        if c.get("note"):
            out += ["", c["note"]]
        out.append("")
    else:
        out += ["(not run: `python bench/convert.py`)", ""]
    return out


def sec_area(a: dict) -> list[str]:
    out = ["## 4. Area", "", stamp(a, "python bench/area.py [--quick]"), "",
           "Yosys generic synthesis (`synth -flatten -top <unit>; stat -tech cmos`; the array "
           "hierarchically, totals over the hierarchy): cells of Yosys' internal gate library "
           "and its CMOS transistor estimate, which counts combinational cells only. Units: "
           "`fsa_fma` (the PE's E x E + A FMA with exp2 mode), the same with exp2 tied to 0 (a "
           "plain FMA), `fsa_pe` (FMA + register + r_out/d_out/u_out + 9 control bits), "
           "`ws_pe` (bench/ws_pe.py: a plain weight-stationary PE, FMA with exp2 = 0 + "
           "register + r_out/d_out + 2 control bits), `fsa_cmp`, `fsa_acc` and the whole "
           f"`fsa_array` of {a['config']}.", ""]
    out.append(md_table(["unit", "cells", "flip-flops", "transistors (comb.)", "synth s"],
                        [[k, v["cells"], v["flip_flops"], v["transistors"], v["seconds"]]
                         for k, v in a["units"].items()], ["", "", "", "", ".0f"]))
    o = a["overhead"]
    out += ["", f"* FSA PE over the plain WS PE: {o['pe_cells_pct']:+.1f} % cells"
            + (f", {o['pe_transistors_pct']:+.1f} % transistors" if "pe_transistors_pct" in o else ""),
            f"* exp2 mode inside the FMA: {o['fma_exp2_cells_pct']:+.1f} % cells"
            + (f", {o['fma_exp2_transistors_pct']:+.1f} % transistors"
               if "fma_exp2_transistors_pct" in o else "")]
    if "array_cells_pct" in o:
        out.append(f"* whole `fsa_array` of {a['config']} over R x C plain WS PEs (nothing else "
                   f"counted on the plain side): {o['array_cells_pct']:+.1f} % cells")
    if "array_projection_pct" in o:
        out.append("* arithmetic projection from the flattened unit counts (N x N fsa_pe + N "
                   "fsa_cmp + N fsa_acc vs N x N ws_pe; delayers left out; not a synthesis): "
                   + ", ".join(f"{n}x{n} {v:+.0f} %" for n, v in o["array_projection_pct"].items()))
    out += [f"* paper: {100 * a['paper_array_overhead']:.0f} % for the whole array (standard "
            "cells; the paper's baseline and cell library differ from these generic counts)", ""]
    ad = load("area_dma")
    if ad:
        sh = ad["shape"]
        out += [f"The DMA with a LOAD and a STORE in flight at once (`dma_rw_overlap`: each AXI "
                f"port a read and a write half) and without, `fsa_dma` flattened, on 8x8 fp16 "
                f"with {sh['axi_data_bits']}-bit AXI x {sh['mem_ports']} ports, "
                f"{sh['spad_banks']} + {sh['acc_banks']} bank ports, bursts of up to "
                f"{sh['dma_burst_beats']} beats (the presets' shape for two-beat rows). "
                + stamp(ad, "python bench/area.py --dma"), ""]
        out.append(md_table(["fsa_dma", "cells", "flip-flops", "transistors (comb.)"],
                            [["LOAD and STORE at once" if r["dma_rw_overlap"] else
                              "one direction at a time", r["cells"], r["flip_flops"],
                              r["transistors"]] for r in ad["rows"]], ["", "", "", ""]))
        out.append("")
    return out


def sec_ud(d: dict) -> list[str]:
    """Section 6: the UD dataflow beside the reference schedule (bench/ud.py; docs/ud.md)."""
    out = ["## 6. UD dataflow (docs/ud.md)", "",
           stamp(d, "python bench/ud.py [--quick] [--rtl | --rtl16] [--area] [--keep]"), "",
           "![UD utilisation](ud_utilisation.png) (`python bench/plots.py`)", "",
           "### 6a. Steady state per key block, free DMA (cycle model)", "",
           "Cycles per key block of the reference kernel and of the UD kernel on each UD "
           "preset (fp16), the UD bound `T = 2R + P + 3`, the per-query-block cost, and the "
           "steady-state utilisation `2R / cycles per key block`.", ""]
    out.append(md_table(["config", "reference / kb", "UD / kb", "T", "reference / qb", "UD / qb",
                         "reference util", "UD util"],
                        [[r["config"], r["ref_per_kb"], r["ud_per_kb"], r["bound_T"],
                          r["ref_per_qb"], r["ud_per_qb"], f"{100 * r['ref_util']:.1f} %",
                          f"{100 * r['ud_util']:.1f} %"] for r in d["steady_state"]],
                        ["", "g", "g", "", "g", "g", "", ""]))
    out += ["", "### 6b. Predicted utilisation of attention N x N (cycle model)", "",
            "`free`: every word in the queue and a DMA that never waits; `preset`: the "
            "preset's memory system with the program fetched by the device (as `fsa predict`, "
            "but always by the steady-state extrapolation; `fsa predict` runs the model on the "
            "whole program up to 20,000 key-block steps; measured: the two agree to the cycle on "
            "128x128 UD N = 8192 preset, 1,146,146).",
            ""]
    out.append(md_table(["config", "N", "DMA", "kernel", "causal", "cycles / kb", "cycles",
                         "utilisation"],
                        [[r["config"], r["N"], r["dma"], r["kernel"],
                          "yes" if r["causal"] else "no", r["per_kb"], r["cycles"],
                          f"{100 * r['util']:.1f} %"] for r in d["predictions"]],
                        ["", "", "", "", "", "g", "", ""]))
    if d.get("rtl"):
        out += ["", "### 6c. The RTL (Verilator, measured)", "",
                "The presets' memory system, the program fetched by the device over memory "
                "port 0; kernel `reference` runs the reference kernel on the UD hardware. RTL "
                "cycles per key block = `(cycles(seq_kv = 4R) - cycles(seq_kv = 2R)) / 2` at "
                "seq_q = C; `model cycles` is the cycle model run on the same whole program."
                + (f" (Measured {d['rtl_when']}, kept by `--keep` when the model tables "
                   "were rerun.)" if d.get("rtl_when") else ""),
                ""]
        out.append(md_table(["config", "kernel", "RTL / kb", "model / kb", "T", "N",
                             "RTL cycles", "model cycles", "utilisation"],
                            [[r["config"], r["kernel"], r["rtl_per_kb"], r["model_per_kb"],
                              r["bound_T"], r["N"], r["cycles"], r["model_cycles"],
                              f"{100 * r['util']:.1f} %"] for r in d["rtl"]],
                            ["", "", "g", "g", "", "", "", "", ""]))
    else:
        out += ["", "(RTL table not run: `python bench/ud.py --rtl16`)"]
    if d.get("area"):
        out += ["", "### 6d. Area of the UD units (Yosys generic cells, measured)", ""]
        if d.get("area_when"):
            out += [f"(Measured {d['area_when']}, kept by `--keep`.)", ""]
        out.append(md_table(["unit", "cells", "vs", "against"],
                            [[r["unit"], r["cells"],
                              "" if r["vs"] is None else f"{100 * r['vs']:+.2f} %",
                              r.get("against", "")] for r in d["area"]], ["", "", "", ""]))
    else:
        out += ["", "(area table not run: `python bench/ud.py --area`)"]
    out.append("")
    return out


def main(argv: "list[str] | None" = None) -> int:
    import argparse
    global DOC, RES
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true",
                    help="render bench/results/quick/*.json into bench/results/quick/performance.md")
    args = ap.parse_args(argv)
    if args.quick:
        RES = common.results_dir(True)
        DOC = RES / "performance.md"
    u, acc, s, c, ar, num, mem, ud = (load(n) for n in ("utilisation", "accuracy", "simspeed",
                                                        "convert", "area", "numerics", "memory",
                                                        "ud"))
    lines = ["# Performance" + (" (quick run)" if args.quick else ""), "",
             "Generated by `python bench/mkdoc.py` from `bench/results/*.json`; `make bench` "
             "reruns every benchmark, the plots and this page (`make bench QUICK=1`: a shorter "
             "run written to `bench/results/quick/`, this page included). All "
             "numbers are measured on the machine named in each section's stamp, except the "
             "cycle-model predictions (marked as such).", ""]
    lines += sec_utilisation(u) if u else ["## 1. Utilisation", "", "(not run: `python bench/utilisation.py`)", ""]
    lines += sec_memory(mem) if mem else ["### 1f. Memory systems", "",
                                          "(not run: `python bench/memory.py`)", ""]
    lines += sec_accuracy(acc) if acc else ["## 2. Accuracy", "", "(not run: `python bench/accuracy.py`)", ""]
    lines += sec_speed(s, c)
    lines += sec_area(ar) if ar else ["## 4. Area", "", "(not run: `python bench/area.py`)", ""]
    if num:
        lines += ["## 5. exp2 approximation (numeric model)", "",
                  stamp(num, "python bench/numerics.py [--quick]"), "",
                  "exp2_pwl over all 30720 negative normal fp16 x vs math.exp2 (fp16 E output; "
                  "fp32 A output for the chord error alone):", ""]
        lines.append(md_table(["P", "MAE (fp16 out)", "max abs", "max rel (normal results)",
                               "MAE (fp32 out)"],
                              [[r["pieces"], r["all"]["mae"], r["all"]["max_abs"],
                                r["normal"]["max_rel"], r["all_fp32_output"]["mae"]]
                               for r in num["exp2_accuracy"]], ["", ".2e", ".2e", ".2e", ".2e"]))
        lines.append("")
    lines += sec_ud(ud) if ud else ["## 6. UD dataflow", "", "(not run: `python bench/ud.py`)",
                                    ""]
    import timing       # section 7: bench/timing.py renders its own results
    lines += timing.doc_section(load("timing"))
    DOC.parent.mkdir(parents=True, exist_ok=True)
    DOC.write_text("\n".join(lines).rstrip() + "\n")
    print(f"wrote {DOC.relative_to(common.ROOT) if DOC.is_relative_to(common.ROOT) else DOC}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
