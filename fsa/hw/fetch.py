"""Fetch contract: the program fetch unit's bursts and how DMA LOADs share
the read channel with them (``rtl/fsa_fetch.py`` and ``rtl/fsa_rdarb.py``
build them; the cycle model's fetch, ``fsa/cycle/fetch.py``, follows them).

The fetch unit issues one INCR burst at a time of at most
:func:`burst_beats` beats (also the depth of its beat FIFO).  With one memory
port a DMA LOAD may be accepted while a burst is in flight once a beat has
arrived and at most :data:`LOAD_TAIL` beats are owed; with several ports (or
a one-port DMA that works per port) it waits for the burst's last beat
(:func:`loads_wait_whole_burst`).
"""
from __future__ import annotations

from fsa.hw.dmarules import several_port_rules

__all__ = ["BURST_MAX", "BURST_WORDS", "LOAD_TAIL", "burst_beats", "loads_wait_whole_burst"]

#: the largest fetch burst in beats
BURST_MAX = 16
#: the most words a fetch burst carries (at least two beats): a burst holds
#: the DMA's LOADs for its whole length, so on wide buses shorter bursts
#: leave the K/V loads more room (measured with the cycle model, N = 1024:
#: 4x4 fp32 UD +4.1 % over a free DMA with 16-beat (64-word) bursts, +0.3 %
#: with 8-beat (32-word) ones; no preset was slower; 16-word bursts were
#: slower on most)
BURST_WORDS = 32
#: with one memory port a DMA LOAD may be accepted while a fetch burst is in
#: flight once a beat of the burst has arrived and at most this many are
#: still owed: the LOAD's ARs then reach the memory after the burst's AR
#: has been served (the memory's AR queue never fills), and its first beat
#: (5 cycles after acceptance) comes after the burst's last
LOAD_TAIL = 4


def burst_beats(cfg) -> int:
    """The fetch unit's longest burst (and beat FIFO depth, at least 2) for
    `cfg` (rtl/fsa_fetch.py): at most BURST_MAX beats, BURST_WORDS words
    (but two beats at least) and half the queue's words."""
    w = cfg.axi_data_bits // 32
    return max(1, min(BURST_MAX, max(2, BURST_WORDS // w), cfg.inst_queue_size // (2 * w)))


def loads_wait_whole_burst(cfg) -> bool:
    """Whether a DMA LOAD waits for a fetch burst's last beat (several memory
    ports: the per-port DMA model does not place a LOAD's port-0 beats
    behind a burst) rather than only for its tail (:data:`LOAD_TAIL`; one
    port, unless its DMA works per port, :func:`fsa.hw.dmarules.per_port_dma`;
    :func:`fsa.hw.dmarules.several_port_rules`).  ``rtl/fsa_rdarb.py`` ``hold``."""
    return several_port_rules(cfg)
