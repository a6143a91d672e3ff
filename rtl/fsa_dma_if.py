"""The DMA engine's interface (``rtl/fsa_dma.py``): its error codes, FIFO
depths, the signal tables of its ports, the geometry derived from a config,
and fresh port signals for building or simulating it.  Kept apart from the
engine so that ``fsa_dma`` and its per-port unit ``fsa_dma_port`` share one
definition; ``rtl.fsa_dma`` re-exports every name here.
"""
from __future__ import annotations

from myhdl import ResetSignal

from fsa.hw.dmarules import INFLIGHT, bank_ports, inflight_depth, sram_bank_ports  # noqa: F401
from rtl.convert import sig
from rtl.prim import Bundle, clog2

__all__ = ["ERR_NONE", "ERR_AXI_RD", "ERR_AXI_WR", "ERR_MEM_RANGE", "ERR_DMA_ALIGN",
           "ERR_DMA_SIZE", "ERR_SRAM_RANGE", "ERR_NAMES", "MAX_OUTSTANDING", "WDATA_DEPTH",
           "INFLIGHT", "inflight_depth", "AXI_SIGNALS", "CMD_SIGNALS", "STATUS_SIGNALS",
           "NARROW_SIGNALS", "geometry", "narrow_widths", "bank_ports", "check_ports",
           "axi_prefixes", "port_table", "ports"]

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

#: bursts in flight per port and direction (descriptor FIFO depth): the
#: default of the config field ``dma_outstanding`` (fsa/config.py); 4 would
#: limit a STORE of one-beat rows to ~0.6 rows per cycle against cocotbext-axi's
#: AxiRam (a ~6-cycle AW-to-B round trip)
MAX_OUTSTANDING = 8
#: W data FIFO depth per port (4 keeps one beat per cycle with the SRAM's
#: one-cycle read latency)
WDATA_DEPTH = 4

#: port tables: (name, width or a key into the widths, direction)
CMD_SIGNALS = (("valid", 1, "in"), ("ready", 1, "out"), ("func", 1, "in"),
               ("repeat", 9, "in"), ("sram_addr", 20, "in"), ("sram_stride", 5, "in"),
               ("is_accum", 1, "in"), ("mem_addr", 39, "in"), ("mem_stride", 21, "in"),
               ("size", 10, "in"))
STATUS_SIGNALS = (("done", 1, "out"), ("busy", 1, "out"), ("err", 1, "out"),
                  ("err_code", 3, "out"), ("err_slot", 1, "out"), ("aborting", 1, "in"))
#: AXI channel signals: (name, width or a key into the widths (A address,
#: D data, S strobes), direction of the master)
AXI_SIGNALS = (
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
NARROW_SIGNALS = (("n_valid", 1, "out"), ("n_ready", 1, "in"), ("n_we", 1, "out"),
                  ("n_addr", "A", "out"), ("n_lane", "L", "out"), ("n_wdata", "D", "out"),
                  ("n_rvalid", 1, "in"), ("n_rdata", "D", "in"))

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
    from fsa.hw.config import FSAConfig

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
             spad_addr_bits=clog2(cfg.spad_rows), acc_addr_bits=clog2(cfg.acc_rows),
             spad_lane_bits=clog2(sl), acc_lane_bits=clog2(al))
    for pre, rows, nb in (("spad", cfg.spad_rows, cfg.spad_banks),
                          ("acc", cfg.acc_rows, cfg.acc_banks)):
        g[f"{pre}_banks"] = nb
        g[f"{pre}_bp"] = sram_bank_ports(cfg, nb)     # a narrow port per bank
        g[f"{pre}_local_bits"] = clog2(-(-rows // nb))
    g["row_bits_max"] = max(g["spad_addr_bits"], g["acc_addr_bits"])
    g["lane_sel_max"] = max(g["spad_lane_bits"], g["acc_lane_bits"])
    return g


def narrow_widths(g: dict, pre: str) -> dict:
    """Width of each narrow-port signal of SRAM `pre` ("spad" or "acc"):
    one port (address A, lane L, data D), or with a port per bank
    (``g[pre + "_bp"]``) each signal ``banks`` times as wide, bank ``b``'s
    field at ``[b*w +: w]`` and the address the row's index in its bank."""
    if not g[f"{pre}_bp"]:
        widths = dict(A=g[f"{pre}_addr_bits"], L=g[f"{pre}_lane_bits"], D=g["lane_bits"])
        return {n: _width(w, widths) for n, w, _ in NARROW_SIGNALS}
    B = g[f"{pre}_banks"]
    widths = dict(A=g[f"{pre}_local_bits"], L=g[f"{pre}_lane_bits"], D=g["lane_bits"])
    return {n: B * _width(w, widths) for n, w, _ in NARROW_SIGNALS}


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
    out += [(n, d, w) for n, w, d in STATUS_SIGNALS]
    out += [(f"cmd_{n}", d, w) for n, w, d in CMD_SIGNALS]
    for pre in ("spad", "acc"):
        nw = narrow_widths(g, pre)
        out += [(f"{pre}_{n}", d, nw[n]) for n, w, d in NARROW_SIGNALS]
    widths = dict(A=g["addr_bits"], D=g["lane_bits"], S=g["beat_bytes"])
    for pre in axi_prefixes(cfg):
        out += [(f"{pre}_{n}", d, _width(w, widths)) for n, w, d in AXI_SIGNALS]
    return out


def ports(cfg) -> dict:
    """Fresh signals for every port: keyword arguments of :func:`fsa_dma`
    (``clk``, ``rst``, the status signals, and the bundles ``cmd``, ``spad``,
    ``acc`` and ``m``; ``m.axi`` or ``m.axi0``, ``m.axi1``, ...)."""
    g = geometry(cfg)
    kw = dict(clk=sig(1), rst=ResetSignal(0, active=1, isasync=False))
    for n, w, _ in STATUS_SIGNALS:
        kw[n] = sig(w)
    kw["cmd"] = Bundle(**{n: sig(w) for n, w, _ in CMD_SIGNALS})
    for pre in ("spad", "acc"):
        nw = narrow_widths(g, pre)
        kw[pre] = Bundle(**{n: sig(nw[n]) for n, _, _ in NARROW_SIGNALS})
    widths = dict(A=g["addr_bits"], D=g["lane_bits"], S=g["beat_bytes"])
    axis = {pre[2:]: Bundle(**{n: sig(_width(w, widths)) for n, w, _ in AXI_SIGNALS})
            for pre in axi_prefixes(cfg)}
    kw["m"] = Bundle(**axis)
    return kw


def check_ports(cfg, given: dict, cmd, spad, acc, m) -> None:
    """Check the signals handed to ``fsa_dma``: `given` maps the plain
    port names (clk, rst, done, ...) to signals; `cmd`, `spad`, `acc`, `m`
    are the bundles :func:`ports` makes.  Every port of :func:`port_table`
    must be there with its width.

    Raises:
        ValueError: a missing port or one of the wrong width.
    """
    given = dict(given)
    for n, _, _ in CMD_SIGNALS:
        given[f"cmd_{n}"] = getattr(cmd, n, None)
    for pre, b in (("spad", spad), ("acc", acc)):
        for n, _, _ in NARROW_SIGNALS:
            given[f"{pre}_{n}"] = getattr(b, n, None)
    for pre in axi_prefixes(cfg):
        b = getattr(m, pre[2:], None)
        for n, _, _ in AXI_SIGNALS:
            given[f"{pre}_{n}"] = getattr(b, n, None) if b is not None else None
    for n, _, w in port_table(cfg):
        s = given.get(n)
        if s is None:
            raise ValueError(f"fsa_dma: port {n} is missing (build the ports with rtl.fsa_dma.ports(cfg))")
        if len(s) != w:
            raise ValueError(f"fsa_dma: port {n} must be {w} bits wide, got {len(s)}")
