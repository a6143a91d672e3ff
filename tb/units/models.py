"""Per-cycle reference models of the array units (docs/array.md).

Pure Python on raw bit patterns, arithmetic from :mod:`fsa.numerics`; no
cocotb, so the models can be unit-tested quickly and used by any bench.

Every model has ``reset()`` (the synchronous reset) and
``step(inputs) -> outputs``: ``inputs`` is a mapping of the unit's input
ports for one clock cycle (missing ports count as 0); ``outputs`` is a dict
of the registered outputs and observed state **after** the clock edge that
ends the cycle (what a bench samples in the next cycle).  The ACC's
combinational write-back ``wb`` is the value **during** the cycle (before
the edge) and is ``None`` in cycles where the contract does not define it
(every command other than ``ACC_SA`` / ``ACC``).

Everything not written in a cycle is held, as the doc says.  The plans
never ask two control bits to write the same register in one cycle
(``fsa.plan.check_overlap``); with ``strict=True`` (default) the models
raise ``ValueError`` on such out-of-contract inputs instead of guessing.

* :class:`PEModel` -- ``f = reg * l_in + (acc_ui ? u_in : d_in)`` (exp2
  mode with ``exp2``; ``reg`` is written in exp2 mode only when ``match``).
* :class:`CMPModel` -- UPDATE (rounding to E, causal masking ``k > col``,
  running max over the E-rounded scores), PROP_MAX (sign flip; a NaN max
  gives the canonical NaN), PROP_MAX_DIFF, PROP_EXP2_INTERCEPTS (``k``
  counts consecutive commands from 0 and wraps after ``P - 1``),
  PROP_ZERO, RESET.
* :class:`ACCModel` -- EXP_S1, EXP_S2, ACC_SA / ACC write-back, SET_SCALE
  and RECIPROCAL (the first RECIPROCAL cycle of a window starts the divider;
  ``scale`` is written at the edge of cycle ``start + latency + 1``, the
  last cycle of a window of ``fsa.hw.timing.reciprocal_cycles`` commands).
"""
from __future__ import annotations

from typing import Mapping

import numpy as np

from fsa import numerics as nm
from fsa.config import attention_scale_bits
from fsa.formats import get_format
from fsa.hw import timing
from fsa.hw.control import ACC_CMDS, CMP_CMDS, PE_BITS, UD_ACC_CMDS, UD_PE_BITS

__all__ = ["PE_BITS", "CMP_CMDS", "ACC_CMDS", "UD_ACC_CMDS", "PEModel", "CMPModel", "ACCModel",
           "pe_writers", "pe_legal"]

# PE control bits (bit i of ``ctrl_in``), CMP / ACC command codes: the
# tables of the hardware contract, fsa.hw.control.
_B = {n: 1 << i for i, n in enumerate(PE_BITS + UD_PE_BITS)}
_CMP = {n: i for i, n in enumerate(CMP_CMDS)}
_ACC = {n: i for i, n in enumerate(UD_ACC_CMDS)}


def _get(inputs: Mapping[str, int], name: str) -> int:
    return int(inputs.get(name, 0))


# --------------------------------------------------------------------------
# PE
# --------------------------------------------------------------------------
def _pe_bits(ud: bool) -> tuple[str, ...]:
    return PE_BITS + UD_PE_BITS if ud else PE_BITS


def pe_writers(ctrl: int, ud: bool = False) -> dict[str, list[str]]:
    """For a control word (9 bits; 12 with `ud`: the UD PE), the bits that
    write each register (doc table)."""
    on = {n for n in _pe_bits(ud) if ctrl & _B[n]}
    w: dict[str, list[str]] = {"d_out": [], "u_out": [], "r_out": [], "reg": []}
    if ud:
        w["qreg"] = []
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


def pe_legal(ctrl: int, ud: bool = False) -> bool:
    """True if no two bits of `ctrl` write the same register (what the plans
    guarantee, ``fsa.plan.check_overlap`` / ``fsa.plan_ud.check_schedule``)."""
    return all(len(v) <= 1 for v in pe_writers(ctrl, ud).values())


class PEModel:
    """The processing element of docs/array.md, one call per clock cycle.

    Inputs: ``l_in`` (E), ``u_in`` (A), ``d_in`` (A), ``ctrl`` (9 bits, bit i
    = ``PE_BITS[i]``).  Outputs after the edge: ``r_out``, ``d_out``,
    ``u_out``, ``ctrl_out`` and the register ``sreg``.

    ``ud=True``: the UD PE (``rtl.fsa_pe.fsa_pe_ud``, docs/ud.md): a 12-bit
    ``ctrl`` (bits 9..11 ``UD_PE_BITS``) and the second register ``qreg``
    (in the outputs): ``f = (use_q ? qreg : reg) * l_in + ...``; ``load_q``:
    ``qreg <- l_in``, ``r_out <- qreg``; ``load_reg_di``: ``reg <- d_in``
    (low E bits).
    """

    def __init__(self, e_type: str = "fp16", a_type: str = "fp32", pieces: int = 8,
                 strict: bool = True, ud: bool = False):
        self.e, self.a, self.P = e_type, a_type, pieces
        self.fe, self.fa = get_format(e_type), get_format(a_type)
        self.strict, self.ud = strict, ud
        self.bits = _pe_bits(ud)
        self.reset()

    def reset(self) -> dict:
        self.reg = self.qreg = self.r_out = self.d_out = self.u_out = self.ctrl_out = 0
        return self.state()

    def state(self) -> dict:
        out = dict(r_out=self.r_out, d_out=self.d_out, u_out=self.u_out,
                   ctrl_out=self.ctrl_out, sreg=self.reg)
        if self.ud:
            out["qreg"] = self.qreg
        return out

    def fma(self, l_in: int, u_in: int, d_in: int, ctrl: int) -> tuple[int, int, bool]:
        """The FMA of this cycle: ``(f.A, f.E, match)``."""
        addend = u_in if ctrl & _B["acc_ui"] else d_in
        mul = self.qreg if self.ud and ctrl & _B["use_q"] else self.reg
        if ctrl & _B["exp2"]:
            oa, oe, _, match = nm.exp2_step(mul, l_in, addend, self.e, self.P, self.a)
            return int(oa), int(oe), bool(match)
        oa, oe = nm.fma(mul, l_in, addend, self.e, self.a, out="both")
        return int(oa), int(oe), False

    def step(self, inputs: Mapping[str, int]) -> dict:
        l_in, u_in, d_in = _get(inputs, "l_in"), _get(inputs, "u_in"), _get(inputs, "d_in")
        ctrl = _get(inputs, "ctrl")
        on = {n for n in self.bits if ctrl & _B[n]}
        if self.strict and not pe_legal(ctrl, self.ud):
            raise ValueError(f"PE control {sorted(on)} writes one register twice "
                             f"({pe_writers(ctrl, self.ud)}); the plans never do that")
        fa_, fe_, match = self.fma(l_in, u_in, d_in, ctrl)
        reg, qreg, r_out, d_out, u_out = self.reg, self.qreg, self.r_out, self.d_out, self.u_out
        # priorities below only matter for out-of-contract (strict=False) input;
        # they are those of rtl/fsa_pe.py
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
        emask = (1 << self.fe.width) - 1
        if "load_reg_li" in on:
            reg = l_in
        elif "load_reg_ui" in on:
            reg = u_in & emask
        elif "load_reg_di" in on:
            reg = d_in & emask
        elif "update_reg" in on:
            reg = fe_
        elif "exp2" in on and match:
            reg = fe_
        self.reg, self.qreg, self.r_out, self.d_out, self.u_out = reg, qreg, r_out, d_out, u_out
        self.ctrl_out = ctrl
        return self.state()


# --------------------------------------------------------------------------
# CMP
# --------------------------------------------------------------------------
def encoded_intercepts(e_type: str, a_type: str, pieces: int) -> tuple[int, ...]:
    """The P encoded intercept words (A) of the PE's exp2 (E slopes, A intercepts)."""
    _, icpt = nm.pwl_constants(pieces, e_type, a_type)
    enc = nm.encode_intercept(icpt, np.arange(pieces, dtype=np.int64), a_type)
    return tuple(int(v) for v in enc)


class CMPModel:
    """The comparator unit CMP(c) of docs/array.md (format A).

    Inputs: ``cmd`` (code of :data:`CMP_CMDS`), ``causal``, ``mask`` (the
    instruction's mask_keys flag, 0 when absent), ``key_limit`` (the register;
    the constructor's value when absent), ``s_in`` (A), ``col`` (this unit's
    column; the constructor's value when absent).
    Outputs after the edge: ``out``, ``cmd_out``, ``causal_out``,
    ``mask_out``, ``new_max``, ``old_max``.

    An UPDATE's score is masked (-inf) when ``causal`` and ``k > col`` or
    when ``mask`` and ``k >= key_limit``.

    The causal counter ``k`` is the number of UPDATE commands immediately
    before this one without any other command (NOP included) in between: an
    instruction's UPDATEs are consecutive in the plan, and nothing else
    separates instructions at the unit.  The intercept index likewise counts
    consecutive PROP_EXP2_INTERCEPTS commands from 0 (wrapping after P-1).
    """

    def __init__(self, e_type: str = "fp16", a_type: str = "fp32", pieces: int = 8,
                 col: int = 0, strict: bool = True, key_limit: int = 256):
        self.e, self.a, self.P = e_type, a_type, pieces
        self.fe, self.fa = get_format(e_type), get_format(a_type)
        self.col = col
        self.key_limit = key_limit
        self.strict = strict
        self.icpts = encoded_intercepts(e_type, a_type, pieces)
        self.a_ninf = self.fa.sign_mask | self.fa.pos_inf
        self.e_ninf = self.fe.sign_mask | self.fe.pos_inf
        self.reset()

    def reset(self) -> dict:
        self.new_max = self.old_max = self.a_ninf
        self.out = self.cmd_out = self.causal_out = self.mask_out = 0
        self.cnt = 0          # consecutive UPDATEs before this cycle
        self.k = 0            # consecutive PROP_EXP2_INTERCEPTS before this cycle
        return self.state()

    def state(self) -> dict:
        return dict(out=self.out, cmd_out=self.cmd_out, causal_out=self.causal_out,
                    mask_out=self.mask_out, new_max=self.new_max, old_max=self.old_max)

    def _isnan(self, bits: int) -> bool:
        f = self.fa
        return (bits & f.pos_inf) == f.pos_inf and (bits & ((1 << f.man_bits) - 1)) != 0

    def step(self, inputs: Mapping[str, int]) -> dict:
        cmd = _get(inputs, "cmd")
        causal = _get(inputs, "causal")
        mask = _get(inputs, "mask")
        key_limit = int(inputs.get("key_limit", self.key_limit))
        s_in = _get(inputs, "s_in")
        col = int(inputs.get("col", self.col))
        if self.strict and not 0 <= cmd < len(CMP_CMDS):
            raise ValueError(f"CMP command {cmd} is not defined")
        a, e = self.a, self.e
        if cmd == _CMP["UPDATE"]:
            s_e = int(nm.convert(s_in, a, e))
            if (causal and self.cnt > col) or (mask and self.cnt >= key_limit):
                s_e = self.e_ninf
            self.new_max = int(nm.maximum(self.new_max, nm.convert(s_e, e, a), a))
            self.out = s_e
        elif cmd == _CMP["PROP_MAX"]:
            if self._isnan(self.new_max):
                self.out = self.fa.canonical_nan
            else:
                self.out = self.new_max ^ self.fa.sign_mask
        elif cmd == _CMP["PROP_MAX_DIFF"]:
            self.out = int(nm.sub(self.old_max, self.new_max, a))
            self.old_max = self.new_max
        elif cmd == _CMP["PROP_EXP2_INTERCEPTS"]:
            self.out = self.icpts[self.k]
        elif cmd == _CMP["PROP_ZERO"]:
            self.out = 0
        elif cmd == _CMP["RESET"]:
            self.new_max = self.old_max = self.a_ninf
        self.cnt = self.cnt + 1 if cmd == _CMP["UPDATE"] else 0
        self.k = (self.k + 1) % self.P if cmd == _CMP["PROP_EXP2_INTERCEPTS"] else 0
        self.cmd_out, self.causal_out, self.mask_out = cmd, causal, mask
        return self.state()


# --------------------------------------------------------------------------
# ACC
# --------------------------------------------------------------------------
class ACCModel:
    """The accumulator unit ACC(c) of docs/array.md (format A).

    Inputs: ``cmd`` (code of :data:`ACC_CMDS`), ``sa`` (A), ``sram`` (A),
    ``scale_a`` (A, the register: EXP_S1's factor; log2(e)/sqrt(sa_rows)
    rounded to A when absent).
    ``step`` returns ``wb`` (combinational, this cycle; ``None`` unless the
    command is ACC_SA or ACC) and ``scale`` after the edge.

    RECIPROCAL: a RECIPROCAL following a non-RECIPROCAL cycle starts the
    divider on the current ``scale``; ``scale <- reciprocal(x)`` at the edge
    of cycle ``start + latency + 1`` (``latency``: the divider's,
    ``fsa.hw.timing.divider_latency``, or the ``divider_latency`` argument),
    so a window of ``latency + 2`` RECIPROCAL commands
    (``fsa.hw.timing.reciprocal_cycles``) ends with the new scale.  With ``strict``, any other command while the
    divider is busy raises ``ValueError`` (the plans never do it).

    ``ud=True`` (UD configurations): also SET_SCALE2 (``scale2 <- sram``),
    RECIPROCAL2 (one cycle; starts the divider on ``scale2``, which gets the
    result at the edge of cycle ``start + latency + 1``: any command but the
    divider's own may run meanwhile) and ACC2 (``wb = scale2 * sram + 0``);
    ``step`` also returns ``scale2``.
    """

    def __init__(self, a_type: str = "fp32", pieces: int = 8, sa_rows: int = 4,
                 div_bits_per_cycle: int = 2, strict: bool = True,
                 divider_latency: "int | None" = None, ud: bool = False):
        self.a, self.P = a_type, pieces
        self.ud = ud
        self.fa = get_format(a_type)
        self.scale_a = attention_scale_bits(sa_rows, a_type)
        if divider_latency is None:
            divider_latency = timing.divider_latency(a_type, div_bits_per_cycle)
        self.L = divider_latency
        self.strict = strict
        self.reset()

    @property
    def window(self) -> int:
        """RECIPROCAL commands of a full window (= fsa.hw.timing.reciprocal_cycles)."""
        return self.L + 2

    def reset(self) -> dict:
        self.scale = self.fa.one
        self.scale2 = self.fa.one
        self.prev_recip = False
        self.div_left = -1        # cycles until the write (0: this cycle writes); -1 idle
        self.div_x = 0
        self.div_to2 = False      # the running division writes scale2
        return dict(wb=None, scale=self.scale, **({"scale2": self.scale2} if self.ud else {}))

    def step(self, inputs: Mapping[str, int]) -> dict:
        cmd = _get(inputs, "cmd")
        sa, sram = _get(inputs, "sa"), _get(inputs, "sram")
        a = self.a
        names = UD_ACC_CMDS if self.ud else ACC_CMDS
        if self.strict and not 0 <= cmd < len(names):
            raise ValueError(f"ACC command {cmd} is not defined")
        busy = self.div_left >= 0
        if self.strict and busy and self.div_to2 and cmd in (
                _ACC["RECIPROCAL"], _ACC["RECIPROCAL2"], _ACC["SET_SCALE2"], _ACC["ACC2"]):
            raise ValueError(f"ACC command {names[cmd]} while the divider works for scale2")
        if self.strict and busy and not self.div_to2 and cmd != _ACC["RECIPROCAL"]:
            raise ValueError(f"ACC command {ACC_CMDS[cmd]} while the divider is busy "
                             f"(a RECIPROCAL window is {self.window} cycles)")
        wb = None
        new_scale = self.scale
        if cmd == _ACC["EXP_S1"]:
            scale_a = int(inputs.get("scale_a", self.scale_a))
            new_scale = int(nm.fma(sa, scale_a, 0, a, a, out="acc"))
        elif cmd == _ACC["EXP_S2"]:
            new_scale = int(nm.exp2_pwl(self.scale, a, self.P, a, out="acc"))
        elif cmd == _ACC["ACC_SA"]:
            wb = int(nm.fma(self.scale, sram, sa, a, a, out="acc"))
        elif cmd == _ACC["ACC"]:
            wb = int(nm.fma(self.scale, sram, 0, a, a, out="acc"))
        elif cmd == _ACC["SET_SCALE"]:
            new_scale = sram
        new_scale2 = self.scale2
        if self.ud and cmd == _ACC["ACC2"]:
            wb = int(nm.fma(self.scale2, sram, 0, a, a, out="acc"))
        elif self.ud and cmd == _ACC["SET_SCALE2"]:
            new_scale2 = sram
        # the divider
        if busy:
            if self.div_left == 0:
                if self.div_to2:
                    new_scale2 = int(nm.reciprocal(self.div_x, a))
                elif cmd not in (_ACC["EXP_S1"], _ACC["EXP_S2"], _ACC["SET_SCALE"]):
                    new_scale = int(nm.reciprocal(self.div_x, a))
                self.div_left = -1
            else:
                self.div_left -= 1
        elif cmd == _ACC["RECIPROCAL"] and not self.prev_recip:
            self.div_x, self.div_to2 = self.scale, False
            self.div_left = self.L   # counts down to 0 in cycle start + L + 1 (the write)
        elif self.ud and cmd == _ACC["RECIPROCAL2"]:
            self.div_x, self.div_to2 = self.scale2, True
            self.div_left = self.L
        self.prev_recip = cmd == _ACC["RECIPROCAL"]
        self.scale, self.scale2 = new_scale, new_scale2
        return dict(wb=wb, scale=self.scale, **({"scale2": self.scale2} if self.ud else {}))
