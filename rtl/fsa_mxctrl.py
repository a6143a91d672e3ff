"""Matrix controller: runs matrix instructions on the array from the
execution plans of ``fsa/plan.py`` (docs/architecture.md section 7).

Two instruction slots (the reference's issue rule): an instruction starts the
cycle after the previous one's conflict-free cycle, only when a slot is free
(the instruction two before it has retired, ``SLOT_RETIRE`` cycles after its
last action); blocking functions (LSE_NORM_SCALE, LSE_NORM) and
``wait_prev_acc`` wait for both slots to be free.  The hardware is generated
from the plans: every PE control bit is a *source* per wave kind — a
comparator on the slot's cycle counter against the plan's merged intervals
(:func:`fsa.plan.compact`) — followed, for ``down`` / ``up`` waves, by a shift
register along the rows; CMP and ACC commands, spad reads, constant reads and
acc reads are interval comparators too.  Change the plans and the controller
follows.

Names in the generated Verilog: everything slot ``i`` asks for lives under
``slot<i>_``; a comparator's output is named by what it drives,
``slot<i>_<wave>_<bit>_hit`` for PE control bit ``<bit>`` (``fsa.hw.control.PE_BITS``)
of wave kind ``<wave>`` (parallel, down, up), ``slot<i>_cmp_<command>_hit`` /
``slot<i>_acc_<command>_hit`` for the CMP / ACC commands (one-hot, encoded in
``slot<i>_cmp_code_hits`` / ``slot<i>_acc_code_hits``) and ``slot<i>_rd_<source>``
for the scratchpad (sram, const, slope, scale) and accumulator (acc) reads.
``down_chain_stage<r>_q`` / ``up_chain_stage<r>_q`` are the wave shift
registers, ``row<r>_ctrl`` the control word of array row ``r`` (packed into
``ctrl``), ``slot<i>_regs_*`` / ``t<i>`` / ``b<i>`` the slot's registers,
cycle counter and busy flag.

Ports::

    in_valid / in_ready    a decoded matrix instruction (in_*) is accepted when
                           both are high; its cycle 0 is the next cycle
    ctrl, cmp_cmd, cmp_causal, cmp_mask,        to fsa_array (cmp_causal / cmp_mask: the
    acc_cmd                                     flags of the UPDATE's instruction)
    spad_en, spad_addr                          scratchpad array-port read
    id_valid, id_const, id_csel, id_k,          input-delayer input of the next
    id_rev_in, id_rev_out, id_delay             cycle (aligned with the SRAM data)
    acc_ren, acc_raddr, acc_zero                acc read (acc_zero: the data of
                                                this read must be replaced by 0;
                                                aligned with the data, next cycle)
    acc_wen, acc_waddr                          acc write-back of acc_wb
    rel_valid, rel_id, rel_value                semaphore release pulse
    busy                                        a slot is busy

UD configurations (docs/ud.md) take 4-bit function codes (0..10), 12-bit PE
control words, the top CMP's LATCH, and have the extra ports
``in_reset_max``, ``in_early_release`` (inputs), ``bcmp_max``,
``bcmp_up``, ``bcmp_od``, ``bcmp_causal`` (to the array's bottom comparator
row) and a second release channel ``rel2_valid``, ``rel2_id``,
``rel2_value`` (slot 1's; ``rel_*`` is slot 0's: with ``early_release`` both
slots may release in one cycle); ``rtl/fsa_mxctrl_ud.py`` generates those
parts, from the plans too.
"""
from __future__ import annotations

from myhdl import always_comb, always_seq, block, intbv, modbv

from fsa.hw import control as hwctl
from fsa.hw import dataflow
from fsa.hw import isa as hwisa
from fsa.hw import timing
from rtl.convert import convert_block, named, sig
from rtl import fsa_acc, fsa_bcmp, fsa_cmp, fsa_mxctrl_ud
from rtl.fsa_mxctrl_parts import (chain, copy, delay1, encode, member, or3, pack_bits, per_func,
                                 runs, slot_regs)
from rtl.fsa_pe import ctrl_width
from rtl.parts import part_of

MODULE = "fsa_mxctrl"
# field widths from the ISA table (fsa/hw/isa.py)
ADDR_BITS = hwisa.field("MATRIX", "spad_addr").width
STRIDE_BITS = hwisa.field("MATRIX", "spad_stride").width
SEM_ID_BITS = hwisa.field("MATRIX", "sem_id").width
SEM_VALUE_BITS = hwisa.SEM_VALUE_BITS
CSEL_ONE, CSEL_SCALE, CSEL_SLOPE = 0, 1, 2


def func_bits(cfg) -> int:
    """Bits of the function code the controller takes: 3 (codes 0..4), 4 on
    UD configurations (codes 0..10)."""
    return max(3, hwisa.mx_func_max(cfg.dataflow).bit_length())
BLOCKING = tuple(i for i, f in enumerate(hwisa.MX_FUNCS) if f in ("ATTENTION_LSE_NORM_SCALE",
                                                                   "ATTENTION_LSE_NORM"))


def plans_for(cfg) -> list:
    """The plans of a config, indexed by ISA function code (five, eleven on UD
    configurations): the contract's :func:`fsa.hw.timing.plans` (the plans
    ``fsa plan show`` draws and the cycle model runs)."""
    return timing.plans(cfg)


@block
def _slot_sources(func, t, par, down, up, cmp_cmd, acc_cmd, sram_rd, const_rd, csel, acc_rd,
                  plans, df, bcmp):
    """Everything one slot asks for in the current cycle (the PE bits and
    the CMP / ACC commands of dataflow `df`; `bcmp`: the bottom row's lanes,
    or None)."""
    insts = []
    bit_names, cmp_names, acc_names = df.pe_bits, df.cmp_cmds, df.acc_cmds
    # PE control bits per wave kind (the comparator outputs are kept in lists
    # only, never in a local, so that each is named by its instance)
    for kind, vec in (("parallel", par), ("down", down), ("up", up)):
        bits = []
        for b in bit_names:
            table = []
            for f, pl in enumerate(plans):
                for s, n in timing.compact(pl).get((b, kind), ()):
                    table.append((f, s, s + n))
            if table:
                bits.append(sig(1))
                insts.append(named(member(func, t, bits[-1], table), f"{kind}_{b}"))
            else:
                bits.append(False)          # never used by any plan: constant 0
        insts.append(named(pack_bits(bits, vec), f"{kind}_bits"))
    # CMP and ACC commands: one membership per command
    for unit, names, out in (("cmp", cmp_names, cmp_cmd), ("acc", acc_names, acc_cmd)):
        members = []
        for code, name in enumerate(names):
            if code == 0:
                continue
            table = []
            for f, pl in enumerate(plans):
                cyc = [c for c, cmd in (pl.cmp if out is cmp_cmd else pl.acc) if cmd == name]
                table += [(f, s, e) for s, e in runs(cyc)]
            if table:
                members.append((code, sig(1)))
                insts.append(named(member(func, t, members[-1][1], table),
                                   f"{unit}_{name.lower()}"))
        insts.append(named(encode(members, out), f"{unit}_code"))
    # spad reads
    sram_t, const_t, slope_t, scale_t = [], [], [], []
    for f, pl in enumerate(plans):
        sram_t += [(f, s, e) for s, e in runs(r.cycle for r in pl.spad_reads if r.source == "sram")]
        const_t += [(f, s, e) for s, e in runs(r.cycle for r in pl.spad_reads if r.source != "sram")]
        slope_t += [(f, s, e) for s, e in runs(r.cycle for r in pl.spad_reads if r.source == "slope")]
        scale_t += [(f, s, e) for s, e in runs(r.cycle for r in pl.spad_reads if r.source == "scale")]
    rd_slope, rd_scale = sig(1), sig(1)
    insts += [named(member(func, t, sram_rd, sram_t), "rd_sram"),
              named(member(func, t, const_rd, const_t), "rd_const"),
              named(member(func, t, rd_slope, slope_t), "rd_slope"),
              named(member(func, t, rd_scale, scale_t), "rd_scale")]
    acc_t = []
    for f, pl in enumerate(plans):
        acc_t += [(f, s, e) for s, e in runs(a.cycle for a in pl.acc_reads)]
    insts.append(named(member(func, t, acc_rd, acc_t), "rd_acc"))
    if bcmp is not None:          # the bottom row's lanes (rtl/fsa_mxctrl_ud.py)
        insts.append(named(fsa_mxctrl_ud.bcmp_sources(func, t, bcmp["max"], bcmp["up"],
                                                      bcmp["od"], bcmp["reset"], plans), "ud"))

    @always_comb
    def const_select():
        if rd_slope:
            csel.next = CSEL_SLOPE
        elif rd_scale:
            csel.next = CSEL_SCALE
        else:
            csel.next = CSEL_ONE
    insts.append(const_select)
    return insts


@block
def fsa_mxctrl(clk, rst,
               in_valid, in_ready, in_func, in_spad_addr, in_spad_stride, in_rev_in, in_rev_out,
               in_delay, in_acc_addr, in_acc_stride, in_zero, in_causal, in_mask_keys,
               in_wait_prev_acc, in_rel_valid, in_rel_id, in_rel_value,
               ctrl, cmp_cmd, cmp_causal, cmp_mask, acc_cmd,
               spad_en, spad_addr, id_valid, id_const, id_csel, id_k, id_rev_in, id_rev_out,
               id_delay, acc_ren, acc_raddr, acc_zero, acc_wen, acc_waddr,
               rel_valid, rel_id, rel_value, busy, cfg=None, in_reset_max=None,
               in_early_release=None, bcmp=None, rel2=None, rel3=None):
    """The matrix controller; see the module docstring."""
    R, P = cfg.sa_rows, cfg.exp2_pieces
    df = dataflow.of(cfg)
    norm = df.norm_slot     # the third slot and the slots' UD flags and channels
    if norm and None in (in_reset_max, in_early_release, bcmp, rel2, rel3):
        raise ValueError(f"fsa_mxctrl: dataflow {df.name!r} needs the ports of "
                         "fsa_mxctrl_ud.ud_ports")
    NB = ctrl_width(cfg)
    FB = func_bits(cfg)
    plans = plans_for(cfg)
    TW = max(p.wave_retire for p in plans).bit_length() + 1      # (wave_retire >= retire)
    CF = tuple(p.conflict_free for p in plans)
    RETIRE = tuple(p.retire for p in plans)
    RELEASE = tuple(p.release for p in plans)
    slope_starts = {r.cycle - r.index for p in plans for r in p.spad_reads if r.source == "slope"}
    SLOPE0 = min(slope_starts) if slope_starts else 0
    KB = max(1, (P - 1).bit_length())
    K_OFS = (-SLOPE0) % (1 << KB)      # k = (t - SLOPE0) mod 2**KB = (t[KB:] + K_OFS)[KB:]
    UPDATE_CODE = hwctl.CMP_CMDS.index("UPDATE")
    B0, B1 = BLOCKING
    AB = fsa_acc.cmd_bits(cfg)           # ACC command bits (4 on UD: scale2's commands)
    # UD: the non-blocking normalisation's functions run in a third slot of
    # their own (fsa_mxctrl_ud.norm_slot); the two slots never hold them
    NORM = tuple(i for i, p in enumerate(plans) if p.func in hwctl.NORM_FUNCS)
    slot_plans = [timing.Plan(p.func, p.R, p.C, p.P, (), (), (), (), (), p.conflict_free)
                  if p.func in hwctl.NORM_FUNCS else p for p in plans]

    insts = []
    # ---------------------------------------------------------------- slots
    s_busy = [sig(1), sig(1)]
    s_func = [sig(FB), sig(FB)]
    s_t = [sig(TW), sig(TW)]
    s_sptr = [sig(ADDR_BITS), sig(ADDR_BITS)]      # row pointers (wrap modulo 2**ADDR_BITS)
    s_sstr = [sig(STRIDE_BITS), sig(STRIDE_BITS)]  # signed strides
    s_aptr = [sig(ADDR_BITS), sig(ADDR_BITS)]
    s_astr = [sig(STRIDE_BITS), sig(STRIDE_BITS)]
    s_flags = [sig(3), sig(3)]          # rev_in, rev_out, delay
    s_zero = [sig(1), sig(1)]
    s_causal = [sig(1), sig(1)]
    s_maskk = [sig(1), sig(1)]          # mask_keys
    REL_BITS = 1 + SEM_ID_BITS + SEM_VALUE_BITS
    s_rel = [sig(REL_BITS), sig(REL_BITS)]   # valid, id, value
    last = sig(1)                        # slot of the most recent instruction

    src = []
    LB = fsa_bcmp.LANE_BITS
    for i in range(2):
        d = dict(par=sig(NB), down=sig(NB), up=sig(NB), cmp=sig(3), acc=sig(AB), sram=sig(1),
                 const=sig(1), csel=sig(2), accrd=sig(1))
        src.append(d)
        if df.bottom_row:
            d["bcmp"] = dict(max=sig(LB), up=sig(LB), od=sig(LB), reset=sig(1))
        insts.append(named(_slot_sources(s_func[i], s_t[i], d["par"], d["down"], d["up"], d["cmp"],
                                         d["acc"], d["sram"], d["const"], d["csel"], d["accrd"],
                                         slot_plans, df, d.get("bcmp")), f"slot{i}"))

    # ---------------------------------------------------------------- waves
    par, down, up = sig(NB), sig(NB), sig(NB)
    d_taps = [sig(NB) for _ in range(R)]
    u_taps = [sig(NB) for _ in range(R)]
    a0, a1 = src[0], src[1]
    b0, b1 = s_busy

    # (MyHDL cannot index dicts inside generators: use plain names)
    pa0, pa1, dn0, dn1, up0, up1 = a0["par"], a1["par"], a0["down"], a1["down"], a0["up"], a1["up"]

    @always_comb
    def merge_waves():
        p = intbv(0)[NB:]
        dd = intbv(0)[NB:]
        uu = intbv(0)[NB:]
        if b0:
            p[:] = p | pa0
            dd[:] = dd | dn0
            uu[:] = uu | up0
        if b1:
            p[:] = p | pa1
            dd[:] = dd | dn1
            uu[:] = uu | up1
        par.next = p
        down.next = dd
        up.next = uu
    insts.append(merge_waves)
    insts.append(named(chain(down, d_taps, R, NB, clk, rst), "down_chain"))
    insts.append(named(chain(up, u_taps, R, NB, clk, rst), "up_chain"))
    rows = [sig(NB) for _ in range(R)]
    for r in range(R):
        insts.append(named(or3(par, d_taps[r], u_taps[R - 1 - r], rows[r]), f"row{r}"))
    from myhdl import ConcatSignal
    all_rows = ConcatSignal(*reversed(rows))

    @always_comb
    def drive_ctrl():
        ctrl.next = all_rows
    insts.append(drive_ctrl)

    # ------------------------------------------------ commands, reads, writes
    cm0, cm1, ac0, ac1 = a0["cmp"], a1["cmp"], a0["acc"], a1["acc"]
    # (the read comparators' outputs are named here: slot<i>_rd_sram, ...)
    slot0_rd_sram, slot1_rd_sram = a0["sram"], a1["sram"]
    slot0_rd_const, slot1_rd_const = a0["const"], a1["const"]
    slot0_rd_acc, slot1_rd_acc = a0["accrd"], a1["accrd"]
    cs0, cs1 = a0["csel"], a1["csel"]
    t0, t1 = s_t
    sp0, sp1 = s_sptr
    ap0, ap1 = s_aptr
    fl0, fl1 = s_flags
    z0, z1 = s_zero
    c0, c1 = s_causal
    mk0, mk1 = s_maskk
    nxt_valid, nxt_const, nxt_csel, nxt_k, nxt_flags = sig(1), sig(1), sig(2), sig(KB), sig(3)
    nxt_zero = sig(1)
    raddr_q = sig(ADDR_BITS)
    if len(slope_starts) > 1:   # the slope index offset of each slot's function
        KOFS = fsa_mxctrl_ud.slope_offsets(plans, KB)
        ko0, ko1 = sig(KB), sig(KB)
        insts += [named(per_func(s_func[0], ko0, KOFS, KB), "slot0_kofs"),
                  named(per_func(s_func[1], ko1, KOFS, KB), "slot1_kofs")]
    else:
        ko0 = ko1 = K_OFS
    acc_cmd_i = sig(AB)
    # UD: the third slot's ACC command and acc read (constant 0 / False elsewhere)
    nacc, nrd, naddr, nzero = (sig(AB), sig(1), sig(ADDR_BITS), sig(1)) if norm else (0, False, 0, False)

    @always_comb
    def commands():
        cc = intbv(0)[3:]
        ca = intbv(0)[AB:]
        kk = modbv(0)[KB:]
        if b0:
            cc[:] = cc | cm0
            ca[:] = ca | ac0
        if b1:
            cc[:] = cc | cm1
            ca[:] = ca | ac1
        ca[:] = ca | nacc
        cmp_cmd.next = cc
        acc_cmd.next = ca
        acc_cmd_i.next = ca
        if b0 and cm0 == UPDATE_CODE:
            cmp_causal.next = c0
            cmp_mask.next = mk0
        elif b1 and cm1 == UPDATE_CODE:
            cmp_causal.next = c1
            cmp_mask.next = mk1
        else:
            cmp_causal.next = False
            cmp_mask.next = False
        # scratchpad read of this cycle (at most one slot reads)
        spad_en.next = False
        spad_addr.next = 0
        nxt_valid.next = False
        nxt_const.next = False
        nxt_csel.next = 0
        nxt_k.next = 0
        nxt_flags.next = 0
        if b0 and (slot0_rd_sram or slot0_rd_const):
            nxt_valid.next = True
            if slot0_rd_sram:
                spad_en.next = True
                spad_addr.next = sp0
                nxt_flags.next = fl0
            else:
                nxt_const.next = True
                nxt_csel.next = cs0
                kk[:] = t0[KB:] + ko0
                nxt_k.next = kk[KB:]
                nxt_flags.next = 1
        elif b1 and (slot1_rd_sram or slot1_rd_const):
            nxt_valid.next = True
            if slot1_rd_sram:
                spad_en.next = True
                spad_addr.next = sp1
                nxt_flags.next = fl1
            else:
                nxt_const.next = True
                nxt_csel.next = cs1
                kk[:] = t1[KB:] + ko1
                nxt_k.next = kk[KB:]
                nxt_flags.next = 1
        # accumulator read
        acc_ren.next = False
        acc_raddr.next = 0
        nxt_zero.next = False
        if b0 and slot0_rd_acc:
            acc_ren.next = True
            acc_raddr.next = ap0
            nxt_zero.next = z0
        elif b1 and slot1_rd_acc:
            acc_ren.next = True
            acc_raddr.next = ap1
            nxt_zero.next = z1
        elif nrd:
            acc_ren.next = True
            acc_raddr.next = naddr
            nxt_zero.next = nzero
    insts.append(commands)

    @always_seq(clk.posedge, reset=rst)
    def align():
        # what the SRAM read of this cycle delivers next cycle
        id_valid.next = nxt_valid
        id_const.next = nxt_const
        id_csel.next = nxt_csel
        id_k.next = nxt_k
        id_rev_in.next = nxt_flags[2]
        id_rev_out.next = nxt_flags[1]
        id_delay.next = nxt_flags[0]
        acc_zero.next = nxt_zero
        raddr_q.next = acc_raddr
    insts.append(align)

    # the commands that write their row back (a small ROM over the codes)
    WEN = tuple(int(n in hwctl.ACC_WRITE_CMDS) for n in df.acc_cmds)
    insts.append(named(per_func(acc_cmd_i, acc_wen, WEN, 1), "acc_wen"))

    @always_comb
    def writes():
        acc_waddr.next = raddr_q
    insts.append(writes)

    # ---------------------------------------------------------------- issue
    take, accept = sig(1), sig(1)
    f0, f1 = s_func
    ret0, ret1, cf0, cf1, rls0, rls1 = (sig(TW) for _ in range(6))
    insts += [per_func(f0, ret0, RETIRE, TW), per_func(f1, ret1, RETIRE, TW),
              per_func(f0, cf0, CF, TW), per_func(f1, cf1, CF, TW)]
    if not norm:  # (with the third slot: rtl/fsa_mxctrl_ud.py, with early_release)
        insts += [per_func(f0, rls0, RELEASE, TW), per_func(f1, rls1, RELEASE, TW)]

    fr0_s, fr1_s, ok_s, lb_s, blk_s = (sig(1) for _ in range(5))

    @always_comb
    def slot_state():
        # a slot is free from the next cycle on
        fr0 = (not b0) or (t0 + 1 >= ret0)
        fr1 = (not b1) or (t1 + 1 >= ret1)
        fr0_s.next = fr0
        fr1_s.next = fr1
        # the previous instruction has passed its conflict-free cycle; it is
        # a blocking one still running
        if last:
            ok_s.next = (not b1) or (t1 >= cf1)
            lb_s.next = b1 and (f1 == B0 or f1 == B1)
        else:
            ok_s.next = (not b0) or (t0 >= cf0)
            lb_s.next = b0 and (f0 == B0 or f0 == B1)
        blk_s.next = in_func == B0 or in_func == B1 or in_wait_prev_acc
        # the slot to fill: the one not holding the most recent instruction
        if fr0 and fr1:
            take.next = not last
        else:
            take.next = fr1
    insts.append(slot_state)

    if norm:
        SLACK = hwctl.norm_slack(P)
        N0, N1 = NORM
        P0, P1 = (hwisa.ALL_MX_FUNCS.index(f) for f in hwctl.NORM_PARTNERS)
        nbusy, nt, nret, nload, last_norm = sig(1), sig(TW), sig(TW), sig(1), sig(1)
        is_norm, wv_ok, wv_busy = sig(1), sig(1), sig(1)
        insts.append(named(fsa_mxctrl_ud.norm_slot(
                         clk, rst, nload, in_func, in_acc_addr, in_acc_stride, in_zero,
                         in_rel_valid, in_rel_id, in_rel_value, nbusy, nt, nret, nacc, nrd, naddr,
                         nzero, rel3.valid, rel3.id, rel3.value, plans, TW), "norm"))
        insts.append(named(fsa_mxctrl_ud.wave_guard(clk, rst, accept, in_func, blk_s, wv_ok,
                                                    wv_busy, plans, TW), "wave"))

        @always_comb
        def issue_ud():
            frn = (not nbusy) or (nt + 1 >= nret)
            bok = (fr0_s and fr1_s and frn) or not (blk_s or lb_s)
            nrm = in_func == N0 or in_func == N1
            is_norm.next = nrm
            # after a normalisation: its partner (STEP / PVSTEP) within the
            # slack, anything else once it retires (its cf is 0: ok holds)
            pok = (not last_norm) or frn or (
                (in_func == P0 or in_func == P1) and not blk_s and nt < SLACK)
            ready = ok_s and bok and wv_ok and ((nrm and frn) or
                                                (not nrm and pok and (fr0_s or fr1_s)))
            in_ready.next = ready
            accept.next = ready and in_valid
        insts.append(issue_ud)
    else:
        nload = last_norm = None        # (the third slot's part of last_slot: absent)

        @always_comb
        def issue():
            bok = (fr0_s and fr1_s) or not (blk_s or lb_s)
            ready = ok_s and bok and (fr0_s or fr1_s)
            in_ready.next = ready
            accept.next = ready and in_valid
        insts.append(issue)

    rl0, rl1 = s_rel
    RV, VB = REL_BITS - 1, SEM_VALUE_BITS          # valid bit; value bits below the id
    loads = [sig(1), sig(1)]
    ld0, ld1 = loads
    inp = (in_func, in_spad_addr, in_spad_stride, in_acc_addr, in_acc_stride, in_rev_in,
           in_rev_out, in_delay, in_zero, in_causal, in_mask_keys, in_rel_valid, in_rel_id,
           in_rel_value)

    if norm:
        @always_comb
        def slot_load():
            ld0.next = accept and not take and not is_norm
            ld1.next = accept and take and not is_norm
            nload.next = accept and is_norm
    else:
        @always_comb
        def slot_load():
            ld0.next = accept and not take
            ld1.next = accept and take
    insts.append(slot_load)
    rets = (ret0, ret1)
    for i in range(2):
        insts.append(named(slot_regs(clk, rst, loads[i], s_busy[i], s_func[i], s_t[i], s_sptr[i],
                                      s_sstr[i], s_aptr[i], s_astr[i], s_flags[i], s_zero[i],
                                      s_causal[i], s_maskk[i], s_rel[i], rets[i], src[i]["sram"],
                                      src[i]["accrd"], inp), f"slot{i}_regs"))
    if norm:      # the slots' UD flags, release cycles and channels, the BCMP lanes
        insts.append(named(fsa_mxctrl_ud.ud_control(
            clk, rst, loads, in_reset_max, in_early_release, s_func, s_busy, s_t, s_rel, s_causal,
            [d["bcmp"] for d in src], bcmp.max, bcmp.up, bcmp.od, bcmp.causal, rel_valid, rel_id,
            rel_value, rel2.valid, rel2.id, rel2.value, busy, plans, TW, wv_busy, nbusy), "ud"))

    def last_slot():
        if accept:
            if nload:           # (the third slot's part: rtl/parts.py)
                last_norm.next = True
            else:
                last.next = take
                last_norm.next = False
    insts.append(always_seq(clk.posedge, reset=rst)(part_of(last_slot)))

    @always_comb
    def sem_release():
        rel_valid.next = False
        rel_id.next = 0
        rel_value.next = 0
        if b0 and t0 == rls0 and rl0[RV]:
            rel_valid.next = True
            rel_id.next = rl0[RV:VB]
            rel_value.next = rl0[VB:]
        elif b1 and t1 == rls1 and rl1[RV]:
            rel_valid.next = True
            rel_id.next = rl1[RV:VB]
            rel_value.next = rl1[VB:]
        busy.next = b0 or b1
    if not norm:
        insts.append(sem_release)
    return insts


def ports(cfg) -> dict:
    from myhdl import ResetSignal
    R = cfg.sa_rows
    KB = max(1, (cfg.exp2_pieces - 1).bit_length())
    CTRL_BITS = ctrl_width(cfg)
    p = dict(
        clk=sig(1), rst=ResetSignal(0, active=1, isasync=False),
        in_valid=sig(1), in_ready=sig(1), in_func=sig(func_bits(cfg)), in_spad_addr=sig(ADDR_BITS),
        in_spad_stride=sig(STRIDE_BITS), in_rev_in=sig(1), in_rev_out=sig(1), in_delay=sig(1),
        in_acc_addr=sig(ADDR_BITS), in_acc_stride=sig(STRIDE_BITS), in_zero=sig(1),
        in_causal=sig(1), in_mask_keys=sig(1), in_wait_prev_acc=sig(1), in_rel_valid=sig(1), in_rel_id=sig(SEM_ID_BITS),
        in_rel_value=sig(SEM_VALUE_BITS),
        ctrl=sig(R * CTRL_BITS), cmp_cmd=sig(fsa_cmp.CMD_BITS), cmp_causal=sig(1), cmp_mask=sig(1),
        acc_cmd=sig(fsa_acc.cmd_bits(cfg)), spad_en=sig(1), spad_addr=sig(ADDR_BITS), id_valid=sig(1),
        id_const=sig(1), id_csel=sig(2), id_k=sig(KB), id_rev_in=sig(1), id_rev_out=sig(1),
        id_delay=sig(1), acc_ren=sig(1), acc_raddr=sig(ADDR_BITS), acc_zero=sig(1),
        acc_wen=sig(1), acc_waddr=sig(ADDR_BITS), rel_valid=sig(1), rel_id=sig(SEM_ID_BITS),
        rel_value=sig(SEM_VALUE_BITS), busy=sig(1))
    if dataflow.of(cfg).norm_slot:
        p.update(fsa_mxctrl_ud.ud_ports(SEM_ID_BITS, SEM_VALUE_BITS))
    return p


UD_OUTPUTS = fsa_mxctrl_ud.UD_OUTPUTS


def convert(outdir, cfg):
    p = ports(cfg)
    return convert_block(lambda: fsa_mxctrl(**p, cfg=cfg), MODULE, outdir)
