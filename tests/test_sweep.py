"""``fsa sweep`` (fsa/sweep.py): the points, one row against the cycle model
and the golden model computed directly, invalid points as rows, the same
table from a Dask local cluster as in-process, and the CLI's files."""
import csv
import math

import numpy as np
import pytest

from fsa import config as fconfig
from fsa import numerics as nx
from fsa import sweep
from fsa.cli import main
from fsa.golden import fast
from fsa.cycle.predict import predict
from fsa.report import error_stats, fa3_inputs, torch_reference


def test_points_are_the_cartesian_product_in_order():
    pts = sweep.points(["A", "B"], [64, 128], [4, 8], [None], [False, True])
    assert len(pts) == 2 * 2 * 2 * 2
    assert pts[0] == sweep.Point("A", 64, 4, None, False)
    assert pts[1] == sweep.Point("A", 128, 4, None, False)
    assert pts[-1] == sweep.Point("B", 128, 8, None, True)
    with pytest.raises(ValueError, match="positive"):
        sweep.points(["A"], [0])
    with pytest.raises(ValueError, match="at least one"):
        sweep.points([], [64])


def test_derive_names_and_changes_only_what_the_point_sets():
    base = fconfig.get("FSA8X8Fp16Config")
    bits = 64 if base.axi_data_bits != 64 else 128          # a width other than the preset's
    c = sweep.derive(sweep.Point("FSA8X8Fp16Config", 64, 4, bits))
    assert (c.exp2_pieces, c.axi_data_bits) == (4, bits)
    assert c.name == f"FSA8X8Fp16ConfigP4Axi{bits}"
    assert c.replace(name=base.name, exp2_pieces=base.exp2_pieces,
                     axi_data_bits=base.axi_data_bits) == base
    assert sweep.derive(sweep.Point("FSA8X8Fp16Config", 64)) == base


def test_a_row_is_the_cycle_model_and_the_golden_model():
    cfg = fconfig.get("FSA4X4Fp16Config")
    row = sweep.evaluate(sweep.Point(cfg.name, 32, causal=True), accuracy_len=16)
    p = predict(cfg, 32, 32, True)
    f = predict(cfg, 32, 32, True, free_dma=True)
    assert row["error"] is None
    assert (row["cycles"], row["free_dma_cycles"]) == (p["cycles"], f["cycles"])
    assert row["utilisation"] == p["utilisation"]
    assert math.isclose(row["dma_slowdown_pct"], 100 * (p["cycles"] / f["cycles"] - 1))
    # the accuracy columns: the golden model against torch at 16
    rng = np.random.default_rng(0)
    q, k, v = (nx.from_float64(fa3_inputs(rng, (16, 4)), "fp16") for _ in range(3))
    o = nx.to_float64(fast.attention(cfg, q, k, v, causal=True), "fp32")
    ref = torch_reference(*(nx.to_float64(x, "fp16") for x in (q, k, v)), True)
    st = error_stats(o, ref)
    assert row["acc_seq"] == 16
    assert (row["max_abs_err"], row["rmse"]) == (st["max_abs"], st["rmse"])


def test_invalid_points_become_rows_with_the_reason():
    rows = [sweep.evaluate(p) for p in (sweep.Point("FSA4X4Fp16Config", 64, axi_bits=512),
                                        sweep.Point("FSA8X4Fp16Config", 64, causal=True),
                                        sweep.Point("NoSuchConfig", 64))]
    assert "axi_data_bits" in rows[0]["error"] and rows[0]["cycles"] is None
    assert "square" in rows[1]["error"]
    assert "NoSuchConfig" in rows[2]["error"]


def test_dask_local_cluster_gives_the_in_process_table():
    pts = sweep.points(["FSA4X4Fp16Config", "FSA8X8Fp16Config"], [32, 64], [4, 8])
    serial = sweep.run(pts, serial=True)
    seen = []
    on_dask = sweep.run(pts, workers=2, progress=seen.append)
    strip = [{k: v for k, v in r.items() if k != "seconds"} for r in serial]
    assert [{k: v for k, v in r.items() if k != "seconds"} for r in on_dask] == strip
    assert any(s.startswith("dask: 2 workers") for s in seen), seen
    assert sum(s.startswith("[") for s in seen) == len(pts)


def test_cli_writes_the_table_and_plots(tmp_path):
    out = tmp_path / "t.csv"
    rc = main(["sweep", "--configs", "FSA4X4Fp16Config", "--lengths", "16,32",
               "--axi-bits", "64,128", "--causal", "both", "--serial", "--out", str(out),
               "--plots", str(tmp_path / "plots")])
    assert rc == 0
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == 2 * 2 * 2
    assert list(rows[0]) == sweep.COLUMNS
    good = [r for r in rows if not r["error"]]
    bad = [r for r in rows if r["error"]]
    assert len(good) == 4 and len(bad) == 4            # 128 bits do not divide a 64-bit row
    for r in good:
        assert int(r["cycles"]) == predict("FSA4X4Fp16Config", int(r["seq"]), int(r["seq"]),
                                           r["causal"] == "True")["cycles"]
    md = out.with_suffix(".md").read_text().splitlines()
    assert md[0].startswith("| config |") and len(md) == 2 + len(rows)
    assert (tmp_path / "plots" / "sweep_utilisation.png").stat().st_size > 1000


def test_cli_refuses_unknown_configs_and_bad_lists(capsys):
    assert main(["sweep", "--configs", "Nope", "--lengths", "64", "--serial", "--out", "t.csv"]) == 2
    with pytest.raises(SystemExit):
        main(["sweep", "--configs", "FSA4X4Fp16Config", "--lengths", "64,-3"])


def test_outputs_are_checked_before_the_sweep_runs(tmp_path, capsys):
    (tmp_path / "afile").write_text("x")
    (tmp_path / "adir").mkdir()
    base = ["sweep", "--configs", "FSA4X4Fp16Config", "--lengths", "16", "--serial"]
    for extra, words in ((["--out", str(tmp_path / "t.md")], "give the table a .csv name"),
                         (["--out", str(tmp_path / "adir")], "is a folder"),
                         (["--out", str(tmp_path / "t.csv"), "--plots", str(tmp_path / "afile")],
                          "is a file; give a folder"),
                         (["--out", str(tmp_path / "afile" / "t.csv")], "afile is not a folder")):
        assert main(base + extra) == 2
        err = capsys.readouterr()
        assert words in err.err and "sweep:" not in err.out, err     # refused before any point
    assert main(base + ["--out", str(tmp_path / "new" / "t.csv")]) == 0
    assert (tmp_path / "new" / "t.csv").read_text().startswith("config,")
