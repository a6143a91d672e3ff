"""Banked on-chip SRAM: the scratchpad (rows of R elements of E) and the
accumulator memory (rows of C elements of A) (docs/architecture.md section 2).
With several AXI ports a banked SRAM is instead ``rtl/fsa_sram_bp.py``
(the same memory with a narrow port per bank; ``fsa.hw.dmarules.bank_ports``).

Organisation: ``rows`` rows of ``row_bits`` bits, interleaved over ``banks``
banks (row ``r`` lives in bank ``r % banks`` at local index ``r // banks``;
``banks`` is a power of two).  Each bank is ``lanes = row_bits // lane_bits``
separate simple dual-port memories (one write, one read port) of
``lane_bits`` bits (lane ``l`` = row bits
``[l*lane_bits +: lane_bits]``), so a narrow write touches one lane memory and
never needs a read-modify-write.  Every bank sees at most one access per cycle
(the array port, else the narrow port), so each lane memory is the canonical
one-port SRAM template (``if en: if we: mem[a] <= d else q <= mem[a]``) and
maps onto one-port SRAM macros / block RAMs.  Each bank holds
``ceil(rows / banks)`` entries (at most ``banks - 1`` unused entries in all).

Ports::

    clk, rst                 clock; synchronous active-high reset of the
                             registers (the memory contents are never reset)
    a_en      in   1         array port: access this cycle
    a_we      in   1         1 write a_wdata to row a_addr, 0 read row a_addr
    a_addr    in   AW        row address, AW = max(1, ceil(log2(rows)))
    a_wdata   in   row_bits
    a_rdata   out  row_bits  the row of the last array read; valid from the
                             cycle after the read and held until the next
                             array read (0 after reset)
    w_en      in   1         second array write port (the accumulator reads
    w_addr    in   AW        one row and writes another in the same cycle):
    w_wdata   in   row_bits  write w_wdata to row w_addr; an a_we write to the
                             same bank in the same cycle takes precedence (the
                             controller never does both)
    n_valid   in   1         narrow port request (valid/ready)
    n_ready   out  1         0 exactly when a_en (or w_en) addresses the same
                             bank as n_addr (bank conflict: the array ports
                             win), else 1; combinational from a_en, a_addr,
                             w_en, w_addr, n_addr (independent of n_valid)
    n_we      in   1         1 write n_wdata to lane n_lane of row n_addr,
                             0 read that lane
    n_addr    in   AW        row address
    n_lane    in   LS        lane index, LS = max(1, ceil(log2(lanes)))
    n_wdata   in   lane_bits
    n_rvalid  out  1         high for one cycle, the cycle after an accepted
                             narrow read
    n_rdata   out  lane_bits the lane read; 0 when n_rvalid is low

A narrow request is accepted in a cycle where ``n_valid and n_ready``; a
requester whose request is not accepted holds it (``n_valid`` and the fields
stable) until it is: standard valid/ready, nothing is dropped or duplicated.

Initial contents: in simulation every memory starts at 0 (as the golden
model assumes), by ``initial`` blocks that the generated Verilog wraps in
```ifndef SYNTHESIS``; a synthesised SRAM starts with undefined contents, so
software must not read a row it has not written.

Latency: array and narrow reads 1 cycle (data in the cycle after the access);
writes are visible to any read in a later cycle.  The array port never stalls.

Same cycle, same row, both ports: cannot happen -- the same row is the same
bank, so the narrow port is stalled (``n_ready`` low) whenever the array port
touches that row.  Each bank therefore performs at most one access per cycle
and there is no read/write ordering to define between the ports.  A write
followed by a read of the same row in the next cycle (either port) returns
the new data.

Addresses and lanes are assumed in range (the controller checks them):
``a_addr``/``n_addr`` >= rows or ``n_lane`` >= lanes is unspecified behaviour
(it may alias another row, touch an unused entry or do nothing); with one
lane, ``n_lane`` must be 0.

Timing (banks = 1, so every array access stalls the narrow port; ``.`` is
don't care, ``r5'`` the row written in cycle 0, ``old`` the last row read
before, 0 after reset; ``tb/sram/tb_sram.py::sram_directed`` replays this)::

    cycle       0      1      2      3      4      5
    a_en        1      0      1      0      0      0
    a_we        1      .      0      .      .      .
    a_addr      r5     .      r5     .      .      .
    a_rdata     old    old    old    r5'    r5'    r5'    (held until the next read)
    n_valid     1      1      1      1      0      0
    n_we        0      0      0      0      .      .
    n_addr      r7     r7     r2     r2     .      .
    n_ready     0      1      0      1      1      1
    accepted    -      r7     -      r2     -      -
    n_rvalid    0      0      1      0      1      0
    n_rdata     0      0      r7[l]  0      r2[l]  0

The narrow read of r7 waits in cycle 0 (the array port holds the bank) and
is accepted in cycle 1; its data is out in cycle 2.  The next request (r2)
follows back to back, waits behind the array read in cycle 2, and is
accepted in cycle 3.
"""
from __future__ import annotations

import re
from pathlib import Path

from myhdl import ConcatSignal, ResetSignal, Signal, always, always_comb, always_seq, block, intbv

from rtl.convert import convert_block, sig
from rtl.prim import clog2, mux_tree

__all__ = ["fsa_sram", "module_name", "convert", "ports", "geometry", "simulation_only_init",
           "LINT_WAIVERS"]

#: Verilator ``-Wall`` waivers for the generated Verilog (flag -> reason).
#: None needed: the generated module is -Wall clean as it is.
LINT_WAIVERS: dict[str, str] = {}


def geometry(rows: int, row_bits: int, lane_bits: int, banks: int = 1) -> dict:
    """Validate a geometry; return its derived sizes.

    Returns:
        dict with ``lanes`` (lane memories per bank), ``depth`` (entries per
        bank), ``addr_bits`` (row address width), ``lane_sel_bits`` (width of
        ``n_lane``), ``bank_bits`` (log2 banks), ``local_bits`` (index width
        inside a bank).

    Raises:
        ValueError: with the rule that is broken.
    """
    for name, v in (("rows", rows), ("row_bits", row_bits), ("lane_bits", lane_bits),
                    ("banks", banks)):
        if isinstance(v, bool) or not isinstance(v, int):
            raise ValueError(f"fsa_sram: {name} must be an int, got {v!r}")
    if row_bits < 1:
        raise ValueError(f"fsa_sram: row_bits must be >= 1, got {row_bits}")
    if lane_bits < 1 or lane_bits > row_bits or row_bits % lane_bits:
        raise ValueError(f"fsa_sram: lane_bits must divide row_bits = {row_bits} "
                         f"(1 <= lane_bits <= row_bits), got {lane_bits}")
    if banks < 1 or banks & (banks - 1):
        raise ValueError(f"fsa_sram: banks must be a power of two >= 1, got {banks}")
    if rows < 2 * banks:
        raise ValueError(f"fsa_sram: rows must be >= 2 * banks = {2 * banks} "
                         f"(at least two rows per bank), got rows={rows}")
    lanes = row_bits // lane_bits
    depth = -(-rows // banks)
    kb = banks.bit_length() - 1
    return dict(lanes=lanes, depth=depth, addr_bits=clog2(rows), lane_sel_bits=clog2(lanes),
                bank_bits=kb, local_bits=clog2(depth))


def module_name(rows: int, row_bits: int, lane_bits: int, banks: int = 1) -> str:
    """Verilog module name of one geometry, e.g. ``fsa_sram_48x64_l64_b1``."""
    geometry(rows, row_bits, lane_bits, banks)
    return f"fsa_sram_{rows}x{row_bits}_l{lane_bits}_b{banks}"


def ports(rows: int, row_bits: int, lane_bits: int, banks: int = 1) -> dict:
    """Fresh signals for every port of one geometry (name -> Signal)."""
    g = geometry(rows, row_bits, lane_bits, banks)
    aw, ls = g["addr_bits"], g["lane_sel_bits"]
    return dict(clk=sig(1), rst=ResetSignal(0, active=1, isasync=False),
                a_en=sig(1), a_we=sig(1), a_addr=sig(aw), a_wdata=sig(row_bits),
                a_rdata=sig(row_bits), w_en=sig(1), w_addr=sig(aw), w_wdata=sig(row_bits),
                n_valid=sig(1), n_ready=sig(1), n_we=sig(1), n_addr=sig(aw), n_lane=sig(ls),
                n_wdata=sig(lane_bits), n_rvalid=sig(1), n_rdata=sig(lane_bits))


# ---------------------------------------------------------------- sub-blocks
@block
def _lane_mem(clk, wen, waddr, wd, ren, raddr, q, depth, width):
    """One lane memory of one bank: simple dual-port SRAM (one write port,
    one read port with a registered output; a read of the row written in
    the same cycle returns the old contents).

    ``q`` takes ``mem[raddr]`` at the edge of a read and keeps it otherwise.
    """
    mem = [Signal(intbv(0)[width:]) for _ in range(depth)]

    @always(clk.posedge)
    def access():
        if wen:
            mem[waddr].next = wd
        if ren:
            q.next = mem[raddr]
    return access


@block
def _lane_ctl(aw_hit, ww_hit, nw_hit, ar_hit, nr_hit, n_lane, a_lane, w_lane, n_wdata,
              wen, wd, ren, lane):
    """Write enable/data and read enable of lane memory `lane` of one bank."""
    @always_comb
    def ctl():
        wen.next = aw_hit or ww_hit or (nw_hit and n_lane == lane)
        if aw_hit:
            wd.next = a_lane
        elif ww_hit:
            wd.next = w_lane
        else:
            wd.next = n_wdata
        ren.next = ar_hit or (nr_hit and n_lane == lane)
    return ctl


@block
def _bank_ctl(a_en, a_we, a_bank, a_local, w_en, w_bank, w_local, n_acc, n_we, n_bank, n_local,
              aw_hit, ww_hit, nw_hit, ar_hit, nr_hit, waddr, raddr, bank, kb):
    """Which port writes and which reads bank `bank` this cycle, and where."""
    if kb == 0:
        @always_comb
        def ctl():
            aw_hit.next = a_en and a_we
            ww_hit.next = w_en and not (a_en and a_we)
            nw_hit.next = n_acc and n_we
            ar_hit.next = a_en and not a_we
            nr_hit.next = n_acc and not n_we
            if a_en and a_we:
                waddr.next = a_local
            elif w_en:
                waddr.next = w_local
            else:
                waddr.next = n_local
            if a_en:
                raddr.next = a_local
            else:
                raddr.next = n_local
    else:
        @always_comb
        def ctl():
            a_h = a_en and a_bank == bank
            w_h = w_en and w_bank == bank
            n_h = n_acc and n_bank == bank
            aw_hit.next = a_h and a_we
            ww_hit.next = w_h and not (a_h and a_we)
            nw_hit.next = n_h and n_we
            ar_hit.next = a_h and not a_we
            nr_hit.next = n_h and not n_we
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


# ---------------------------------------------------------------- the SRAM
@block
def fsa_sram(clk, rst, a_en, a_we, a_addr, a_wdata, a_rdata, w_en, w_addr, w_wdata,
             n_valid, n_ready, n_we, n_addr,
             n_lane, n_wdata, n_rvalid, n_rdata, rows=48, row_bits=64, lane_bits=64, banks=1):
    """Banked SRAM with a full-row array port and a one-lane valid/ready
    narrow port; ports, latency and timing: the docstring of rtl/fsa_sram.py.

    Raises:
        ValueError: invalid geometry or a port of the wrong width.
    """
    g = geometry(rows, row_bits, lane_bits, banks)
    lanes, depth, kb = g["lanes"], g["depth"], g["bank_bits"]
    aw, ls, lw = g["addr_bits"], g["lane_sel_bits"], g["local_bits"]
    W = lane_bits
    for name, p, w in (("a_addr", a_addr, aw), ("n_addr", n_addr, aw), ("n_lane", n_lane, ls),
                       ("w_addr", w_addr, aw), ("w_wdata", w_wdata, row_bits),
                       ("a_wdata", a_wdata, row_bits), ("a_rdata", a_rdata, row_bits),
                       ("n_wdata", n_wdata, W), ("n_rdata", n_rdata, W)):
        if len(p) != w:
            raise ValueError(f"fsa_sram: port {name} must be {w} bits wide, got {len(p)}")
    insts = []

    # ---- address split: bank = low kb bits, local index = the rest
    if kb:
        a_bank, n_bank, w_bank = a_addr(kb, 0), n_addr(kb, 0), w_addr(kb, 0)
        a_local, n_local, w_local = a_addr(aw, kb), n_addr(aw, kb), w_addr(aw, kb)
    else:
        a_bank = n_bank = w_bank = None
        a_local, n_local, w_local = a_addr, n_addr, w_addr
    assert len(a_local) == lw

    # ---- narrow port handshake
    n_acc = sig(1)
    if kb:
        @always_comb
        def handshake():
            busy = (a_en and a_bank == n_bank) or (w_en and w_bank == n_bank)
            n_ready.next = not busy
            n_acc.next = n_valid and not busy
    else:
        @always_comb
        def handshake():
            n_ready.next = not (a_en or w_en)
            n_acc.next = n_valid and not (a_en or w_en)
    insts.append(handshake)

    # ---- banks of lane memories
    a_lanes = [a_wdata((l + 1) * W, l * W) for l in range(lanes)] if lanes > 1 else [a_wdata]
    w_lanes = [w_wdata((l + 1) * W, l * W) for l in range(lanes)] if lanes > 1 else [w_wdata]
    q = [[sig(W) for _ in range(lanes)] for _ in range(banks)]
    for b in range(banks):
        aw_hit, ww_hit, nw_hit, ar_hit, nr_hit = (sig(1) for _ in range(5))
        waddr, raddr = sig(lw), sig(lw)
        insts.append(_bank_ctl(a_en, a_we, a_bank, a_local, w_en, w_bank, w_local, n_acc, n_we,
                               n_bank, n_local, aw_hit, ww_hit, nw_hit, ar_hit, nr_hit,
                               waddr, raddr, b, kb))
        for l in range(lanes):
            wen, wd, ren = sig(1), sig(W), sig(1)
            insts.append(_lane_ctl(aw_hit, ww_hit, nw_hit, ar_hit, nr_hit, n_lane, a_lanes[l],
                                   w_lanes[l], n_wdata, wen, wd, ren, l))
            insts.append(_lane_mem(clk, wen, waddr, wd, ren, raddr, q[b][l], depth, W))

    # ---- read-side registers
    a_rd_v = sig(1)                         # an array read happened last cycle
    a_bank_d = Signal(intbv(0)[max(kb, 1):])
    n_bank_d = Signal(intbv(0)[max(kb, 1):])
    n_lane_d = Signal(intbv(0)[max(ls, 1):])
    a_hold = sig(row_bits)

    # (MyHDL wants every sub-block instance created in this frame: no helper)
    # array read data: bank mux of the lane memories' registered outputs
    rowq = [ConcatSignal(*reversed(q[b])) if lanes > 1 else q[b][0] for b in range(banks)]
    if banks > 1:
        a_row = sig(row_bits)
        insts.append(mux_tree(rowq, a_bank_d, a_row))
    else:
        a_row = rowq[0]
    # narrow read data: lane mux per bank, then bank mux
    if lanes > 1:
        n_lanes = [sig(W) for _ in range(banks)]
        for b in range(banks):
            insts.append(mux_tree(q[b], n_lane_d, n_lanes[b]))
    else:
        n_lanes = [q[b][0] for b in range(banks)]
    if banks > 1:
        n_word = sig(W)
        insts.append(mux_tree(n_lanes, n_bank_d, n_word))
    else:
        n_word = n_lanes[0]

    if kb and lanes > 1:
        @always_seq(clk.posedge, reset=rst)
        def regs():
            a_rd_v.next = a_en and not a_we
            if a_en and not a_we:
                a_bank_d.next = a_bank
            n_rvalid.next = n_acc and not n_we
            if n_acc and not n_we:
                n_bank_d.next = n_bank
                n_lane_d.next = n_lane
            if a_rd_v:
                a_hold.next = a_row
    elif kb:
        @always_seq(clk.posedge, reset=rst)
        def regs():
            a_rd_v.next = a_en and not a_we
            if a_en and not a_we:
                a_bank_d.next = a_bank
            n_rvalid.next = n_acc and not n_we
            if n_acc and not n_we:
                n_bank_d.next = n_bank
            if a_rd_v:
                a_hold.next = a_row
    elif lanes > 1:
        @always_seq(clk.posedge, reset=rst)
        def regs():
            a_rd_v.next = a_en and not a_we
            n_rvalid.next = n_acc and not n_we
            if n_acc and not n_we:
                n_lane_d.next = n_lane
            if a_rd_v:
                a_hold.next = a_row
    else:
        @always_seq(clk.posedge, reset=rst)
        def regs():
            a_rd_v.next = a_en and not a_we
            n_rvalid.next = n_acc and not n_we
            if a_rd_v:
                a_hold.next = a_row
    insts.append(regs)

    @always_comb
    def outputs():
        if a_rd_v:
            a_rdata.next = a_row
        else:
            a_rdata.next = a_hold
        if n_rvalid:
            n_rdata.next = n_word
        else:
            n_rdata.next = 0
    insts.append(outputs)
    return insts


def convert(outdir: "str | Path", rows: int, row_bits: int, lane_bits: int,
            banks: int = 1) -> Path:
    """Write ``<outdir>/<module_name(...)>.v``; return its path.

    Raises:
        ValueError: invalid geometry.
    """
    name = module_name(rows, row_bits, lane_bits, banks)

    def factory():
        return fsa_sram(**ports(rows, row_bits, lane_bits, banks), rows=rows,
                        row_bits=row_bits, lane_bits=lane_bits, banks=banks)

    # memories start at 0 in simulation (as in the golden model), so that a
    # row read before it is written is 0 on Verilator and Icarus alike; the
    # zeroing is simulation-only (synthesis sees no initial block)
    path = convert_block(factory, name, outdir, init_memories=True)
    path.write_text(simulation_only_init(path.read_text()))
    return path


_INIT_BLOCK = re.compile(r"^initial begin: \w+\n.*?^end\n", re.M | re.S)


def simulation_only_init(text: str) -> str:
    """Wrap every top-level ``initial`` block of `text` (MyHDL's memory
    zeroing, ``initial begin: NAME ... end`` at column 0) in
    ```ifndef SYNTHESIS`` / ```endif``, so a synthesis tool (which defines
    ``SYNTHESIS``) sees no ``initial`` block while Verilator and Icarus (which
    do not) still start from zeroed memories.

    Raises:
        ValueError: an ``initial`` that is not such a block (nothing may
            escape the guard).
    """
    out = _INIT_BLOCK.sub(lambda m: f"`ifndef SYNTHESIS\n{m.group(0)}`endif\n", text)
    guarded = _INIT_BLOCK.sub("", text)
    if re.search(r"\binitial\b", guarded):
        raise ValueError("fsa_sram: an initial block outside the memory zeroing")
    return out
