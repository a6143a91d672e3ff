"""The DMA engine's in-flight queue and bank ports (part of the hardware
contract, kept out of :mod:`fsa.hw` so that the DMA's Verilog depends on
nothing but this and the config): how many DMA instructions the device
keeps in flight at once, and which SRAMs get a narrow port per bank.

``rtl/fsa_dma.py`` and the dispatch (``rtl/fsa_dispatch.py``) hold up to
:func:`inflight_depth` DMA instructions in flight; the cycle model
(:mod:`fsa.cycledma`) follows the same rule.  On one memory port a LOAD may
be accepted while earlier LOADs into the same SRAM are still receiving their
data, when all of them move one-beat rows (row size <= the AXI beat; longer
rows let the slave's AR queue hold the DMA's sequencer, and the cycle model
does not follow that) (their beats reach the SRAM in program order, through one port); every
other instruction waits until the DMA engine holds nothing in flight.  With
several ports the beats of two instructions would reach the SRAM and the
memory in no fixed order, so one instruction is in flight at a time there.

:func:`bank_ports`: with several ports, a banked SRAM has a narrow port per
bank, so the ports' beats into different banks move in the same cycle.
"""
from __future__ import annotations

__all__ = ["INFLIGHT", "inflight_depth", "bank_ports"]

#: DMA instructions in flight at once on a one-port DMA (the in-flight queue depth)
INFLIGHT = 2


def inflight_depth(ports: int) -> int:
    """DMA instructions in flight on a DMA with `ports` AXI memory ports:
    :data:`INFLIGHT` with one port, else 1 (see the module docstring)."""
    return INFLIGHT if ports == 1 else 1


def bank_ports(ports: int, banks: int) -> bool:
    """Whether an SRAM with `banks` banks gets one narrow port per bank
    (``rtl/fsa_sram_bp.py``) on a DMA with `ports` AXI ports: with several
    ports and several banks, so that the ports write (or read) rows in
    different banks in the same cycle; else the SRAM's one narrow port,
    shared by the ports, moves one beat per cycle."""
    return ports > 1 and banks > 1
