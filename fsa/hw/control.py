"""Control contract: the PE control bits, the CMP / ACC / BCMP command codes
and the matrix controller's issue slots.

The matrix controller (``rtl/fsa_mxctrl.py``) drives these codes, the units
(``rtl/fsa_pe.py``, ``rtl/fsa_cmp.py``, ``rtl/fsa_acc.py``,
``rtl/fsa_bcmp.py``) decode them by name, the plans (``fsa/plan.py``) are
written in them and the testbench models (``tb/``) read them: each table is
declared here once.

* :data:`PE_BITS`: bit ``i`` of a PE's ``ctrl_in`` (docs/architecture.md
  section 3); the UD PE has the three :data:`UD_PE_BITS` after them.
* :data:`CMP_CMDS`, :data:`ACC_CMDS`: command codes (by index) of the top
  comparator row and the accumulator row; :data:`UD_CMP_CMDS` and
  :data:`UD_ACC_CMDS` extend them on UD hardware (codes 7 and 7..9).
* :data:`BCMP_CMDS`: the UD bottom comparator row's commands and the lane
  each acts on (codes numbered from 1 per lane, in this order).
* :data:`ISSUE_SLOTS` / :data:`SLOT_RETIRE`: the controller's two
  instruction slots; :data:`NORM_FUNCS` run in a third (UD), their
  partners starting up to :func:`norm_slack` cycles after them.
"""
from __future__ import annotations

__all__ = ["PE_BITS", "UD_PE_BITS", "CMP_CMDS", "UD_CMP_CMDS", "ACC_CMDS", "UD_ACC_CMDS",
           "ACC_WRITE_CMDS", "BCMP_CMDS", "SPAD_CONSTS", "ISSUE_SLOTS", "SLOT_RETIRE",
           "NORM_FUNCS", "NORM_PARTNERS", "norm_slack"]

#: PE control bits, in the order of docs/architecture.md section 3.
PE_BITS = ("mac", "acc_ui", "load_reg_li", "load_reg_ui", "flow_lr", "flow_ud",
           "flow_du", "update_reg", "exp2")
#: The UD PE's extra control bits (after PE_BITS: control 9 -> 12 bits):
#: ``use_q`` multiplies the second register ``qreg`` instead of ``reg``;
#: ``load_q``: ``qreg <- l_in``, ``r_out <- qreg`` (Q shifts in like a chain);
#: ``load_reg_di``: ``reg <- d_in`` viewed as E (a score coming back up).
UD_PE_BITS = ("use_q", "load_q", "load_reg_di")

#: The top comparator row's commands, by code.
CMP_CMDS = ("NOP", "UPDATE", "PROP_MAX", "PROP_MAX_DIFF", "PROP_EXP2_INTERCEPTS",
            "PROP_ZERO", "RESET")
#: The top CMP's commands on UD hardware: code 7 ``LATCH`` (out <- the top
#: PE's u_out, i.e. -m arriving up the u path) after the reference's 0..6.
UD_CMP_CMDS = CMP_CMDS + ("LATCH",)

#: The accumulator row's commands, by code.
ACC_CMDS = ("NOP", "EXP_S1", "EXP_S2", "ACC_SA", "ACC", "SET_SCALE", "RECIPROCAL")
#: UD configurations' ACC commands: ACC_CMDS and the second scale register's
#: (``scale2``, used by NORM_SCALE / NORM only): SET_SCALE2 (scale2 <- sram),
#: RECIPROCAL2 (starts the divider on scale2; it writes scale2 when done, the
#: plan's ``hold``), ACC2 (wb = scale2 * sram + 0).
UD_ACC_CMDS = ACC_CMDS + ("SET_SCALE2", "RECIPROCAL2", "ACC2")
#: The ACC commands that write their row back to the accumulator SRAM.
ACC_WRITE_CMDS = ("ACC_SA", "ACC", "ACC2")

#: The bottom comparator row (UD only), per column, three command lanes
#: that may act in one cycle: "max" (RESET: maxima <- -inf, only when the
#: instruction's ``reset_max`` bit is set; UPDATE: the k-th UPDATE since the
#: last RESET / MAX_DIFF takes the bottom PE's d_out rounded to E, masked to
#: -inf when the instruction is causal and k > c, into the running max and
#: pushes it on the R-deep LIFO; MAX_DIFF: diff <- old_max - new_max,
#: old_max <- new_max), "up" (the u-path driver into the bottom PE's d_in:
#: PROP_MAX sends -new_max, POP the LIFO's top score) and "od" (to the output
#: delayer: BYPASS the bottom PE's d_out, SEND_DIFF the max difference).
BCMP_CMDS = {"RESET": "max", "UPDATE": "max", "MAX_DIFF": "max",
             "PROP_MAX": "up", "POP": "up", "BYPASS": "od", "SEND_DIFF": "od"}

#: Spad constant sources (broadcast to all rows instead of an SRAM row).
SPAD_CONSTS = ("one", "scale", "slope")

#: The reference controller's two instruction slots: an instruction may start
#: only when the instruction two before it has retired, SLOT_RETIRE cycles
#: after that one's last action.
ISSUE_SLOTS = 2
SLOT_RETIRE = 2
#: The UD functions that run in the controller's third, ACC-only slot (the
#: non-blocking normalisation, docs/ud.md).
NORM_FUNCS = ("NORM_SCALE", "NORM")
#: The functions that may start right after one of NORM_FUNCS (its partner:
#: the normalisation's commands sit in their free ACC window).
NORM_PARTNERS = ("STEP", "PVSTEP")


def norm_slack(P: int) -> int:
    """The partner of a NORM_SCALE / NORM (a STEP or PVSTEP) starts 1 ..
    ``norm_slack`` cycles after it (the decoder hands the controller one
    matrix instruction every other cycle at best): ``min(4, P + 1)`` with
    `P` exp2 pieces."""
    return min(4, P + 1)
