"""Per-cycle stimulus and expected controller behaviour from the execution
plans: a list of matrix instructions is scheduled with the reference issue
rule (fsa.plan.schedule_starts) and expanded cycle by cycle. Used by the
array bench (to drive fsa_array directly) and the controller bench (as the
expected outputs of fsa_mxctrl)."""
from __future__ import annotations

from fsa import plan as fplan
from rtl.fsa_pe import CTRL_BITS

CMP_CODE = {n: i for i, n in enumerate(fplan.CMP_CMDS)}
ACC_CODE = {n: i for i, n in enumerate(fplan.ACC_CMDS)}
CSEL = {"one": 0, "scale": 1, "slope": 2}


def pack(values, width: int) -> int:
    out = 0
    for i, v in enumerate(values):
        out |= int(v) << (i * width)
    return out


def unpack(value: int, n: int, width: int) -> list[int]:
    m = (1 << width) - 1
    return [(value >> (i * width)) & m for i in range(n)]


class Program:
    """A list of matrix instructions turned into per-cycle stimulus."""

    def __init__(self, cfg, spad: "dict[int, list[int]] | None" = None,
                 consts: "dict[str, object] | None" = None):
        self.cfg = cfg
        self.spad = spad or {}      # row address -> R element bits (for data)
        self.consts = consts or {}
        self.instrs: list[dict] = []

    def add(self, func: str, spad_addr: int = 0, spad_stride: int = 1, acc_addr: int = 0,
            acc_stride: int = 1, zero: bool = False, causal: bool = False, tag: str = "",
            rel: "tuple[int, int] | None" = None, wait_prev_acc: bool = False,
            mask_keys: bool = False) -> None:
        self.instrs.append(dict(func=func, spad_addr=spad_addr, spad_stride=spad_stride,
                                acc_addr=acc_addr, acc_stride=acc_stride, zero=zero,
                                causal=causal, tag=tag, rel=rel, wait_prev_acc=wait_prev_acc,
                                mask_keys=mask_keys))

    def compile(self, div_cycles: int, with_data: bool = True):
        cfg = self.cfg
        R, C, P = cfg.sa_rows, cfg.sa_cols, cfg.exp2_pieces
        plans = [fplan.make_plan(i["func"], R, C, P, reciprocal_cycles=div_cycles) for i in self.instrs]
        starts = fplan.schedule_starts(plans, [i["wait_prev_acc"] for i in self.instrs])
        fplan.check_overlap(plans, starts)
        T = max(s + p.last for s, p in zip(starts, plans)) + 4
        self.T = T
        self.ctrl = [0] * T
        self.cmp = [0] * T
        self.causal = [0] * T
        self.mask = [0] * T              # the mask_keys flag travelling with the CMP command
        self.acc = [0] * T
        self.idin = [None] * T           # (data, rev_in, rev_out, delay) presented at t
        self.spadrd = [None] * T         # read issued at t: ("sram", addr) | ("const", csel, k)
        self.idflags = [None] * T        # (rev_in, rev_out, delay) of the read issued at t
        self.accrd = [None] * T          # (addr or None for zero) presented at t (read at t-1)
        self.accraddr = [None] * T       # acc address read at t
        self.acczero = [False] * T       # the read presented at t is replaced by 0
        self.accwr = [None] * T          # addr written at t
        self.rel = [None] * T            # (id, value) released at t
        self.starts, self.plans = starts, plans
        for ins, pl, s in zip(self.instrs, plans, starts):
            tb = fplan.table(pl)
            for cyc, rows in enumerate(tb.pe):
                for r, bits in enumerate(rows):
                    for b in bits:
                        self.ctrl[s + cyc] |= 1 << (r * CTRL_BITS + fplan.PE_BITS.index(b))
            for cyc, cmd in tb.cmp.items():
                self.cmp[s + cyc] = CMP_CODE[cmd]
                self.causal[s + cyc] = int(ins["causal"])
                self.mask[s + cyc] = int(ins.get("mask_keys", False))
            reads = {}
            for cyc, rd in tb.spad.items():
                if rd.source == "sram":
                    addr = ins["spad_addr"] + rd.index * ins["spad_stride"]
                    self.spadrd[s + cyc] = ("sram", addr)
                    flags = (rd.rev_in, rd.rev_out, rd.delay)
                    data = self.spad.get(addr) if with_data else None
                else:
                    self.spadrd[s + cyc] = ("const", CSEL[rd.source], rd.index)
                    flags = (rd.rev_in, rd.rev_out, rd.delay)
                    data = None
                    if with_data:
                        data = ([self.consts["slope"][rd.index]] * R if rd.source == "slope"
                                else [self.consts[rd.source]] * R)
                self.idflags[s + cyc] = flags
                assert self.idin[s + cyc + 1] is None
                if with_data:
                    self.idin[s + cyc + 1] = (pack(data, cfg.e_fmt.width), *flags)
            for cyc, idx in tb.acc_read.items():
                addr = ins["acc_addr"] + idx * ins["acc_stride"]
                reads[cyc] = addr
                self.accraddr[s + cyc] = addr
                self.acczero[s + cyc + 1] = bool(ins["zero"])
                self.accrd[s + cyc + 1] = None if ins["zero"] else addr
            for cyc, cmd in tb.acc.items():
                self.acc[s + cyc] = ACC_CODE[cmd]
                if cmd in ("ACC_SA", "ACC"):
                    self.accwr[s + cyc] = reads[cyc - 1]
                if cmd in ("ACC_SA", "ACC", "SET_SCALE") and ins["zero"]:
                    self.accrd[s + cyc] = "zero"
            if ins["rel"] is not None:
                self.rel[s + pl.release] = ins["rel"]
        return self


