"""DMA contract: the DMA engine's in-flight queue and bank ports: how many
DMA instructions the device keeps in flight at once, and which SRAMs get a
narrow port per bank.

``rtl/fsa_dma.py`` and the dispatch (``rtl/fsa_dispatch.py``) hold up to
:func:`inflight_depth` DMA instructions in flight; the cycle model
(:mod:`fsa.cycle.dma`) follows the same rule.  On one memory port a LOAD may
be accepted while earlier LOADs into the same SRAM are still receiving their
data, when all of them move one-beat rows (row size <= the AXI beat; longer
rows let the slave's AR queue hold the DMA's sequencer, and the cycle model
does not follow that) (their beats reach the SRAM in program order, through one port); every
other instruction waits until the DMA engine holds nothing in flight.  With
several ports the beats of two instructions reach the SRAM in no fixed
order, so there a LOAD joins a LOAD in flight only into the same SRAM, when
that SRAM has a narrow port per bank (:func:`bank_ports`; the cycle model
follows the per-port beats there) and the two LOADs' SRAM rows are disjoint
(:func:`second_load_ok`), so the order cannot matter.  With the config's
``dma_rw_overlap`` (both SRAMs banked, one port or several) a LOAD and a STORE
may also be in flight together when they use different SRAMs and disjoint
memory bytes (:func:`load_store_ok`; each port has a read half and a
write half).

:func:`bank_ports`: with several ports, a banked SRAM has a narrow port per
bank, so the ports' beats into different banks move in the same cycle.  A
one-port DMA with ``dma_rw_overlap`` or merged bursts
(:func:`per_port_dma`) works as the several-port one: banked SRAMs with a
narrow port per bank, per-port beats, the several-port rules above, and
its port queues AR/AW addresses in a FIFO.
"""
from __future__ import annotations

from fsa.hw.isa import DMA_FUNCS

#: the LOAD function code (fsa.hw.isa.DMA_FUNCS; ``fsa.isa.DmaFunc.LOAD``)
_LOAD = DMA_FUNCS.index("LOAD")

__all__ = ["INFLIGHT", "inflight_depth", "bank_ports", "per_port_dma", "several_port_rules",
           "sram_bank_ports", "sram_span", "rows_on_port0", "second_load_ok", "mem_span",
           "load_store_ok", "merges_rows", "bursts"]

#: DMA instructions in flight at once on a one-port DMA (the in-flight queue depth)
INFLIGHT = 2


def inflight_depth(ports: int) -> int:
    """DMA instructions in flight on a DMA with `ports` AXI memory ports:
    :data:`INFLIGHT` (see the module docstring for which ones)."""
    return INFLIGHT


def sram_span(ins) -> tuple[int, int]:
    """The lowest and highest SRAM row a DMA instruction `ins` (an
    :class:`fsa.isa.Dma`, ``repeat >= 1``) moves."""
    last = ins.sram_addr + (ins.repeat - 1) * ins.sram_stride
    return min(ins.sram_addr, last), max(ins.sram_addr, last)


def rows_on_port0(ins) -> bool:
    """Whether a DMA instruction's rows overlap, so that with several ports
    they all go to port 0, in order, and the last row wins as in the golden
    model (``rtl/fsa_dma.py`` ``solo``): a LOAD writing one SRAM row over and
    over (``sram_stride == 0``, ``repeat > 1``), a STORE whose memory rows
    overlap (``|mem_stride| < size``)."""
    if ins.func == _LOAD:
        return ins.sram_stride == 0 and ins.repeat > 1
    return abs(ins.mem_stride) < ins.size


def second_load_ok(held, new) -> bool:
    """With several ports: whether the LOAD `new` may be in flight together
    with the LOAD `held` (into the same SRAM, which has a narrow port per
    bank): both move rows and their SRAM row ranges are disjoint, so that
    the order in which the ports' beats reach the SRAM cannot matter; and
    neither writes one row over and over (``sram_stride == 0`` with
    ``repeat > 1``: all its rows go to port 0, behind each other; such a
    LOAD runs alone)."""
    if not (held.repeat and held.size and new.repeat and new.size):
        return False
    if rows_on_port0(held) or rows_on_port0(new):
        return False
    lo1, hi1 = sram_span(held)
    lo2, hi2 = sram_span(new)
    return hi1 < lo2 or hi2 < lo1


def mem_span(ins) -> tuple[int, int]:
    """The bytes ``[lo, hi)`` a DMA instruction `ins` (``repeat >= 1``)
    touches in memory: from its lowest row's first byte to its highest
    row's last (the rows between included, whatever the stride)."""
    last = ins.mem_addr + (ins.repeat - 1) * ins.mem_stride
    return min(ins.mem_addr, last), max(ins.mem_addr, last) + ins.size


def load_store_ok(held, new) -> bool:
    """With the config's ``dma_rw_overlap``: whether `new` may be in flight
    together with `held` as a LOAD and a STORE at once (one of each, in
    either order): they use different SRAMs (so each SRAM serves one
    direction), both move rows, and their memory byte ranges
    (:func:`mem_span`) are disjoint, so that the LOAD cannot read bytes the
    STORE writes (or the STORE overwrite bytes the LOAD has yet to read) in
    either order: the result is the golden model's, which runs them one
    after the other."""
    if not (held.repeat and held.size and new.repeat and new.size):
        return False
    if (held.func == _LOAD) == (new.func == _LOAD) or bool(held.is_accum) == bool(new.is_accum):
        return False
    lo1, hi1 = mem_span(held)
    lo2, hi2 = mem_span(new)
    return hi1 <= lo2 or hi2 <= lo1


def bank_ports(ports: int, banks: int) -> bool:
    """Whether an SRAM with `banks` banks gets one narrow port per bank
    (``rtl/fsa_sram_bp.py``) on a DMA with `ports` AXI ports: with several
    ports and several banks, so that the ports write (or read) rows in
    different banks in the same cycle; else the SRAM's one narrow port,
    shared by the ports, moves one beat per cycle (a one-port config with
    :func:`per_port_dma` gets bank ports too: :func:`sram_bank_ports`)."""
    return ports > 1 and banks > 1


def per_port_dma(cfg) -> bool:
    """Whether a one-port DMA of config `cfg` works as the several-port one
    does (each port's bursts and beats of its own, banks with a narrow port
    each): with ``dma_rw_overlap`` (a read and a write half) or merged
    bursts (``dma_burst_beats`` > 0), which need it."""
    return bool(cfg.dma_rw_overlap or cfg.dma_burst_beats)


def several_port_rules(cfg) -> bool:
    """Whether the DMA of config `cfg` follows the several-port rules (each
    port its own bursts and beats, :func:`second_load_ok` for a second
    LOAD, a LOAD held for a program-fetch burst's last beat): with several
    ports, or one with :func:`per_port_dma`."""
    return cfg.mem_ports > 1 or per_port_dma(cfg)


def sram_bank_ports(cfg, banks: int) -> bool:
    """Whether an SRAM of `banks` banks in config `cfg` has a narrow port per
    bank: :func:`bank_ports`, which a one-port :func:`per_port_dma` also gets."""
    return banks > 1 and several_port_rules(cfg)


def merges_rows(ins, beat_bytes: int, max_beats: int) -> bool:
    """Whether the DMA may merge the rows of `ins` into longer bursts
    (config field ``dma_burst_beats`` = `max_beats` > 0): its rows follow
    each other in memory (``mem_stride == size``) and in the SRAM
    (``sram_stride == 1``), and a row is a power-of-two number of beats of
    `beat_bytes` (so that the DMA finds the rows of a burst by shifts)."""
    if not (max_beats and ins.repeat and ins.size) or ins.size % beat_bytes:
        return False
    b = ins.size // beat_bytes
    return ins.mem_stride == ins.size and ins.sram_stride == 1 and b & (b - 1) == 0


def bursts(ins, beat_bytes: int, max_beats: int) -> list[tuple[int, int]]:
    """The bursts of a DMA instruction `ins` as ``(first row, rows)``, in
    issue order (``rtl/fsa_dma.py``'s sequencer): where :func:`merges_rows`,
    a burst at memory address ``a`` with ``L`` rows left takes
    ``m = min(L, min(beats to the next 4 KiB boundary, max_beats) // b)``
    rows of ``b`` beats when ``m >= 2`` (the RTL also needs the whole burst
    inside the memory window, else it moves the row alone, which is where an
    out-of-window row then fails); every other burst is one row (a row that
    crosses a 4 KiB boundary is two AXI bursts, counted here as one)."""
    rows = ins.repeat if ins.size else 0
    if not merges_rows(ins, beat_bytes, max_beats):
        return [(i, 1) for i in range(rows)]
    b = ins.size // beat_bytes
    out, i = [], 0
    while i < rows:
        a = ins.mem_addr + i * ins.size
        to4k = (4096 - a % 4096) // beat_bytes
        m = min(rows - i, min(to4k, max_beats) // b)
        m = m if m >= 2 else 1
        out.append((i, m))
        i += m
    return out
