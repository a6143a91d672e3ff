"""Program fetch in the cycle model (:func:`fsa.cycle.model.simulate` with
``fetch=``): when each instruction word reaches the queue, and when DMA
LOADs must wait for a fetch burst, exactly as ``rtl/fsa_fetch.py`` and
``rtl/fsa_rdarb.py`` build it.

The fetch unit issues one INCR burst at a time (``L`` = at most
:func:`fsa.hw.fetch.burst_beats` beats, the beats left, the beats to the next 4 KiB
boundary) in a cycle ``i`` when, at the start of that cycle:

* the previous burst's last beat has arrived (before ``i``);
* no DMA LOAD runs (accepted and not yet done) and none is accepted in ``i``;
* the beat FIFO has room: ``beats arrived - beats emptied + L <= burst_beats``;
* the queue has room for the words held in the FIFO and the burst's:
  ``free words - held >= L * W`` (``W`` words per beat; ``Q`` instead of
  ``L * W`` where ``burst_beats * W > Q``).

Beat ``j`` of the burst arrives in ``i + first + j`` (:attr:`FetchTiming.first`,
calibrated on cocotbext-axi's AxiRam); word ``w`` is pushed into the queue in
``p_w = max(p_(w-1) + 1, arrival of its beat + 1)`` and the decoder may pop it
from ``p_w + 1``.  A DMA LOAD is not accepted from ``i + 1`` to the burst's
last beat.  Cycle 0 is the first ACTIVE cycle (the fetch unit is loaded by
``fetch_start``).  Not modelled: words pushed by the host before
``fetch_start``, AXI pauses, errors.
"""
from __future__ import annotations

import bisect
import heapq
from dataclasses import dataclass

from fsa.config import FSAConfig
from fsa.hw.fetch import LOAD_TAIL, burst_beats, loads_wait_whole_burst

__all__ = ["FetchTiming", "FETCH_FIRST", "Fetch", "PROGRAM_ALIGN", "program_address"]

#: cycles from a burst's decision to its first beat with cocotbext-axi's
#: AxiRam (the registered ARVALID, the AR handshake, the slave's latency),
#: measured on the RTL (tests/test_cyclemodel.py, tb/fetch/test_fetch.py check it)
FETCH_FIRST = 3


#: alignment of the program region (a 4 KiB page: a multiple of every beat size)
PROGRAM_ALIGN = 4096


def program_address(cfg: FSAConfig, n_words: int,
                    regions: "list[tuple[int, int]]" = ()) -> int:
    """Where the harness places a program of `n_words` words for program
    fetch: the top of the memory window, ``mem_base + mem_size`` minus the
    program's bytes rounded up to PROGRAM_ALIGN.

    Args:
        regions: (address, size) ranges the program uses (its memory image,
            the regions read back): the program region must not overlap them.

    Raises:
        ValueError: the program does not fit in the window, or overlaps a region.
    """
    size = -(-4 * max(1, n_words) // PROGRAM_ALIGN) * PROGRAM_ALIGN
    top = cfg.mem_base + cfg.mem_size
    addr = top - size
    if addr < cfg.mem_base:
        raise ValueError(f"program fetch: {n_words} words do not fit in the memory window "
                         f"[0x{cfg.mem_base:x}, 0x{top:x})")
    for a, n in regions:
        if n and a < top and addr < a + n:
            raise ValueError(f"program fetch: the program region [0x{addr:x}, 0x{top:x}) overlaps "
                             f"the data at [0x{a:x}, 0x{a + n:x}); run it with push=True "
                             f"(fsa exec --push, push=True)")
    return addr


@dataclass(frozen=True)
class FetchTiming:
    """A program fetched from memory.

    Attributes:
        addr: the program's byte address (4 KiB boundaries split bursts).
        first: cycles from a burst's decision to its first beat.
    """

    addr: int
    first: int = FETCH_FIRST


class Fetch:
    """The fetch unit's state in the model (one program of `n` words)."""

    def __init__(self, timing: FetchTiming, cfg, n: int):
        self.t, self.n = timing, n
        self.W = cfg.axi_data_bits // 32
        self.BB = cfg.axi_data_bits // 8
        self.BM = burst_beats(cfg)
        self.whole = loads_wait_whole_burst(cfg)
        self.D = max(2, self.BM)
        self.Q = cfg.inst_queue_size
        self.beats = -(-n // self.W)
        self.issued = 0               # beats requested
        self.addr = timing.addr
        self.beat_t: list[int] = []   # arrival cycle of each beat
        self.push_t: list[int] = []   # push cycle of each word
        self.beat_out: list[int] = [] # cycle each beat leaves the FIFO (its last word's push)
        self.lock_end = -1            # last beat of the current burst
        self.pops = 0                 # words popped by the decoder (before the current cycle)
        self.events: list[int] = []   # heap of cycles at which the fetch state changes
        self.bursts: list[tuple[int, int, int]] = []   # (decision, beats, last beat)

    def available(self, w: int, c: int) -> bool:
        """Word `w` may be popped in cycle `c`."""
        return w < len(self.push_t) and c >= self.push_t[w] + 1

    def more(self, c: int) -> bool:
        """Words are left to fetch in cycle c (the RTL's ``more``: a word
        leaves the count in the cycle it is pushed into the queue)."""
        return not (len(self.push_t) == self.n and (self.n == 0 or self.push_t[-1] < c))

    def locked(self, c: int) -> bool:
        """A fetch burst is in flight in cycle `c`."""
        return c <= self.lock_end

    def holds_loads(self, c: int) -> bool:
        """A fetch burst in flight in cycle `c` holds a DMA LOAD: to its last
        beat with several memory ports (:func:`loads_wait_whole_burst`),
        else until a beat of it has arrived (before `c`) and at most
        :data:`LOAD_TAIL` are owed (``rtl/fsa_fetch.py`` ``tail``)."""
        if c > self.lock_end:
            return False
        if self.whole:
            return True
        _, n, last = self.bursts[-1]
        first = last - n + 1
        return not (c > first and last - c + 1 <= LOAD_TAIL)

    def _count(self, times: list[int], c: int) -> int:
        """How many of the (sorted) `times` are before `c`."""
        return bisect.bisect_left(times, c)

    def try_issue(self, c: int, load_blocked: bool) -> bool:
        """Issue the next burst in cycle `c` if the RTL would; True if it did."""
        if self.issued >= self.beats or c <= self.lock_end or load_blocked:
            return False
        to4k = (4096 - self.addr % 4096) // self.BB
        L = min(self.BM, self.beats - self.issued, to4k)
        arrived = self._count(self.beat_t, c)
        if arrived - self._count(self.beat_out, c) + L > self.D:
            return False
        need = self.Q if self.BM * self.W > self.Q else L * self.W
        if self._room(c) < need:
            return False
        first = c + self.t.first
        for j in range(L):
            self.beat_t.append(first + j)
            heapq.heappush(self.events, first + j + 1)
        self.issued += L
        self.addr += L * self.BB
        self.lock_end = first + L - 1
        self.bursts.append((c, L, self.lock_end))
        heapq.heappush(self.events, self.lock_end + 1)
        last_word = min(self.n, self.issued * self.W)
        for w in range(len(self.push_t), last_word):
            p = self.beat_t[w // self.W] + 1
            if self.push_t:
                p = max(p, self.push_t[-1] + 1)
            self.push_t.append(p)
            heapq.heappush(self.events, p + 1)
            if (w + 1) % self.W == 0 or w + 1 == self.n:
                self.beat_out.append(p)
        return True

    def _room(self, c: int) -> int:
        """Free queue words minus the words held (qf16 - held)."""
        pushed = self._count(self.push_t, c)
        arrived = self._count(self.beat_t, c)
        return (self.Q - (pushed - self.pops)) - (self.W * arrived - pushed)

    def next_event(self, c: int) -> "int | None":
        """The first cycle after `c` at which the fetch state changes by itself."""
        while self.events and self.events[0] <= c:
            heapq.heappop(self.events)
        return self.events[0] if self.events else None
