"""The timing inputs of the cycle model (:mod:`fsa.cycle.model`): the DMA's
calibrated timing (:class:`DmaTiming`, :data:`DEFAULT_DMA`, :data:`IDEAL_DMA`)
a host that pushes a program longer than the instruction queue
(:class:`HostPush`, :class:`HostFeed`, :data:`HARNESS_HOST`), and how a
program reaches the queue (:func:`program_feed`).
:mod:`fsa.cycle.model` re-exports them.
"""
from __future__ import annotations

from dataclasses import dataclass

from fsa import isa
from fsa.cycle.fetch import FetchTiming, program_address

__all__ = ["DmaTiming", "DEFAULT_DMA", "IDEAL_DMA", "HostPush", "HostFeed", "HARNESS_HOST",
           "PROGRAM_FEEDS", "program_feed"]


@dataclass(frozen=True)
class DmaTiming:
    """DMA timing relative to the cycle ``c`` the engine accepts an instruction.

    Each AXI beat needs one cycle of the SRAM's narrow port, which is lost in
    any cycle where the matrix engine uses the same SRAM bank (the array
    port wins, rtl/fsa_sram.py). Beat ``k`` may use the port from
    ``c + first + k`` (LOAD: the slave's R beat; STORE: the SRAM read for W);
    ``done`` pulses ``base - first + 1`` cycles after the last beat's access,
    so without conflicts ``done = c + base + beats``.

    A STORE whose rows are one beat each (one-beat write bursts) runs at
    ``store_single_group`` beats per ``store_single_group + 1`` cycles once
    that many are out: beat ``k`` may use the port from
    ``c + first + k + k // store_single_group``.  Measured on the RTL against
    cocotbext-axi's ``AxiRam`` (FSA4X4Fp16Config, 1..24 one-beat rows: one
    cycle lost per four bursts after the first four; two-beat rows lose
    nothing); the loss stays with a 16-deep burst FIFO or an 8-deep W FIFO
    in the DMA port, so it is the memory's write path, not the DMA's.  It is
    a per-port limit: with several ports (each its own memory) the rows
    alternate and nothing is lost (FSA4X4Fp16TwoPortConfig, 1..12 rows),
    except for a STORE whose rows overlap (``|mem_stride| < size``), which
    uses port 0 alone.  With an address FIFO in the ports (merged bursts or
    ``dma_rw_overlap``, :func:`fsa.hw.dmarules.per_port_dma`) nothing is lost
    either, on one port or several (measured: 12 one-beat rows from one SRAM
    row, mem_stride 0, on two ports of 64 bits: 27 cycles, as without the
    loss; the model said 29 with it).

    Attributes:
        load_base, store_base: fixed cycles (calibrated on DMA-only programs).
        load_first, store_first: the first beat's earliest SRAM cycle (LOAD:
            ``load_base - 1``, the RTL's "done two cycles after the last beat
            is written"; STORE: 3, the first burst's SRAM read in c3).
        store_single_group: see above (0: no such loss).
    """

    load_base: int = 6
    store_base: int = 8
    load_first: int = 5
    store_first: int = 3
    ideal: bool = False     # every DMA done the cycle after it is accepted (no beats)
    store_single_group: int = 4

    def lag(self, ins: isa.Dma, per_row: int, k: int, ports: int = 1,
            addr_fifo: bool = False) -> int:
        """Extra cycles before beat `k` of `ins` (rows of `per_row` beats) may
        go, on a DMA with `ports` AXI ports (`addr_fifo`: the ports queue
        their AW addresses in a FIFO, ``fsa.hw.dmarules.per_port_dma``; then
        nothing is lost)."""
        g = self.store_single_group
        one_port = ports == 1 or abs(ins.mem_stride) < ins.size
        if ins.func == isa.DmaFunc.STORE and per_row == 1 and g and one_port and not addr_fifo:
            return k // g
        return 0

    def base(self, ins: isa.Dma) -> int:
        return self.load_base if ins.func == isa.DmaFunc.LOAD else self.store_base

    def first(self, ins: isa.Dma) -> int:
        return self.load_first if ins.func == isa.DmaFunc.LOAD else self.store_first


#: Defaults: the values calibrate_dma() measures on the RTL with cocotbext-axi's
#: AxiRam (bench/utilisation.py recalibrates and uses its own measurement);
#: the regression (tb/attention/test_attention.py) checks the model with these against
#: the RTL's counters on every run without AXI pauses.
DEFAULT_DMA = DmaTiming()
#: A DMA that costs nothing: the matrix engine's own schedule (issue rule and
#: semaphores) alone.
IDEAL_DMA = DmaTiming(ideal=True)


@dataclass(frozen=True)
class HostPush:
    """How a host feeds a program longer than the instruction queue (depth
    ``Q``): it pushes the first ``Q`` words before ``start`` and the rest
    one AXI4-Lite write at a time while the device runs; a push to a full
    queue is held until a word leaves it (rtl/fsa_regs.py).

    Push ``k`` (word ``Q + k``) is presented to the queue in cycle ``g_k``
    (exec cycles, 0 = the first active cycle): ``g_0 = first``,
    ``g_k = e_(k-1) + period``; it is enqueued in ``e_k = max(g_k, p_k + 1)``,
    ``p_k`` being the cycle the decoder popped word ``k`` (the queue is full
    until then), and the decoder may pop it from ``e_k + 1``.

    Attributes:
        first: the cycle the first push beyond the queue's depth is presented.
        period: cycles from one push's enqueue to the next push (the
            AXI4-Lite write's B response and the host's next AW/W).
    """

    first: int
    period: int


class HostFeed:
    """The words' arrival in the queue under a :class:`HostPush`."""

    def __init__(self, host: HostPush, depth: int):
        self.host, self.depth = host, depth
        self.pops: list[int] = []      # cycle of each pop (word order)
        self.enq: list[int] = []       # enqueue cycle of word depth + k

    def arrival(self) -> int:
        """First cycle the next word (index len(pops)) may be popped."""
        k = len(self.pops) - self.depth
        if k < 0:
            return 0
        while len(self.enq) <= k:
            j = len(self.enq)
            g = self.host.first if j == 0 else self.enq[-1] + self.host.period
            self.enq.append(max(g, self.pops[j] + 1))
        return self.enq[k] + 1

    def available(self, c: int) -> bool:
        return c >= self.arrival()


#: The cocotb harness as a host (fsa/harness/device.py ``Device.run``: cocotbext-axi
#: ``AxiLiteMaster``, one push at a time, the words beyond the queue's depth
#: pushed from ``start`` on): fitted on seven FSA4X4Fp16Config attention
#: programs of 329 to 1201 words on Verilator (the only pair in first -5..29,
#: period 1..11 that gives all of their exec, bubble, mx_active and
#: dma_active counters exactly);
#: the regression checks it on every run longer than the queue
#: (tb/attention/test_attention.py ``check_cycles``).
HARNESS_HOST = HostPush(first=2, period=4)


#: how a program's words reach the instruction queue (:func:`program_feed`)
PROGRAM_FEEDS = ("fetch", "push", "queue")


def program_feed(cfg: "FSAConfig", program: str, n_words: int) -> dict:
    """The :func:`simulate` keywords for a program of `n_words` words that
    reaches the queue by `program`: "fetch" (program fetch from the top of
    the memory window, as ``fsa run``/``fsa exec``/SimEngine place it),
    "push" (AXI4-Lite pushes by the cocotb harness, :data:`HARNESS_HOST`) or
    "queue" (every word in the queue at the start: no fetch or push cost)."""
    if program == "queue":
        return {}
    if program == "push":
        return {"host": HARNESS_HOST} if n_words > cfg.inst_queue_size else {}
    if program == "fetch":
        return {"fetch": FetchTiming(program_address(cfg, n_words))}
    raise ValueError(f"program must be one of {PROGRAM_FEEDS}, got {program!r}")
