"""The UD parts of the matrix controller (``rtl/fsa_mxctrl.py``; docs/ud.md),
generated from the UD plans like the rest of it: on a configuration with
``dataflow = "ud"`` the controller also

* drives the bottom comparator row's three command lanes (``bcmp_max``,
  ``bcmp_up``, ``bcmp_od``: codes of ``rtl.fsa_bcmp.LANE_CODES``) from the
  plans' :attr:`fsa.plan.Plan.bcmp` lists, one interval comparator per
  command (``slot<i>_bcmp_<command>_hit``), RESET only when the slot's
  instruction has ``reset_max``; ``bcmp_causal`` is the causal bit of the
  slot whose UPDATE is on the ``max`` lane;
* keeps per slot the ``reset_max`` and ``early_release`` bits
  (``ud_slot<i>_flags_*``) and releases the semaphore at the plan's
  :attr:`~fsa.plan.Plan.read_release` instead of
  :attr:`~fsa.plan.Plan.release` when ``early_release`` is set;
* numbers the constant reads' slope index per function (``slot<i>_kofs``):
  the UD plans' slope reads start at another cycle than ATTENTION_SCORE's.

Every function here is a MyHDL block instantiated by ``fsa_mxctrl`` only on
UD configurations, so the reference configurations' controller is the same
Verilog as before.
"""
from __future__ import annotations

from myhdl import always_comb, always_seq, block, intbv, modbv

from rtl import fsa_bcmp
from rtl.convert import named, sig
from rtl.prim import Bundle
from rtl.fsa_mxctrl_parts import encode, member, runs

__all__ = ["bcmp_sources", "ud_control", "wave_guard", "norm_slot", "slope_offsets", "ud_ports",
           "UD_OUTPUTS"]

#: the UD controller's extra outputs (its extra inputs: in_reset_max, in_early_release)
UD_OUTPUTS = ("bcmp_max", "bcmp_up", "bcmp_od", "bcmp_causal", "rel2_valid", "rel2_id",
              "rel2_value", "rel3_valid", "rel3_id", "rel3_value")


def ud_ports(id_bits: int, value_bits: int) -> dict:
    """Fresh signals for the extra ports of the controller with the third
    slot (``fsa_mxctrl``'s keyword arguments): the instruction's
    ``in_reset_max`` and ``in_early_release``, and three bundles (MyHDL
    names their signals ``<bundle>_<name>``): ``bcmp`` (``max``, ``up``,
    ``od``, ``causal``: the bottom row's lanes), ``rel2`` and ``rel3``
    (``valid``, ``id``, ``value``: slot 1's and the third slot's release)."""
    LB = fsa_bcmp.LANE_BITS

    def release():
        return Bundle(valid=sig(1), id=sig(id_bits), value=sig(value_bits))
    return dict(in_reset_max=sig(1), in_early_release=sig(1),
                bcmp=Bundle(max=sig(LB), up=sig(LB), od=sig(LB), causal=sig(1)),
                rel2=release(), rel3=release())



@block
def bcmp_sources(func, t, lane_max, lane_up, lane_od, reset_hit, plans):
    """One slot's BCMP commands in the current cycle: the lanes' codes
    (RESET excluded from `lane_max`) and `reset_hit` (the plan has RESET
    now), from the same comparators and encoders as fsa_mxctrl's
    (rtl/fsa_mxctrl_parts.py), so the Verilog names follow one scheme."""
    insts = []
    outs = {"max": lane_max, "up": lane_up, "od": lane_od}
    for lane in fsa_bcmp.LANES:
        members = []
        for name, code in fsa_bcmp.LANE_CODES[lane].items():
            table = []
            for f, pl in enumerate(plans):
                cyc = [c for c, cmd in pl.bcmp if cmd == name]
                table += [(f, s, e) for s, e in runs(cyc)]
            if not table:
                continue
            hit = reset_hit if name == "RESET" else sig(1)
            insts.append(named(member(func, t, hit, table), f"bcmp_{name.lower()}"))
            if name != "RESET":
                members.append((code, hit))
        insts.append(named(encode(members, outs[lane]), f"bcmp_{lane}_code"))
    return insts


@block
def ud_control(clk, rst, loads, in_reset_max, in_early_release, funcs, busys, ts, rels, causals,
               bcmps, bcmp_max, bcmp_up, bcmp_od, bcmp_causal, rel_valid, rel_id, rel_value,
               rel2_valid, rel2_id, rel2_value, busy, plans, TW, wave_busy, norm_busy):
    """The UD parts of fsa_mxctrl after its slots (module docstring): per
    slot the flags and the release cycle; the merged BCMP lanes; one release
    channel per slot (slot 0: ``rel_*``, slot 1: ``rel2_*``) and ``busy``
    (a slot, or the wave of :func:`wave_guard`)."""
    from rtl.convert import sig

    f0, f1 = funcs
    b0, b1 = busys
    t0, t1 = ts
    rl0, rl1 = rels
    RELEASE = tuple(p.release for p in plans)
    READ_REL = tuple(p.read_release for p in plans)
    rm = [sig(1), sig(1)]          # reset_max of each slot
    er = [sig(1), sig(1)]          # early_release of each slot
    rls0, rls1 = sig(TW), sig(TW)  # the slots' release cycles
    insts = [named(ud_flags(clk, rst, loads[i], in_reset_max, in_early_release, rm[i], er[i]),
                   f"slot{i}_flags") for i in range(2)]
    insts += [named(release_select(f0, er[0], rls0, RELEASE, READ_REL), "slot0_release"),
              named(release_select(f1, er[1], rls1, RELEASE, READ_REL), "slot1_release")]
    bs0, bs1 = bcmps
    insts.append(named(bcmp_merge(b0, b1, bs0["max"], bs1["max"], bs0["up"], bs1["up"], bs0["od"],
                                  bs1["od"], bs0["reset"], bs1["reset"], rm[0], rm[1], causals[0],
                                  causals[1], bcmp_max, bcmp_up, bcmp_od, bcmp_causal), "bcmp"))
    RV, VB = len(rl0) - 1, len(rel_value)        # valid bit; value bits below the id

    @always_comb
    def sem_release():          # one channel per slot: both may release in one cycle
        rel_valid.next = False
        rel_id.next = 0
        rel_value.next = 0
        rel2_valid.next = False
        rel2_id.next = 0
        rel2_value.next = 0
        if b0 and t0 == rls0 and rl0[RV]:
            rel_valid.next = True
            rel_id.next = rl0[RV:VB]
            rel_value.next = rl0[VB:]
        if b1 and t1 == rls1 and rl1[RV]:
            rel2_valid.next = True
            rel2_id.next = rl1[RV:VB]
            rel2_value.next = rl1[VB:]
        busy.next = b0 or b1 or wave_busy or norm_busy
    insts.append(sem_release)
    return insts


@block
def wave_guard(clk, rst, accept, in_func, blocking, wave_ok, wave_busy, plans, TW):
    """The wave of an instruction whose slot retires before its last action
    (:attr:`fsa.plan.Plan.slot_last`: LOAD_Q's slot frees after its last
    row-0 source, its ``load_q`` wave runs on down the rows and across the
    columns until :attr:`~fsa.plan.Plan.wave_retire`).  While that wave
    runs (``wave_busy``, which also keeps the controller ``busy``) only the
    instruction right after it may start, and not a ``blocking`` one
    (blocking function or ``wait_prev_acc``): every instruction still starts
    after everything two before it is over, as with two slots alone.
    ``wave_ok``: the instruction offered now (``in_func``) may start as far
    as this rule goes; ``accept``: it is taken."""
    from rtl.convert import sig
    from rtl.fsa_mxctrl_parts import per_func

    WAVE = tuple(p.wave_retire if p.slot_last is not None else 0 for p in plans)
    wave_in, wave_t, wave_end = sig(TW), sig(TW), sig(TW)
    wave_last = sig(1)          # the most recent instruction owns the wave
    insts = [named(per_func(in_func, wave_in, WAVE, TW), "ret")]

    @always_comb
    def gate():
        wave_ok.next = (not wave_busy) or wave_t + 1 >= wave_end or (wave_last and not blocking)

    @always_seq(clk.posedge, reset=rst)
    def regs():
        if accept:
            wave_last.next = wave_in != 0
        if accept and wave_in != 0:
            wave_busy.next = True
            wave_t.next = 0
            wave_end.next = wave_in
        elif wave_busy:
            wave_t.next = wave_t + 1
            if wave_t + 1 >= wave_end:
                wave_busy.next = False
    return insts + [gate, regs]


@block
def norm_slot(clk, rst, load, in_func, in_acc_addr, in_acc_stride, in_zero, in_rel_valid, in_rel_id,
              in_rel_value, busy, t, ret, acc_cmd, acc_rd, acc_addr, acc_zero, rel_valid, rel_id,
              rel_value, plans, TW):
    """The third slot: NORM_SCALE / NORM (``fsa.hw.control.NORM_FUNCS``) only,
    which act on the ACC row and the accumulator SRAM alone.  Its function,
    cycle counter, acc pointer and stride, ``zero`` and release; its ACC
    command (codes of ``fsa.hw.control.UD_ACC_CMDS``, 0 when idle) and acc read
    (``acc_rd``, ``acc_addr``, ``acc_zero``) from the plans' interval
    comparators; its release on the third channel (``rel_*``); ``ret``: the
    retire cycle of its function."""
    from fsa.hw.control import NORM_FUNCS, UD_ACC_CMDS
    from rtl.fsa_mxctrl_parts import ADDR_BITS, STRIDE_BITS, per_func

    AB, SB = ADDR_BITS, STRIDE_BITS
    EXT = (1 << (AB - SB)) - 1
    norm = {f for f, p in enumerate(plans) if p.func in NORM_FUNCS}
    RET = tuple(p.retire if f in norm else 0 for f, p in enumerate(plans))
    REL = tuple(p.release if f in norm else 0 for f, p in enumerate(plans))
    func, rls = sig(len(in_func)), sig(TW)
    aptr, astr, zero = sig(AB), sig(SB), sig(1)
    rv, rid, rval = sig(1), sig(len(in_rel_id)), sig(len(in_rel_value))
    insts = [named(per_func(func, ret, RET, TW), "ret"), named(per_func(func, rls, REL, TW), "rel")]
    members = []
    for code, name in enumerate(UD_ACC_CMDS):
        table = [(f, s, e) for f in sorted(norm)
                 for s, e in runs(c for c, cmd in plans[f].acc if cmd == name)]
        if code and table:
            members.append((code, sig(1)))
            insts.append(named(member(func, t, members[-1][1], table), f"acc_{name.lower()}"))
    cmd_raw, rd_raw = sig(len(acc_cmd)), sig(1)
    insts.append(named(encode(members, cmd_raw), "acc_code"))
    insts.append(named(member(func, t, rd_raw, [(f, s, e) for f in sorted(norm) for s, e in
                                                runs(a.cycle for a in plans[f].acc_reads)]),
                       "rd_acc"))

    @always_comb
    def outputs():
        acc_cmd.next = cmd_raw if busy else 0
        acc_rd.next = busy and rd_raw
        acc_addr.next = aptr
        acc_zero.next = zero
        if busy and t == rls and rv:
            rel_valid.next = True
            rel_id.next = rid
            rel_value.next = rval
        else:
            rel_valid.next = False
            rel_id.next = 0
            rel_value.next = 0

    @always_seq(clk.posedge, reset=rst)
    def regs():
        if load:
            busy.next = True
            func.next = in_func
            t.next = 0
            aptr.next = in_acc_addr
            astr.next = in_acc_stride
            zero.next = in_zero
            rv.next = in_rel_valid
            rid.next = in_rel_id
            rval.next = in_rel_value
        elif busy:
            t.next = t + 1
            if t + 1 >= ret:
                busy.next = False
            if rd_raw:          # pointer + sign-extended stride, modulo 2**ADDR_BITS
                step = intbv(0)[AB:]
                nxt = modbv(0)[AB:]
                step[SB:] = astr
                step[AB:SB] = EXT if astr[SB - 1] else 0
                nxt[:] = aptr + step
                aptr.next = nxt[AB:]
    return insts + [outputs, regs]


@block
def ud_flags(clk, rst, load, rm_in, er_in, reset_max, early_release):
    """A slot's ``reset_max`` and ``early_release`` bits, loaded with the
    accepted instruction."""
    @always_seq(clk.posedge, reset=rst)
    def flags():
        if load:
            reset_max.next = rm_in
            early_release.next = er_in
    return flags


@block
def release_select(func, early, out, release, read_release):
    """out = (read_release if early else release)[func] (two small ROMs)."""
    n = 1 << len(func)
    REL = tuple(int(v) for v in release) + (0,) * (n - len(release))
    RREL = tuple(int(v) for v in read_release) + (0,) * (n - len(read_release))

    @always_comb
    def comb():
        if early:
            out.next = RREL[func]
        else:
            out.next = REL[func]
    return comb


def slope_offsets(plans, KB: int) -> tuple[int, ...]:
    """Per function, the offset that numbers its slope reads: piece
    ``k = (t + ofs) mod 2**KB`` at slot cycle ``t`` (0 for functions without
    slope reads).

    Raises:
        ValueError: a function whose slope reads do not start at one cycle.
    """
    out = []
    for p in plans:
        starts = {r.cycle - r.index for r in p.spad_reads if r.source == "slope"}
        if len(starts) > 1:
            raise ValueError(f"fsa_mxctrl: {p.func}'s slope reads must start at one cycle")
        out.append((-starts.pop()) % (1 << KB) if starts else 0)
    return tuple(out)


@block
def bcmp_merge(b0, b1, m0, m1, u0, u1, o0, o1, r0, r1, reset_max0, reset_max1, c0, c1, bcmp_max,
               bcmp_up, bcmp_od, bcmp_causal):
    """The two slots' BCMP lanes merged (the plans never drive one lane from
    both slots in a cycle); RESET only with the slot's ``reset_max``; the
    causal bit of the slot whose UPDATE is on the max lane."""
    RESET = fsa_bcmp.CMD_RESET
    UPDATE = fsa_bcmp.CMD_UPDATE
    LB = fsa_bcmp.LANE_BITS

    @always_comb
    def merge():
        mm = intbv(0)[LB:]
        uu = intbv(0)[LB:]
        oo = intbv(0)[LB:]
        if b0:
            mm[:] = mm | m0
            uu[:] = uu | u0
            oo[:] = oo | o0
        if b1:
            mm[:] = mm | m1
            uu[:] = uu | u1
            oo[:] = oo | o1
        if (b0 and r0 and reset_max0) or (b1 and r1 and reset_max1):
            mm[:] = RESET
        bcmp_max.next = mm
        bcmp_up.next = uu
        bcmp_od.next = oo
        if b0 and m0 == UPDATE:
            bcmp_causal.next = c0
        elif b1 and m1 == UPDATE:
            bcmp_causal.next = c1
        else:
            bcmp_causal.next = False
    return merge
