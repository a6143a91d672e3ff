"""The dataflow seam: one object per dataflow of the matrix engine, chosen
once from ``cfg.dataflow`` (:func:`get`), owning what differs between them
in the software: its function list and PE bits (the hardware tables of
``fsa/hw/``), the attention kernel it builds by default, its golden-model
executor and its cycle-model hooks (:class:`fsa.dataflows.base.Dataflow`).

A new dataflow is one module here subclassing
:class:`~fsa.dataflows.base.Dataflow` and its entry in :data:`DATAFLOWS`,
on top of its hardware half (its functions in
``fsa.hw.isa.MX_FUNC_TABLE``, its :func:`fsa.hw.dataflow.register` call),
its plan builder (``fsa.plan._BUILDERS``) and, with a kernel of its own, its
entry in :data:`fsa.kernels.KERNELS`: each layer keeps its registry, so that
no lower layer imports a higher one (the plans are the hardware generator's
input, the kernels are built on the cycle model, which uses this seam).
"""
from __future__ import annotations

from fsa.dataflows.base import Dataflow
from fsa.dataflows.reference import REFERENCE
from fsa.dataflows.ud import UD
from fsa.isa import Matrix, MxFunc

__all__ = ["Dataflow", "DATAFLOWS", "get", "illegal"]

#: every dataflow, by its ``cfg.dataflow`` name
DATAFLOWS: dict[str, Dataflow] = {d.name: d for d in (REFERENCE, UD)}


def get(cfg) -> Dataflow:
    """The dataflow of `cfg` (an FSAConfig, or a dataflow name)."""
    name = cfg if isinstance(cfg, str) else cfg.dataflow
    try:
        return DATAFLOWS[name]
    except KeyError:
        raise ValueError(f"unknown dataflow {name!r}; use one of {sorted(DATAFLOWS)}") from None


def illegal(cfg, ins) -> "str | None":
    """The device's ILLEGAL_FUNC message for a matrix function that `cfg`'s
    dataflow lacks and another one has, else None."""
    if not isinstance(ins, Matrix):
        return None
    code, own = int(ins.func), get(cfg)
    if code < len(own.funcs):
        return None
    for other in DATAFLOWS.values():
        if code < len(other.funcs):
            return (f"matrix function {MxFunc(code).name} (code {code}) needs {other.label} "
                    f"hardware (dataflow {other.name!r}); {cfg.name} has dataflow "
                    f"{cfg.dataflow!r} (codes 0..{len(own.funcs) - 1})")
    return None
