"""FSAConfig.json: a configuration as the reference's file (its 12 fields)
plus ours in a sibling ``.fsa.json``, written and read back strictly (an
unknown or misspelt key is refused with the nearest known one).

The functions take the configuration class as an argument
(:class:`fsa.config.FSAConfig` calls them from its methods), so this module
needs nothing from :mod:`fsa.config`.
"""
from __future__ import annotations

import difflib
import json
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any, Iterable

from .formats import FORMATS, get_format

__all__ = ["REFERENCE_KEYS", "check_keys", "reference_dict", "to_dict", "sibling_path",
           "write_json", "from_dict", "from_json"]

#: The reference's FSAConfig.json keys, in its order: its Python loader does
#: ``FSAConfig(**json)`` on a frozen dataclass with exactly these fields.
REFERENCE_KEYS = ("sa_rows", "sa_cols", "inst_queue_size", "e_type", "a_type", "mem_base",
                  "mem_size", "mem_align", "spad_base", "spad_size", "acc_base", "acc_size")


def check_keys(d: dict, known: Iterable[str], where: str) -> None:
    """ValueError naming the first key of `d` not in `known` (and the
    nearest known one: a misspelt key would otherwise be silently ignored)."""
    known = list(known)
    for key in d:
        if key not in known:
            close = difflib.get_close_matches(str(key), known, n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]!r}?" if close else \
                f" (known: {', '.join(known)})"
            raise ValueError(f"{where}: unknown key {key!r}{hint}")


def reference_dict(cfg) -> dict[str, Any]:
    """Exactly the reference's 12 FSAConfig.json fields (sizes in bytes)."""
    return {"sa_rows": cfg.sa_rows, "sa_cols": cfg.sa_cols,
            "inst_queue_size": cfg.inst_queue_size,
            "e_type": cfg.e_type, "a_type": cfg.a_type,
            "mem_base": cfg.mem_base, "mem_size": cfg.mem_size,
            "mem_align": cfg.mem_align,
            "spad_base": 0, "spad_size": cfg.spad_size,
            "acc_base": 0, "acc_size": cfg.acc_size}


def to_dict(cfg) -> dict[str, Any]:
    """The reference's fields plus ours under ``"fsa"``."""
    d = reference_dict(cfg)
    d["fsa"] = asdict(cfg)
    return d


def sibling_path(path: "str | Path") -> Path:
    """Where our extra fields live beside a reference FSAConfig.json:
    ``X.json`` -> ``X.fsa.json``."""
    p = Path(path)
    return p.with_name(p.stem + ".fsa.json")


def write_json(cfg, path: "str | Path") -> str:
    """Write the reference file at `path` and ours beside it; the reference text."""
    text = json.dumps(reference_dict(cfg), indent=2) + "\n"
    Path(path).write_text(text)
    sibling_path(path).write_text(json.dumps({"fsa": asdict(cfg)}, indent=2) + "\n")
    return text


def from_dict(cls, d: dict[str, Any]):
    """A `cls` from :func:`to_dict` output, ``{"fsa": {...}}`` (the sibling
    file), or a reference-style FSAConfig.json (its 12 keys: the SRAM sizes
    give the scratchpad/accumulator rows, mem_align the AXI width; the rest
    of our fields take their defaults).  Unknown keys are refused."""
    if not isinstance(d, dict):
        raise ValueError(f"FSAConfig.json: expected an object, got {type(d).__name__}")
    known = [f.name for f in fields(cls)]
    if "fsa" in d:
        check_keys(d, REFERENCE_KEYS + ("fsa",), "FSAConfig.json")
        ours = d["fsa"]
        if not isinstance(ours, dict):
            raise ValueError(f'FSAConfig.json: "fsa" must be an object, got '
                             f"{type(ours).__name__}")
        check_keys(ours, known, 'FSAConfig.json "fsa"')
        missing = [k for k in ("name", "sa_rows", "sa_cols") if k not in ours]
        if missing:
            raise ValueError(f'FSAConfig.json: "fsa" lacks {", ".join(missing)}')
        return cls(**ours)
    check_keys(d, REFERENCE_KEYS, "FSAConfig.json")
    missing = [k for k in ("sa_rows", "sa_cols", "e_type", "a_type") if k not in d]
    if missing:
        raise ValueError(f"FSAConfig.json: missing {', '.join(missing)}")

    def num(key: str, default: "int | None" = None) -> int:
        v = d.get(key, default)
        if type(v) is not int:
            raise ValueError(f"FSAConfig.json: {key} must be an integer, got "
                             f"{type(v).__name__} {v!r}")
        return v
    r, c = num("sa_rows"), num("sa_cols")
    e, a = d["e_type"], d["a_type"]
    kw: dict[str, Any] = {}
    if e in FORMATS and a in FORMATS and r > 0 and c > 0:
        for key, field_, row in (("spad_size", "spad_rows", r * get_format(e).bytes),
                                 ("acc_size", "acc_rows", c * get_format(a).bytes)):
            if key in d:
                if num(key) % row:
                    raise ValueError(f"FSAConfig.json: {key} = {d[key]} bytes is not a whole "
                                     f"number of {row}-byte rows")
                kw[field_] = num(key) // row
    if "mem_align" in d:
        kw["axi_data_bits"] = num("mem_align") * 8
    return cls(name=f"FSA{r}X{c}Imported", sa_rows=r, sa_cols=c, e_type=e, a_type=a,
               inst_queue_size=num("inst_queue_size", 256),
               mem_base=num("mem_base", 0x8000_0000),
               mem_size=num("mem_size", 0x1000_0000), **kw)


def from_json(cls, path: "str | Path"):
    """Read an FSAConfig.json: ours (with its ``.fsa.json`` sibling, or an
    older file with the ``"fsa"`` key inside) or the reference's.

    Raises:
        ValueError: unreadable, an unknown key, or the file and its sibling
            disagreeing on a reference field.
    """
    try:
        d = json.loads(Path(path).read_text())
    except (OSError, ValueError) as e:
        raise ValueError(f"{path}: {e}") from None
    side = sibling_path(path)
    if isinstance(d, dict) and "fsa" not in d and side.is_file():
        try:
            check_keys(d, REFERENCE_KEYS, "FSAConfig.json")
            cfg = from_dict(cls, json.loads(side.read_text()))
        except (OSError, ValueError) as e:
            raise ValueError(f"{path} (with {side.name}): {e}") from None
        ref = reference_dict(cfg)
        bad = [k for k in REFERENCE_KEYS if k in d and d[k] != ref[k]]
        if bad:
            raise ValueError(f"{path}: {', '.join(f'{k} = {d[k]!r}' for k in bad)} disagree with "
                             f"{side.name} (which gives {', '.join(f'{k} = {ref[k]!r}' for k in bad)})")
        return cfg
    try:
        return from_dict(cls, d)
    except ValueError as e:
        raise ValueError(f"{path}: {e}") from None
