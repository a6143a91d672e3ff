"""Per-cycle reference models of the UD array units (docs/ud.md): the UD PE
(``rtl.fsa_pe.fsa_pe_ud``) and the bottom comparator unit
(``rtl.fsa_bcmp``), in the style of ``tb/units/models.py`` (pure Python on
raw bit patterns, arithmetic from :mod:`fsa.numerics`; ``reset()`` and
``step(inputs) -> outputs`` after the clock edge; combinational outputs are
the values during the cycle).

The semantics are those of the register-level UD model
``fsa/golden/ud_cycle.py`` (the reference the RTL must match), written per
unit and with every register visible:

* :class:`UDPEModel`: ``f = (use_q ? qreg : reg) * l_in + (acc_ui ? u_in :
  d_in)``; ``load_q``: ``qreg <- l_in``, ``r_out <- qreg``; ``load_reg_di``:
  ``reg <- d_in`` (low E bits); the rest as the reference PE (one model:
  ``tb.units.models.PEModel`` with ``ud=True``).
* :class:`BCMPModel`: the three lanes of ``fsa.hw.control.BCMP_CMDS`` (codes of
  ``rtl.fsa_bcmp.LANE_CODES``).  Beyond ud_cycle (which defines only what
  the UD schedule reads) it fixes what the RTL does between commands: the
  u-path register returns to 0 the cycle after the POP that empties the
  LIFO and on RESET, ``od`` is ``s_in`` except in the cycle after an od
  command, and the LIFO is R entries with a wrapping pointer.
"""
from __future__ import annotations

from typing import Mapping

from fsa import numerics as nm
from fsa.formats import get_format
from fsa.hw.control import PE_BITS, UD_PE_BITS
from rtl.fsa_bcmp import LANE_CODES
from tb.units.models import PEModel, pe_legal, pe_writers

__all__ = ["UD_BITS", "UDPEModel", "BCMPModel", "ud_pe_writers", "ud_pe_legal", "LANE"]

#: The UD PE's control bits, bit i of its 12-bit ``ctrl_in``.
UD_BITS = PE_BITS + UD_PE_BITS
#: lane -> command -> code (0: NOP)
LANE = LANE_CODES


def _get(inputs: Mapping[str, int], name: str) -> int:
    return int(inputs.get(name, 0))


def ud_pe_writers(ctrl: int) -> dict[str, list[str]]:
    """For a 12-bit control word, the bits that write each register."""
    return pe_writers(ctrl, ud=True)


def ud_pe_legal(ctrl: int) -> bool:
    """True if no two bits of `ctrl` write the same register (what the
    plans guarantee, ``fsa.plan_ud.check_schedule``)."""
    return pe_legal(ctrl, ud=True)


class UDPEModel(PEModel):
    """The UD processing element, one call per clock cycle: ``PEModel`` with
    ``ud=True`` (``tb/units/models.py``; always strict).

    Inputs: ``l_in`` (E), ``u_in`` (A), ``d_in`` (A), ``ctrl`` (12 bits).
    Outputs after the edge: ``r_out``, ``d_out``, ``u_out``, ``ctrl_out`` and
    the registers ``sreg`` and ``qreg``.
    """

    def __init__(self, e_type: str = "fp16", a_type: str = "fp32", pieces: int = 8):
        super().__init__(e_type, a_type, pieces, strict=True, ud=True)


class BCMPModel:
    """The bottom comparator unit BCMP(c) (module docstring).

    Inputs: ``max``, ``up``, ``od`` (lane codes), ``causal``, ``s_in`` (A),
    ``col``.  Outputs after the edge: ``u_out``, the lanes passed on
    (``max_out``, ``up_out``, ``od_out``, ``causal_out``) and the state
    ``new_max``, ``old_max``, ``diff_q``, ``cnt``; ``od`` (combinational)
    is the value during the cycle.
    """

    def __init__(self, R: int, e_type: str = "fp16", a_type: str = "fp32"):
        self.R, self.e, self.a = R, e_type, a_type
        self.fe, self.fa = get_format(e_type), get_format(a_type)
        self.reset()

    def reset(self) -> dict:
        fa = self.fa
        self.new_max = self.old_max = fa.sign_mask | fa.pos_inf
        self.diff_q = self.cnt = self.wp = 0
        self.u_q = self.od_q = 0
        self.u_clr = self.od_sel = False
        self.lanes = (0, 0, 0, 0)
        if not hasattr(self, "lifo"):
            self.lifo = [0] * self.R          # the memory is not reset (as the RTL)
        return self.state()

    def state(self, od=None) -> dict:
        m, u, o, c = self.lanes
        out = dict(u_out=self.u_q, max_out=m, up_out=u, od_out=o, causal_out=c,
                   new_max=self.new_max, old_max=self.old_max, diff_q=self.diff_q,
                   cnt=self.cnt)
        if od is not None:
            out["od"] = od
        return out

    def step(self, inputs: Mapping[str, int]) -> dict:
        e, a, fe, fa, R = self.e, self.a, self.fe, self.fa, self.R
        mx, up, odc = _get(inputs, "max"), _get(inputs, "up"), _get(inputs, "od")
        causal, s_in, col = _get(inputs, "causal"), _get(inputs, "s_in"), _get(inputs, "col")
        od = self.od_q if self.od_sel else s_in               # during the cycle
        s_e = int(nm.convert(s_in, a, e)) if e != a else s_in
        if causal and self.cnt > col:
            s_e = fe.sign_mask | fe.pos_inf
        s_e_a = int(nm.convert(s_e, e, a)) if e != a else s_e
        rp = R - 1 if self.wp == 0 else self.wp - 1
        top = self.lifo[rp]
        new_max, old_max, diff_q, cnt, wp = self.new_max, self.old_max, self.diff_q, self.cnt, self.wp
        u_q, od_q = self.u_q, self.od_q
        M, U, O = LANE["max"], LANE["up"], LANE["od"]
        if mx == M["RESET"]:
            new_max = old_max = fa.sign_mask | fa.pos_inf
            cnt, wp = 0, 0
        elif mx == M["UPDATE"]:
            self.lifo[self.wp] = s_e
            new_max = int(nm.maximum(self.new_max, s_e_a, a))
            cnt = (self.cnt + 1) % 512
            wp = 0 if self.wp == R - 1 else self.wp + 1
        elif mx == M["MAX_DIFF"]:
            diff_q = int(nm.sub(self.old_max, self.new_max, a))
            old_max, cnt = self.new_max, 0
        u_clr = up == U["POP"] and rp == 0
        if up == U["PROP_MAX"]:
            m = self.new_max
            nan = (m & fa.pos_inf) == fa.pos_inf and m & ((1 << fa.man_bits) - 1)
            u_q = fa.canonical_nan if nan else m ^ fa.sign_mask
        elif up == U["POP"]:
            u_q = top
            if mx != M["UPDATE"]:
                wp = rp
        elif self.u_clr or mx == M["RESET"]:
            u_q = 0
        od_sel = odc in (O["BYPASS"], O["SEND_DIFF"])
        if odc == O["BYPASS"]:
            od_q = s_in
        elif odc == O["SEND_DIFF"]:
            od_q = self.diff_q
        self.new_max, self.old_max, self.diff_q, self.cnt, self.wp = new_max, old_max, diff_q, cnt, wp
        self.u_q, self.od_q, self.u_clr, self.od_sel = u_q, od_q, u_clr, od_sel
        self.lanes = (mx, up, odc, causal)
        return self.state(od)
