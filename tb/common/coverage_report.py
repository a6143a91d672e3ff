"""Functional coverage of a test session, counted from what the device did.

Benches call :func:`record` after each device run (tb/attention/test_attention.py,
tb/top/test_top.py). A record holds what that run executed: the config, the
run's state and error, the device's own counters (exec cycles, matrix / DMA
instructions, fences, words), the matrix functions and flags of the
instructions it executed (all of them when it finished, those before the
failing one when it stopped in error), the CMP / ACC commands their plans
issue on that config's array (``fsa.hw.timing.plan`` of its config;
counted once per matrix instruction that issues them, so the count does not
depend on how many cycles a command lasts),
whether the memory paused, and whether the cycle model was checked against
the counters.

Records are plain JSON-able dicts in :data:`RECORDS`. Under pytest-xdist
every worker hands its records to the controller, which merges them and
prints :func:`summary` (tb/conftest.py), so ``make test`` (``-n 2``) prints
the session's coverage like a single-process run.
"""
from __future__ import annotations

import functools
from collections import Counter

from fsa import config as fconfig
from fsa import errors
from fsa import plan as fplan
from fsa.hw import timing
from fsa.isa import Dma, Fence, Matrix, MxFunc

#: this process's records (a worker's are sent to the controller at its end)
RECORDS: list[dict] = []

COUNTERS = ("exec", "mx", "dma", "fence", "words")
KEYS = ("instructions", "cmp", "acc", "errors", "stalls", "configs", "flags")


@functools.lru_cache(maxsize=None)
def _plan_cmds(func: str, cfg) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The distinct CMP and ACC commands `func`'s plan issues on an R x C array."""
    pl = timing.plan(cfg, func)
    return tuple(sorted({c for _, c in pl.cmp})), tuple(sorted({c for _, c in pl.acc}))


def _config(config):
    """(name, FSAConfig or None) of `config` (an FSAConfig or a preset name)."""
    if isinstance(config, fconfig.FSAConfig):
        return config.name, config
    try:
        return config, fconfig.get(config) if config else None
    except (KeyError, ValueError, OSError):      # not a preset: no plans to count
        return config, None


def record(program=None, run: dict | None = None, *, pauses: float = 0.0, config="",
           edge: str = "", error: str | None = None, cycles_checked: bool | None = None,
           what: str = "") -> dict:
    """Record one device run.

    Args:
        program: the Program or instruction list the device ran (None: raw words).
        run: the run's status (``state``, ``error``, ``error_index``, ``counters``).
        pauses: the probability of random AXI pauses it ran with.
        config: its FSAConfig (or a preset name).
        edge: the edge-value kind of its inputs, if any.
        error: an error name to count besides the run's own.
        cycles_checked: whether its counters were checked against the cycle
            model (None: not a check this bench makes).
        what: the run's name in the summary.
    """
    name, cfg = _config(config)
    rec = {"config": name, "what": what or name, "pauses": bool(pauses), "edge": edge,
           "cycles_checked": cycles_checked, "errors": [], "counters": {},
           "instructions": Counter(), "cmp": Counter(), "acc": Counter(), "flags": Counter(),
           "program_mx": None}
    if run is not None:
        rec["errors"].append(run.get("error", "NONE"))
        rec["counters"] = {k: int(v) for k, v in run.get("counters", {}).items() if k in COUNTERS}
    if error:
        rec["errors"].append(error)
    if program is not None:
        instrs = list(getattr(program, "instructions", program))
        if run is not None and run.get("state") == "error":
            instrs = instrs[:run.get("error_index", 0)]      # executed before the error
        rec["program_mx"] = sum(isinstance(i, Matrix) for i in instrs)
        for ins in instrs:
            if isinstance(ins, Matrix):
                f = MxFunc(ins.func).name
                rec["instructions"][f] += 1
                if cfg is not None:
                    cmp, acc = _plan_cmds(f, cfg)
                    rec["cmp"].update(cmp)
                    rec["acc"].update(acc)
                for flag in ("zero", "causal", "mask_keys", "wait_prev_acc"):
                    if getattr(ins, flag):
                        rec["flags"][flag] += 1
                if ins.acquire_valid or ins.release_valid:
                    rec["flags"]["matrix semaphore"] += 1
            elif isinstance(ins, Dma):
                rec["instructions"]["DMA_" + ("STORE" if ins.func else "LOAD")] += 1
                if ins.is_accum:
                    rec["flags"]["DMA accumulator"] += 1
                if ins.acquire_valid or ins.release_valid:
                    rec["flags"]["DMA semaphore"] += 1
            elif isinstance(ins, Fence):
                rec["instructions"]["FENCE" + ("_STOP" if ins.stop else "")] += 1
    if edge:
        rec["flags"]["edge:" + edge] += 1
    for k in ("instructions", "cmp", "acc", "flags"):
        rec[k] = dict(rec[k])
    RECORDS.append(rec)
    return rec


def merged(records: list[dict]) -> dict:
    """Totals of `records`: a Counter per coverage key, the device counters,
    the runs whose counters disagree with their program, and the cycle-model
    checks."""
    tot = {k: Counter() for k in KEYS}
    device = Counter()
    mismatched, checked, unchecked = [], 0, []
    for r in records:
        for k in ("instructions", "cmp", "acc", "flags"):
            tot[k].update(r[k])
        tot["errors"].update(r["errors"])
        tot["stalls"]["random AXI pauses" if r["pauses"] else "no pauses"] += 1
        if r["config"]:
            tot["configs"][r["config"]] += 1
        device.update(r["counters"])
        if r["counters"] and r["program_mx"] is not None \
                and r["program_mx"] != r["counters"].get("mx"):
            mismatched.append(r["what"])
        if r["cycles_checked"]:
            checked += 1
        elif r["cycles_checked"] is False:
            unchecked.append(r["what"] + (" (random AXI pauses)" if r["pauses"] else ""))
    return {"coverage": tot, "device": device, "runs": len(records), "mismatched": mismatched,
            "cycles_checked": checked, "cycles_unchecked": unchecked}


def summary(records: list[dict] | None = None) -> str:
    """The coverage summary of `records` (default: :data:`RECORDS`); "" if none."""
    records = RECORDS if records is None else records
    if not records:
        return ""
    m = merged(records)
    tot = m["coverage"]
    dev = m["device"]
    lines = [f"functional coverage of this session ({m['runs']} device runs):",
             "  device       " + ", ".join(f"{k} {dev[k]}" for k in COUNTERS)
             + "  (the devices' own counters, summed)"]
    universe = {"instructions": [f.name for f in MxFunc] + ["DMA_LOAD", "DMA_STORE", "FENCE", "FENCE_STOP"],
                "cmp": [c for c in fplan.CMP_CMDS if c != "NOP"],
                "acc": [c for c in fplan.ACC_CMDS if c != "NOP"],
                "errors": [n for n, _ in errors.ERRORS.values()]}
    for key in KEYS:
        got = tot[key]
        items = ", ".join(f"{k} x{v}" for k, v in sorted(got.items()))
        lines.append(f"  {key:<12} {items or '-'}")
        if key in universe:
            missing = [u for u in universe[key] if u not in got]
            if missing:
                lines.append(f"  {'':<12} not exercised here: {', '.join(missing)}")
    if m["mismatched"]:
        lines.append(f"  WARNING      matrix instructions differ from the device's mx counter: "
                     f"{', '.join(m['mismatched'])}")
    un = m["cycles_unchecked"]
    lines.append(f"  cycle model  equal to the RTL's counters on {m['cycles_checked']} runs; "
                 f"not checked on {len(un)}{': ' + ', '.join(un) if un else ''}")
    return "\n".join(lines)
