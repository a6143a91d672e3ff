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

from myhdl import ResetSignal, always_comb, block

from rtl.convert import convert_block, sig
from rtl.prim.fifo import fifo

MODULE = "fsa_queue"


def ptr_bits(cfg) -> int:
    """Bits of a queue pointer (the count has one more)."""
    return (cfg.inst_queue_size - 1).bit_length()


@block
def fsa_queue(clk, rst, inst_valid, inst_ready, inst_word, push, pop, head, nonempty, q_free,
              q_used, clear, cfg=None):
    """The instruction queue (the shared FIFO primitive, :func:`rtl.prim.fifo`,
    emptied by `rst` or `clear`); see the module docstring."""
    Q = cfg.inst_queue_size
    QB = ptr_bits(cfg)
    count = sig(QB + 1)
    qrst = ResetSignal(0, active=1, isasync=False)

    @always_comb
    def qclear():
        qrst.next = rst or clear

    ring = fifo(clk, qrst, push, inst_word, pop, head, count, Q)

    @always_comb
    def qstatus():
        inst_ready.next = count < Q
        push.next = inst_valid and count < Q
        nonempty.next = count > 0
        q_free.next = Q - count
        q_used.next = count

    return qclear, ring, qstatus


def ports(cfg) -> dict:
    QB = ptr_bits(cfg)
    return dict(clk=sig(1), rst=ResetSignal(0, active=1, isasync=False), inst_valid=sig(1),
                inst_ready=sig(1), inst_word=sig(32), push=sig(1), pop=sig(1), head=sig(32),
                nonempty=sig(1), q_free=sig(QB + 1), q_used=sig(QB + 1), clear=sig(1))


OUTPUTS = {"inst_ready", "push", "head", "nonempty", "q_free", "q_used"}


def convert(outdir, cfg):
    p = ports(cfg)
    return convert_block(lambda: fsa_queue(**p, cfg=cfg), MODULE, outdir)
