"""Benches of the CMP subtract/max unit, the format converter and the
divider (``rtl/fp/fsa_fcmp.py``, ``fsa_cvt.py``, ``fsa_div.py``) against
``fsa.numerics``.

The units of every case are converted once per session into a temporary
folder and instantiated side by side in one wrapper toplevel
(``fsa_fp_misc_top``, ports prefixed ``fcmp_fp32_``, ``cvt_fp32_fp16_``,
``div_fp32_r2_`` ...), so the whole file needs one simulator build instead
of fifteen (a Verilator build costs 15-45 s here without ccache; a case's
simulation 1-18 s).  Each case generates at least 20k vectors with the
expected bits from the bit-exact model, writes them to an .npz and streams
them through its instance with ``tb/fp_misc/tb_fp_misc.py`` on ``$SIM`` (verilator
or icarus).

* fcmp (fp32, fp16, bf16), ~33k pairs: uniform bits, a class mixture, every
  pair of special values, equal and negated operands, cancellation,
  alignment distances 0..P+5 with tie patterns, subnormal operands and
  results, overflow, signed zeros.
* cvt (fp32->fp16, fp32->bf16, fp16->fp32, bf16->fp32, x->x, and
  fp16<->bf16, which the unit also supports): 16-bit sources exhaustively
  (65536); fp32 sources ~36k (~24k for fp32->fp32): uniform bits, classes,
  the destination's exponent band (subnormal, normal and overflow results),
  exact ties and their neighbours, the overflow threshold, fp32 subnormals.
* div (fp32 2 bits/cycle, fp16 2, fp32 1), ~23k: uniform bits, classes,
  specials, subnormal inputs (overflow to inf), large inputs (subnormal
  results), every power of two, mantissas near 1 and near 2; plus the
  handshake test (latency, one-cycle done, y hold, start while busy, reset
  in mid-operation).
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

from fsa import numerics as nm
from fsa.formats import FPFormat, get_format
from fsa import simrun

FCMP_CASES = ["fp32", "fp16", "bf16"]
#: the pairs FSA uses, then fp16 <-> bf16 (supported by the unit, so tested too)
CVT_CASES = [("fp32", "fp16"), ("fp32", "bf16"), ("fp16", "fp32"), ("bf16", "fp32"),
             ("fp16", "fp16"), ("bf16", "bf16"), ("fp32", "fp32"),
             ("fp16", "bf16"), ("bf16", "fp16")]
DIV_CASES = [("fp32", 2), ("fp16", 2), ("fp32", 1)]
N_MIN = 20000


def _sim_id() -> str:
    return os.environ.get("SIM", "verilator").lower()


def _seed() -> int:
    return int(os.environ.get("SEED", "1"))


# ------------------------------------------------------------------ vectors
def _bits(sign, field, man, f: FPFormat) -> np.ndarray:
    return ((np.asarray(sign, np.int64) << (f.width - 1))
            | (np.asarray(field, np.int64) << f.man_bits)
            | np.asarray(man, np.int64))


def _specials(f: FPFormat) -> np.ndarray:
    """Zeros, infinities, NaNs (quiet, signalling, negative), extremes, 1."""
    m = f.man_bits
    top = (1 << m) - 1
    pos = np.array([0, f.pos_inf, f.canonical_nan, f.pos_inf | 1, f.pos_inf | top,
                    1, 2, 3, top, top - 1, 1 << (m - 1),        # subnormals
                    _bits(0, 1, 0, f), _bits(0, 1, top, f),     # smallest normals
                    _bits(0, f.exp_max - 1, top, f),            # max finite
                    _bits(0, f.exp_max - 1, top - 1, f), _bits(0, f.exp_max - 1, 0, f),
                    f.one, f.one + 1, f.one - 1, _bits(0, f.bias + 1, 0, f),
                    _bits(0, f.bias - 1, 0, f)], np.int64)
    return np.concatenate([pos, pos | f.sign_mask])


def _classes(rng: np.random.Generator, f: FPFormat, n: int) -> np.ndarray:
    """Values drawn from a mixture of classes."""
    m = f.man_bits
    sign = rng.integers(0, 2, n)
    man = rng.integers(0, 1 << m, n)
    cls = rng.choice(8, n, p=[0.15, 0.25, 0.12, 0.06, 0.05, 0.05, 0.08, 0.24])
    sp = _specials(f)
    out = rng.integers(0, 1 << f.width, n)                                   # 0: uniform
    fld = np.clip(f.bias + rng.integers(-6, 7, n), 1, f.exp_max - 1)
    out = np.where(cls == 1, _bits(sign, fld, man, f), out)                  # near 1
    out = np.where(cls == 2, _bits(sign, 0, np.maximum(man, 1), f), out)     # subnormal
    out = np.where(cls == 3, _bits(sign, 0, 0, f), out)                      # +-0
    out = np.where(cls == 4, _bits(sign, f.exp_max, 0, f), out)              # +-inf
    out = np.where(cls == 5, _bits(sign, f.exp_max, np.maximum(man, 1), f), out)  # NaN
    out = np.where(cls == 6, sp[rng.integers(0, len(sp), n)], out)           # specials
    out = np.where(cls == 7, _bits(sign, rng.integers(1, f.exp_max, n), man, f), out)
    return out


def fcmp_vectors(rng: np.random.Generator, f: FPFormat) -> "tuple[np.ndarray, np.ndarray]":
    """(a, b) pairs for sub/max, about 24k."""
    g = 3000
    m, p = f.man_bits, f.precision
    parts = []

    def sgn(k):
        return rng.integers(0, 2, k)

    # uniform bits and the class mixture
    parts.append((rng.integers(0, 1 << f.width, g), rng.integers(0, 1 << f.width, g)))
    parts.append((_classes(rng, f, 2 * g), _classes(rng, f, 2 * g)))
    # every pair of specials
    sp = _specials(f)
    aa, bb = np.meshgrid(sp, sp)
    parts.append((aa.ravel(), bb.ravel()))
    # equal operands, negated operands, cancellation (low bits differ)
    a = _classes(rng, f, g)
    parts.append((a[: g // 2], a[: g // 2]))
    parts.append((a[g // 2:], a[g // 2:] ^ f.sign_mask))
    a = _bits(sgn(g), rng.integers(1, f.exp_max, g), rng.integers(0, 1 << m, g), f)
    k = rng.integers(0, m + 2, g)
    b = a ^ (rng.integers(0, 1 << 62, g) & ((1 << k) - 1))
    b = np.where(rng.random(g) < 0.2, b ^ f.sign_mask, b)
    parts.append((a, b))
    # exponent 1 apart (massive cancellation with a borrow)
    fa = rng.integers(2, f.exp_max, g)
    a = _bits(0, fa, rng.integers(0, 1 << m, g), f)
    b = _bits(0, fa - 1, rng.integers((1 << m) - 64 if m > 6 else 0, 1 << m, g), f)
    s = sgn(g)
    parts.append((a | (s << (f.width - 1)), b | (s << (f.width - 1))))
    # alignment distance 0..p+5, mantissas random or tie-shaped
    ea = rng.integers(1, f.exp_max, g)
    d = rng.integers(0, p + 6, g)
    eb = np.maximum(ea - d, 0)
    mb = rng.integers(0, 1 << m, g)
    shape = rng.integers(0, 4, g)
    mb = np.where(shape == 1, 0, mb)                                   # power of two
    mb = np.where(shape == 2, (mb >> 4) << 4, mb)                      # short significand
    ma = rng.integers(0, 1 << m, g)
    ma = np.where(rng.random(g) < 0.3, ma | 1, ma)
    parts.append((_bits(sgn(g), ea, ma, f), _bits(sgn(g), eb, mb, f)))
    # subnormal operands and results around the normal/subnormal boundary
    h = g // 2
    parts.append((_bits(sgn(h), 0, rng.integers(0, 1 << m, h), f),
                  _bits(sgn(h), 0, rng.integers(0, 1 << m, h), f)))
    parts.append((_bits(sgn(h), rng.integers(0, 3, h), rng.integers(0, 1 << m, h), f),
                  _bits(sgn(h), rng.integers(0, 3, h), rng.integers(0, 1 << m, h), f)))
    # overflow: large magnitudes of opposite signs, and max finite -/+ ~half an ulp
    s = sgn(h)
    a = _bits(s, rng.integers(f.exp_max - 3, f.exp_max, h), rng.integers(0, 1 << m, h), f)
    b = _bits(1 - s, rng.integers(f.exp_max - 3, f.exp_max, h), rng.integers(0, 1 << m, h), f)
    parts.append((a, b))
    s = sgn(h)
    a = _bits(s, f.exp_max - 1, (1 << m) - rng.integers(1, 3, h), f)
    b = _bits(1 - s, f.exp_max - 1 - p + rng.integers(-1, 2, h),
              rng.integers(0, 1 << m, h) >> rng.integers(0, m + 1, h), f)
    parts.append((a, b))
    # signed zeros against everything
    z = _bits(sgn(h), 0, 0, f)
    parts.append((z, _classes(rng, f, h)))
    parts.append((_classes(rng, f, h), z))
    parts.append((z, _bits(sgn(h), 0, 0, f)))
    a = np.concatenate([x[0] for x in parts]).astype(np.int64)
    b = np.concatenate([x[1] for x in parts]).astype(np.int64)
    return a, b


def cvt_vectors(rng: np.random.Generator, fs: FPFormat, fd: FPFormat) -> np.ndarray:
    """Source values: every pattern of a 16-bit source; ~24k for fp32."""
    if fs.width == 16:
        return np.arange(1 << 16, dtype=np.int64)
    g = 3000
    ms, md = fs.man_bits, fd.man_bits
    parts = [rng.integers(0, 1 << 32, g), _classes(rng, fs, 2 * g),
             np.repeat(_specials(fs), 4)]
    s = rng.integers(0, 2, 8 * g)
    man = rng.integers(0, 1 << ms, 8 * g)
    # the destination's exponent band: subnormal, normal and overflowing results
    lo = max(fd.emin - fd.man_bits - 3 + fs.bias, 0)
    hi = min(fd.emax + 2 + fs.bias, fs.exp_max - 1)
    fld = rng.integers(lo, hi + 1, 8 * g)
    parts.append(_bits(s[:3 * g], fld[:3 * g], man[:3 * g], fs))
    if ms > md:
        # exact ties at the destination's mantissa width (for subnormal results
        # the rounding point moves up: ties there come from the band above)
        drop = ms - md
        tie = ((man >> drop) << drop) | (1 << (drop - 1))
        nudge = rng.choice([-1, 0, 0, 1], 8 * g)
        parts.append(_bits(s[3 * g:6 * g], fld[3 * g:6 * g],
                           np.clip(tie[3 * g:6 * g] + nudge[3 * g:6 * g], 0, (1 << ms) - 1), fs))
        # subnormal-result ties: the value is k/2 * (smallest dst subnormal)
        k = rng.integers(1, 1 << (md + 1), g) | 1
        sub = nm.from_float64(k * np.ldexp(0.5, fd.emin - md), fs).astype(np.int64)
        parts.append(sub + rng.choice([-1, 0, 0, 1], g))
    # the overflow threshold: max finite, max finite + half an ulp, neighbours
    mx = float(nm.to_float64(np.array([_bits(0, fd.exp_max - 1, (1 << md) - 1, fd)],
                                      dtype=fd.numpy_uint), fd)[0])
    half = np.ldexp(1.0, fd.emax - md - 1)
    thr = nm.from_float64(np.array([mx, mx + half, 2 * mx]), fs).astype(np.int64)
    parts.append((thr[rng.integers(0, 3, g)] + rng.integers(-3, 4, g))
                 | (rng.integers(0, 2, g) << (fs.width - 1)))
    # source subnormals
    parts.append(_bits(s[6 * g:7 * g], 0, man[6 * g:7 * g], fs))
    return np.concatenate(parts).astype(np.int64) & ((1 << fs.width) - 1)


def div_vectors(rng: np.random.Generator, f: FPFormat) -> np.ndarray:
    """Divider inputs, about 23k."""
    g = 1700
    m = f.man_bits
    top = (1 << m) - 1
    s = rng.integers(0, 2, 4 * g)
    man = rng.integers(0, 1 << m, 4 * g)
    parts = [rng.integers(0, 1 << f.width, 2 * g), _classes(rng, f, 2 * g),
             np.repeat(_specials(f), 5)]
    # subnormal inputs (huge or infinite results) and the smallest normals
    parts.append(_bits(s[:g], 0, np.maximum(man[:g], 1), f))
    parts.append(_bits(s[g:2 * g], rng.integers(1, 4, g), man[g:2 * g], f))
    # large inputs: subnormal results (exponent emax-3 .. emax)
    parts.append(_bits(s[2 * g:4 * g], rng.integers(f.exp_max - 4, f.exp_max, 2 * g),
                       man[2 * g:4 * g], f))
    # every power of two, both signs
    e = np.arange(0, f.exp_max)
    pw = np.concatenate([_bits(0, 0, 1 << np.arange(m), f), _bits(0, e[1:], 0, f)])
    parts.append(np.concatenate([pw, pw | f.sign_mask]))
    # mantissas near 1 and near 2 (short quotients, long carries)
    fld = rng.integers(1, f.exp_max, 2 * g)
    near = np.where(rng.random(2 * g) < 0.5, rng.integers(0, 16, 2 * g),
                    top - rng.integers(0, 16, 2 * g))
    parts.append(_bits(rng.integers(0, 2, 2 * g), fld, near, f))
    # normal inputs of all exponents
    parts.append(_bits(rng.integers(0, 2, 3 * g), rng.integers(1, f.exp_max, 3 * g),
                       rng.integers(0, 1 << m, 3 * g), f))
    x = np.concatenate(parts).astype(np.int64)
    return x[rng.permutation(len(x))]


def _rng(*key: int) -> np.random.Generator:
    return np.random.default_rng([_seed(), *key])


def make_fcmp(fmt: str, path: Path) -> dict:
    f = get_format(fmt)
    a, b = fcmp_vectors(_rng(1, f.width, f.exp_bits), f)
    ua, ub = a.astype(f.numpy_uint), b.astype(f.numpy_uint)
    vec = {"a": a, "b": b, "diff": nm.sub(ua, ub, f).astype(np.int64),
           "mx": nm.maximum(ua, ub, f).astype(np.int64), "w": f.width}
    np.savez(path, **vec)
    return vec


def make_cvt(src: str, dst: str, path: Path) -> dict:
    fs, fd = get_format(src), get_format(dst)
    x = cvt_vectors(_rng(2, fs.width, fs.exp_bits, fd.width, fd.exp_bits), fs, fd)
    vec = {"x": x, "y": nm.convert(x.astype(fs.numpy_uint), fs, fd).astype(np.int64),
           "ws": fs.width, "wd": fd.width}
    np.savez(path, **vec)
    return vec


def make_div(fmt: str, bits_per_cycle: int, path: Path) -> dict:
    from rtl.fp import fsa_div

    f = get_format(fmt)
    x = div_vectors(_rng(3, f.width, f.exp_bits, bits_per_cycle), f)
    vec = {"x": x, "y": nm.reciprocal(x.astype(f.numpy_uint), f).astype(np.int64),
           "w": f.width, "latency": fsa_div.latency(fmt, bits_per_cycle)}
    np.savez(path, **vec)
    return vec


# ------------------------------------------------------------------ RTL
TOP = "fsa_fp_misc_top"


def _units() -> "list[tuple[str, object, tuple]]":
    """(port prefix, unit module, convert args) of every simulated case."""
    from rtl.fp import fsa_cvt, fsa_div, fsa_fcmp

    return ([(f"fcmp_{f}_", fsa_fcmp, (f,)) for f in FCMP_CASES]
            + [(f"cvt_{s}_{d}_", fsa_cvt, (s, d)) for s, d in CVT_CASES]
            + [(f"div_{f}_r{k}_", fsa_div, (f, k)) for f, k in DIV_CASES])


_PORT = re.compile(r"^\s*(input|output)\s*(\[(\d+):0\])?\s*(\w+);", re.M)
_SENS = re.compile(r"always @\(([\w, ]+)\)")


def _normalise(path: Path) -> "list[tuple[str, int, str]]":
    """Make the converted text depend only on the design, and return its
    ports as (direction, width, name).

    MyHDL writes the output path into the header and orders combinational
    sensitivity lists by Python set order (which changes between processes);
    neither means anything, but both would defeat simrun's build cache,
    which hashes the Verilog text.
    """
    text = path.read_text()
    text = re.sub(r"// File: .*\n", "", text)
    text = _SENS.sub(lambda m: "always @(" + ", ".join(sorted(m.group(1).split(", "))) + ")",
                     text)
    path.write_text(text)
    return [(m.group(1), int(m.group(3)) + 1 if m.group(3) else 1, m.group(4))
            for m in _PORT.finditer(text)]


def _wrapper(insts: "list[tuple[str, str, list]]") -> str:
    """Verilog of the toplevel holding every unit, ports prefixed."""
    ports, body = [], []
    for prefix, module, plist in insts:
        for d, w, name in plist:
            rng = f"[{w - 1}:0] " if w > 1 else ""
            ports.append(f"    {d} wire {rng}{prefix}{name}")
        conns = ",\n".join(f"        .{name}({prefix}{name})" for _, _, name in plist)
        body.append(f"    {module} u_{prefix.rstrip('_')} (\n{conns}\n    );")
    return ("`timescale 1ns/1ps\n// Bench wrapper: every fsa_fcmp / fsa_cvt / fsa_div case of\n"
            f"// tb/fp_misc/test_fp_misc.py side by side.\nmodule {TOP} (\n" + ",\n".join(ports)
            + "\n);\n" + "\n".join(body) + "\nendmodule\n")


@pytest.fixture(scope="session")
def fp_rtl(tmp_path_factory) -> "list[Path]":
    """Converted units of all cases plus the wrapper; the wrapper is last."""
    out = tmp_path_factory.mktemp("fp_misc_rtl")
    files, insts = [], []
    for prefix, mod, args in _units():
        path = mod.convert(out, *args)
        insts.append((prefix, path.stem, _normalise(path)))
        files.append(path)
    top = out / f"{TOP}.v"
    top.write_text(_wrapper(insts))
    return files + [top]


def _run(rtl: "list[Path]", prefix: str, testcase, npz: Path, n: int) -> None:
    sim = simrun.get_sim()
    t0 = time.monotonic()
    simrun.run(TOP, rtl, "tb.fp_misc.tb_fp_misc", sim=sim, testcase=testcase,
               extra_env={"FSA_FP_VECTORS": str(npz), "FSA_FP_PREFIX": prefix},
               timeout_s=600)
    print(f"{prefix.rstrip('_')} on {sim}: {n} vectors in {time.monotonic() - t0:.1f} s")


# ------------------------------------------------------------------ sim tests
@pytest.mark.sim
@pytest.mark.parametrize("sim_name", [_sim_id()])
@pytest.mark.parametrize("fmt", FCMP_CASES)
def test_fcmp_vectors(fmt, sim_name, fp_rtl, tmp_path):
    npz = tmp_path / "vectors.npz"
    n = len(make_fcmp(fmt, npz)["a"])
    assert n >= N_MIN
    _run(fp_rtl, f"fcmp_{fmt}_", "fcmp_vectors", npz, n)


@pytest.mark.sim
@pytest.mark.parametrize("sim_name", [_sim_id()])
@pytest.mark.parametrize("src_fmt,dst_fmt", CVT_CASES, ids=[f"{s}_{d}" for s, d in CVT_CASES])
def test_cvt_vectors(src_fmt, dst_fmt, sim_name, fp_rtl, tmp_path):
    npz = tmp_path / "vectors.npz"
    n = len(make_cvt(src_fmt, dst_fmt, npz)["x"])
    assert n >= N_MIN
    _run(fp_rtl, f"cvt_{src_fmt}_{dst_fmt}_", "cvt_vectors", npz, n)


@pytest.mark.sim
@pytest.mark.parametrize("sim_name", [_sim_id()])
@pytest.mark.parametrize("fmt,bits", DIV_CASES, ids=[f"{f}_r{b}" for f, b in DIV_CASES])
def test_div_vectors(fmt, bits, sim_name, fp_rtl, tmp_path):
    npz = tmp_path / "vectors.npz"
    n = len(make_div(fmt, bits, npz)["x"])
    assert n >= N_MIN
    _run(fp_rtl, f"div_{fmt}_r{bits}_", ["div_vectors", "div_handshake"], npz, n)


# ------------------------------------------------------------------ fast tests
def test_vector_coverage(tmp_path):
    """The generated vectors reach the result classes the benches promise."""
    for fmt in FCMP_CASES:
        f = get_format(fmt)
        v = make_fcmp(fmt, tmp_path / "f.npz")
        d, a, b = v["diff"], v["a"], v["b"]
        mag = d & (f.sign_mask - 1)
        assert np.sum((mag > 0) & (mag < (1 << f.man_bits))) > 500, fmt   # subnormal results
        assert np.sum(mag == f.pos_inf) > 500, fmt                         # inf results
        assert np.sum(d == f.canonical_nan) > 500, fmt
        assert np.sum(d == 0) > 500 and np.sum(d == f.sign_mask) > 100, fmt
        # overflow of finite operands
        fin = ((a >> f.man_bits) & f.exp_max) != f.exp_max
        fin &= ((b >> f.man_bits) & f.exp_max) != f.exp_max
        assert np.sum(fin & (mag == f.pos_inf)) > 200, fmt
        # max: ties of +0/-0 keep a; both choices taken
        assert np.sum((v["mx"] == b) & (a != b)) > 2000 and np.sum((v["mx"] == a) & (a != b)) > 2000
        assert np.sum(((a | b) & (f.sign_mask - 1)) == 0) > 100
    for s, dfmt in CVT_CASES:
        fs, fd = get_format(s), get_format(dfmt)
        v = make_cvt(s, dfmt, tmp_path / "c.npz")
        y = v["y"]
        mag = y & (fd.sign_mask - 1)
        if fd.width < fs.width or fd.exp_bits < fs.exp_bits:
            assert np.sum((mag > 0) & (mag < (1 << fd.man_bits))) > 300, (s, dfmt)
            fin = ((v["x"] >> fs.man_bits) & fs.exp_max) != fs.exp_max
            if fd.exp_bits < fs.exp_bits:
                assert np.sum(fin & (mag == fd.pos_inf)) > 300, (s, dfmt)
        assert np.sum(y == fd.canonical_nan) > 20, (s, dfmt)
    for fmt, bits in DIV_CASES:
        f = get_format(fmt)
        v = make_div(fmt, bits, tmp_path / "d.npz")
        y = v["y"]
        mag = y & (f.sign_mask - 1)
        assert np.sum((mag > 0) & (mag < (1 << f.man_bits))) > 800, fmt
        fin_in = ((v["x"] & (f.sign_mask - 1)) != 0)
        assert np.sum(fin_in & (mag == f.pos_inf)) > 500, fmt
        assert np.sum(y == f.canonical_nan) > 50 and np.sum(mag == 0) > 50, fmt


def test_params_validated():
    from rtl.convert import sig
    from rtl.fp import fsa_cvt, fsa_div, fsa_fcmp

    assert fsa_fcmp.module_name("fp16") == "fsa_fcmp_fp16"
    assert fsa_cvt.module_name("fp32", "bf16") == "fsa_cvt_fp32_bf16"
    assert fsa_div.module_name("fp32", 2) == "fsa_div_fp32_r2"
    assert fsa_div.latency("fp32", 2) == 14 <= 15     # the reference: 15
    assert [fsa_div.latency("fp16", k) for k in (1, 2, 4)] == [13, 8, 5]
    assert [fsa_div.latency("bf16", k) for k in (1, 2, 4)] == [10, 6, 4]
    assert [fsa_div.latency("fp32", k) for k in (1, 4)] == [26, 8]
    with pytest.raises(ValueError, match="fmt must be one of"):
        fsa_fcmp.module_name("fp64")
    with pytest.raises(ValueError, match="dst must be one of"):
        fsa_cvt.module_name("fp32", "fp8")
    with pytest.raises(ValueError, match="bits_per_cycle must be one of"):
        fsa_div.latency("fp32", 3)
    with pytest.raises(ValueError, match="bits_per_cycle must be one of"):
        fsa_div.module_name("fp32", True)
    with pytest.raises(ValueError, match="port b must be 32 bits"):
        fsa_fcmp.fsa_fcmp(sig(32), sig(16), sig(32), sig(32), fmt="fp32")
    with pytest.raises(ValueError, match="port y must be 16 bits"):
        fsa_cvt.fsa_cvt(sig(32), sig(32), src="fp32", dst="fp16")
    with pytest.raises(ValueError, match="port x must be 16 bits"):
        fsa_div.fsa_div(sig(1), sig(1), sig(1), sig(32), sig(1), sig(1), sig(16), fmt="fp16")


LINT_CASES = ([("fcmp", (f,)) for f in FCMP_CASES]
              + [("cvt", p) for p in CVT_CASES]
              + [("div", (f, k)) for f in ("fp32", "fp16", "bf16") for k in (1, 2, 4)])


@pytest.mark.parametrize("unit,args", LINT_CASES,
                         ids=[f"{u}_{'_'.join(map(str, a))}" for u, a in LINT_CASES])
def test_lint(unit, args, tmp_path):
    """Generated Verilog is Verilator -Wall clean (with the unit's
    LINT_WAIVERS) and compiles in Icarus when it is installed."""
    import importlib

    mod = importlib.import_module(f"rtl.fp.fsa_{unit}")
    simrun.setup_tool_env()
    path = mod.convert(tmp_path, *args)
    r = subprocess.run(["verilator", "--lint-only", "-Wall", *mod.LINT_WAIVERS, str(path)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "%Warning" not in r.stderr, r.stderr[-3000:]
    if shutil.which("iverilog"):
        r = subprocess.run(["iverilog", "-g2012", "-o", str(tmp_path / "a.vvp"), str(path)],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr[-3000:]
