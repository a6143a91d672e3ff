"""DMA engine: moves rows between memory (AXI4 master port(s)) and the
scratchpad or accumulator SRAM (their one-lane narrow ports), for decoded
DMA instructions, up to ``inflight_depth(P)`` of them in flight
(``fsa/hw/dmarules.py``: 2 LOADs with one port; docs/architecture.md sections 7, 8 and 9).

Ports (``P = cfg.mem_ports``; ``LB = cfg.axi_data_bits``, ``BB = LB/8``)::

    clk, rst                  clock; synchronous active-high reset
    cmd_valid      in   1     command (valid/ready): one decoded DMA instruction
    cmd_ready      out  1     1 when the sequencer is idle and the engine holds no
                              instruction, or holds fewer than ``INFLIGHT``
                              and they and the command are LOADs into the
                              same SRAM, with (one port) rows of one beat
                              (size <= BB) or (several ports) a narrow port
                              per bank of that SRAM and SRAM rows disjoint
                              from the held LOAD's, neither of the two with
                              SRAM stride 0 over several rows; or (config
                              ``dma_rw_overlap``) the command and the one
                              held are a LOAD and a STORE of different SRAMs
                              and disjoint memory bytes (depends on the
                              command's fields, not on cmd_valid)
    cmd_func       in   1     0 LOAD memory -> SRAM, 1 STORE SRAM -> memory
    cmd_repeat     in   9     rows (0: nothing to do, the instruction completes)
    cmd_sram_addr  in   20    first SRAM row
    cmd_sram_stride in  5     SRAM row stride, two's complement
    cmd_is_accum   in   1     the SRAM side is the accumulator, else the scratchpad
    cmd_mem_addr   in   39    byte address of the first row in memory
    cmd_mem_stride in   21    byte stride between rows, two's complement
    cmd_size       in   10    bytes per row (0: nothing to do)
    done           out  1     one-cycle pulse: the oldest instruction in flight has
                              finished (LOAD: every beat written into the SRAM;
                              STORE: every write response received), also when
                              it was cut short by an error (then err is 1);
                              one pulse per instruction, in the order accepted
    busy           out  1     an instruction is in flight (accepted, not done)
    err            out  1     an error happened (sticky until reset or an abort)
    err_code       out  3     the first error: the ``ERR_*`` constants below
    err_slot       out  1     the in-flight queue slot of the instruction the
                              error belongs to (slots are given out 0, 1, 0,
                              ... in the order commands are accepted, the
                              dispatch's numbering too)
    aborting       in   1     level, the core is aborting (rtl/fsa_status.py): no
                              new burst is issued (the instruction in progress
                              stops as after an error, the issued bursts
                              drain, then each ``done``); while idle with
                              nothing in flight, ``err`` and ``err_code`` are
                              cleared
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
With the config's ``dma_burst_beats`` = MB > 0, an instruction whose rows
follow each other in memory (``mem_stride == size``) and in the SRAM
(``sram_stride == 1``), with rows of a power-of-two number ``b`` of beats,
moves ``m = min(rows left, min(beats to the next 4 KiB boundary, MB) / b)``
rows as one burst of ``m b`` beats when ``m >= 2`` and the whole burst lies in
the memory window (``fsa.hw.dmarules.bursts``); the port steps to the next SRAM
row after each row's ``b`` beats.  Bursts go round-robin over the ports
(burst ``j`` -> port ``j % P``), except for
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

In-flight queue (``rtl/fsa_dma_queue.py`` has the rules): up to
``INFLIGHT`` = 2 LOADs into one SRAM (one port: of one-beat rows; several
ports, or one port with ``dma_rw_overlap`` or merged bursts
(``fsa.hw.dmarules.per_port_dma``, which works as several ports do): into an
SRAM with a narrow port per bank, rows disjoint, no SRAM
stride 0 over several rows), or with the config's ``dma_rw_overlap`` a LOAD
and a STORE (either order) of different SRAMs whose memory byte ranges
``[lowest row, highest row + size)`` are disjoint
(``fsa.hw.dmarules.load_store_ok``), else one instruction; each is done in the
order accepted.

Structure.  ``fsa_dma`` (its body: ``rtl/fsa_dma_engine.py``) holds the
command register, the up-front checks and the row sequencer, which hands one burst per cycle to the port whose turn it
is; each AXI port is an instance ``u_port<i>`` of the module
``fsa_dma_port`` (``rtl/fsa_dma_port.py``: address register, a descriptor
FIFO of ``max_outstanding`` bursts (the config's ``dma_outstanding``,
default 8 = ``MAX_OUTSTANDING``), a ``WDATA_DEPTH``-entry W data FIFO, the
count of bursts in flight: at most that many reads or writes outstanding per
port; the instructions in flight are all reads or all writes; the in-flight
queue counts each port's bursts per slot).  With ``dma_rw_overlap`` each
AXI port is two instances (``fsa_dma_port.rw_ports``), a read half ``u_rport<i>`` (AR, R) and a write
half ``u_wport<i>`` (AW, W, B), each with an address FIFO; a burst goes to
the half of its instruction's direction, so a LOAD's and a STORE's bursts
are in flight on a port together; each SRAM is served by the half whose
instruction uses it (``fsa_dma_banks.bank_routing_rw``).  An SRAM's
narrow port is shared by the ports through a round-robin arbiter
(``rtl.prim.rr_arbiter``: a stalled request keeps its grant, so it is held
stable until accepted); R data goes from the granted port's ``RDATA``
straight to the SRAM.  With several ports, an SRAM with several banks has a
narrow port per bank (``fsa.hw.dmarules.bank_ports``, ``rtl/fsa_sram_bp.py``;
``spad_n_*`` / ``acc_n_*`` are then ``banks`` fields wide, the address the
row's index in its bank) and an arbiter per bank
(``rtl/fsa_dma_banks.py``), so ports whose rows are in different banks
move a beat each in the same cycle.  ``BREADY`` is always 1; ``RREADY`` of
a port is 1 when its beat wins the SRAM port and ``n_ready`` is 1
(combinational, as AXI allows).  W data is read from the SRAM as soon as the
burst is queued, so W may lead AW; AW never waits for W.  The port tables,
geometry and error codes live in ``rtl/fsa_dma_if.py`` (re-exported here).

The waveform of a two-row LOAD: docs/architecture.md, "DMA timing".
"""
from __future__ import annotations

from pathlib import Path

from myhdl import block

from rtl.convert import convert_block
from rtl.fsa_dma_engine import engine
from rtl.fsa_dma_if import (AXI_SIGNALS, CMD_SIGNALS, ERR_AXI_RD, check_ports, ERR_AXI_WR, ERR_DMA_ALIGN,  # noqa: F401
                            ERR_DMA_SIZE, ERR_MEM_RANGE, ERR_NAMES, ERR_NONE, ERR_SRAM_RANGE,
                            INFLIGHT, MAX_OUTSTANDING, NARROW_SIGNALS, WDATA_DEPTH, axi_prefixes,
                            geometry, inflight_depth, port_table, ports)

__all__ = ["fsa_dma", "convert", "ports", "port_table", "geometry", "LINT_WAIVERS",
           "MODULE", "ERR_NONE", "ERR_AXI_RD", "ERR_AXI_WR", "ERR_MEM_RANGE", "ERR_DMA_ALIGN",
           "ERR_DMA_SIZE", "ERR_SRAM_RANGE", "ERR_NAMES", "MAX_OUTSTANDING", "WDATA_DEPTH",
           "INFLIGHT", "inflight_depth", "axi_prefixes", "AXI_SIGNALS"]

MODULE = "fsa_dma"

#: Verilator ``-Wall`` waivers for the generated Verilog (flag -> reason).
#: None needed: the generated module is -Wall clean as it is.
LINT_WAIVERS: dict[str, str] = {}


# ---------------------------------------------------------------- the DMA
@block
def fsa_dma(clk, rst, done, busy, err, err_code, cmd, spad, acc, m, aborting=None,
            err_slot=None, cfg=None, max_outstanding=None):
    """The DMA engine; ports, behaviour and timing: the docstring of
    rtl/fsa_dma.py.  `cmd`, `spad`, `acc`, `m` are signal bundles as made
    by :func:`ports`; `max_outstanding` (bursts in flight per port and
    direction) defaults to the config's ``dma_outstanding``.

    Raises:
        ValueError: an unusable config, `max_outstanding` not a power of two
            in 2..16, or a port of the wrong width.
    """
    g = geometry(cfg)
    if max_outstanding is None:
        max_outstanding = cfg.dma_outstanding
    if not isinstance(max_outstanding, int) or max_outstanding not in (2, 4, 8, 16):
        raise ValueError(f"fsa_dma: max_outstanding must be 2, 4, 8 or 16, got {max_outstanding!r}")
    check_ports(cfg, dict(clk=clk, rst=rst, done=done, busy=busy, err=err, err_code=err_code,
                          err_slot=err_slot, aborting=aborting), cmd, spad, acc, m)
    # the body (rtl/fsa_dma_engine.py; this docstring is the module's comment in the Verilog)
    return engine(clk, rst, done, busy, err, err_code, cmd, spad, acc, m, aborting, err_slot, cfg,
                  max_outstanding, g)


def convert(outdir: "str | Path", cfg) -> Path:
    """Write ``<outdir>/fsa_dma.v`` (module ``fsa_dma``) for `cfg`; return its path.

    Raises:
        ValueError: an unusable config (see :func:`geometry`).
    """
    from fsa.hw import config as fconfig

    cfg = fconfig.get(cfg)
    geometry(cfg)

    def factory():
        return fsa_dma(**ports(cfg), cfg=cfg)

    import warnings
    with warnings.catch_warnings():
        # our constants (window bounds, strobes) are signals that nothing drives
        warnings.filterwarnings("ignore", message=r"Signal is not driven: "
                                r"(k_base|k_end|solo_c|mrg|mrows|mbeats)$")
        return convert_block(factory, MODULE, outdir)
