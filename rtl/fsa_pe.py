"""The FSA processing element (docs/architecture.md section 3, docs/array.md).

Ports (all registered outputs, one hop per direction)::

              u_in (A)    u_out (A)
                 |            ^
    l_in (E) -> [    PE: reg (E)   ] -> r_out (E)
    ctrl_in  -> [  FMA reg*l_in+c  ] -> ctrl_out
                 v            |
              d_out (A)   d_in (A)

* ``ctrl_in``: 9 control bits, bit i = ``fsa.hw.control.PE_BITS[i]``
  (mac, acc_ui, load_reg_li, load_reg_ui, flow_lr, flow_ud, flow_du,
  update_reg, exp2).  ``ctrl_out`` is ``ctrl_in`` one cycle later (control
  moves one column right per cycle).  In the Verilog every bit has its name:
  ``pe_ctrl_mac = ctrl_in[0]`` ... ``pe_ctrl_exp2 = ctrl_in[8]``.
* FMA: ``f = reg * l_in + (acc_ui ? u_in : d_in)`` (``fsa_fma``, E x E + A,
  exp2 mode with ``exp2``); a separate module instance ``u_fma`` of the
  FMA's gated variant (``fsa_fma_<E>_<A>_p<P>_en``), enabled by ``fma_en =
  mac | update_reg | exp2``: the cycles that use its result (``d_out`` /
  ``u_out`` on ``mac``, ``reg`` on ``update_reg`` and ``exp2``).  Its outputs
  are 0 in the other cycles, where nothing reads them, so the PE's function
  is that of an ungated FMA; a simulator skips the FMA's arithmetic in those
  cycles (docs/testing.md, simulation speed).

The PE of a dataflow with the second register (``fsa.hw.dataflow``:
``pe_qreg``, the UD dataflow, docs/ud.md; ``dataflow_name="ud"``) adds a
second register ``qreg`` (E) and three control bits after those nine,
``fsa.hw.control.UD_PE_BITS`` (``ctrl_in`` is 12 bits, :func:`ctrl_width`):
``use_q`` (bit 9) multiplies ``qreg`` instead of ``reg``; ``load_q`` (bit
10): ``qreg <- l_in`` and ``r_out <- qreg`` (Q shifts in like a chain);
``load_reg_di`` (bit 11): ``reg <- d_in`` (its low E bits: a score coming
back up the u path), the semantics of ``fsa/golden/ud_cycle.py``.  The
reference configurations' PE is generated without them: one body, whose
processes lose the statements of the absent parts (``rtl/parts.py``).

Latency: every output is a register written at the clock edge; everything is
held when not written.  Synchronous active-high reset clears all registers.

Timing (one PE, ``mac`` with ``acc_ui``)::

    clk      _/~\\_/~\\_/~\\_
    ctrl_in   | mac |     |
    l_in,u_in |  x  |     |
    d_out     |     | f.A |      (f = reg*l_in + u_in, rounded to A)
"""
from __future__ import annotations

from myhdl import always_comb, always_seq, block

from fsa.formats import get_format
from fsa.hw import dataflow
from fsa.hw.control import PE_BITS, UD_PE_BITS
from rtl.convert import convert_block, sig, submodule
from rtl.fp import fsa_fma
from rtl.parts import part_of

#: Control bit positions in ``ctrl_in``: the table is ``fsa.hw.control.PE_BITS``.
(MAC, ACC_UI, LOAD_REG_LI, LOAD_REG_UI, FLOW_LR, FLOW_UD, FLOW_DU, UPDATE_REG,
 EXP2) = (PE_BITS.index(b) for b in ("mac", "acc_ui", "load_reg_li", "load_reg_ui", "flow_lr",
                                     "flow_ud", "flow_du", "update_reg", "exp2"))
CTRL_BITS = len(PE_BITS)
#: Verilog name of each control bit (``pe_ctrl_<PE_BITS name>``), by position.
CTRL_NAMES = tuple(f"pe_ctrl_{b}" for b in PE_BITS)
#: The UD PE's control bits after the nine (fsa.hw.control.UD_PE_BITS).
USE_Q, LOAD_Q, LOAD_REG_DI = (len(PE_BITS) + UD_PE_BITS.index(b)
                              for b in ("use_q", "load_q", "load_reg_di"))
UD_CTRL_BITS = len(PE_BITS) + len(UD_PE_BITS)


def ctrl_width(cfg_or_df) -> int:
    """Control word width: 9 (reference), 12 (UD); `cfg_or_df` is an
    FSAConfig, a dataflow name or a :class:`fsa.hw.dataflow.Dataflow`."""
    return dataflow.of(cfg_or_df).ctrl_bits


def pe_bits(cfg_or_df) -> tuple:
    """The control bit names by position (PE_BITS, plus UD_PE_BITS on UD)."""
    return dataflow.of(cfg_or_df).pe_bits


#: One Verilog tree per configuration (gen/<config>/), so the PE module is
#: simply ``fsa_pe`` there.
MODULE = "fsa_pe"
#: The module comment of the PE with the second register (docs/ud.md).
QREG_DOC = """The UD PE (module docstring): the reference PE plus ``qreg``,
    ``use_q``, ``load_q`` and ``load_reg_di``; the same ports, a 12-bit
    control word.  Converted as module ``fsa_pe`` of a UD configuration."""


@block
def fsa_pe(clk, rst, l_in, u_in, d_in, ctrl_in, r_out, d_out, u_out, ctrl_out,
           e_type="fp16", a_type="fp32", pieces=8, dataflow_name="reference"):
    """One processing element; see the module docstring for ports and timing."""
    df = dataflow.of(dataflow_name)
    fe, fa = get_format(e_type), get_format(a_type)
    ew, aw = fe.width, fa.width
    nb = df.ctrl_bits
    for name, s, w in (("l_in", l_in, ew), ("r_out", r_out, ew), ("u_in", u_in, aw),
                       ("d_in", d_in, aw), ("d_out", d_out, aw), ("u_out", u_out, aw),
                       ("ctrl_in", ctrl_in, nb), ("ctrl_out", ctrl_out, nb)):
        if len(s) != w:
            raise ValueError(f"fsa_pe: port {name} must be {w} bits wide, got {len(s)}")

    sreg = sig(ew)          # the PE register ("reg" is a Verilog keyword)
    q = df.pe_qreg          # the second register's part (rtl/parts.py: None when absent)
    qreg = sig(ew) if q else None       # the second register (Q, resident)
    mul = sig(ew) if q else None        # the multiplicand: qreg (use_q) or reg
    addend = sig(aw)
    f_a, f_e = sig(aw), sig(ew)
    pbits = max(1, (pieces - 1).bit_length())
    unused_piece = sig(pbits)    # (the PE uses match, not the index)
    match = sig(1)
    # the control bits by name (the Verilog names are these variables' names)
    (pe_ctrl_mac, pe_ctrl_acc_ui, pe_ctrl_load_reg_li, pe_ctrl_load_reg_ui, pe_ctrl_flow_lr,
     pe_ctrl_flow_ud, pe_ctrl_flow_du, pe_ctrl_update_reg, pe_ctrl_exp2) = (sig(1) for _ in PE_BITS)
    pe_ctrl_use_q, pe_ctrl_load_q, pe_ctrl_load_reg_di = (sig(1) if q else None for _ in UD_PE_BITS)

    fma_en = sig(1)         # the FMA works only in the cycles that use its result
    # (the multiplicand: `mul` with the second register, else `sreg` itself)
    u_fma = submodule(fsa_fma.fsa_fma,
                      (mul if q else sreg, l_in, addend, pe_ctrl_exp2, f_a, f_e, unused_piece, match),
                      dict(mul=e_type, add=a_type, pieces=pieces, en=fma_en),
                      fsa_fma.module_name(e_type, a_type, pieces, gated=True), "u_fma",
                      {"a": mul if q else sreg, "b": l_in, "c": addend, "exp2": pe_ctrl_exp2,
                       "out_a": f_a, "out_e": f_e, "piece": unused_piece, "match": match,
                       "en": fma_en},
                      {"out_a", "out_e", "piece", "match"})

    @always_comb
    def fma_gate():
        """The FMA's enable: mac (d_out / u_out), update_reg and exp2 (reg)."""
        fma_en.next = pe_ctrl_mac or pe_ctrl_update_reg or pe_ctrl_exp2

    # (a process docstring is a comment of the generated Verilog: edit it and the
    # Verilog changes; fsa.plan re-exports the fsa.hw.control tables)
    def ctrl_bits():
        """The control word's bits by name (fsa.plan.PE_BITS)."""
        pe_ctrl_mac.next = ctrl_in[MAC]
        pe_ctrl_acc_ui.next = ctrl_in[ACC_UI]
        pe_ctrl_load_reg_li.next = ctrl_in[LOAD_REG_LI]
        pe_ctrl_load_reg_ui.next = ctrl_in[LOAD_REG_UI]
        pe_ctrl_flow_lr.next = ctrl_in[FLOW_LR]
        pe_ctrl_flow_ud.next = ctrl_in[FLOW_UD]
        pe_ctrl_flow_du.next = ctrl_in[FLOW_DU]
        pe_ctrl_update_reg.next = ctrl_in[UPDATE_REG]
        pe_ctrl_exp2.next = ctrl_in[EXP2]
        pe_ctrl_use_q.next = ctrl_in[USE_Q]
        pe_ctrl_load_q.next = ctrl_in[LOAD_Q]
        pe_ctrl_load_reg_di.next = ctrl_in[LOAD_REG_DI]

    def select():
        if pe_ctrl_acc_ui:
            addend.next = u_in
        else:
            addend.next = d_in
        if pe_ctrl_use_q:
            mul.next = qreg
        else:
            mul.next = sreg

    def step():
        ctrl_out.next = ctrl_in
        # d_out: mac (sum goes down) or flow_ud
        if pe_ctrl_mac and pe_ctrl_acc_ui:
            d_out.next = f_a
        elif pe_ctrl_flow_ud:
            d_out.next = u_in
        # u_out: mac (sum goes up) or flow_du
        if pe_ctrl_mac and not pe_ctrl_acc_ui:
            u_out.next = f_a
        elif pe_ctrl_flow_du:
            u_out.next = d_in
        # r_out: Q shifts like a chain (either register), or data passes right
        if pe_ctrl_load_q:
            r_out.next = qreg
        elif pe_ctrl_load_reg_li:
            r_out.next = sreg
        elif pe_ctrl_flow_lr:
            r_out.next = l_in
        if pe_ctrl_load_q:
            qreg.next = l_in
        # the register
        if pe_ctrl_load_reg_li:
            sreg.next = l_in
        elif pe_ctrl_load_reg_ui:
            sreg.next = u_in[ew:]
        elif pe_ctrl_load_reg_di:
            sreg.next = d_in[ew:]
        elif pe_ctrl_update_reg:
            sreg.next = f_e
        elif pe_ctrl_exp2 and match:
            sreg.next = f_e

    # (the processes of the PE with the second register keep their names, *_ud)
    sfx = "_ud" if q else ""
    ctrl_bits = always_comb(part_of(ctrl_bits, doc=(
        "The control word's bits by name (fsa.plan.PE_BITS + UD_PE_BITS)." if q else None)))
    select = always_comb(part_of(select, name="select" + sfx))
    step = always_seq(clk.posedge, reset=rst)(part_of(step, name="step" + sfx))
    return u_fma, fma_gate, ctrl_bits, select, step


def ports(e_type: str = "fp16", a_type: str = "fp32", dataflow_name: str = "reference") -> dict:
    """Fresh signals for every port of fsa_pe (the UD PE's control is 12 bits)."""
    ew, aw = get_format(e_type).width, get_format(a_type).width
    nb = ctrl_width(dataflow_name)
    return dict(clk=sig(1), rst=sig(1), l_in=sig(ew), u_in=sig(aw), d_in=sig(aw),
                ctrl_in=sig(nb), r_out=sig(ew), d_out=sig(aw), u_out=sig(aw),
                ctrl_out=sig(nb))


def make_reset(p: dict) -> dict:
    from myhdl import ResetSignal
    p["rst"] = ResetSignal(0, active=1, isasync=False)
    return p


def convert(outdir, e_type: str = "fp16", a_type: str = "fp32", pieces: int = 8,
            dataflow_name: str = "reference"):
    """Write ``<outdir>/fsa_pe.v`` (instantiates the gated fsa_fma module) for
    the PE of dataflow `dataflow_name`."""
    p = make_reset(ports(e_type, a_type, dataflow_name))

    def make():
        inst = fsa_pe(**p, e_type=e_type, a_type=a_type, pieces=pieces,
                      dataflow_name=dataflow_name)
        if dataflow.of(dataflow_name).pe_qreg:
            inst.__doc__ = QREG_DOC      # (the module comment in the Verilog)
        return inst
    return convert_block(make, MODULE, outdir)
