"""One AXI4 master port of the DMA engine (``rtl/fsa_dma.py``): its own
module ``fsa_dma_port``, instantiated once per memory port by ``fsa_dma``.

The parent's row sequencer hands this port a burst descriptor (``push``);
the port issues it on AR (a LOAD) or AW (a STORE), remembers it in a
descriptor FIFO until its data has moved, and exchanges the data beats with
the SRAM narrow port through the parent's arbiter (``req``/``grant``).

Ports (``AB`` = AXI address bits, ``RB``/``LS`` = SRAM row / lane index bits
(the wider of the two SRAMs), ``LB`` = data bits, ``BB = LB/8``)::

    clk, rst           clock; synchronous active-high reset
    is_store    in  1  the instruction in progress is a STORE (else a LOAD);
                       stable while the port is not idle
    push        in  1  queue the descriptor below (only while ``can``)
    d_addr      in  AB burst byte address
    d_len       in  8  AXI length (beats - 1)
    d_row       in  RB SRAM row of the burst
    d_lane      in  LS SRAM lane of its first beat
    d_bm1       in  LS beats of an SRAM row - 1: a burst of several rows
                       (``dma_burst_beats``) moves to the next row (+1)
                       after that lane
    can         out 1  a descriptor can be pushed: fewer than ``depth``
                       bursts are in flight (pushed, not finished) and
                       (without ``afifo``) the address register is free or
                       handing over this cycle
    idle        out 1  no burst in flight
    fin         out 1  a burst finishes this cycle (LOAD: its last R beat is
                       accepted; STORE: its B response); bursts finish in the
                       order they were pushed
    req         out 1  SRAM request: LOAD, an R beat to write; STORE, the
                       head burst's next beat to read (while the W data FIFO
                       has room for it)
    q_row       out RB SRAM row of the request (0 while no burst is queued;
                       the burst's row + the rows it has moved)
    q_lane      out LS SRAM lane of the request
    grant       in  1  the parent's arbiter gives this port the SRAM port
    sram_ready  in  1  the SRAM accepts the granted request
    sram_rvalid in  1  the SRAM read data of last cycle's accepted read
    sram_rdata  in  LB
    rd_err      out 1  an R beat is bad (RRESP, RID, RLAST) or unexpected
    wr_err      out 1  a B response is bad (BRESP, BID) or unexpected
    axi_<sig>   the AXI4 master channels (:data:`AXI_SIGNALS`) except RDATA
                (:data:`PORT_AXI`); the parent connects them to its
                ``m_axi_*`` (or ``m_axiN_*``) ports and routes RDATA to the SRAM

Structure: an address register (AR or AW), or with merged bursts or a
LOAD and a STORE in flight at once (``afifo``, the config's
``dma_burst_beats`` > 0 or ``dma_rw_overlap``) an address FIFO of
``depth`` entries (a slave that holds AR/AW back behind a long burst then
does not stop the parent's sequencer, as the cycle model assumes), a
descriptor FIFO of ``depth``
bursts (SRAM row, first lane, beats of a row - 1, beats - 1) whose head tags
R beats with their SRAM row and lane (LOAD) or drives the SRAM reads of the
W data (STORE), the head burst's beat, lane and row counters, a W data FIFO of ``wdepth`` beats (STORE), and a
count of bursts in flight (a STORE burst counts until its B response).  Both
FIFOs are :func:`rtl.prim.fifo`.  ``BREADY`` is always 1; ``RREADY`` is 1
when the beat is bad or unexpected (it is then dropped) or when it wins the
SRAM port and the SRAM is ready (combinational, as AXI allows).  W data is
read from the SRAM as soon as the burst is queued, so W may lead AW; AW never
waits for W.  A STORE beat enters the W FIFO the cycle after its SRAM read
is accepted.  Timing as seen from the device: the docstring of
``rtl/fsa_dma.py``.
"""
from __future__ import annotations

from pathlib import Path

from myhdl import ConcatSignal, always_comb, always_seq, block

from rtl.convert import Const, comb_expr, convert_block, sig, submodule
from rtl.fsa_dma_if import AXI_SIGNALS, WDATA_DEPTH, axi_prefixes, geometry
from rtl.prim import Bundle, clog2, fifo, vsig

__all__ = ["fsa_dma_port", "rw_ports", "convert", "port_table", "MODULE", "LINT_WAIVERS",
           "PORT_AXI", "AXCACHE", "AXBURST_INCR", "axi_bundle", "axi_width"]

MODULE = "fsa_dma_port"

#: Verilator ``-Wall`` waivers for the generated Verilog (flag -> reason).
#: None needed: the generated module is -Wall clean as it is.
LINT_WAIVERS: dict[str, str] = {}

#: the AXI signals of the port module: all but RDATA, which goes from the
#: parent's ``m_axi*_rdata`` straight to the SRAM write data (through the
#: parent's arbiter), never through the port
PORT_AXI = tuple(n for n, _, _ in AXI_SIGNALS if n != "rdata")

AXCACHE = 0b0011    #: normal non-cacheable bufferable
AXBURST_INCR = 1


def axi_width(w, g: dict) -> int:
    """The width of an AXI signal from :data:`AXI_SIGNALS` (a number, or
    "A" / "D" / "S": address, data or strobe bits of the DMA geometry `g`)."""
    return {"A": g["addr_bits"], "D": g["lane_bits"], "S": g["beat_bytes"]}[w] \
        if isinstance(w, str) else w


def port_table(g: dict) -> list[tuple[str, str, int]]:
    """Every port of the module for the DMA geometry `g`
    (``rtl.fsa_dma_if.geometry(cfg)``): (name, "in"/"out", width), AXI last."""
    AB, RB, LS, LB = g["addr_bits"], g["row_bits_max"], g["lane_sel_max"], g["lane_bits"]
    out = [("clk", "in", 1), ("rst", "in", 1), ("is_store", "in", 1), ("push", "in", 1),
           ("d_addr", "in", AB), ("d_len", "in", 8), ("d_row", "in", RB), ("d_lane", "in", LS),
           ("d_bm1", "in", LS), ("can", "out", 1), ("idle", "out", 1), ("fin", "out", 1), ("req", "out", 1),
           ("q_row", "out", RB),
           ("q_lane", "out", LS), ("grant", "in", 1), ("sram_ready", "in", 1),
           ("sram_rvalid", "in", 1), ("sram_rdata", "in", LB), ("rd_err", "out", 1),
           ("wr_err", "out", 1)]
    out += [(f"axi_{n}", d, axi_width(w, g)) for n, w, d in AXI_SIGNALS if n in PORT_AXI]
    return out


def axi_bundle(g: dict) -> _Bundle:
    """Fresh signals for the AXI ports of the module (:data:`PORT_AXI`)."""
    return Bundle(**{n: sig(axi_width(w, g)) for n, w, _ in AXI_SIGNALS if n in PORT_AXI})


def _fresh(g: dict) -> dict:
    """Fresh signals for every port (keyword arguments of :func:`fsa_dma_port`)."""
    kw = {}
    for n, _, w in port_table(g):
        if n.startswith("axi_"):
            continue
        kw[n] = vsig(w) if n in ("d_lane", "q_lane", "d_bm1") else sig(w)
    from myhdl import ResetSignal
    kw["rst"] = ResetSignal(0, active=1, isasync=False)
    kw["axi"] = axi_bundle(g)
    return kw


@block
def fsa_dma_port(clk, rst, is_store, push, d_addr, d_len, d_row, d_lane, d_bm1, can, idle, fin, req,
                 q_row, q_lane, grant, sram_ready, sram_rvalid, sram_rdata, rd_err, wr_err,
                 axi, depth=8, wdepth=4, afifo=False):
    """One AXI master port (see the module docstring); `axi` is a bundle of
    the AXI signals (:func:`axi_bundle`), `depth` the bursts in flight
    (descriptor FIFO), `wdepth` the W data FIFO depth, `afifo`: an address
    FIFO of `depth` entries instead of the address register (the DMA's
    ``dma_burst_beats`` > 0 or ``dma_rw_overlap``).

    Raises:
        ValueError: `depth` or `wdepth` below 2.
    """
    ax = axi
    rvalid, rresp, rid, rlast = ax.rvalid, ax.rresp, ax.rid, ax.rlast
    awready, arready, wready = ax.awready, ax.arready, ax.wready
    bvalid, bresp, bid = ax.bvalid, ax.bresp, ax.bid
    AB, RB, LS, LB = len(d_addr), len(d_row), len(d_lane), len(sram_rdata)
    BB = LB // 8
    LBB = BB.bit_length() - 1       # AxSIZE: log2(bytes per beat)
    D, WD = depth, wdepth
    if D < 2 or WD < 2:
        raise ValueError(f"fsa_dma_port: depth and wdepth must be >= 2, got {D}, {WD}")
    DB, WB = clog2(D), clog2(WD)
    insts = []

    k_strb = sig(BB, (1 << BB) - 1)     # constant: full write strobes

    # ---- address register (AR for a LOAD, AW for a STORE)
    # ---- the address (AR for a LOAD, AW for a STORE): a register, or with
    # `afifo` a FIFO of `depth` entries, so that a slave holding AR/AW back
    # never stops the parent's sequencer (at most `depth` bursts are pushed
    # and unfinished, so it never overflows)
    av = sig(1)
    a_rdy = sig(1)
    if afifo:
        pop_a = sig(1)
        a_in = ConcatSignal(d_addr, d_len)
        a_head = sig(AB + 8)
        acnt = sig(DB + 1)
        insts.append(fifo(clk, rst, push, a_in, pop_a, a_head, acnt, D))
        aaddr = a_head(AB + 8, 8)
        alen = a_head(8, 0)

        @always_comb
        def addr_fifo():
            av.next = acnt != 0
            pop_a.next = acnt != 0 and a_rdy
            can.next = outc < D
        insts.append(addr_fifo)
    else:
        aaddr = sig(AB)
        alen = sig(8)

        @always_comb
        def addr_reg_can():
            can.next = (not av or a_rdy) and outc < D
        insts.append(addr_reg_can)

        @always_seq(clk.posedge, reset=rst)
        def addr_reg():
            if push:
                av.next = 1
                aaddr.next = d_addr
                alen.next = d_len
            elif av and a_rdy:
                av.next = 0
        insts.append(addr_reg)

    # ---- descriptor FIFO (row, first lane, beats of a row - 1, beats - 1)
    # and in-flight count
    f_in = ConcatSignal(d_row, d_lane, d_bm1, d_len)
    FW = RB + 2 * LS + 8
    f_head = sig(FW)
    fcnt = sig(DB + 1)
    pop_d = sig(1)
    insts.append(fifo(clk, rst, push, f_in, pop_d, f_head, fcnt, D))
    outc = sig(DB + 1)          # bursts queued and not finished (LOAD: last beat; STORE: B)
    h_row = sig(RB)
    h_lane = vsig(LS)
    h_bm1 = vsig(LS)
    h_nm1 = vsig(8)
    bc = vsig(8)                # beat of the head burst
    lc = vsig(LS)               # its beat within the current row
    rc = vsig(RB)               # rows of the burst done before the current one
    blast = sig(1)              # bc is the head burst's last beat

    # ---- W data FIFO (STORE): (beat, last)
    rdp = sig(1)                # an SRAM read of this port was accepted last cycle
    rdl = sig(1)                # ... and it was its burst's last beat
    push_w = sig(1)
    pop_w = sig(1)
    w_in = ConcatSignal(sram_rdata, rdl)
    w_head = sig(LB + 1)
    wcnt = sig(WB + 1)
    insts.append(fifo(clk, rst, push_w, w_in, pop_w, w_head, wcnt, WD))

    # ---- handshakes
    r_stray = sig(1)            # an R beat with no read burst outstanding
    r_bad = sig(1)
    r_take = sig(1)             # rready
    r_ok = sig(1)               # an R beat of an outstanding burst is accepted
    s_acc = sig(1)              # this port's SRAM request is accepted
    b_stray = sig(1)
    b_ok = sig(1)
    adv = sig(1)                # the head burst advances one beat
    dec = sig(1)

    @always_comb
    def head():
        if fcnt != 0:
            h_row.next = f_head[FW:2 * LS + 8]
            h_lane.next = f_head[2 * LS + 8:LS + 8]
            h_bm1.next = f_head[LS + 8:8]
            h_nm1.next = f_head[8:0]
        else:
            h_row.next = 0
            h_lane.next = 0
            h_bm1.next = 0
            h_nm1.next = 0
    insts.append(head)

    @always_comb
    def beat():
        blast.next = bc == h_nm1
        q_row.next = h_row + rc
        q_lane.next = h_lane + lc
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
        idle.next = outc == 0
        push_w.next = rdp and sram_rvalid
        pop_w.next = wcnt != 0 and wready
    insts.append(handshakes)

    @always_comb
    def counting():
        adv.next = r_ok or s_acc
        pop_d.next = (r_ok or s_acc) and blast
        dec.next = (r_ok and blast) or b_ok
        fin.next = (r_ok and blast) or b_ok
    insts.append(counting)

    awid, awaddr, awlen, awsize, awburst = ax.awid, ax.awaddr, ax.awlen, ax.awsize, ax.awburst
    awlock, awcache, awprot, awvalid = ax.awlock, ax.awcache, ax.awprot, ax.awvalid
    arid, araddr, arlen, arsize, arburst = ax.arid, ax.araddr, ax.arlen, ax.arsize, ax.arburst
    arlock, arcache, arprot, arvalid = ax.arlock, ax.arcache, ax.arprot, ax.arvalid
    wdata, wstrb, wlast, wvalid = ax.wdata, ax.wstrb, ax.wlast, ax.wvalid
    bready, rready = ax.bready, ax.rready

    @always_comb
    def axi_out():
        awid.next = 0
        arid.next = 0
        awaddr.next = aaddr
        araddr.next = aaddr
        awlen.next = alen
        arlen.next = alen
        awsize.next = LBB
        arsize.next = LBB
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
        wvalid.next = wcnt != 0
        wstrb.next = k_strb
        bready.next = 1
        rready.next = r_take
        wdata.next = w_head[LB + 1:1]
        wlast.next = w_head[0]
    insts.append(axi_out)

    @always_seq(clk.posedge, reset=rst)
    def regs():
        if push and not dec:
            outc.next = outc + 1
        elif dec and not push:
            outc.next = outc - 1
        if adv:
            if blast:
                bc.next = 0
                lc.next = 0
                rc.next = 0
            else:
                bc.next = bc + 1
                if lc == h_bm1:
                    lc.next = 0
                    rc.next = rc + 1
                else:
                    lc.next = lc + 1
        rdp.next = s_acc
        rdl.next = blast
    insts.append(regs)
    return insts


@block
def _rw_ports(clk, rst, cfg, g, m, issue, tp, c_store, d_addr, d_len, d_row, d_lane, d_bm1, D,
              MB, r_side, w_side, port_out):
    """``dma_rw_overlap``: two ``fsa_dma_port`` instances per AXI port, a
    read half ``u_rport<p>`` (``is_store`` tied to 0; AR and R) and a write
    half ``u_wport<p>`` (tied to 1; AW, W and B), so that a LOAD's bursts
    and a STORE's are in flight on a port at once.  The sequencer pushes a
    burst to the half of its instruction's direction.  The channels a half
    does not use are tied to 0 on its inputs; its outputs there go to
    ``unused_halves`` (read by nothing: Verilator's lint does not report
    ``*unused*`` signals).  (Its MyHDL name, which prefixes its signals in
    the Verilog, ``_rw_ports0_*``, is the one it had inside ``fsa_dma``.)"""
    insts = []
    spare = []
    for p, pre in enumerate(axi_prefixes(cfg)):
        ax = getattr(m, pre[2:])
        for half, side, name in ((0, r_side, "rport"), (1, w_side, "wport")):
            push = sig(1)
            insts.append(comb_expr(push, f"issue and tp == {p} and {'' if half else 'not '}st",
                                   issue=issue, tp=tp, st=c_store))
            mine = {"ar", "r"} if half == 0 else {"aw", "w", "b"}
            pax, conn_ax = {}, {}
            for n, w, d in AXI_SIGNALS:
                if n not in PORT_AXI:
                    continue
                ch = n[:2] if n[:2] in ("ar", "aw") else n[0]
                if ch in mine:
                    pax[n] = conn_ax[f"axi_{n}"] = getattr(ax, n)
                else:
                    width = axi_width(w, g)
                    if d == "out":
                        s = sig(width)
                        spare.append(s)
                        pax[n] = conn_ax[f"axi_{n}"] = s
                    else:
                        pax[n] = sig(width, 0)
                        conn_ax[f"axi_{n}"] = Const(width, 0)
            err_r = side["rd_errs"][p] if half == 0 else sig(1)
            err_w = side["wr_errs"][p] if half == 1 else sig(1)
            spare.append(err_w if half == 0 else err_r)
            conn = dict(clk=clk, rst=rst, is_store=Const(1, half), push=push, d_addr=d_addr,
                        d_len=d_len, d_row=d_row, d_lane=d_lane, d_bm1=d_bm1,
                        can=side["cans"][p], idle=side["idles"][p], fin=side["fins"][p],
                        req=side["reqs"][p], q_row=side["q_rows"][p], q_lane=side["q_lanes"][p],
                        grant=side["grants"][p], sram_ready=side["p_ready"][p],
                        sram_rvalid=side["p_rvalid"][p], sram_rdata=side["p_rdata"][p],
                        rd_err=err_r, wr_err=err_w)
            kwargs = dict(conn, axi=Bundle(**pax), depth=D, wdepth=WDATA_DEPTH, afifo=True)
            conn.update(conn_ax)
            insts.append(submodule(fsa_dma_port, (), kwargs, MODULE,
                                   f"u_{name}{p}", conn, port_out))
    unused_halves = sig(1)
    spare_v = ConcatSignal(*spare)

    @always_comb
    def unused_outputs():
        unused_halves.next = spare_v != 0
    insts.append(unused_outputs)
    return insts


#: the read and write halves of every AXI port (``dma_rw_overlap``)
rw_ports = _rw_ports


def convert(outdir: "str | Path", cfg, depth: "int | None" = None, wdepth: int = 4) -> Path:
    """Write ``<outdir>/fsa_dma_port.v`` (module ``fsa_dma_port``) for `cfg`;
    return its path.  `depth` (bursts in flight) defaults to the config's
    ``dma_outstanding``, as in the ``fsa_dma`` that instantiates the module.

    Raises:
        ValueError: an unusable config (see :func:`rtl.fsa_dma.geometry`).
    """
    from fsa.hw import config as fconfig

    cfg = fconfig.get(cfg)
    g = geometry(cfg)
    if depth is None:
        depth = cfg.dma_outstanding

    def factory():
        return fsa_dma_port(**_fresh(g), depth=depth, wdepth=wdepth,
                            afifo=cfg.dma_burst_beats > 0 or cfg.dma_rw_overlap)

    import warnings
    with warnings.catch_warnings():
        # the strobe constant is a signal that nothing drives
        warnings.filterwarnings("ignore", message=r"Signal is not driven: k_strb$")
        return convert_block(factory, MODULE, outdir)
