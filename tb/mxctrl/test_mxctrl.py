"""Matrix controller bench: outputs cycle by cycle equal to the plans."""
import json

import pytest

from fsa import config as fconfig
from fsa import simrun
from rtl import fsa_mxctrl
from rtl.generate import generate, verilog_files

pytestmark = pytest.mark.sim


def attention_stream(cfg, blocks=3, causal_last=False):
    R, C = cfg.sa_rows, cfg.sa_cols
    out = []
    for j in range(blocks):
        out.append(dict(func="LOAD_STATIONARY", spad_addr=C - 1, spad_stride=-1,
                        rel=(1, (j + 1) % 8)))
        out.append(dict(func="ATTENTION_SCORE", spad_addr=C + 2 * R * (j % 2), spad_stride=1,
                        acc_addr=0, zero=(j == 0), causal=(causal_last and j == blocks - 1)))
        out.append(dict(func="ATTENTION_VALUE", spad_addr=C + 2 * R * (j % 2) + R, spad_stride=1,
                        acc_addr=1, acc_stride=1, zero=(j == 0), rel=(2, j % 8)))
    out.append(dict(func="ATTENTION_LSE_NORM_SCALE", acc_addr=0))
    out.append(dict(func="ATTENTION_LSE_NORM", acc_addr=1, acc_stride=1, rel=(3, 5)))
    # a stride of 2 downward, wait_prev_acc, and a second query block
    out.append(dict(func="LOAD_STATIONARY", spad_addr=2 * C - 2, spad_stride=-2))
    out.append(dict(func="ATTENTION_SCORE", spad_addr=C, spad_stride=1, acc_addr=0, zero=True,
                    wait_prev_acc=True, mask_keys=True))
    out.append(dict(func="ATTENTION_VALUE", spad_addr=C + R, spad_stride=1, acc_addr=R,
                    acc_stride=-1, zero=True))
    return out


@pytest.mark.parametrize("name", ["FSA4X4Fp16Config", "FSA8X8Fp16Config", "FSA8X4Fp16Config",
                                  "FSA4X8Fp16Config"])
def test_controller_follows_plans(name):
    cfg = fconfig.get(name)
    out = generate(cfg, quiet=True)
    files = [f for f in verilog_files(out) if f.stem == fsa_mxctrl.MODULE]
    case = json.dumps({"config": name, "instrs": attention_stream(cfg, causal_last=True)})
    simrun.run(fsa_mxctrl.MODULE, files, "tb.mxctrl.tb_mxctrl", extra_env={"FSA_CASE": case})
