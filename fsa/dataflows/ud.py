"""The UD ("unidirectional") dataflow (docs/ud.md): the reference functions
and the six of :data:`fsa.hw.isa.UD_MX_FUNCS` (plans :mod:`fsa.plan_ud`,
golden executor :mod:`fsa.golden.ud`, kernel :mod:`fsa.kernels.ud`); its
hardware half is :data:`fsa.hw.dataflow.UD` (three more PE control bits,
the bottom comparator row, the third, normalisation, issue slot)."""
from __future__ import annotations

from fsa import plan_ud
from fsa.dataflows.base import Dataflow
from fsa.golden import ud as golden_ud

__all__ = ["UD", "Ud"]


class Ud(Dataflow):
    """The UD dataflow."""

    name = "ud"
    label = "UD"
    kernel = "ud"

    def norm_slack(self, P: int) -> int:
        return plan_ud.norm_slack(P)

    def period(self, R: int, C: int, P: int) -> int:
        """The STEP period ``2R + P + 3``."""
        return plan_ud.period(R, P)

    def execute(self, m, ins, index: int) -> None:
        if int(ins.func) in golden_ud.FUNCS:
            golden_ud.execute(m, ins, index)

    def abort(self, m) -> None:
        golden_ud.abort(m)

    def check_modelled(self, m, ins, index: int) -> None:
        golden_ud.check_modelled(m, ins, index)


UD = Ud()
