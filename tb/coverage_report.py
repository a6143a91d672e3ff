"""A simple functional-coverage summary of a test session: which matrix and
DMA instructions, CMP/ACC commands (through the plans of the matrix
functions run), error codes and AXI stall patterns were exercised. Tests call
:func:`record`; tb/conftest.py prints :func:`summary` at the end."""
from __future__ import annotations

from collections import Counter

from fsa import errors
from fsa import plan as fplan
from fsa.hw import timing
from fsa.isa import Dma, Fence, Matrix, MxFunc

SEEN: dict[str, Counter] = {k: Counter() for k in
                            ("instructions", "cmp", "acc", "errors", "stalls", "configs", "flags")}


def record(program=None, run: dict | None = None, *, pauses: float = 0.0, config: str = "",
           edge: str = "", error: str | None = None) -> None:
    if program is not None:
        instrs = getattr(program, "instructions", program)
        for ins in instrs:
            if isinstance(ins, Matrix):
                f = MxFunc(ins.func).name
                SEEN["instructions"][f] += 1
                pl = timing.plan("FSA4X4Fp16Config", f)
                for _, c in pl.cmp:
                    SEEN["cmp"][c] += 1
                for _, c in pl.acc:
                    SEEN["acc"][c] += 1
                for flag in ("zero", "causal", "wait_prev_acc"):
                    if getattr(ins, flag):
                        SEEN["flags"][flag] += 1
                if ins.acquire_valid or ins.release_valid:
                    SEEN["flags"]["matrix semaphore"] += 1
            elif isinstance(ins, Dma):
                SEEN["instructions"]["DMA_" + ("STORE" if ins.func else "LOAD")] += 1
                if ins.is_accum:
                    SEEN["flags"]["DMA accumulator"] += 1
                if ins.acquire_valid or ins.release_valid:
                    SEEN["flags"]["DMA semaphore"] += 1
            elif isinstance(ins, Fence):
                SEEN["instructions"]["FENCE" + ("_STOP" if ins.stop else "")] += 1
    if run is not None:
        SEEN["errors"][run.get("error", "NONE")] += 1
    if error:
        SEEN["errors"][error] += 1
    SEEN["stalls"]["random AXI pauses" if pauses else "no pauses"] += 1
    if config:
        SEEN["configs"][config] += 1
    if edge:
        SEEN["flags"]["edge:" + edge] += 1


def summary() -> str:
    if not any(SEEN[k] for k in SEEN):
        return ""
    lines = ["functional coverage of this session:"]
    universe = {"instructions": [f.name for f in MxFunc] + ["DMA_LOAD", "DMA_STORE", "FENCE", "FENCE_STOP"],
                "cmp": [c for c in fplan.CMP_CMDS if c != "NOP"],
                "acc": [c for c in fplan.ACC_CMDS if c != "NOP"],
                "errors": [n for n, _ in errors.ERRORS.values()]}
    for key in ("instructions", "cmp", "acc", "errors", "stalls", "configs", "flags"):
        got = SEEN[key]
        items = ", ".join(f"{k} x{v}" for k, v in sorted(got.items()))
        lines.append(f"  {key:<12} {items or '-'}")
        if key in universe:
            missing = [u for u in universe[key] if u not in got]
            if missing:
                lines.append(f"  {'':<12} not exercised here: {', '.join(missing)}")
    return "\n".join(lines)
