"""Per-cycle reference models of the UD array units (docs/ud.md): the UD PE
(``rtl.fsa_pe.fsa_pe_ud``) and the bottom comparator unit
(``rtl.fsa_bcmp``), in the style of ``tb/unit_models.py`` (pure Python on
raw bit patterns, arithmetic from :mod:`fsa.numerics`; ``reset()`` and
``step(inputs) -> outputs`` after the clock edge; combinational outputs are
the values during the cycle).

The semantics are those of the register-level UD model
``fsa/golden/ud_cycle.py`` (the reference the RTL must match), written per
unit and with every register visible:

* :class:`UDPEModel`: ``f = (use_q ? qreg : reg) * l_in + (acc_ui ? u_in :
  d_in)``; ``load_q``: ``qreg <- l_in``, ``r_out <- qreg``; ``load_reg_di``:
  ``reg <- d_in`` (low E bits); the rest as the reference PE.
* :class:`BCMPModel`: the three lanes of ``fsa.plan.BCMP_CMDS`` (codes of
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
from fsa.plan import PE_BITS, UD_PE_BITS
from rtl.fsa_bcmp import LANE_CODES

__all__ = ["UD_BITS", "UDPEModel", "BCMPModel", "ud_pe_writers", "ud_pe_legal", "LANE"]

#: The UD PE's control bits, bit i of its 12-bit ``ctrl_in``.
UD_BITS = PE_BITS + UD_PE_BITS
_B = {n: 1 << i for i, n in enumerate(UD_BITS)}
#: lane -> command -> code (0: NOP)
LANE = LANE_CODES


def _get(inputs: Mapping[str, int], name: str) -> int:
    return int(inputs.get(name, 0))


def ud_pe_writers(ctrl: int) -> dict[str, list[str]]:
    """For a 12-bit control word, the bits that write each register."""
    on = {n for n in UD_BITS if ctrl & _B[n]}
    w: dict[str, list[str]] = {"d_out": [], "u_out": [], "r_out": [], "reg": [], "qreg": []}
    if "mac" in on:
        w["d_out" if "acc_ui" in on else "u_out"].append("mac")
    for b, reg in (("flow_ud", "d_out"), ("flow_du", "u_out"), ("flow_lr", "r_out"),
                   ("load_reg_li", "r_out"), ("load_q", "r_out"), ("load_q", "qreg")):
        if b in on:
            w[reg].append(b)
    for b in ("load_reg_li", "load_reg_ui", "load_reg_di", "update_reg", "exp2"):
        if b in on:
            w["reg"].append(b)
    return w


def ud_pe_legal(ctrl: int) -> bool:
    """True if no two bits of `ctrl` write the same register (what the
    plans guarantee, ``fsa.plan_ud.check_schedule``)."""
    return all(len(v) <= 1 for v in ud_pe_writers(ctrl).values())


class UDPEModel:
    """The UD processing element, one call per clock cycle.

    Inputs: ``l_in`` (E), ``u_in`` (A), ``d_in`` (A), ``ctrl`` (12 bits).
    Outputs after the edge: ``r_out``, ``d_out``, ``u_out``, ``ctrl_out`` and
    the registers ``sreg`` and ``qreg``.
    """

    def __init__(self, e_type: str = "fp16", a_type: str = "fp32", pieces: int = 8):
        self.e, self.a, self.P = e_type, a_type, pieces
        self.fe = get_format(e_type)
        self.reset()

    def reset(self) -> dict:
        self.reg = self.qreg = self.r_out = self.d_out = self.u_out = self.ctrl_out = 0
        return self.state()

    def state(self) -> dict:
        return dict(r_out=self.r_out, d_out=self.d_out, u_out=self.u_out,
                    ctrl_out=self.ctrl_out, sreg=self.reg, qreg=self.qreg)

    def step(self, inputs: Mapping[str, int]) -> dict:
        l_in, u_in, d_in = _get(inputs, "l_in"), _get(inputs, "u_in"), _get(inputs, "d_in")
        ctrl = _get(inputs, "ctrl")
        if not ud_pe_legal(ctrl):
            raise ValueError(f"UD PE control {ud_pe_writers(ctrl)} writes one register twice")
        on = {n for n in UD_BITS if ctrl & _B[n]}
        mul = self.qreg if "use_q" in on else self.reg
        addend = u_in if "acc_ui" in on else d_in
        match = False
        if "exp2" in on:
            fa_, fe_, _, match = nm.exp2_step(mul, l_in, addend, self.e, self.P, self.a)
        else:
            fa_, fe_ = nm.fma(mul, l_in, addend, self.e, self.a, out="both")
        fa_, fe_, match = int(fa_), int(fe_), bool(match)
        reg, qreg, r_out, d_out, u_out = self.reg, self.qreg, self.r_out, self.d_out, self.u_out
        if "mac" in on and "acc_ui" in on:
            d_out = fa_
        elif "flow_ud" in on:
            d_out = u_in
        if "mac" in on and "acc_ui" not in on:
            u_out = fa_
        elif "flow_du" in on:
            u_out = d_in
        if "load_q" in on:
            r_out, qreg = self.qreg, l_in
        elif "load_reg_li" in on:
            r_out = self.reg
        elif "flow_lr" in on:
            r_out = l_in
        if "load_reg_li" in on:
            reg = l_in
        elif "load_reg_ui" in on:
            reg = u_in & ((1 << self.fe.width) - 1)
        elif "load_reg_di" in on:
            reg = d_in & ((1 << self.fe.width) - 1)
        elif "update_reg" in on:
            reg = fe_
        elif "exp2" in on and match:
            reg = fe_
        self.reg, self.qreg, self.r_out, self.d_out, self.u_out = reg, qreg, r_out, d_out, u_out
        self.ctrl_out = ctrl
        return self.state()


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
