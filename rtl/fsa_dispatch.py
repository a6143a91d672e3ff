"""Dispatch of the matrix engine (a part of ``fsa_core``): pending
instructions, semaphore-gated issue, the SRAM range check, fences and stop.

A decoded matrix or DMA instruction moves into its engine's one-entry
pending register (the decoder waits while that one is full).  A pending
instruction issues when the device runs (``run``: ACTIVE and not aborting), its semaphore acquire succeeds
(``fsa_sem``) and its engine accepts it: the matrix controller's
``mx_in_ready``, or, for DMA, the DMA port's ``dma_ready`` with fewer than
``inflight_depth(mem_ports)`` DMA instructions in flight (``fsa/hw/dmarules.py``:
2 with one memory port, also while program fetch reads words: the read
arbiter, ``rtl/fsa_rdarb.py``, lets a fetch burst in between LOADs; an
instruction is in flight from its issue to the
DMA's ``done`` for it, which releases its semaphore; ``done`` comes in
issue order).  So a matrix instruction waiting on a semaphore never
blocks DMA instructions behind it.  A fence is consumed when the engines it
names are idle; a ``stop`` fence (after waiting for both engines) is
``stop_go``.

The SRAM range check: a pending matrix instruction whose row walk
``addr + k * stride`` (``k`` below the rows the function touches: LOAD C
scratchpad rows; SCORE R scratchpad + 1 accumulator; VALUE R + R;
LSE_NORM_SCALE 1 accumulator; LSE_NORM R accumulator; the table
``fsa.hw.errors.sram_walks``) leaves the SRAM is
``mx_range_bad`` instead of issuing; while it is, nothing younger is
handed on (``take`` and ``fence_done`` are held low), so the
older instructions settle and ``fsa_status`` reports it in program order
(``fsa.hw.errors.PRECEDENCE``).  It is computed without signed numbers:
with ``u = stride + 16`` (0..31), the last row ``addr + K * stride`` equals
``addr + K * u - 16 K``, so it is in ``0..rows-1`` exactly when
``16 K <= addr + K * u < rows + 16 K``.

UD configurations (docs/ud.md): 4-bit function codes, the UD functions'
walks (LOAD_Q C scratchpad rows; KSTEP R; STEP 2R scratchpad + R + 1
accumulator; PVSTEP R + R + 1) and the UD-only fields ``reset_max`` and
``early_release`` passed to the controller (``in_reset_max``,
``in_early_release``).

Field positions come from ``fsa/hw/isa.py`` (:func:`rtl.fsa_decode.field_signal`).
Ports: the decoder's outputs and ``take`` (this cycle consumes the decoded
instruction); ``fence_done`` (a fence retires); the matrix controller's
``in_*`` inputs, ``mx_in_valid`` / ``mx_in_ready``, ``mx_issue``,
``mx_busy``; the semaphore headers of both pending instructions and the
DMA release (to ``fsa_sem``); the DMA command port ``dma_*`` (as on
``fsa_core``; ``dma_err_slot`` names the in-flight slot of a DMA error),
``dm_issue``, ``dm_inflight`` (any DMA instruction in flight) and
``dm_fidx`` (the index of the instruction in slot ``dma_err_slot``); ``mx_idx`` (the pending matrix instruction's
index); ``mx_pend``, ``dm_pend`` and ``dm_idx`` (the pending registers are
full; the pending DMA instruction's index), for the deadlock detector in
``fsa_status``; ``clear`` (the end of an abort) empties the pending
registers (the DMA is idle by then, so nothing is in flight).
"""
from __future__ import annotations

from myhdl import ConcatSignal, ResetSignal, always_comb, always_seq, block, concat, intbv

from fsa.hw import isa as hwisa
from rtl.convert import convert_block, named, sig
from rtl.fsa_decode import IDX_BITS, field_signal
from rtl.fsa_dma_if import inflight_depth

MODULE = "fsa_dispatch"
FUNC_BITS = 3                 # matrix function codes 0..4 (checked by the decoder)
UD_FUNC_BITS = 4              # 0..10 on UD configurations


def func_bits(cfg) -> int:
    """Bits of the matrix function code passed on (3; 4 on UD configurations)."""
    return UD_FUNC_BITS if cfg.dataflow == "ud" else FUNC_BITS
DMA_FUNC_BITS = 1             # DMA function codes 0..1


def _w(kind: str, name: str) -> int:
    return hwisa.field(kind, name).width


def _bias_bits(rows_walk: int) -> int:
    """Bits of ``addr + K * u`` (K = rows_walk - 1, u <= 31)."""
    amax = (1 << _w("MATRIX", "spad_addr")) - 1
    return (amax + (rows_walk - 1) * 31).bit_length()


@block
def fsa_dispatch(clk, rst, run, clear, dec_full, w0, w1, w2, w3, inst_idx, to_mx, to_dma, is_fence,
                 take, fence_done, stop_go, mx_range_bad, mx_idx,
                 mx_in_valid, mx_in_ready, mx_issue, mx_busy,
                 in_func, in_spad_addr, in_spad_stride, in_rev_in, in_rev_out, in_delay,
                 in_acc_addr, in_acc_stride, in_zero, in_causal, in_mask_keys, in_wpa,
                 in_rel_valid, in_rel_id, in_rel_value,
                 mx_acq_valid, mx_sem_id, mx_acq_value, mx_acq_ok,
                 dm_acq_valid, dm_sem_id, dm_acq_value, dm_acq_ok,
                 dm_rel_valid, dm_rel_id, dm_rel_value,
                 dma_valid, dma_ready, dma_func, dma_repeat, dma_sram_addr, dma_sram_stride,
                 dma_is_accum, dma_mem_addr, dma_mem_stride, dma_size, dma_done, dma_busy,
                 dma_err_slot, dm_issue, dm_inflight, dm_fidx, mx_pend, dm_pend, dm_idx,
                 cfg=None, in_reset_max=None, in_early_release=None):
    """The dispatcher; see the module docstring."""
    R, C = cfg.sa_rows, cfg.sa_cols
    ud = cfg.dataflow == "ud"
    FB = func_bits(cfg)
    SPR, ACR = cfg.spad_rows, cfg.acc_rows
    AB = _w("MATRIX", "spad_addr")
    insts = []

    # ------------------------------------------------------------ pending registers
    mx_p, dm_p = sig(1), sig(1)
    mx_w0, mx_w1, mx_w2 = sig(32), sig(32), sig(32)
    dm_w0, dm_w1, dm_w2, dm_w3 = sig(32), sig(32), sig(32), sig(32)
    # the DMA instructions in flight (in-flight queue of inflight_depth(ports)
    # entries, in the DMA engine's slot order): release header and index per slot
    QD = inflight_depth(cfg.mem_ports)
    RW = 1 + len(dm_sem_id) + len(dm_rel_value)
    dm_rel0, dm_rel1, dm_rel = sig(RW), sig(RW), sig(RW)
    dm_fidx0, dm_fidx1 = sig(len(dm_fidx)), sig(len(dm_fidx))
    dm_cnt = sig(2)             # DMA instructions in flight
    dm_wp, dm_rp = sig(1), sig(1)
    mxw, dmw = (mx_w0, mx_w1, mx_w2), (dm_w0, dm_w1, dm_w2, dm_w3)

    def mf(name):
        return field_signal(mxw, "MATRIX", name)

    def df(name):
        return field_signal(dmw, "DMA", name)

    f_mx, f_dma, f_stop = (field_signal((w0,), "FENCE", n) for n in ("mx", "dma", "stop"))
    func_f = hwisa.field("MATRIX", "func")
    m_func = mx_w0(func_f.lo + FB, func_f.lo)
    m_sp, m_sps, m_ac, m_acs = mf("spad_addr"), mf("spad_stride"), mf("acc_addr"), mf("acc_stride")
    m_fields = [mf(n) for n in ("rev_input", "rev_output", "delay_output", "zero", "causal",
                                "mask_keys", "wait_prev_acc", "release_valid", "sem_id",
                                "release_value", "acquire_valid", "acquire_value")]
    (m_rin, m_rout, m_dly, m_zero, m_causal, m_maskk, m_wpa, m_relv, m_id, m_relval, m_acqv,
     m_acqval) = m_fields
    dfunc_f = hwisa.field("DMA", "func")
    d_func = dm_w0(dfunc_f.lo)
    d_fields = [df(n) for n in ("repeat", "sram_addr", "sram_stride", "is_accum", "mem_addr",
                                "mem_stride", "size", "acquire_valid", "sem_id", "acquire_value",
                                "release_valid", "release_value")]
    d_rep, d_sa, d_ss, d_acc, d_ma, d_ms, d_size, d_acqv, d_id, d_acqval, d_relv, d_relval = d_fields

    # bits no unit reads: type, the unused top of the function codes, reserved bits
    def _unread(words, kind, used_names, func_bits):
        used = [0] * len(words)
        for f in (hwisa.TYPE_FIELD,) + hwisa.FIELDS[kind]:
            if f.name in used_names:
                for w, hi, lo in f.parts:
                    used[w] |= ((1 << (hi - lo + 1)) - 1) << lo
        ff = hwisa.field(kind, "func")
        used[0] |= ((1 << func_bits) - 1) << ff.lo
        pieces = []
        for k, w in enumerate(words):
            b = 31
            while b >= 0:
                if not used[k] >> b & 1:
                    lo = b
                    while lo > 0 and not used[k] >> (lo - 1) & 1:
                        lo -= 1
                    pieces.append(w(lo) if lo == b else w(b + 1, lo))
                    b = lo - 1
                else:
                    b -= 1
        return pieces

    mx_used = {f.name for f in hwisa.FIELDS["MATRIX"]} - {"func"}
    if not ud:
        mx_used -= set(hwisa.UD_ONLY_FIELDS)
    dm_used = {f.name for f in hwisa.FIELDS["DMA"]} - {"func"}
    unused_bits = ConcatSignal(*_unread(mxw, "MATRIX", mx_used, FB),
                               *_unread(dmw, "DMA", dm_used, DMA_FUNC_BITS))
    unused_dispatch = sig(len(unused_bits))

    @always_comb
    def unused_sink():
        unused_dispatch.next = unused_bits
    insts.append(unused_sink)

    # ------------------------------------------------------------ fences
    @always_comb
    def fences():
        mx_idle = not mx_p and not mx_busy
        dma_idle = not dm_p and not dm_inflight and not dma_busy
        ok = (mx_idle or not f_mx) and (dma_idle or not f_dma)
        if f_stop:
            ok = ok and mx_idle and dma_idle
        # a pending matrix instruction outside the SRAM stops dispatch: nothing
        # younger is handed on (fsa/hw/errors.py PRECEDENCE)
        go = run and not mx_range_bad
        stop_go.next = is_fence and ok and f_stop        # (a stop waits for mx_p anyway)
        fence_done.next = go and is_fence and ok
        take.next = go and dec_full and ((to_mx and not mx_p) or (to_dma and not dm_p)
                                         or (is_fence and ok))
    insts.append(fences)

    # ------------------------------------------------------------ matrix: range check and issue
    BC, BR = _bias_bits(C), _bias_bits(R)
    KC, KR = C - 1, R - 1
    LO_C, LO_R = 16 * KC, 16 * KR
    HI_SC, HI_SR, HI_AR = SPR + LO_C, SPR + LO_R, ACR + LO_R
    sp_a_c = ConcatSignal(intbv(0)[BC - AB:], m_sp) if BC > AB else m_sp
    sp_a_r = ConcatSignal(intbv(0)[BR - AB:], m_sp) if BR > AB else m_sp
    ac_a_r = ConcatSignal(intbv(0)[BR - AB:], m_ac) if BR > AB else m_ac
    sp_u, ac_u = sig(len(m_sps)), sig(len(m_acs))
    sp_bc, sp_br, ac_br = sig(BC), sig(BR), sig(BR)
    SIGN = 1 << (len(m_sps) - 1)

    @always_comb
    def walk_ends():
        sp_u.next = m_sps ^ SIGN            # stride + 16, as 0..31
        ac_u.next = m_acs ^ SIGN

    @always_comb
    def walk_ends_biased():
        sp_bc.next = sp_a_c + KC * sp_u
        sp_br.next = sp_a_r + KR * sp_u
        ac_br.next = ac_a_r + KR * ac_u
    insts += [walk_ends] if ud else [walk_ends, walk_ends_biased]

    if ud:                      # the UD walks (module docstring)
        insts.append(named(_ud_range(m_func, m_sp, m_ac, sp_u, ac_u, mx_p, run, mx_acq_ok,
                                     dm_p, mx_range_bad, mx_in_valid, mx_pend, dm_pend, cfg),
                           "ud"))
        rm_f, er_f = mf("reset_max"), mf("early_release")

        @always_comb
        def ud_fields():
            in_reset_max.next = rm_f
            in_early_release.next = er_f
        insts.append(ud_fields)

    @always_comb
    def mx_range_check():
        bad = False
        if m_func == 0:                        # LOAD_STATIONARY: C scratchpad rows
            if m_sp >= SPR or sp_bc < LO_C or sp_bc >= HI_SC:
                bad = True
        elif m_func <= 2:                      # SCORE, VALUE: R scratchpad rows
            if m_sp >= SPR or sp_br < LO_R or sp_br >= HI_SR:
                bad = True
        if m_func == 2 or m_func == 4:         # VALUE, LSE_NORM: R accumulator rows
            if m_ac >= ACR or ac_br < LO_R or ac_br >= HI_AR:
                bad = True
        elif m_func >= 1:                      # SCORE, LSE_NORM_SCALE: one row
            if m_ac >= ACR:
                bad = True
        mx_range_bad.next = mx_p and bad
        mx_in_valid.next = mx_p and not bad and run and mx_acq_ok
        mx_pend.next = mx_p
        dm_pend.next = dm_p
    if not ud:
        insts.append(mx_range_check)

    @always_comb
    def mx_issue_now():          # (its own block: in_ready depends on in_valid's block)
        mx_issue.next = mx_in_valid and mx_in_ready
    insts.append(mx_issue_now)

    @always_comb
    def mx_fields():
        in_func.next = m_func
        in_wpa.next = m_wpa
        in_rel_valid.next = m_relv
        in_rel_id.next = m_id
        in_rel_value.next = m_relval
        in_spad_addr.next = m_sp
        in_spad_stride.next = m_sps
        in_rev_in.next = m_rin
        in_rev_out.next = m_rout
        in_delay.next = m_dly
        in_acc_addr.next = m_ac
        in_acc_stride.next = m_acs
        in_zero.next = m_zero
        in_causal.next = m_causal
        in_mask_keys.next = m_maskk
        mx_acq_valid.next = m_acqv
        mx_sem_id.next = m_id
        mx_acq_value.next = m_acqval
    insts.append(mx_fields)

    # ------------------------------------------------------------ DMA issue
    rel_v, rel_id, rel_val = dm_rel(len(dm_rel) - 1), dm_rel(len(dm_rel) - 1, len(dm_rel_value)), \
        dm_rel(len(dm_rel_value), 0)

    @always_comb
    def dma_slots():
        if dm_rp:
            dm_rel.next = dm_rel1
        else:
            dm_rel.next = dm_rel0
        if dma_err_slot:
            dm_fidx.next = dm_fidx1
        else:
            dm_fidx.next = dm_fidx0
        dm_inflight.next = dm_cnt != 0
    insts.append(dma_slots)

    @always_comb
    def dma_port():
        dma_valid.next = dm_p and run and dm_acq_ok and dm_cnt < QD
        dm_issue.next = dm_p and run and dm_acq_ok and dm_cnt < QD and dma_ready
        dma_func.next = d_func
        dma_repeat.next = d_rep
        dma_sram_addr.next = d_sa
        dma_sram_stride.next = d_ss
        dma_is_accum.next = d_acc
        dma_mem_addr.next = d_ma
        dma_mem_stride.next = d_ms
        dma_size.next = d_size
        dm_acq_valid.next = d_acqv
        dm_sem_id.next = d_id
        dm_acq_value.next = d_acqval
        dm_rel_valid.next = dma_done and dm_cnt != 0 and rel_v
        dm_rel_id.next = rel_id
        dm_rel_value.next = rel_val
    insts.append(dma_port)

    # ------------------------------------------------------------ registers
    @always_seq(clk.posedge, reset=rst)
    def pending():
        if run and dec_full and not mx_range_bad:
            if to_mx and not mx_p:
                mx_p.next = True
                mx_w0.next = w0
                mx_w1.next = w1
                mx_w2.next = w2
                mx_idx.next = inst_idx
            elif to_dma and not dm_p:
                dm_p.next = True
                dm_w0.next = w0
                dm_w1.next = w1
                dm_w2.next = w2
                dm_w3.next = w3
                dm_idx.next = inst_idx
        if mx_issue:
            mx_p.next = False
        if dm_issue:
            dm_p.next = False
            dm_wp.next = not dm_wp
            if dm_wp:
                dm_fidx1.next = dm_idx
                dm_rel1.next = concat(d_relv, d_id, d_relval)
            else:
                dm_fidx0.next = dm_idx
                dm_rel0.next = concat(d_relv, d_id, d_relval)
        if dma_done and dm_cnt != 0:
            dm_rp.next = not dm_rp
        if dm_issue and not (dma_done and dm_cnt != 0):
            dm_cnt.next = dm_cnt + 1
        elif dma_done and dm_cnt != 0 and not dm_issue:
            dm_cnt.next = dm_cnt - 1
        if clear:
            mx_p.next = False
            dm_p.next = False
            dm_cnt.next = 0
    insts.append(pending)
    return insts


@block
def _ud_range(m_func, m_sp, m_ac, sp_u, ac_u, mx_p, run, mx_acq_ok, dm_p, mx_range_bad,
              mx_in_valid, mx_pend, dm_pend, cfg):
    """The range check of a UD configuration: the reference functions' walks
    and the UD functions' (codes 5..10), in place of ``mx_range_check``."""
    R, C = cfg.sa_rows, cfg.sa_cols
    SPR, ACR = cfg.spad_rows, cfg.acc_rows
    AB = _w("MATRIX", "spad_addr")
    # walk lengths: C, R, 2R scratchpad rows; R, R + 1 accumulator rows
    walks = {"c": C, "r": R, "r2": 2 * R}
    sp_end = {k: sig(_bias_bits(n)) for k, n in walks.items()}
    ac_end = {k: sig(_bias_bits(n)) for k, n in (("r", R), ("r1", R + 1))}
    sp_ext = {k: (ConcatSignal(intbv(0)[len(v) - AB:], m_sp) if len(v) > AB else m_sp)
              for k, v in sp_end.items()}
    ac_ext = {k: (ConcatSignal(intbv(0)[len(v) - AB:], m_ac) if len(v) > AB else m_ac)
              for k, v in ac_end.items()}
    spc, spr, spr2 = sp_end["c"], sp_end["r"], sp_end["r2"]
    acr, acr1 = ac_end["r"], ac_end["r1"]
    xc, xr, xr2 = sp_ext["c"], sp_ext["r"], sp_ext["r2"]
    yr, yr1 = ac_ext["r"], ac_ext["r1"]
    KC, KR, KR2, KR1 = C - 1, R - 1, 2 * R - 1, R
    LO_C, LO_R, LO_R2, LO_R1 = 16 * KC, 16 * KR, 16 * KR2, 16 * KR1
    HI_SC, HI_SR, HI_SR2 = SPR + LO_C, SPR + LO_R, SPR + LO_R2
    HI_AR, HI_AR1 = ACR + LO_R, ACR + LO_R1

    @always_comb
    def ud_walk_ends():
        spc.next = xc + KC * sp_u
        spr.next = xr + KR * sp_u
        spr2.next = xr2 + KR2 * sp_u
        acr.next = yr + KR * ac_u
        acr1.next = yr1 + KR1 * ac_u

    @always_comb
    def ud_range_check():
        bad = False
        if m_func == 0 or m_func == 5:         # LOAD_STATIONARY, LOAD_Q: C scratchpad rows
            if m_sp >= SPR or spc < LO_C or spc >= HI_SC:
                bad = True
        elif m_func <= 2 or m_func == 6 or m_func == 8:   # SCORE, VALUE, KSTEP, PVSTEP: R
            if m_sp >= SPR or spr < LO_R or spr >= HI_SR:
                bad = True
        elif m_func == 7:                      # STEP: 2R scratchpad rows
            if m_sp >= SPR or spr2 < LO_R2 or spr2 >= HI_SR2:
                bad = True
        if m_func == 2 or m_func == 4 or m_func == 10:    # VALUE, LSE_NORM, NORM: R acc rows
            if m_ac >= ACR or acr < LO_R or acr >= HI_AR:
                bad = True
        elif m_func == 7 or m_func == 8:       # STEP, PVSTEP: R + 1 accumulator rows
            if m_ac >= ACR or acr1 < LO_R1 or acr1 >= HI_AR1:
                bad = True
        elif m_func == 1 or m_func == 3 or m_func == 9:   # SCORE, LSE_NORM_SCALE, NORM_SCALE: 1
            if m_ac >= ACR:
                bad = True
        mx_range_bad.next = mx_p and bad
        mx_in_valid.next = mx_p and not bad and run and mx_acq_ok
        mx_pend.next = mx_p
        dm_pend.next = dm_p
    return ud_walk_ends, ud_range_check


def ports(cfg) -> dict:
    AB, SB = _w("MATRIX", "spad_addr"), _w("MATRIX", "spad_stride")
    IB, VB = _w("MATRIX", "sem_id"), _w("MATRIX", "release_value")
    p = dict(clk=sig(1), rst=ResetSignal(0, active=1, isasync=False), run=sig(1), clear=sig(1),
             dec_full=sig(1), w0=sig(32), w1=sig(32), w2=sig(32), w3=sig(32),
             inst_idx=sig(IDX_BITS), to_mx=sig(1), to_dma=sig(1), is_fence=sig(1), take=sig(1),
             fence_done=sig(1), stop_go=sig(1), mx_range_bad=sig(1), mx_idx=sig(IDX_BITS),
             mx_in_valid=sig(1), mx_in_ready=sig(1), mx_issue=sig(1), mx_busy=sig(1),
             in_func=sig(func_bits(cfg)), in_spad_addr=sig(AB), in_spad_stride=sig(SB),
             in_rev_in=sig(1), in_rev_out=sig(1), in_delay=sig(1), in_acc_addr=sig(AB),
             in_acc_stride=sig(SB), in_zero=sig(1), in_causal=sig(1), in_mask_keys=sig(1),
             in_wpa=sig(1),
             in_rel_valid=sig(1), in_rel_id=sig(IB), in_rel_value=sig(VB),
             mx_acq_valid=sig(1), mx_sem_id=sig(IB), mx_acq_value=sig(VB), mx_acq_ok=sig(1),
             dm_acq_valid=sig(1), dm_sem_id=sig(IB), dm_acq_value=sig(VB), dm_acq_ok=sig(1),
             dm_rel_valid=sig(1), dm_rel_id=sig(IB), dm_rel_value=sig(VB))
    p.update(dma_ports())
    p.update(dm_issue=sig(1), dm_inflight=sig(1), dm_fidx=sig(IDX_BITS), mx_pend=sig(1),
             dm_pend=sig(1), dm_idx=sig(IDX_BITS))
    if cfg.dataflow == "ud":
        p.update(in_reset_max=sig(1), in_early_release=sig(1))
    return p


def dma_ports() -> dict:
    """The DMA command port (as on fsa_core; widths from the ISA table)."""
    return dict(dma_valid=sig(1), dma_ready=sig(1), dma_func=sig(DMA_FUNC_BITS),
                dma_repeat=sig(_w("DMA", "repeat")), dma_sram_addr=sig(_w("DMA", "sram_addr")),
                dma_sram_stride=sig(_w("DMA", "sram_stride")), dma_is_accum=sig(1),
                dma_mem_addr=sig(_w("DMA", "mem_addr")),
                dma_mem_stride=sig(_w("DMA", "mem_stride")), dma_size=sig(_w("DMA", "size")),
                dma_done=sig(1), dma_busy=sig(1), dma_err_slot=sig(1))


OUTPUTS = {"take", "fence_done", "stop_go", "mx_range_bad", "mx_idx", "mx_in_valid", "mx_issue",
           "in_func", "in_spad_addr", "in_spad_stride", "in_rev_in", "in_rev_out", "in_delay",
           "in_acc_addr", "in_acc_stride", "in_zero", "in_causal", "in_mask_keys", "in_wpa",
           "in_rel_valid",
           "in_rel_id", "in_rel_value", "mx_acq_valid", "mx_sem_id", "mx_acq_value",
           "dm_acq_valid", "dm_sem_id", "dm_acq_value", "dm_rel_valid", "dm_rel_id",
           "dm_rel_value", "dma_valid", "dma_func", "dma_repeat", "dma_sram_addr",
           "dma_sram_stride", "dma_is_accum", "dma_mem_addr", "dma_mem_stride", "dma_size",
           "dm_issue", "dm_inflight", "dm_fidx", "mx_pend", "dm_pend", "dm_idx",
           "in_reset_max", "in_early_release"}


def convert(outdir, cfg):
    p = ports(cfg)
    return convert_block(lambda: fsa_dispatch(**p, cfg=cfg), MODULE, outdir)
