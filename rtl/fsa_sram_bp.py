"""Banked SRAM with one narrow port per bank (``fsa_sram_bp``): the
variant of ``rtl/fsa_sram.py`` that a DMA with several AXI ports uses
(``fsa.hw.dmarules.bank_ports``), so that beats of rows in different banks are
written (or read) in the same cycle.

Organisation, the array ports (``a_*``, ``w_*``), latencies and initial
contents: exactly as ``fsa_sram`` (its module docstring).  The narrow port
is replaced by ``banks`` narrow ports, bank ``b`` being bits
``[b*w +: w]`` of each flattened signal (``w`` the width of one port's
field)::

    n_valid   in   banks          request of bank b's port (valid/ready)
    n_ready   out  banks          0 exactly when a_en (or w_en) addresses
                                  bank b (the array ports win), else 1
    n_we      in   banks          1 write, 0 read
    n_addr    in   banks x LW     index of the row in bank b (row // banks),
                                  LW = ceil(log2(ceil(rows / banks)))
    n_lane    in   banks x LS     lane index
    n_wdata   in   banks x LB
    n_rvalid  out  banks          the cycle after an accepted read of bank b
    n_rdata   out  banks x LB     that lane; 0 when n_rvalid[b] is low

Each bank still sees at most one access per cycle (the array ports, else
its own narrow port), so every lane memory stays the one-port SRAM template
of ``fsa_sram``.  ``tb/sram/test_sram.py`` checks it against a model.
"""
from __future__ import annotations

from pathlib import Path

from myhdl import ConcatSignal, ResetSignal, Signal, always_comb, always_seq, block, intbv

from rtl.convert import comb_expr, convert_block, sig
from rtl.fsa_sram import _lane_ctl, _lane_mem, geometry, simulation_only_init
from rtl.prim import mux_tree

__all__ = ["fsa_sram_bp", "module_name", "ports", "convert", "LINT_WAIVERS"]

#: Verilator ``-Wall`` waivers (none needed).
LINT_WAIVERS: dict[str, str] = {}


def module_name(rows: int, row_bits: int, lane_bits: int, banks: int) -> str:
    """Verilog module name, e.g. ``fsa_sram_48x128_l128_b2_bp``."""
    geometry(rows, row_bits, lane_bits, banks)
    return f"fsa_sram_{rows}x{row_bits}_l{lane_bits}_b{banks}_bp"


def ports(rows: int, row_bits: int, lane_bits: int, banks: int) -> dict:
    """Fresh signals for every port (name -> Signal)."""
    g = geometry(rows, row_bits, lane_bits, banks)
    aw, ls, lw, B = g["addr_bits"], g["lane_sel_bits"], g["local_bits"], banks
    return dict(clk=sig(1), rst=ResetSignal(0, active=1, isasync=False),
                a_en=sig(1), a_we=sig(1), a_addr=sig(aw), a_wdata=sig(row_bits),
                a_rdata=sig(row_bits), w_en=sig(1), w_addr=sig(aw), w_wdata=sig(row_bits),
                n_valid=sig(B), n_ready=sig(B), n_we=sig(B), n_addr=sig(B * lw),
                n_lane=sig(B * ls), n_wdata=sig(B * lane_bits), n_rvalid=sig(B),
                n_rdata=sig(B * lane_bits))


@block
def _bank_ctl_bp(a_en, a_we, a_bank, a_local, w_en, w_bank, w_local, n_acc, n_we, n_local,
                 aw_hit, ww_hit, nw_hit, ar_hit, nr_hit, waddr, raddr, bank):
    """Which port writes and which reads bank `bank` (its own narrow port)."""
    @always_comb
    def ctl():
        a_h = a_en and a_bank == bank
        w_h = w_en and w_bank == bank
        aw_hit.next = a_h and a_we
        ww_hit.next = w_h and not (a_h and a_we)
        nw_hit.next = n_acc and n_we
        ar_hit.next = a_h and not a_we
        nr_hit.next = n_acc and not n_we
        if a_h and a_we:
            waddr.next = a_local
        elif w_h:
            waddr.next = w_local
        else:
            waddr.next = n_local
        if a_h:
            raddr.next = a_local
        else:
            raddr.next = n_local
    return ctl


@block
def _narrow_regs(clk, rst, n_acc, n_we, n_lane, rvalid, lane_d):
    """The bank's narrow read: valid and lane, registered."""
    @always_seq(clk.posedge, reset=rst)
    def regs():
        rvalid.next = n_acc and not n_we
        if n_acc and not n_we:
            lane_d.next = n_lane
    return regs


@block
def _narrow_valid(clk, rst, n_acc, n_we, rvalid):
    """The bank's narrow read valid, registered (one lane: no lane to keep)."""
    @always_seq(clk.posedge, reset=rst)
    def regs():
        rvalid.next = n_acc and not n_we
    return regs


@block
def fsa_sram_bp(clk, rst, a_en, a_we, a_addr, a_wdata, a_rdata, w_en, w_addr, w_wdata,
                n_valid, n_ready, n_we, n_addr, n_lane, n_wdata, n_rvalid, n_rdata,
                rows=48, row_bits=64, lane_bits=64, banks=2):
    """The SRAM with a narrow port per bank; see the module docstring.

    Raises:
        ValueError: invalid geometry, fewer than two banks, or a port of the
            wrong width.
    """
    g = geometry(rows, row_bits, lane_bits, banks)
    if banks < 2:
        raise ValueError("fsa_sram_bp: needs at least two banks (else use fsa_sram)")
    lanes, depth, kb = g["lanes"], g["depth"], g["bank_bits"]
    aw, ls, lw = g["addr_bits"], g["lane_sel_bits"], g["local_bits"]
    W, B = lane_bits, banks
    for name, p, w in (("a_addr", a_addr, aw), ("n_addr", n_addr, B * lw),
                       ("n_lane", n_lane, B * ls), ("w_addr", w_addr, aw),
                       ("n_wdata", n_wdata, B * W), ("n_rdata", n_rdata, B * W),
                       ("n_valid", n_valid, B), ("a_rdata", a_rdata, row_bits)):
        if len(p) != w:
            raise ValueError(f"fsa_sram_bp: port {name} must be {w} bits wide, got {len(p)}")
    insts = []
    a_bank, w_bank = a_addr(kb, 0), w_addr(kb, 0)
    a_local, w_local = a_addr(aw, kb), w_addr(aw, kb)
    a_lanes = [a_wdata((l + 1) * W, l * W) for l in range(lanes)] if lanes > 1 else [a_wdata]
    w_lanes = [w_wdata((l + 1) * W, l * W) for l in range(lanes)] if lanes > 1 else [w_wdata]
    q = [[sig(W) for _ in range(lanes)] for _ in range(B)]
    rdys, rvs, words = [], [], []
    for b in range(B):
        nv = n_valid(b)
        nwe = n_we(b)
        nlocal = n_addr(b * lw + lw, b * lw)
        nlane = n_lane(b * ls + ls, b * ls)
        nwd = n_wdata(b * W + W, b * W)
        rdy, n_acc = sig(1), sig(1)
        insts.append(comb_expr(rdy, f"not ((a_en and a_bank == {b}) or (w_en and w_bank == {b}))",
                               a_en=a_en, a_bank=a_bank, w_en=w_en, w_bank=w_bank))
        insts.append(comb_expr(n_acc, "nv and rdy", nv=nv, rdy=rdy))
        aw_hit, ww_hit, nw_hit, ar_hit, nr_hit = (sig(1) for _ in range(5))
        waddr, raddr = sig(lw), sig(lw)
        insts.append(_bank_ctl_bp(a_en, a_we, a_bank, a_local, w_en, w_bank, w_local, n_acc, nwe,
                                  nlocal, aw_hit, ww_hit, nw_hit, ar_hit, nr_hit, waddr, raddr,
                                  b))
        for l in range(lanes):
            wen, wd, ren = sig(1), sig(W), sig(1)
            insts.append(_lane_ctl(aw_hit, ww_hit, nw_hit, ar_hit, nr_hit, nlane, a_lanes[l],
                                   w_lanes[l], nwd, wen, wd, ren, l))
            insts.append(_lane_mem(clk, wen, waddr, wd, ren, raddr, q[b][l], depth, W))
        rv = sig(1)
        word = sig(W)
        if lanes > 1:
            lane_d = Signal(intbv(0)[ls:])
            insts.append(_narrow_regs(clk, rst, n_acc, nwe, nlane, rv, lane_d))
            raw = sig(W)
            insts.append(mux_tree(q[b], lane_d, raw))
        else:
            insts.append(_narrow_valid(clk, rst, n_acc, nwe, rv))
            raw = q[b][0]
        insts.append(comb_expr(word, "raw if rv else 0", raw=raw, rv=rv))
        rdys.append(rdy)
        rvs.append(rv)
        words.append(word)
    rdy_v = ConcatSignal(*reversed(rdys))
    rv_v = ConcatSignal(*reversed(rvs))
    word_v = ConcatSignal(*reversed(words))

    # ---- the array read: bank mux of the lane memories' registered outputs
    a_rd_v = sig(1)
    a_bank_d = Signal(intbv(0)[kb:])
    a_hold = sig(row_bits)
    rowq = [ConcatSignal(*reversed(q[b])) if lanes > 1 else q[b][0] for b in range(B)]
    a_row = sig(row_bits)
    insts.append(mux_tree(rowq, a_bank_d, a_row))

    @always_seq(clk.posedge, reset=rst)
    def regs():
        a_rd_v.next = a_en and not a_we
        if a_en and not a_we:
            a_bank_d.next = a_bank
        if a_rd_v:
            a_hold.next = a_row
    insts.append(regs)

    @always_comb
    def outputs():
        if a_rd_v:
            a_rdata.next = a_row
        else:
            a_rdata.next = a_hold
        n_ready.next = rdy_v
        n_rvalid.next = rv_v
        n_rdata.next = word_v
    insts.append(outputs)
    return insts


def convert(outdir: "str | Path", rows: int, row_bits: int, lane_bits: int, banks: int) -> Path:
    """Write ``<outdir>/<module_name(...)>.v``; return its path."""
    name = module_name(rows, row_bits, lane_bits, banks)

    def factory():
        return fsa_sram_bp(**ports(rows, row_bits, lane_bits, banks), rows=rows,
                           row_bits=row_bits, lane_bits=lane_bits, banks=banks)

    path = convert_block(factory, name, outdir, init_memories=True)
    path.write_text(simulation_only_init(path.read_text()))
    return path
