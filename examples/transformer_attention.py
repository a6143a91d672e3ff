"""The attention of a small transformer layer, run on FSA.

A causal multi-head self-attention block (torch: Q/K/V projections of a
batch of token embeddings, heads of dimension R = the array rows, the
output projection) computed twice: with torch's
``scaled_dot_product_attention`` in float64 as the reference, and with
``fsa.scaled_dot_product_attention`` on the golden model and on the RTL in
Verilator (every (batch, head) pair in one program, one simulator start).
It prints the error of each engine against torch (the attention output
against torch on the same rounded inputs, with the project's accuracy
bounds, and against the float64 layer; the whole block's output), whether the engines agree bit for bit, the
device's cycles and utilisation, and writes the distribution of the errors
to a file (a PNG with matplotlib; without it, a text histogram).

Run from the repository root (the first Verilator run builds the simulator,
about a minute for 8x8)::

    .venv/bin/python examples/transformer_attention.py
    .venv/bin/python examples/transformer_attention.py --engines golden --seq 40
    .venv/bin/python examples/transformer_attention.py --config FSA16X16Fp16Config --heads 2
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))    # run from a checkout

import fsa                                                       # noqa: E402
from fsa import config                                           # noqa: E402
from fsa import numerics as nx                                   # noqa: E402
from fsa.cli.common import Outputs                               # noqa: E402
from fsa.report import bound_scale, bounds_verdict, error_stats  # noqa: E402


class CausalSelfAttention(torch.nn.Module):
    """GPT-style attention block; `sdpa` computes the attention itself."""

    def __init__(self, d_model: int, heads: int):
        super().__init__()
        self.heads = heads
        self.qkv = torch.nn.Linear(d_model, 3 * d_model)
        self.proj = torch.nn.Linear(d_model, d_model)

    def forward(self, x: torch.Tensor, sdpa=F.scaled_dot_product_attention):
        b, s, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=-1)
        q, k, v = (t.view(b, s, self.heads, d // self.heads).transpose(1, 2) for t in (q, k, v))
        o = sdpa(q, k, v, is_causal=True)                        # [b, heads, s, d_head]
        return self.proj(o.transpose(1, 2).reshape(b, s, d)), o


def histogram(errors: np.ndarray, bins: int = 12, width: int = 50) -> str:
    """A text histogram of |error| on a log scale."""
    e = np.abs(errors[np.isfinite(errors)])
    exact = int((e == 0).sum())
    e = e[e > 0]
    if not e.size:
        return f"  all {exact} values exact"
    edges = np.logspace(np.log10(e.min()), np.log10(e.max()) + 1e-9, bins + 1)
    counts, _ = np.histogram(e, edges)
    lines = []
    for lo, hi, c in zip(edges[:-1], edges[1:], counts):
        bar = "#" * int(round(width * c / max(counts.max(), 1)))
        lines.append(f"  {lo:9.2e} .. {hi:9.2e} | {c:6d} {bar}")
    return "\n".join(lines + [f"  (and {exact} exact)"])


def _has_matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def plot_path(out: Path) -> Path:
    """Where :func:`save_error_plot` writes for `out`: .png or, without matplotlib, .txt."""
    return out.with_suffix(".png" if _has_matplotlib() else ".txt")


def save_error_plot(errors: dict[str, np.ndarray], path: Path) -> Path:
    """The error distributions at `path` (:func:`plot_path`): a PNG
    (matplotlib) or a text file."""
    if path.suffix == ".txt":
        text = []
        for name, e in errors.items():
            text.append(f"|FSA - torch| of the attention output, {name} ({e.size} values):\n"
                        + histogram(e))
        path.write_text("\n\n".join(text) + "\n")
        return path
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4))
    for name, e in errors.items():
        a = np.abs(e[np.isfinite(e)])
        ax.hist(a[a > 0], bins=np.logspace(-10, -1, 60), histtype="step",
                label=f"{name} ({int((a == 0).sum())} of {a.size} exact, not shown)")
    ax.set_xscale("log")
    ax.set_xlabel("|FSA - torch| (attention output)")
    ax.set_ylabel("values")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", default="FSA8X8Fp16Config")
    ap.add_argument("--engines", default="golden,verilator",
                    help="comma-separated: golden, verilator, icarus")
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--seq", type=int, default=21, help="tokens (any length)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", help="write the error plot here (a .png with matplotlib, else a "
                    ".txt histogram; the suffix is replaced); default: the histogram on stdout")
    ap.add_argument("--force", action="store_true", help="replace the plot if it exists")
    args = ap.parse_args(argv)
    if args.out is not None:                  # checked before the work, as the fsa commands do
        try:
            plot = Outputs(args.force).file(str(plot_path(Path(args.out))), "--out")
        except ValueError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2

    cfg = config.get(args.config)
    d_head = cfg.sa_rows                      # a head fills the array's rows
    d_model = args.heads * d_head
    torch.manual_seed(args.seed)
    layer = CausalSelfAttention(d_model, args.heads).eval()
    x = torch.randn(args.batch, args.seq, d_model)
    with torch.no_grad():
        ref_y, ref_o = layer.double()(x.double())
    layer.float()
    print(f"causal self-attention: batch {args.batch}, {args.seq} tokens, d_model {d_model}, "
          f"{args.heads} heads of d = {d_head}, on {cfg.name}")

    errors, outputs, ok = {}, {}, True
    for engine in args.engines.split(","):
        seen = {}

        def sdpa(q, k, v, is_causal):
            o, seen["stats"] = fsa.scaled_dot_product_attention(
                q, k, v, is_causal=is_causal, config=cfg, engine=engine, return_stats=True)
            # torch in float64 on the inputs FSA saw (rounded to its element format)
            qe, ke, ve = (nx.to_float64(nx.from_float64(t.double().numpy(), cfg.e_type),
                                        cfg.e_type) for t in (q, k, v))
            seen["ref"] = F.scaled_dot_product_attention(
                *(torch.from_numpy(t) for t in (qe, ke, ve)), is_causal=is_causal).numpy()
            seen["v"] = ve
            return o

        with torch.no_grad():
            y, o = layer(x, sdpa)
        st = seen["stats"]
        outputs[engine] = o
        errors[engine] = o.double().numpy() - seen["ref"]
        es = error_stats(o.double().numpy(), seen["ref"])
        within, why = bounds_verdict(es, bound_scale(seen["v"]), cfg.e_type)
        eo = error_stats(o.double().numpy(), ref_o.numpy())
        ey = error_stats(y.double().numpy(), ref_y.numpy())
        ok &= within
        pad = (f", sequences padded to {st.padded[0]} x {st.padded[1]}"
               if st.padded[:2] != st.shape[:2] else "")
        print(f"\n{engine}: {st.heads} heads in one program ({st.words} instruction words{pad})")
        print(f"  attention vs torch, same {cfg.e_type} inputs: MAE {es['mae']:.2e}  max abs "
              f"{es['max_abs']:.2e}  ({why})")
        print(f"  attention vs the float64 layer:      MAE {eo['mae']:.2e}  max abs "
              f"{eo['max_abs']:.2e}  (adds the rounding of Q, K, V to {cfg.e_type})")
        print(f"  block output vs the float64 layer:   MAE {ey['mae']:.2e}  max abs "
              f"{ey['max_abs']:.2e}")
        print(f"  cycles {st.cycles} ({st.cycles_from}), utilisation {100 * st.utilisation:.1f}% "
              f"(useful FLOPs {st.flops:,} / (cycles x 2RC))")
    names = list(outputs)
    for other in names[1:]:
        same = torch.equal(outputs[names[0]].view(torch.int32), outputs[other].view(torch.int32))
        ok &= same
        print(f"\n{names[0]} and {other}: {'bit-identical' if same else 'DIFFERENT'} outputs")
    if args.out is None:
        for name, e in errors.items():
            print(f"\n|FSA - torch| of the attention output, {name} ({e.size} values):\n"
                  + histogram(e))
        return 0 if ok else 1
    try:
        path = save_error_plot(errors, plot)
    except OSError as e:
        print(f"error: --out {plot}: cannot write it ({e.strerror or e})", file=sys.stderr)
        return 2
    print(f"\nerror distribution written to {path}")
    if path.suffix == ".txt":
        print(path.read_text())
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
