"""What the unit benches (test_units.py: PE, CMP, ACC; test_ud_units.py: the
UD PE and the BCMP) share: random values of a format drawn by class
(:class:`Values`, :func:`score_value`), the per-cycle input sequence
(:class:`Seq`), the case file the cocotb bench reads (:func:`npz_case`) and
the Verilog of a unit (:func:`unit_sources`)."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from fsa import numerics as nm
from fsa.formats import FPFormat, get_format

#: reset pulses in mid-sequence, per case
RESETS = 3


# --------------------------------------------------------------------------
# values
# --------------------------------------------------------------------------
def _pack(sign: int, field: int, man: int, f: FPFormat) -> int:
    return (sign << (f.width - 1)) | (field << f.man_bits) | man


class Values:
    """Random values of one format, drawn by class."""

    CLASSES = ("normal", "uniform", "subnormal", "zero", "inf", "nan", "extreme", "pool")
    PROBS = (0.46, 0.14, 0.08, 0.07, 0.06, 0.06, 0.07, 0.06)

    def __init__(self, rng: np.random.Generator, fmt: str):
        self.rng, self.f = rng, get_format(fmt)
        self.fmt = fmt
        f = self.f
        m = (1 << f.man_bits) - 1
        self.extremes = [_pack(0, f.exp_max - 1, m, f), _pack(0, 1, 0, f), _pack(0, 0, 1, f),
                         _pack(0, 0, m, f), f.one, _pack(0, f.bias - 1, m, f),
                         _pack(0, f.bias, 1, f)]
        self.pool = [int(self.normal()) for _ in range(6)] + [0, f.sign_mask]

    def normal(self, spread: int = 10) -> int:
        f, r = self.f, self.rng
        fld = int(np.clip(f.bias + r.integers(-spread, spread + 1), 1, f.exp_max - 1))
        return _pack(int(r.integers(0, 2)), fld, int(r.integers(0, 1 << f.man_bits)), f)

    def get(self) -> int:
        f, r = self.f, self.rng
        c = self.CLASSES[int(r.choice(len(self.CLASSES), p=self.PROBS))]
        s = int(r.integers(0, 2))
        if c == "normal":
            return self.normal()
        if c == "uniform":
            return int(r.integers(0, 1 << f.width))
        if c == "subnormal":
            return _pack(s, 0, int(r.integers(1, 1 << f.man_bits)), f)
        if c == "zero":
            return _pack(s, 0, 0, f)
        if c == "inf":
            return _pack(s, f.exp_max, 0, f)
        if c == "nan":
            man = int(r.integers(1, 1 << f.man_bits)) if r.random() < 0.6 else 1 << (f.man_bits - 1)
            return _pack(s, f.exp_max, man, f)
        if c == "extreme":
            return int(self.extremes[int(r.integers(len(self.extremes)))]) | (s << (f.width - 1))
        return int(self.pool[int(r.integers(len(self.pool)))])

    def real(self, x: float) -> int:
        return int(nm.from_float64(x, self.f))


def score_value(rng: np.random.Generator, va: Values, ve: Values) -> int:
    """A score (format A) for the CMP: mostly moderate reals, E rounding
    midpoints and their neighbours, E overflow and underflow, specials."""
    fa, fe = va.f, ve.f
    u = rng.random()
    if u < 0.35:
        return va.real(rng.standard_normal() * (4.0 if rng.random() < 0.8 else 300.0))
    if u < 0.55 and fa.man_bits > fe.man_bits:
        # a midpoint between two E neighbours (exact in A), or one A ulp off it
        eb = ve.normal(spread=12) if rng.random() < 0.8 else _pack(
            int(rng.integers(0, 2)), 0, int(rng.integers(0, (1 << fe.man_bits) - 1)), fe)
        lo = float(nm.to_float64(eb, fe))
        hi = float(nm.to_float64(eb + 1, fe))
        mid = va.real((lo + hi) / 2)
        off = int(rng.integers(-1, 2))
        return (mid + off) & ((1 << fa.width) - 1) if mid & ~fa.sign_mask else mid
    if u < 0.62 and fa.width > fe.width:
        # beyond the E range (overflow to inf) or below it (underflow)
        emax = float(nm.to_float64(_pack(0, fe.exp_max - 1, (1 << fe.man_bits) - 1, fe), fe))
        etiny = float(nm.to_float64(_pack(0, 0, 1, fe), fe))
        x = rng.choice([emax * (1 + 2.0 ** -(fe.man_bits + 1)), emax * 1.001, emax * 4,
                        etiny / 2, etiny * 0.75, etiny / 3])
        return va.real(float(x) * (1 if rng.random() < 0.5 else -1))
    v = va.get()
    while rng.random() < 0.7 and (v & fa.pos_inf) == fa.pos_inf and v & ((1 << fa.man_bits) - 1):
        v = va.get()        # fewer NaN scores: a NaN sticks in the running max until RESET
    return v


# --------------------------------------------------------------------------
# sequences and the case file
# --------------------------------------------------------------------------
class Seq:
    """Per-cycle input columns and a label per cycle."""

    def __init__(self, names: tuple[str, ...]):
        self.names = names
        self.cols: dict[str, list[int]] = {k: [] for k in names}
        self.labels: list[str] = []

    def add(self, label: str, **kw: int) -> None:
        for k in self.names:
            self.cols[k].append(int(kw.get(k, 0)))
        self.labels.append(label)

    def __len__(self) -> int:
        return len(self.labels)


def reset_slots(rng: np.random.Generator, n: int) -> set[int]:
    return {int(x) for x in rng.integers(n // 10, n, RESETS)}


def word_burst(rng: np.random.Generator, add, words: "list[int]") -> None:
    """1 to 4 control words drawn from `words`, each given to ``add(word)``."""
    for _ in range(int(rng.integers(1, 5))):
        add(int(rng.choice(words)))


def sequence_start(cfg, seed: int, n: int, names: tuple[str, ...]) -> tuple:
    """What a unit's sequence generator starts with: the random source
    (`seed`), value pickers of the element and accumulate formats, the empty
    sequence of columns `names` and the cycles of its reset pulses (of `n`).

    Returns:
        ``(rng, ve, va, seq, resets)``.
    """
    rng = np.random.default_rng(seed)
    ve, va = Values(rng, cfg.e_type), Values(rng, cfg.a_type)
    return rng, ve, va, Seq(names), reset_slots(rng, n)


def npz_case(unit: str, seq: Seq, model, regs, combs, width: dict, port: dict,
             in_width: dict | None = None) -> dict:
    """The case file of `unit` (the npz arrays tb_units.py reads): `seq` run
    through `model` (``reset()`` on the cycles with ``rst``, else
    ``step(inputs)``), its registers `regs` after every edge, its
    combinational outputs `combs` during every cycle (valid where the model
    gives a value), the widths `width` (`in_width` overrides an input's) and
    the port names `port` (model input -> the unit's port, where they
    differ)."""
    regs, combs = tuple(regs), tuple(combs)
    in_width = in_width or {}
    rst_state = model.reset()
    exp = {k: [] for k in regs + combs}
    valid = {k: [] for k in combs}
    for t in range(len(seq)):
        inp = {k: seq.cols[k][t] for k in seq.names}
        out = model.reset() if inp["rst"] else model.step(inp)
        for k in regs:
            exp[k].append(out[k])
        for k in combs:
            v = out.get(k)
            exp[k].append(0 if v is None else v)
            valid[k].append(v is not None)
    port = {k: port.get(k, k) for k in seq.names}
    case = dict(unit=unit, inputs=np.array([port[k] for k in seq.names]), regs=np.array(regs),
                combs=np.array(combs, dtype="<U16"), labels=np.array(seq.labels))
    for k in seq.names:
        case[f"in_{port[k]}"] = np.array(seq.cols[k], np.int64)
        case[f"w_{port[k]}"] = np.int64(in_width.get(k, width[k]))
    for k in regs:
        case[f"exp_{k}"] = np.array(exp[k], np.int64)
        case[f"rst_{k}"] = np.int64(rst_state[k])
    for k in combs:
        case[f"exp_{k}"] = np.array(exp[k], np.int64)
        case[f"valid_{k}"] = np.array(valid[k], bool)
    for k in regs + combs:
        case[f"w_{k}"] = np.int64(width[k])
    return case


# --------------------------------------------------------------------------
# Verilog
# --------------------------------------------------------------------------
def _generated(cfg) -> Path:
    """The generated Verilog of `cfg` (regenerated only when the RTL changed;
    generate() locks gen/<config>/ against concurrent pytest workers)."""
    from rtl.generate import generate
    return generate(cfg, quiet=True)


def unit_sources(cfg, top: str) -> list[Path]:
    """The Verilog files of `top` and of the modules it instantiates."""
    from rtl.generate import verilog_files
    files = {p.stem: p for p in verilog_files(_generated(cfg))}
    need, todo = [], [top]
    while todo:
        mod = todo.pop()
        if mod in need:
            continue
        need.append(mod)
        text = files[mod].read_text()
        for m in re.finditer(r"^\s*(\w+)\s+u_\w+\s*\(", text, re.M):
            if m.group(1) in files:
                todo.append(m.group(1))
    return [files[m] for m in reversed(need)]
