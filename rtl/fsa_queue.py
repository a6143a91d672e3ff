"""Instruction queue of the matrix engine (a part of ``fsa_core``).

A FIFO of ``cfg.inst_queue_size`` 32-bit instruction words: the control port
pushes, the decoder pops.

Ports::

    inst_valid, inst_word   push request and word (from the control port)
    inst_ready              the queue has room (``count < Q``)
    push                    a word is written this cycle (valid and ready)
    pop                     the decoder takes ``head`` this cycle
    head                    the oldest word (combinational read)
    nonempty                ``count > 0``
    q_free                  free words, ``Q - count``
    q_used                  words waiting, ``count``
    clear                   empty the queue (an abort's last cycle; no push or
                            pop happens in that cycle)

Timing: a pushed word is visible at ``head`` from the next cycle; push and
pop in the same cycle leave the count unchanged.
"""
from __future__ import annotations

from myhdl import ResetSignal, Signal, always, always_comb, always_seq, block, intbv

from rtl.convert import convert_block, sig

MODULE = "fsa_queue"


def ptr_bits(cfg) -> int:
    """Bits of a queue pointer (the count has one more)."""
    return (cfg.inst_queue_size - 1).bit_length()


@block
def fsa_queue(clk, rst, inst_valid, inst_ready, inst_word, push, pop, head, nonempty, q_free,
              q_used, clear, cfg=None):
    """The instruction queue; see the module docstring."""
    Q = cfg.inst_queue_size
    QB = ptr_bits(cfg)
    LAST = Q - 1
    qmem = [Signal(intbv(0)[32:]) for _ in range(Q)]
    wp, rp = sig(QB), sig(QB)
    count = sig(QB + 1)

    @always(clk.posedge)
    def qwrite():
        if push:
            qmem[wp].next = inst_word

    @always_comb
    def qhead():
        head.next = qmem[rp]
        inst_ready.next = count < Q
        push.next = inst_valid and count < Q
        nonempty.next = count > 0
        q_free.next = Q - count
        q_used.next = count

    @always_seq(clk.posedge, reset=rst)
    def pointers():
        if clear:
            wp.next = 0
            rp.next = 0
            count.next = 0
        else:
            if push:
                if wp == LAST:
                    wp.next = 0
                else:
                    wp.next = wp + 1
            if pop:
                if rp == LAST:
                    rp.next = 0
                else:
                    rp.next = rp + 1
            if push and not pop:
                count.next = count + 1
            elif pop and not push:
                count.next = count - 1

    return qwrite, qhead, pointers


def ports(cfg) -> dict:
    QB = ptr_bits(cfg)
    return dict(clk=sig(1), rst=ResetSignal(0, active=1, isasync=False), inst_valid=sig(1),
                inst_ready=sig(1), inst_word=sig(32), push=sig(1), pop=sig(1), head=sig(32),
                nonempty=sig(1), q_free=sig(QB + 1), q_used=sig(QB + 1), clear=sig(1))


OUTPUTS = {"inst_ready", "push", "head", "nonempty", "q_free", "q_used"}


def convert(outdir, cfg):
    p = ports(cfg)
    return convert_block(lambda: fsa_queue(**p, cfg=cfg), MODULE, outdir)
