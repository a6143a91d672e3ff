"""examples/transformer_attention.py on the golden model (small shapes):
it runs, stays within the bounds, and writes the error distribution."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "transformer_attention.py"


def test_example_runs_on_the_golden_model(tmp_path):
    r = subprocess.run([sys.executable, str(EXAMPLE), "--engines", "golden", "--batch", "1",
                        "--heads", "2", "--seq", "11", "--out", str(tmp_path / "err")],
                       capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "2 heads in one program" in r.stdout and "(within the bounds)" in r.stdout
    assert "utilisation" in r.stdout
    written = [p for p in tmp_path.iterdir() if p.name.startswith("err")]
    assert len(written) == 1 and written[0].suffix in (".png", ".txt")
    assert written[0].stat().st_size > 100
