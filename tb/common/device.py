"""Checks of a device run (fsa.simdev.run_on_device) of a kernel against
the golden model and the cycle model, shared by the attention, UD attention
and memory-shape benches."""
from __future__ import annotations

import numpy as np

from fsa.cycle import model as cm
from fsa.report import bit_diff
from tb.common.tier import SEED


def check_cycles(cfg, prog, run, what: str, pauses: float) -> bool:
    """The cycle model (fsa/cycle/model.py: calibrated DMA timing, and the
    harness's push rate for the words beyond the queue's depth) predicts the
    device's exec, bubble, mx_active and dma_active counters exactly when the
    memory answers without pauses. Runs with random AXI pauses are not
    checked (the model has no pauses): returns False for them, and the
    coverage summary lists them."""
    if pauses:
        return False
    m = cm.simulate(cfg, prog.instructions, cm.DEFAULT_DMA, host=cm.HARNESS_HOST)
    assert m.cycles == run["counters"]["exec"], (
        f"{what}: cycle model {m.cycles} cycles, RTL exec {run['counters']['exec']}")
    for k in ("bubble", "mx_active", "dma_active"):
        assert m.counters[k] == run["counters"][k], (what, k, m.counters, run["counters"])
    return True


def check_device(cfg, prog, gold, res, what: str, pauses: float = 0.0):
    run = res["runs"][-1]
    assert run["state"] == "done", f"{what}: device state {run['state']}, error {run['error']} " \
                                   f"at instruction {run['error_index']} (SEED={SEED})"
    rtl = np.frombuffer(res["dumps"][0], gold.outputs["Ot"].dtype).reshape(gold.outputs["Ot"].shape)
    d = bit_diff(rtl, gold.outputs["Ot"])
    assert d["differ"] == 0, (f"{what}: {d['differ']} of {rtl.size} output values differ from the "
                              f"golden model (SEED={SEED}); first (index, rtl, model): {d['first']}; "
                              f"run folder {res['run_dir']}")
    c = run["counters"]
    counts = prog.counts()
    assert c["mx"] == counts.get("matrix", 0) and c["dma"] == counts.get("dma", 0), (c, counts)
    assert c["fence"] == counts.get("fence", 0), (c, counts)
    assert c["words"] == c["enq"] == c["deq"] == len(prog.words()), c
    assert c["exec"] > 0 and 0 < c["mx_active"] <= c["exec"] and c["dma_active"] <= c["exec"], c
    return rtl, check_cycles(cfg, prog, run, what, pauses)
