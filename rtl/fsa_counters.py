"""Performance counters of the matrix engine (a part of ``fsa_core``): the
reference's ten 32-bit counters (``fsa.hw.regs.COUNTERS``, registers
0x0C-0x30), wrapping at 2^32.  A start (``restart``: an accepted start,
from IDLE or DONE) clears them all except ``enq``, which becomes the words
already waiting in the queue (``q_used``, plus a push in that cycle): they
belong to the new program, so ``enq - deq`` is always the queue's occupancy
and ``words == deq``.  An abort leaves them as they are.

==============  ===========================================================
counter         counts cycles / events
==============  ===========================================================
exec            cycles the device runs (``run``: ACTIVE, not aborting)
bubble          running cycles with the matrix controller idle
mx_active       cycles with the matrix controller busy
dma_active      cycles with the DMA engine busy or a DMA instruction in flight
words, deq      words popped from the queue
mx, dma         matrix / DMA instructions issued
fence           fences retired (``fence_done``)
enq             words pushed into the queue
==============  ===========================================================
"""
from __future__ import annotations

from myhdl import ConcatSignal, ResetSignal, always_seq, block, intbv

from fsa.hw.regs import COUNTER_BITS, COUNTERS
from rtl.convert import convert_block, sig

MODULE = "fsa_counters"


@block
def fsa_counters(clk, rst, restart, run, q_used, mx_busy, dma_busy, dm_inflight, pop, push, mx_issue,
                 dm_issue, fence_done, cnt_exec, cnt_bubble, cnt_mx_active, cnt_dma_active,
                 cnt_words, cnt_mx, cnt_dma, cnt_fence, cnt_enq, cnt_deq):
    """The counters; see the module docstring."""
    enq_start = ConcatSignal(intbv(0)[COUNTER_BITS - len(q_used):], q_used)   # zero-extended
    @always_seq(clk.posedge, reset=rst)
    def count():
        if restart:
            cnt_exec.next = 0
            cnt_bubble.next = 0
            cnt_mx_active.next = 0
            cnt_dma_active.next = 0
            cnt_words.next = 0
            cnt_mx.next = 0
            cnt_dma.next = 0
            cnt_fence.next = 0
            if push:
                cnt_enq.next = enq_start + 1
            else:
                cnt_enq.next = enq_start
            cnt_deq.next = 0
        else:
            # (32-bit registers: + 1 wraps at 2^32)
            if run:
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
    qb = (cfg.inst_queue_size - 1).bit_length() + 1 if cfg is not None else 9
    p = dict(clk=sig(1), rst=ResetSignal(0, active=1, isasync=False), restart=sig(1),
             run=sig(1), q_used=sig(qb), mx_busy=sig(1), dma_busy=sig(1), dm_inflight=sig(1),
             pop=sig(1), push=sig(1), mx_issue=sig(1), dm_issue=sig(1), fence_done=sig(1))
    for c in COUNTERS:
        p[f"cnt_{c}"] = sig(COUNTER_BITS)
    return p


OUTPUTS = {f"cnt_{c}" for c in COUNTERS}


def convert(outdir, cfg=None):
    p = ports(cfg)
    return convert_block(lambda: fsa_counters(**p), MODULE, outdir)
