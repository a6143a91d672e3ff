"""A register-level, cycle-by-cycle model of the UD array driven by the
plans (``fsa/plan.py``, ``fsa/plan_ud.py``): every PE register, the top CMP
and bottom CMP (BCMP) rows, the ACC row and the accumulator SRAM, one clock
edge per cycle, with the controls of overlapped instructions merged exactly
as the plans place them.

It is the per-cycle reference the stage-2 RTL of the UD units will be
compared with, and the proof that the plans themselves compute attention:
``tests/test_ud_cycle.py`` runs back-to-back UD programs at the plans' own
issue times and compares the accumulator with :func:`fsa.golden.tile.attention`
raw bit for raw bit.

Semantics (docs/architecture.md sections 3-4, docs/ud.md):

* PE: ``f = (use_q ? qreg : reg) * l_in + (acc_ui ? u_in : d_in)``;
  ``mac`` writes ``d_out`` (with ``acc_ui``) or ``u_out``; ``flow_lr`` /
  ``flow_ud`` / ``flow_du`` pass ``l_in`` / ``u_in`` / ``d_in`` on;
  ``update_reg`` ``reg <- f`` (E); ``exp2`` ``reg <- f`` (E) when the
  piece index of ``reg`` matches the intercept word's; ``load_reg_di``
  ``reg <- d_in`` (its low E bits); ``load_q`` ``qreg <- l_in``, ``r_out <-
  qreg``.  Row 0's ``u_in`` is the top CMP's output, row R-1's ``d_in`` the
  BCMP's u-path register.
* top CMP: LATCH (``out <- u_out`` of the top PE), PROP_ZERO, and
  PROP_EXP2_INTERCEPTS (the k-th of a run sends the encoded intercept k).
* BCMP: as :data:`fsa.hw.control.BCMP_CMDS`; its ``od`` register reaches the ACC
  row through the output delayer ``C`` cycles after the column-0 command.
* ACC (all columns): EXP_S1, EXP_S2, ACC_SA, ACC, SET_SCALE, RECIPROCAL
  (the scale is written in the command's last cycle), and on ``scale2``
  SET_SCALE2, ACC2, RECIPROCAL2 (the divider writes it at the plan's
  ``hold``); an acc read at ``t``
  feeds the command at ``t + 1`` (``zero``: 0 instead), and the write-back
  goes to the row read.

Only the UD functions and the two normalisation functions are modelled (the
reference functions' up-flowing waves are not); scratchpad contents are
fixed for the run (no DMA).
"""
from __future__ import annotations

import numpy as np

from fsa import numerics as nx
from fsa.hw import timing
from fsa.isa import Matrix, MxFunc
from fsa.plan import landing, table

__all__ = ["run"]

_MODELLED = {MxFunc.LOAD_Q, MxFunc.KSTEP, MxFunc.STEP, MxFunc.PVSTEP,
             MxFunc.ATTENTION_LSE_NORM_SCALE, MxFunc.ATTENTION_LSE_NORM, MxFunc.NORM_SCALE,
             MxFunc.NORM}


def _u(fmt) -> type:
    return np.uint16 if fmt.width == 16 else np.uint32


def run(cfg, spad: np.ndarray, acc: np.ndarray, program: "list[Matrix]", starts: "list[int]") -> np.ndarray:
    """Run matrix instructions `program`, started at cycles `starts`, on a
    UD array of `cfg` with scratchpad `spad` ((rows, R) E bits, not
    changed) and accumulator `acc` ((rows, C) A bits); returns the
    accumulator afterwards.

    Raises:
        ValueError: a function this model does not cover, or a cycle in which
            an ACC command needs the output delayer's value and none arrives.
    """
    R, C, P = cfg.sa_rows, cfg.sa_cols, cfg.exp2_pieces
    e, a = cfg.e_type, cfg.a_type
    E, A = cfg.e_fmt, cfg.a_fmt
    ue, ua = _u(E), _u(A)
    acc = acc.copy()
    plans = timing.plans(cfg)
    slopes, icpt = nx.pwl_constants(P, e, a)
    words = nx.encode_intercept(icpt, np.arange(P, dtype=np.int64), a).astype(ua)
    consts = {"one": ue(E.one), "scale": ue(cfg.attention_scale_bits(e))}
    scale_a = ua(cfg.attention_scale_bits(a))
    neg_inf = ua(A.sign_mask | A.pos_inf)

    # ---- the controls of every instruction, at absolute column-0 cycles
    pe: dict = {}
    top: dict = {}
    bcmp: dict = {}
    acc_cmd: dict = {}
    acc_rd: dict = {}
    lane: dict = {}
    end = 0
    for n, (ins, s) in enumerate(zip(program, starts)):
        f = MxFunc(ins.func)
        if f not in _MODELLED:
            raise ValueError(f"ud_cycle: {f.name} is not modelled")
        p = plans[int(f)]
        tb = table(p)
        end = max(end, s + p.wave_retire)
        for t, rows in enumerate(tb.pe):
            for r, bits in enumerate(rows):
                if bits:
                    pe.setdefault((s + t, r), set()).update(bits)
        for t, cmd in tb.cmp.items():
            top[s + t] = cmd
        for (ln, t), cmd in tb.bcmp.items():
            if cmd != "RESET" or ins.reset_max:
                bcmp[(ln, s + t)] = (cmd, n)
        # (command, instruction, the cycle the divider writes its register:
        # the last RECIPROCAL's, RECIPROCAL2's plan hold)
        recips = [t for t, cmd in p.acc if cmd == "RECIPROCAL"]
        for t, cmd in p.acc:
            write = {"RECIPROCAL": s + recips[-1] if recips else None,
                     "RECIPROCAL2": s + p.hold}.get(cmd)
            acc_cmd[s + t] = (cmd, n, write)
        for rd in p.acc_reads:
            acc_rd[s + rd.cycle] = (ins.acc_addr + rd.index * ins.acc_stride, n)
        for rd in p.spad_reads:
            if rd.source == "sram":
                vec = spad[ins.spad_addr + rd.index * ins.spad_stride]
            elif rd.source == "slope":
                vec = np.full(R, slopes[rd.index], ue)
            else:
                vec = np.full(R, consts[rd.source], ue)
            for t, r, el in landing(rd, R):
                lane[(s + t, r)] = vec[el]

    # ---- state
    reg = np.zeros((R, C), ue)
    qreg = np.zeros((R, C), ue)
    r_out = np.zeros((R, C), ue)
    d_out = np.zeros((R, C), ua)
    u_out = np.zeros((R, C), ua)
    top_out = np.zeros(C, ua)
    k_run = np.zeros(C, int)                      # intercepts sent in the current run
    b_out = np.zeros(C, ua)
    new_max = np.full(C, neg_inf, ua)
    old_max = np.full(C, neg_inf, ua)
    diff = np.zeros(C, ua)
    cnt = np.zeros(C, int)
    lifo: list[list[int]] = [[] for _ in range(C)]
    od: dict = {}                                  # (column, cycle written) -> value
    scale = np.full(C, A.one, ua)
    scale2 = np.full(C, A.one, ua)
    scale2_at: dict = {}                           # cycle -> what the divider writes
    rd_val, rd_row = None, None
    low = (1 << E.width) - 1

    for t in range(end + 1):
        bits = {b: np.zeros((R, C), bool) for b in
                ("mac", "acc_ui", "use_q", "load_q", "load_reg_di", "flow_lr", "flow_ud",
                 "flow_du", "update_reg", "exp2")}
        for r in range(R):
            for c in range(C):
                for b in pe.get((t - c, r), ()):
                    if b not in bits:
                        raise ValueError(f"ud_cycle: PE bit {b} is not modelled")
                    bits[b][r, c] = True
        l_in = np.zeros((R, C), ue)
        l_in[:, 1:] = r_out[:, :-1]
        l_in[:, 0] = [lane.get((t, r), 0) for r in range(R)]
        u_in = np.vstack([top_out[None, :], d_out[:-1]]).astype(ua)
        d_in = np.vstack([u_out[1:], b_out[None, :]]).astype(ua)
        mul = np.where(bits["use_q"], qreg, reg).astype(ue)
        add = np.where(bits["acc_ui"], u_in, d_in).astype(ua)
        f_a, f_e = nx.fma(mul, l_in, add, mul=e, acc=a, out="both")
        n_reg = reg.copy()
        ex = bits["exp2"]
        if ex.any():
            _, oe, _, match = nx.exp2_step(mul[ex], l_in[ex], add[ex], e, P, a)
            cur = n_reg[ex]
            n_reg[ex] = np.where(match, oe, cur)
        n_reg = np.where(bits["update_reg"], f_e, n_reg)
        n_reg = np.where(bits["load_reg_di"], (d_in.astype(np.uint64) & low).astype(ue), n_reg)
        n_qreg = np.where(bits["load_q"], l_in, qreg).astype(ue)
        mac_d, mac_u = bits["mac"] & bits["acc_ui"], bits["mac"] & ~bits["acc_ui"]
        n_d = np.where(mac_d, f_a, np.where(bits["flow_ud"], u_in, d_out)).astype(ua)
        n_u = np.where(mac_u, f_a, np.where(bits["flow_du"], d_in, u_out)).astype(ua)
        n_r = np.where(bits["load_q"], qreg, np.where(bits["flow_lr"], l_in, r_out)).astype(ue)

        # ---- top CMP and BCMP, column c acting on column-0 cycle t - c
        n_top, n_bout = top_out.copy(), b_out.copy()
        bottom = d_out[R - 1]
        for c in range(C):
            cmd = top.get(t - c)
            if cmd == "LATCH":
                n_top[c] = u_out[0, c]
            elif cmd == "PROP_ZERO":
                n_top[c] = 0
            elif cmd == "PROP_EXP2_INTERCEPTS":
                n_top[c] = words[k_run[c]]
            elif cmd is not None and cmd != "RESET":
                raise ValueError(f"ud_cycle: top CMP command {cmd} is not modelled")
            k_run[c] = k_run[c] + 1 if cmd == "PROP_EXP2_INTERCEPTS" else 0
            got = bcmp.get(("max", t - c))
            if got is not None:
                cmd, n = got
                if cmd == "RESET":
                    new_max[c] = old_max[c] = neg_inf
                    cnt[c] = 0
                elif cmd == "UPDATE":
                    s_e = nx.convert(bottom[c], a, e) if e != a else bottom[c]
                    if program[n].causal and cnt[c] > c:
                        s_e = E.sign_mask | E.pos_inf
                    s_e = ue(s_e)
                    lifo[c].append(int(s_e))
                    new_max[c] = nx.maximum(new_max[c], nx.convert(s_e, e, a) if e != a else s_e, a)
                    cnt[c] += 1
                else:                              # MAX_DIFF
                    diff[c] = nx.sub(old_max[c], new_max[c], a)
                    old_max[c] = new_max[c]
                    cnt[c] = 0
            got = bcmp.get(("up", t - c))
            if got is not None:
                if got[0] == "POP":
                    n_bout[c] = lifo[c].pop()
                else:                              # PROP_MAX: -m (canonical NaN stays NaN)
                    m = int(new_max[c])
                    nan = (m & A.pos_inf) == A.pos_inf and m & ((1 << A.man_bits) - 1)
                    n_bout[c] = A.canonical_nan if nan else m ^ A.sign_mask
            got = bcmp.get(("od", t - c))
            if got is not None:
                od[(c, t)] = bottom[c] if got[0] == "BYPASS" else diff[c]

        # ---- ACC row (all columns) and the accumulator SRAM
        n_scale = scale.copy()
        n_scale2 = scale2_at.pop(t, scale2)
        got = acc_cmd.get(t)
        if got is not None:
            cmd, n, div_write = got
            ins = program[n]
            if cmd in ("ACC_SA", "ACC", "SET_SCALE", "ACC2", "SET_SCALE2") and rd_val is None:
                raise ValueError(f"ud_cycle: {cmd} at cycle {t} without an acc read before it")
            old = np.zeros(C, ua) if (ins.zero or rd_val is None) else rd_val
            if cmd in ("EXP_S1", "ACC_SA"):
                try:
                    sa = np.array([od[(c, t - C + c)] for c in range(C)], ua)
                except KeyError:
                    raise ValueError(f"ud_cycle: {cmd} at cycle {t} has no value from the output "
                                     f"delayer") from None
            if cmd == "EXP_S1":
                n_scale = nx.fma(sa, scale_a, ua(0), mul=a, acc=a)
            elif cmd == "EXP_S2":
                n_scale = nx.exp2_pwl(scale, a, P, a, out="acc")
            elif cmd in ("ACC_SA", "ACC"):
                acc[rd_row] = nx.fma(scale, old, sa if cmd == "ACC_SA" else ua(0), mul=a, acc=a)
            elif cmd == "SET_SCALE":
                n_scale = old
            elif cmd == "RECIPROCAL" and t == div_write:
                n_scale = nx.reciprocal(scale, a)
            elif cmd == "ACC2":
                acc[rd_row] = nx.fma(scale2, old, ua(0), mul=a, acc=a)
            elif cmd == "SET_SCALE2":
                n_scale2 = old
            elif cmd == "RECIPROCAL2":
                scale2_at[div_write] = nx.reciprocal(scale2, a)
        got = acc_rd.get(t)
        rd_row, rd_val = (got[0], acc[got[0]].copy()) if got is not None else (None, None)

        reg, qreg, r_out, d_out, u_out = n_reg, n_qreg, n_r, n_d, n_u
        top_out, b_out, scale, scale2 = n_top, n_bout, n_scale, n_scale2
    return acc
