"""DMA engine: moves rows between memory (AXI4 master port(s)) and the
scratchpad or accumulator SRAM (their one-lane narrow ports), one decoded DMA
instruction at a time (architecture.md sections 8 and 9).

Ports (``P = cfg.mem_ports``; ``LB = cfg.axi_data_bits``, ``BB = LB/8``)::

    clk, rst                  clock; synchronous active-high reset
    cmd_valid      in   1     command (valid/ready): one decoded DMA instruction
    cmd_ready      out  1     1 while idle (no instruction in progress)
    cmd_func       in   1     0 LOAD memory -> SRAM, 1 STORE SRAM -> memory
    cmd_repeat     in   9     rows (0: nothing to do, the instruction completes)
    cmd_sram_addr  in   20    first SRAM row
    cmd_sram_stride in  5     SRAM row stride, two's complement
    cmd_is_accum   in   1     the SRAM side is the accumulator, else the scratchpad
    cmd_mem_addr   in   39    byte address of the first row in memory
    cmd_mem_stride in   21    byte stride between rows, two's complement
    cmd_size       in   10    bytes per row (0: nothing to do)
    done           out  1     one-cycle pulse: the instruction accepted last has
                              finished (LOAD: every beat written into the SRAM;
                              STORE: every write response received), also when
                              it was cut short by an error (then err is 1)
    busy           out  1     an instruction is in progress (not cmd_ready)
    err            out  1     an error happened (sticky until reset)
    err_code       out  3     the first error: the ``ERR_*`` constants below
    spad_n_*                  scratchpad narrow port (rtl/fsa_sram.py): n_valid,
                              n_ready, n_we, n_addr, n_lane, n_wdata, n_rvalid,
                              n_rdata; lane width LB, a row of sa_rows x e_type
    acc_n_*                   accumulator narrow port, rows of sa_cols x a_type
    m_axi_<ch><sig>           AXI4 master (P = 1; m_axi0_..., m_axi1_... for P > 1):
                              aw{id,addr,len,size,burst,lock,cache,prot,valid,ready},
                              w{data,strb,last,valid,ready}, b{id,resp,valid,ready},
                              ar{id,addr,len,size,burst,lock,cache,prot,valid,ready},
                              r{id,data,resp,last,valid,ready}; ID width 1 (always 0),
                              addresses cfg.axi_addr_bits wide

Behaviour.  Row ``i`` (``0 <= i < repeat``) moves the first ``size`` bytes
of SRAM row ``sram_addr + i*sram_stride`` from/to memory byte address
``mem_addr + i*mem_stride``: beat ``k`` of the row is lane ``k`` of the SRAM
row (``size/BB`` lanes from lane 0).  Each row is one INCR burst of
``size/BB`` beats (``len = size/BB - 1``, ``size = log2(BB)``, full strobes,
ID 0), split in two at a 4 KiB boundary (an AXI burst must not cross one).
Rows go round-robin over the ports (row ``i`` -> port ``i % P``), except for
instructions whose rows overlap, which use port 0 only so that the last row
wins as in ``fsa.golden.machine.Machine.dma``: a LOAD with SRAM stride 0
(several rows into one SRAM row) and a STORE with ``|mem_stride| < size``
(writes with one ID to one port complete in order; two ports would race).

Checks, in the golden model's order: at the start of the instruction
``size > row bytes`` (ERR_DMA_SIZE), ``size % BB != 0`` (ERR_DMA_ALIGN), the
first or last SRAM row outside the SRAM (ERR_SRAM_RANGE, "DMA_SRAM_RANGE" in the
golden model; the rows are an arithmetic sequence, so every row is then inside); then, before each row's
burst is issued, its address not a multiple of BB (ERR_DMA_ALIGN) and the row
not inside ``[mem_base, mem_base + mem_size)`` (ERR_MEM_RANGE).  A failing
row is not issued, so rows before it complete exactly as in the golden
model.  AXI errors: a read beat with RRESP != OKAY, RID != 0, a wrong RLAST
or no burst outstanding (ERR_AXI_RD; the beat is accepted and not written
to the SRAM), a write response with BRESP != OKAY, BID != 0 or no burst
outstanding (ERR_AXI_WR).  After an error no new burst is issued; bursts
already issued are drained (every R beat and B response owed is accepted,
the W data of issued AW bursts is sent), then ``done`` pulses and ``busy``
falls.  While ``err`` is set, later commands are accepted and complete at
once without any traffic.

Structure (per port): an address register (AR for a LOAD, AW for a STORE),
a descriptor FIFO of ``max_outstanding`` (default ``MAX_OUTSTANDING`` = 8)
bursts (SRAM row, first lane, beats) that tags R beats with their SRAM lane
(LOAD) or drives the SRAM reads of the W data (STORE), a 4-entry W data FIFO
(STORE) and a count of bursts in flight (at most 8 reads or 8 writes
outstanding per port; a STORE burst counts until its B response; one
instruction is either all reads or all writes).  The row sequencer hands one burst per cycle
to the port whose turn it is.  The SRAM narrow port is shared by the ports
through a round-robin arbiter (a stalled request keeps its grant, so it is
held stable until accepted).  ``BREADY`` is always 1; ``RREADY`` of a port
is 1 when its beat wins the SRAM port and ``n_ready`` is 1 (combinational,
as AXI allows).  W data is read from the SRAM as soon as the burst is
queued, so W may lead AW; AW never waits for W.

Latency and throughput: a command is accepted in an idle cycle (c0); c1
checks it; the first burst is queued in c2 and AR/AW is valid from c3.  At
most one burst is queued per cycle and the SRAM port moves at most one beat
per cycle (shared by all ports), so a LOAD of rows of one beat runs at one
row per cycle once the slave responds.  A STORE beat leaves the SRAM one
cycle after its read is accepted.  ``done`` is high two cycles after the
cycle in which the last beat is written (LOAD) or the last B response is
accepted (STORE); ``busy`` is low and a new command can be accepted in that
cycle.  A command that fails its up-front checks, or any command while
``err`` is set, is done in c3.

Timing (LOAD, P = 1, two rows of one beat, a slave answering at once; ``.``
is don't care)::

    cycle        0     1     2     3     4     5     6     7     8
    cmd_valid    1     0     .     .     .     .     .     .     .
    cmd_ready    1     0     0     0     0     0     0     0     1
    state        idle  check run   run   wait  wait  wait  wait  idle
    arvalid      0     0     0     1     1     0     0     0     0
    araddr       .     .     .     a0    a1    .     .     .     .
    rvalid       0     0     0     0     0     1     1     0     0
    n_valid/we   0     0     0     0     0     1     1     0     0
    n_addr       .     .     .     .     .     r0    r1    .     .
    done         0     0     0     0     0     0     0     0     1
    busy         0     1     1     1     1     1     1     1     0

(the slave's latency between AR and R is its own; ``tb/tb_dma.py`` checks
contents, not this cycle count).
"""
from __future__ import annotations

from pathlib import Path

from myhdl import ConcatSignal, ResetSignal, Signal, always, always_comb, always_seq, block, intbv

from rtl.convert import comb_expr, convert_block, sig
from rtl.prim import mux_tree as _mux_tree

__all__ = ["fsa_dma", "convert", "ports", "port_table", "geometry", "LINT_WAIVERS",
           "MODULE", "ERR_NONE", "ERR_AXI_RD", "ERR_AXI_WR", "ERR_MEM_RANGE", "ERR_DMA_ALIGN",
           "ERR_DMA_SIZE", "ERR_SRAM_RANGE", "ERR_NAMES", "MAX_OUTSTANDING", "WDATA_DEPTH",
           "axi_prefixes"]

MODULE = "fsa_dma"

#: Verilator ``-Wall`` waivers for the generated Verilog (flag -> reason).
#: None needed: the generated module is -Wall clean as it is.
LINT_WAIVERS: dict[str, str] = {}

# ---- error codes (err_code)
ERR_NONE = 0        #: no error
ERR_AXI_RD = 1      #: R beat with RRESP != OKAY (SLVERR/DECERR), RID != 0, bad RLAST, or unexpected
ERR_AXI_WR = 2      #: B response with BRESP != OKAY, BID != 0, or unexpected
ERR_MEM_RANGE = 3   #: a row outside [mem_base, mem_base + mem_size)
ERR_DMA_ALIGN = 4   #: a row address or the size not a multiple of the beat size
ERR_DMA_SIZE = 5    #: size larger than an SRAM row
ERR_SRAM_RANGE = 6  #: an SRAM row outside the SRAM
#: err_code -> its name: the golden model's code (fsa.golden.machine) and the
#: device's (fsa.errors, where the core reports DMA code c as c + DMA_CODE_BASE)
ERR_NAMES = {ERR_NONE: "NONE", ERR_AXI_RD: "AXI_RD_ERR", ERR_AXI_WR: "AXI_WR_ERR",
             ERR_MEM_RANGE: "MEM_RANGE", ERR_DMA_ALIGN: "DMA_ALIGN", ERR_DMA_SIZE: "DMA_SIZE",
             ERR_SRAM_RANGE: "DMA_SRAM_RANGE"}

#: bursts in flight per port and direction (descriptor FIFO depth); 4 would
#: limit a STORE of one-beat rows to ~0.6 rows per cycle against cocotbext-axi's
#: AxiRam (a ~6-cycle AW-to-B round trip)
MAX_OUTSTANDING = 8
#: W data FIFO depth per port (4 keeps one beat per cycle with the SRAM's
#: one-cycle read latency)
WDATA_DEPTH = 4

# sequencer states
_S_IDLE, _S_CHECK, _S_RUN, _S_WAIT = 0, 1, 2, 3

#: AXI channel signals: (name, width or a key into the widths, direction of the master)
_AXI_SIGNALS = (
    ("awid", 1, "out"), ("awaddr", "A", "out"), ("awlen", 8, "out"), ("awsize", 3, "out"),
    ("awburst", 2, "out"), ("awlock", 1, "out"), ("awcache", 4, "out"), ("awprot", 3, "out"),
    ("awvalid", 1, "out"), ("awready", 1, "in"),
    ("wdata", "D", "out"), ("wstrb", "S", "out"), ("wlast", 1, "out"), ("wvalid", 1, "out"),
    ("wready", 1, "in"),
    ("bid", 1, "in"), ("bresp", 2, "in"), ("bvalid", 1, "in"), ("bready", 1, "out"),
    ("arid", 1, "out"), ("araddr", "A", "out"), ("arlen", 8, "out"), ("arsize", 3, "out"),
    ("arburst", 2, "out"), ("arlock", 1, "out"), ("arcache", 4, "out"), ("arprot", 3, "out"),
    ("arvalid", 1, "out"), ("arready", 1, "in"),
    ("rid", 1, "in"), ("rdata", "D", "in"), ("rresp", 2, "in"), ("rlast", 1, "in"),
    ("rvalid", 1, "in"), ("rready", 1, "out"),
)
_CMD_SIGNALS = (("valid", 1, "in"), ("ready", 1, "out"), ("func", 1, "in"),
                ("repeat", 9, "in"), ("sram_addr", 20, "in"), ("sram_stride", 5, "in"),
                ("is_accum", 1, "in"), ("mem_addr", 39, "in"), ("mem_stride", 21, "in"),
                ("size", 10, "in"))
_STATUS_SIGNALS = (("done", 1, "out"), ("busy", 1, "out"), ("err", 1, "out"),
                   ("err_code", 3, "out"))
_NARROW_SIGNALS = (("n_valid", 1, "out"), ("n_ready", 1, "in"), ("n_we", 1, "out"),
                   ("n_addr", "A", "out"), ("n_lane", "L", "out"), ("n_wdata", "D", "out"),
                   ("n_rvalid", 1, "in"), ("n_rdata", "D", "in"))

AXCACHE = 0b0011    # normal non-cacheable bufferable
AXBURST_INCR = 1


def _clog2(n: int) -> int:
    """Bits for an index in 0..n-1 (at least 1), as rtl/fsa_sram.py."""
    return max(1, (n - 1).bit_length())


class _Bundle:
    """A group of signals; MyHDL expands a top-level argument ``x`` holding
    attributes ``a, b`` into ports ``x_a, x_b`` (nested: ``x_y_a``)."""

    def __init__(self, **signals):
        self.__dict__.update(signals)


def geometry(cfg) -> dict:
    """Validate `cfg` for the DMA; return the derived sizes.

    Returns:
        dict with ``beat_bytes``, ``lane_bits``, ``ports``, ``addr_bits``
        (AXI), ``spad_lanes``, ``acc_lanes`` (lanes per SRAM row),
        ``spad_addr_bits``, ``acc_addr_bits``, ``spad_lane_bits``,
        ``acc_lane_bits`` (narrow port field widths, as rtl/fsa_sram.py),
        ``row_bits_max`` / ``lane_sel_max`` (internal widths).

    Raises:
        ValueError: `cfg` is not an FSAConfig, or the AXI data width does not
            divide an SRAM row.
    """
    from fsa.config import FSAConfig

    if not isinstance(cfg, FSAConfig):
        raise ValueError(f"fsa_dma: cfg must be an FSAConfig, got {type(cfg).__name__}")
    LB = cfg.axi_data_bits
    for what, rb, hint in (("scratchpad", cfg.spad_row_bytes * 8, "sa_rows x e_type"),
                           ("accumulator", cfg.acc_row_bytes * 8, "sa_cols x a_type")):
        if rb < LB or rb % LB:
            raise ValueError(
                f"fsa_dma: {cfg.name}: axi_data_bits = {LB} must divide the {what} row "
                f"({rb} bits = {hint}): the SRAM narrow port is one beat wide; use a "
                f"narrower AXI bus or a larger array")
    if LB > 1024:   # pragma: no cover (the config allows at most 512)
        raise ValueError(f"fsa_dma: axi_data_bits must be <= 1024, got {LB}")
    sl = cfg.spad_row_bytes * 8 // LB
    al = cfg.acc_row_bytes * 8 // LB
    g = dict(beat_bytes=LB // 8, lane_bits=LB, ports=cfg.mem_ports, addr_bits=cfg.axi_addr_bits,
             spad_lanes=sl, acc_lanes=al,
             spad_addr_bits=_clog2(cfg.spad_rows), acc_addr_bits=_clog2(cfg.acc_rows),
             spad_lane_bits=_clog2(sl), acc_lane_bits=_clog2(al))
    g["row_bits_max"] = max(g["spad_addr_bits"], g["acc_addr_bits"])
    g["lane_sel_max"] = max(g["spad_lane_bits"], g["acc_lane_bits"])
    return g


def axi_prefixes(cfg) -> list[str]:
    """The AXI port name prefixes: ``["m_axi"]`` or ``["m_axi0", "m_axi1", ...]``."""
    P = cfg.mem_ports
    return ["m_axi"] if P == 1 else [f"m_axi{i}" for i in range(P)]


def _width(w, widths: dict) -> int:
    return widths[w] if isinstance(w, str) else w


def port_table(cfg) -> list[tuple[str, str, int]]:
    """Every port of the generated module: (name, "in"/"out", width), in
    module order."""
    g = geometry(cfg)
    out = [("clk", "in", 1), ("rst", "in", 1)]
    out += [(n, d, w) for n, w, d in _STATUS_SIGNALS]
    out += [(f"cmd_{n}", d, w) for n, w, d in _CMD_SIGNALS]
    for pre, ab, lsb in (("spad", g["spad_addr_bits"], g["spad_lane_bits"]),
                         ("acc", g["acc_addr_bits"], g["acc_lane_bits"])):
        widths = dict(A=ab, L=lsb, D=g["lane_bits"])
        out += [(f"{pre}_{n}", d, _width(w, widths)) for n, w, d in _NARROW_SIGNALS]
    widths = dict(A=g["addr_bits"], D=g["lane_bits"], S=g["beat_bytes"])
    for pre in axi_prefixes(cfg):
        out += [(f"{pre}_{n}", d, _width(w, widths)) for n, w, d in _AXI_SIGNALS]
    return out


def ports(cfg) -> dict:
    """Fresh signals for every port: keyword arguments of :func:`fsa_dma`
    (``clk``, ``rst``, the status signals, and the bundles ``cmd``, ``spad``,
    ``acc`` and ``m``; ``m.axi`` or ``m.axi0``, ``m.axi1``, ...)."""
    g = geometry(cfg)
    kw = dict(clk=sig(1), rst=ResetSignal(0, active=1, isasync=False))
    for n, w, _ in _STATUS_SIGNALS:
        kw[n] = sig(w)
    kw["cmd"] = _Bundle(**{n: sig(w) for n, w, _ in _CMD_SIGNALS})
    for pre, ab, lsb in (("spad", g["spad_addr_bits"], g["spad_lane_bits"]),
                         ("acc", g["acc_addr_bits"], g["acc_lane_bits"])):
        widths = dict(A=ab, L=lsb, D=g["lane_bits"])
        kw[pre] = _Bundle(**{n: sig(_width(w, widths)) for n, w, _ in _NARROW_SIGNALS})
    widths = dict(A=g["addr_bits"], D=g["lane_bits"], S=g["beat_bytes"])
    axis = {pre[2:]: _Bundle(**{n: sig(_width(w, widths)) for n, w, _ in _AXI_SIGNALS})
            for pre in axi_prefixes(cfg)}
    kw["m"] = _Bundle(**axis)
    return kw


def vsig(width: int, init: int = 0) -> Signal:
    """An intbv signal, also for one bit (a bit vector that can be sliced
    and takes part in arithmetic), unlike :func:`rtl.convert.sig`."""
    return Signal(intbv(init)[width:])


def _zext(s, width: int):
    """`s` zero-extended (or cut) to `width` bits, as a signal."""
    n = len(s)
    if n == width:
        return s
    if n > width:
        return s(width, 0)
    return ConcatSignal(intbv(0)[width - n:], s)


# ---------------------------------------------------------------- one port
@block
def _port(clk, rst, ax, p, nports, is_store, issue, tp, d_addr, d_len, d_row, d_lane,
          can, idle, req, q_row, q_lane, grant, sram_ready, sram_rvalid, sram_rdata,
          rd_err, wr_err, strb_ones, lb, depth, wdepth):
    """One AXI master port: the address register, the descriptor FIFO, the
    beat counter, the W data FIFO, the outstanding count and the AXI outputs."""
    awid, awaddr, awlen, awsize, awburst = ax.awid, ax.awaddr, ax.awlen, ax.awsize, ax.awburst
    awlock, awcache, awprot, awvalid, awready = (ax.awlock, ax.awcache, ax.awprot, ax.awvalid,
                                                 ax.awready)
    wdata, wstrb, wlast, wvalid, wready = ax.wdata, ax.wstrb, ax.wlast, ax.wvalid, ax.wready
    bid, bresp, bvalid, bready = ax.bid, ax.bresp, ax.bvalid, ax.bready
    arid, araddr, arlen, arsize, arburst = ax.arid, ax.araddr, ax.arlen, ax.arsize, ax.arburst
    arlock, arcache, arprot, arvalid, arready = (ax.arlock, ax.arcache, ax.arprot, ax.arvalid,
                                                 ax.arready)
    rid, rdata, rresp, rlast, rvalid, rready = (ax.rid, ax.rdata, ax.rresp, ax.rlast, ax.rvalid,
                                                ax.rready)
    AB, RB, LS, LB = len(d_addr), len(d_row), len(d_lane), len(rdata)
    D, WD = depth, wdepth
    DB, WB = _clog2(D), _clog2(WD)
    insts = []

    push = sig(1)
    if nports > 1:
        @always_comb
        def pushsel():
            push.next = issue and tp == p
    else:
        @always_comb
        def pushsel():
            push.next = issue
    insts.append(pushsel)

    # ---- address register (AR for a LOAD, AW for a STORE)
    av = sig(1)
    aaddr = sig(AB)
    alen = sig(8)
    a_rdy = sig(1)

    # ---- descriptor FIFO and in-flight count
    f_row = [sig(RB) for _ in range(D)]
    f_lane = [vsig(LS) for _ in range(D)]
    f_nm1 = [vsig(LS) for _ in range(D)]
    fwp = sig(DB)
    frp = sig(DB)
    fcnt = sig(DB + 1)
    outc = sig(DB + 1)          # bursts queued and not finished (LOAD: last beat; STORE: B)
    h_row = sig(RB)
    h_lane = vsig(LS)
    h_nm1 = vsig(LS)
    bc = vsig(LS)                # beat of the head burst
    blast = sig(1)              # bc is the head burst's last beat
    d_nm1 = d_len(LS, 0)

    # ---- W data FIFO (STORE)
    w_mem = [sig(LB) for _ in range(WD)]
    w_lst = [sig(1) for _ in range(WD)]
    wwp = sig(WB)
    wrp = sig(WB)
    wcnt = sig(WB + 1)
    rdp = sig(1)                # an SRAM read of this port was accepted last cycle
    rdl = sig(1)                # ... and it was its burst's last beat
    push_w = sig(1)
    pop_w = sig(1)
    w_nonempty = sig(1)

    # ---- handshakes
    r_stray = sig(1)            # an R beat with no read burst outstanding
    r_bad = sig(1)
    r_take = sig(1)             # rready
    r_ok = sig(1)               # an R beat of an outstanding burst is accepted
    s_acc = sig(1)              # this port's SRAM request is accepted
    b_stray = sig(1)
    b_ok = sig(1)
    adv = sig(1)                # the head burst advances one beat
    pop_d = sig(1)
    dec = sig(1)

    @always_comb
    def head():
        if fcnt != 0:
            h_row.next = f_row[frp]
            h_lane.next = f_lane[frp]
            h_nm1.next = f_nm1[frp]
        else:
            h_row.next = 0
            h_lane.next = 0
            h_nm1.next = 0
    insts.append(head)

    @always_comb
    def beat():
        blast.next = bc == h_nm1
        q_row.next = h_row
        q_lane.next = h_lane + bc
    insts.append(beat)

    @always_comb
    def rside():
        r_stray.next = is_store or fcnt == 0
        # (gated by rvalid: the slave need not drive the R payload otherwise)
        r_bad.next = rvalid and (rresp != 0 or rid or rlast != blast)
    insts.append(rside)

    @always_comb
    def handshakes():
        if is_store:
            a_rdy.next = awready
        else:
            a_rdy.next = arready
        # LOAD: a good R beat asks for the SRAM write port; STORE: the head
        # burst asks for an SRAM read while its W data has room
        if is_store:
            if rdp:
                req.next = fcnt != 0 and wcnt < WD - 1
            else:
                req.next = fcnt != 0 and wcnt < WD
        else:
            req.next = rvalid and not r_stray and not r_bad
        r_take.next = r_stray or r_bad or (grant and sram_ready)
        r_ok.next = rvalid and not r_stray and (r_bad or (grant and sram_ready))
        s_acc.next = is_store and grant and sram_ready
        b_stray.next = not is_store or outc == 0
        b_ok.next = bvalid and not (not is_store or outc == 0)
        rd_err.next = rvalid and (r_stray or r_bad)
        wr_err.next = bvalid and (b_stray or bresp != 0 or bid)
        can.next = (not av or a_rdy) and outc < D
        idle.next = outc == 0
        w_nonempty.next = wcnt != 0
        push_w.next = rdp and sram_rvalid
        pop_w.next = wcnt != 0 and wready
    insts.append(handshakes)

    @always_comb
    def counting():
        adv.next = r_ok or s_acc
        pop_d.next = (r_ok or s_acc) and blast
        dec.next = (r_ok and blast) or b_ok
    insts.append(counting)

    @always_comb
    def axi_out():
        awid.next = 0
        arid.next = 0
        awaddr.next = aaddr
        araddr.next = aaddr
        awlen.next = alen
        arlen.next = alen
        awsize.next = lb
        arsize.next = lb
        awburst.next = AXBURST_INCR
        arburst.next = AXBURST_INCR
        awlock.next = 0
        arlock.next = 0
        awcache.next = AXCACHE
        arcache.next = AXCACHE
        awprot.next = 0
        arprot.next = 0
        awvalid.next = av and is_store
        arvalid.next = av and not is_store
        wvalid.next = w_nonempty
        wstrb.next = strb_ones
        bready.next = 1
        rready.next = r_take
    insts.append(axi_out)

    @always_comb
    def wout():
        wdata.next = w_mem[wrp]
        wlast.next = w_lst[wrp]
    insts.append(wout)

    @always(clk.posedge)
    def fifo_mem():
        if push:
            f_row[fwp].next = d_row
            f_lane[fwp].next = d_lane
            f_nm1[fwp].next = d_nm1
        if push_w:
            w_mem[wwp].next = sram_rdata
            w_lst[wwp].next = rdl
    insts.append(fifo_mem)

    @always_seq(clk.posedge, reset=rst)
    def regs():
        if push:
            av.next = 1
            aaddr.next = d_addr
            alen.next = d_len
        elif av and a_rdy:
            av.next = 0
        # descriptor FIFO pointers
        if push:
            if fwp == D - 1:
                fwp.next = 0
            else:
                fwp.next = fwp + 1
        if pop_d:
            if frp == D - 1:
                frp.next = 0
            else:
                frp.next = frp + 1
        if push and not pop_d:
            fcnt.next = fcnt + 1
        elif pop_d and not push:
            fcnt.next = fcnt - 1
        if push and not dec:
            outc.next = outc + 1
        elif dec and not push:
            outc.next = outc - 1
        if adv:
            if blast:
                bc.next = 0
            else:
                bc.next = bc + 1
        # W data FIFO
        rdp.next = s_acc
        rdl.next = blast
        if push_w:
            if wwp == WD - 1:
                wwp.next = 0
            else:
                wwp.next = wwp + 1
        if pop_w:
            if wrp == WD - 1:
                wrp.next = 0
            else:
                wrp.next = wrp + 1
        if push_w and not pop_w:
            wcnt.next = wcnt + 1
        elif pop_w and not push_w:
            wcnt.next = wcnt - 1
    insts.append(regs)
    return insts


# ---------------------------------------------------------------- the DMA
@block
def fsa_dma(clk, rst, done, busy, err, err_code, cmd, spad, acc, m, cfg=None,
            max_outstanding=MAX_OUTSTANDING):
    """The DMA engine; ports, behaviour and timing: the docstring of
    rtl/fsa_dma.py.  `cmd`, `spad`, `acc`, `m` are signal bundles as made
    by :func:`ports`.

    Raises:
        ValueError: an unusable config, `max_outstanding` not a power of two
            in 2..16, or a port of the wrong width.
    """
    g = geometry(cfg)
    if not isinstance(max_outstanding, int) or max_outstanding not in (2, 4, 8, 16):
        raise ValueError(f"fsa_dma: max_outstanding must be 2, 4, 8 or 16, got {max_outstanding!r}")
    table = {n: w for n, _, w in port_table(cfg)}
    given = dict(clk=clk, rst=rst, done=done, busy=busy, err=err, err_code=err_code)
    for n, _, _ in _CMD_SIGNALS:
        given[f"cmd_{n}"] = getattr(cmd, n, None)
    for pre, b in (("spad", spad), ("acc", acc)):
        for n, _, _ in _NARROW_SIGNALS:
            given[f"{pre}_{n}"] = getattr(b, n, None)
    for pre in axi_prefixes(cfg):
        b = getattr(m, pre[2:], None)
        for n, _, _ in _AXI_SIGNALS:
            given[f"{pre}_{n}"] = getattr(b, n, None) if b is not None else None
    for n, w in table.items():
        s = given.get(n)
        if s is None:
            raise ValueError(f"fsa_dma: port {n} is missing (build the ports with rtl.fsa_dma.ports(cfg))")
        if len(s) != w:
            raise ValueError(f"fsa_dma: port {n} must be {w} bits wide, got {len(s)}")

    P = g["ports"]
    BB = g["beat_bytes"]
    lb = BB.bit_length() - 1
    LB = g["lane_bits"]
    AB = g["addr_bits"]
    RB = g["row_bits_max"]
    LS = g["lane_sel_max"]
    SAB, AAB = g["spad_addr_bits"], g["acc_addr_bits"]
    SLS, ALS = g["spad_lane_bits"], g["acc_lane_bits"]
    SROWS, AROWS = cfg.spad_rows, cfg.acc_rows
    SRB, ARB = cfg.spad_row_bytes, cfg.acc_row_bytes
    TB = _clog2(P)
    RAW = 40                    # row address: < 2**39 + 511 * 2**20 < 2**40
    D = max_outstanding
    insts = []

    cmd_valid, cmd_ready, cmd_func, cmd_repeat = cmd.valid, cmd.ready, cmd.func, cmd.repeat
    cmd_sram_addr, cmd_sram_stride, cmd_is_accum = cmd.sram_addr, cmd.sram_stride, cmd.is_accum
    cmd_mem_addr, cmd_mem_stride, cmd_size = cmd.mem_addr, cmd.mem_stride, cmd.size
    spad_n_valid, spad_n_ready, spad_n_we = spad.n_valid, spad.n_ready, spad.n_we
    spad_n_addr, spad_n_lane, spad_n_wdata = spad.n_addr, spad.n_lane, spad.n_wdata
    spad_n_rvalid, spad_n_rdata = spad.n_rvalid, spad.n_rdata
    acc_n_valid, acc_n_ready, acc_n_we = acc.n_valid, acc.n_ready, acc.n_we
    acc_n_addr, acc_n_lane, acc_n_wdata = acc.n_addr, acc.n_lane, acc.n_wdata
    acc_n_rvalid, acc_n_rdata = acc.n_rvalid, acc.n_rdata

    # ---- latched command
    state = sig(2)
    c_store = sig(1)
    c_accum = sig(1)
    c_rep = sig(9)
    c_rm1 = sig(9)
    c_saddr = sig(20)
    c_sneg = sig(1)
    c_smag = sig(5)             # |sram stride|, 0..16
    c_mneg = sig(1)
    c_mmag = sig(21)            # |mem stride|, 0..2**20
    c_size = sig(10)
    c_maddr = sig(39)
    # ---- sequencer
    ra = sig(RAW)               # this row's memory address (valid while not `under`)
    under = sig(1)              # the row address went below 0
    sa = sig(RB)                # this row's SRAM row
    left = sig(9)               # rows left, this one included
    first = sig(1)              # row 0
    second = sig(1)             # the next burst is the second part of a row split at 4 KiB
    b1l = vsig(LS)              # beats of a split row's first burst (= first lane of the second)
    b2b = sig(8)                # beats of its second burst
    tp = vsig(TB)                # the port of this row
    solo = sig(1)               # rows overlap: every row on port 0
    issue = sig(1)
    rowerr = sig(1)
    mis = sig(1)
    inwin = sig(1)
    can_sel = sig(1)
    all_idle = sig(1)
    k_base = sig(RAW, cfg.mem_base)
    k_end = sig(RAW, cfg.mem_base + cfg.mem_size)
    k_strb = sig(BB, (1 << BB) - 1)
    err_r = sig(1)
    code_r = sig(3)
    done_r = sig(1)
    axi_rd_err = sig(1)
    axi_wr_err = sig(1)

    # ---- burst shape (bytes, 16-bit arithmetic)
    size16 = _zext(c_size, 16)
    size21 = _zext(c_size, 21)
    size40 = _zext(c_size, RAW)
    rlo16 = _zext(ra(12, 0), 16)
    tp4k = sig(16)              # bytes from the row address to the next 4 KiB boundary
    xing = sig(1)               # the row crosses a 4 KiB boundary
    bbeats = sig(8)             # beats of the burst on offer
    pgn = sig(RAW - 12)
    pgaddr = ConcatSignal(pgn, intbv(0)[12:])
    baddr = sig(RAW)
    d_addr = sig(AB)
    d_len = sig(8)
    d_row = sig(RB)
    d_lane = vsig(LS)
    mmag40 = _zext(c_mmag, RAW)
    maddr40 = _zext(c_maddr, RAW)
    smag_r = _zext(c_smag, RB)
    ra_lo = ra(lb, 0)
    mm_lo = c_mmag(lb, 0)
    sz_lo = c_size(lb, 0)
    szb = _zext(c_size(10, lb), 8)      # beats of a row
    tpb = tp4k(lb + 8, lb)              # beats to the 4 KiB boundary (when it is < a row)
    tpl = tp4k(lb + LS, lb)

    # ---- up-front checks (state CHECK)
    szbad = sig(1)
    srbad = sig(1)
    solo_c = sig(1)
    prod = sig(14)              # (repeat - 1) * |sram stride|
    rm1_14 = _zext(c_rm1, 14)
    smag14 = _zext(c_smag, 14)
    prod20 = _zext(prod, 20)

    @always_comb
    def checks():
        prod.next = rm1_14 * smag14
        if c_accum:
            szbad.next = c_size > ARB
        else:
            szbad.next = c_size > SRB
    insts.append(checks)

    @always_comb
    def rowcheck():
        if c_accum:
            if c_sneg:
                srbad.next = (c_saddr >= AROWS or prod20 > c_saddr
                              or c_saddr - prod20 >= AROWS)
            else:
                srbad.next = c_saddr >= AROWS or c_saddr + prod20 >= AROWS
        else:
            if c_sneg:
                srbad.next = (c_saddr >= SROWS or prod20 > c_saddr
                              or c_saddr - prod20 >= SROWS)
            else:
                srbad.next = c_saddr >= SROWS or c_saddr + prod20 >= SROWS
    insts.append(rowcheck)

    if P > 1:
        @always_comb
        def overlap():
            if c_store:
                solo_c.next = c_mmag < size21
            else:
                solo_c.next = c_smag == 0 and c_rep > 1
        insts.append(overlap)

    @always_comb
    def shape():
        tp4k.next = 4096 - rlo16
        xing.next = size16 > tp4k
        pgn.next = ra[RAW:12] + 1
        if second:
            bbeats.next = b2b
            baddr.next = pgaddr
        elif size16 > tp4k:
            bbeats.next = tpb
            baddr.next = ra
        else:
            bbeats.next = szb
            baddr.next = ra
    insts.append(shape)

    @always_comb
    def desc():
        d_addr.next = baddr[AB:0]
        if bbeats != 0:
            d_len.next = bbeats - 1
        else:
            d_len.next = 0
        d_row.next = sa
        if second:
            d_lane.next = b1l
        else:
            d_lane.next = 0
    insts.append(desc)

    @always_comb
    def window():
        inwin.next = not under and ra >= k_base and ra + size40 <= k_end
        if first:
            mis.next = ra_lo != 0
        else:
            mis.next = mm_lo != 0
    insts.append(window)

    @always_comb
    def decide():
        rowerr.next = not second and (mis or not inwin)
        issue.next = (state == _S_RUN and not err_r and not second and not mis and inwin
                      and can_sel) or (state == _S_RUN and not err_r and second and can_sel)
    insts.append(decide)

    # ---- ports
    cans = [sig(1) for _ in range(P)]
    idles = [sig(1) for _ in range(P)]
    reqs = [sig(1) for _ in range(P)]
    grants = [sig(1) for _ in range(P)]
    q_rows = [sig(RB) for _ in range(P)]
    q_lanes = [vsig(LS) for _ in range(P)]
    rd_errs = [sig(1) for _ in range(P)]
    wr_errs = [sig(1) for _ in range(P)]
    sram_ready = sig(1)
    sram_rvalid = sig(1)
    sram_rdata = sig(LB)
    for p, pre in enumerate(axi_prefixes(cfg)):
        insts.append(_port(clk, rst, getattr(m, pre[2:]), p, P, c_store, issue, tp, d_addr,
                           d_len, d_row, d_lane, cans[p], idles[p], reqs[p], q_rows[p],
                           q_lanes[p], grants[p], sram_ready, sram_rvalid, sram_rdata,
                           rd_errs[p], wr_errs[p], k_strb, lb, D, WDATA_DEPTH))

    # ---- reductions over the ports
    any_req = sig(1)
    if P == 1:
        can_v, idle_v, req_v, rde_v, wre_v = cans[0], idles[0], reqs[0], rd_errs[0], wr_errs[0]
        grant0 = grants[0]

        @always_comb
        def sel1():
            can_sel.next = can_v
            all_idle.next = idle_v
            any_req.next = req_v
            axi_rd_err.next = rde_v
            axi_wr_err.next = wre_v
            grant0.next = req_v
        insts.append(sel1)
        m_row, m_lane, m_wdata = q_rows[0], q_lanes[0], getattr(m, "axi").rdata
    else:
        can_v = ConcatSignal(*reversed(cans))
        idle_v = ConcatSignal(*reversed(idles))
        req_v = ConcatSignal(*reversed(reqs))
        rde_v = ConcatSignal(*reversed(rd_errs))
        wre_v = ConcatSignal(*reversed(wr_errs))
        ALL = (1 << P) - 1

        @always_comb
        def selp():
            can_sel.next = can_v[tp]
            all_idle.next = idle_v == ALL
            any_req.next = req_v != 0
            axi_rd_err.next = rde_v != 0
            axi_wr_err.next = wre_v != 0
        insts.append(selp)
        # round-robin grant: rr has priority, then rr+1, ...
        rr = vsig(TB)
        rsig = {f"r{q}": reqs[q] for q in range(P)}
        for p in range(P):
            terms = []
            for r in range(P):
                ahead = [q for q in range(P) if (q - r) % P < (p - r) % P]
                cond = " and ".join([f"rr == {r}"] + [f"not r{q}" for q in ahead])
                terms.append(f"({cond})")
            insts.append(comb_expr(grants[p], f"r{p} and ({' or '.join(terms)})", rr=rr, **rsig))
        gbits = [sig(1) for _ in range(TB)]
        gsig = {f"g{q}": grants[q] for q in range(P)}
        for k in range(TB):
            ones = [f"g{q}" for q in range(P) if (q >> k) & 1]
            insts.append(comb_expr(gbits[k], " or ".join(ones), **gsig))
        gidx = vsig(TB)
        if TB == 1:
            gbits0 = gbits[0]

            @always_comb
            def gidx1():
                gidx.next = gbits0
            insts.append(gidx1)
        else:
            gcat = ConcatSignal(*reversed(gbits))

            @always_comb
            def gidxn():
                gidx.next = gcat
            insts.append(gidxn)

        @always_seq(clk.posedge, reset=rst)
        def rrupd():
            if any_req:
                if sram_ready:
                    if gidx == P - 1:
                        rr.next = 0
                    else:
                        rr.next = gidx + 1
                else:
                    rr.next = gidx
        insts.append(rrupd)
        # the granted port's request: mux of (row, lane, R data) by gidx
        BW = RB + LS + LB
        bundles = [ConcatSignal(q_rows[q], q_lanes[q], getattr(m, pre[2:]).rdata)
                   for q, pre in enumerate(axi_prefixes(cfg))]
        mb = sig(BW)
        insts.append(_mux_tree(bundles, gidx, mb))
        m_row, m_lane, m_wdata = mb(BW, LS + LB), mb(LS + LB, LB), mb(LB, 0)

    # ---- the SRAM narrow ports (the instruction's SRAM only)
    s_addr = _zext(m_row, SAB)
    a_addr = _zext(m_row, AAB)
    s_lane = _zext(m_lane, SLS)
    a_lane = _zext(m_lane, ALS)

    @always_comb
    def sram():
        spad_n_valid.next = any_req and not c_accum
        acc_n_valid.next = any_req and c_accum
        spad_n_we.next = not c_store
        acc_n_we.next = not c_store
        spad_n_addr.next = s_addr
        acc_n_addr.next = a_addr
        spad_n_lane.next = s_lane
        acc_n_lane.next = a_lane
        spad_n_wdata.next = m_wdata
        acc_n_wdata.next = m_wdata
        if c_accum:
            sram_ready.next = acc_n_ready
            sram_rvalid.next = acc_n_rvalid
            sram_rdata.next = acc_n_rdata
        else:
            sram_ready.next = spad_n_ready
            sram_rvalid.next = spad_n_rvalid
            sram_rdata.next = spad_n_rdata
    insts.append(sram)

    @always_comb
    def status():
        cmd_ready.next = state == _S_IDLE
        busy.next = state != _S_IDLE
        done.next = done_r
        err.next = err_r
        err_code.next = code_r
    insts.append(status)

    # ---- the sequencer
    @always_seq(clk.posedge, reset=rst)
    def seq():
        done_r.next = 0
        if state == _S_IDLE:
            if cmd_valid:
                state.next = _S_CHECK
                c_store.next = cmd_func
                c_accum.next = cmd_is_accum
                c_rep.next = cmd_repeat
                if cmd_repeat != 0:
                    c_rm1.next = cmd_repeat - 1
                else:
                    c_rm1.next = 0
                c_saddr.next = cmd_sram_addr
                c_sneg.next = cmd_sram_stride[4]
                if cmd_sram_stride[4]:
                    c_smag.next = (~cmd_sram_stride) + 1
                else:
                    c_smag.next = cmd_sram_stride
                c_mneg.next = cmd_mem_stride[20]
                if cmd_mem_stride[20]:
                    c_mmag.next = (~cmd_mem_stride) + 1
                else:
                    c_mmag.next = cmd_mem_stride
                c_size.next = cmd_size
                c_maddr.next = cmd_mem_addr
        elif state == _S_CHECK:
            ra.next = maddr40
            under.next = 0
            sa.next = c_saddr[RB:0]
            left.next = c_rep
            first.next = 1
            second.next = 0
            tp.next = 0
            solo.next = solo_c
            if err_r or c_rep == 0 or c_size == 0:
                state.next = _S_WAIT
            elif szbad:
                err_r.next = 1
                code_r.next = ERR_DMA_SIZE
                state.next = _S_WAIT
            elif sz_lo != 0:
                err_r.next = 1
                code_r.next = ERR_DMA_ALIGN
                state.next = _S_WAIT
            elif srbad:
                err_r.next = 1
                code_r.next = ERR_SRAM_RANGE
                state.next = _S_WAIT
            else:
                state.next = _S_RUN
        elif state == _S_RUN:
            if err_r:
                state.next = _S_WAIT
            elif rowerr:
                err_r.next = 1
                if mis:
                    code_r.next = ERR_DMA_ALIGN
                else:
                    code_r.next = ERR_MEM_RANGE
                state.next = _S_WAIT
            elif issue:
                if not second and xing:
                    second.next = 1
                    b1l.next = tpl
                    b2b.next = szb - tpb
                else:
                    second.next = 0
                    if left == 1:
                        state.next = _S_WAIT
                    else:
                        left.next = left - 1
                        first.next = 0
                        if c_mneg:
                            if ra >= mmag40:
                                ra.next = ra - mmag40
                            else:
                                under.next = 1
                        else:
                            ra.next = ra + mmag40
                        if c_sneg:
                            sa.next = sa - smag_r
                        else:
                            sa.next = sa + smag_r
                        if not solo:
                            if tp == P - 1:
                                tp.next = 0
                            else:
                                tp.next = tp + 1
        else:
            if all_idle:
                done_r.next = 1
                state.next = _S_IDLE
        # AXI errors (any state; the first error is kept)
        if not err_r and (axi_rd_err or axi_wr_err):
            err_r.next = 1
            if axi_rd_err:
                code_r.next = ERR_AXI_RD
            else:
                code_r.next = ERR_AXI_WR
    insts.append(seq)
    return insts


def convert(outdir: "str | Path", cfg) -> Path:
    """Write ``<outdir>/fsa_dma.v`` (module ``fsa_dma``) for `cfg`; return its path.

    Raises:
        ValueError: an unusable config (see :func:`geometry`).
    """
    from fsa import config as fconfig

    cfg = fconfig.get(cfg)
    geometry(cfg)

    def factory():
        return fsa_dma(**ports(cfg), cfg=cfg)

    import warnings
    with warnings.catch_warnings():
        # our constants (window bounds, strobes) are signals that nothing drives
        warnings.filterwarnings("ignore", message=r"Signal is not driven: "
                                r"(k_base|k_end|k_strb|solo_c)$")
        return convert_block(factory, MODULE, outdir)
