"""Performance counters of the matrix engine (a part of ``fsa_core``): the
reference's ten 32-bit counters (``fsa.hw.regs.COUNTERS``, registers
0x0C-0x30), wrapping at 2^32.  ``start`` from DONE clears them all.

==============  ===========================================================
counter         counts cycles / events
==============  ===========================================================
exec            cycles in ACTIVE
bubble          ACTIVE cycles with the matrix controller idle
mx_active       cycles with the matrix controller busy
dma_active      cycles with the DMA engine busy or a DMA instruction in flight
words, deq      words popped from the queue
mx, dma         matrix / DMA instructions issued
fence           fences retired (``fence_done``)
enq             words pushed into the queue
==============  ===========================================================
"""
from __future__ import annotations

from myhdl import ResetSignal, always_seq, block

from fsa.hw.regs import COUNTER_BITS, COUNTERS, STATE_BITS, State
from rtl.convert import convert_block, sig

MODULE = "fsa_counters"


@block
def fsa_counters(clk, rst, start, state, mx_busy, dma_busy, dm_inflight, pop, push, mx_issue,
                 dm_issue, fence_done, cnt_exec, cnt_bubble, cnt_mx_active, cnt_dma_active,
                 cnt_words, cnt_mx, cnt_dma, cnt_fence, cnt_enq, cnt_deq):
    """The counters; see the module docstring."""
    ACTIVE, DONE = int(State.ACTIVE), int(State.DONE)

    @always_seq(clk.posedge, reset=rst)
    def count():
        if start and state == DONE:
            cnt_exec.next = 0
            cnt_bubble.next = 0
            cnt_mx_active.next = 0
            cnt_dma_active.next = 0
            cnt_words.next = 0
            cnt_mx.next = 0
            cnt_dma.next = 0
            cnt_fence.next = 0
            cnt_enq.next = 0
            cnt_deq.next = 0
        else:
            # (32-bit registers: + 1 wraps at 2^32)
            if state == ACTIVE:
                cnt_exec.next = cnt_exec + 1
                if not mx_busy:
                    cnt_bubble.next = cnt_bubble + 1
            if mx_busy:
                cnt_mx_active.next = cnt_mx_active + 1
            if dma_busy or dm_inflight:
                cnt_dma_active.next = cnt_dma_active + 1
            if pop:
                cnt_words.next = cnt_words + 1
                cnt_deq.next = cnt_deq + 1
            if mx_issue:
                cnt_mx.next = cnt_mx + 1
            if dm_issue:
                cnt_dma.next = cnt_dma + 1
            if fence_done:
                cnt_fence.next = cnt_fence + 1
            if push:
                cnt_enq.next = cnt_enq + 1

    return count


def ports(cfg=None) -> dict:
    p = dict(clk=sig(1), rst=ResetSignal(0, active=1, isasync=False), start=sig(1),
             state=sig(STATE_BITS), mx_busy=sig(1), dma_busy=sig(1), dm_inflight=sig(1),
             pop=sig(1), push=sig(1), mx_issue=sig(1), dm_issue=sig(1), fence_done=sig(1))
    for c in COUNTERS:
        p[f"cnt_{c}"] = sig(COUNTER_BITS)
    return p


OUTPUTS = {f"cnt_{c}" for c in COUNTERS}


def convert(outdir, cfg=None):
    p = ports(cfg)
    return convert_block(lambda: fsa_counters(**p), MODULE, outdir)
