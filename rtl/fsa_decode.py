"""Instruction decoder of the matrix engine (a part of ``fsa_core``).

Collects the words of one instruction from the queue and classifies it; the
bit positions come from the ISA field table (``fsa/hw/isa.py``), which
:func:`field_signal` turns into Verilog slices for every unit that reads an
instruction field.

Ports::

    run                     the device runs (ACTIVE, not aborting): words are
                            popped only then
    fresh                   a fresh program (a start or the end of an abort):
                            drop a partly collected or decoded instruction and
                            restart the index at 0
    head, nonempty, pop     the queue's oldest word; pop it this cycle
    take                    the dispatcher consumes the complete instruction
    dec_full                a complete instruction is in w0..w3
    w0, w1, w2, w3          its words (word 0 first; unused words keep old values)
    inst_idx                its index in the program (counts taken instructions)
    to_mx, to_dma           complete and a matrix / DMA instruction with a valid
                            function code
    is_fence                complete and a fence
    bad_func                complete and an unknown matrix / DMA function code
                            (matrix: above 4, or above 10 on a UD configuration)
    illegal_type            word 0 of the instruction being collected has an
                            unknown type (the decoder pops no further word;
                            the core stops with ILLEGAL_TYPE once the older
                            instructions have settled, fsa/hw/errors.py)

Timing: a word popped at cycle t is in ``w*`` from t+1; the cycle the last
word is popped sets ``dec_full`` at the edge; ``take`` clears it at the edge.
"""
from __future__ import annotations

from myhdl import ConcatSignal, ResetSignal, always_comb, always_seq, block

from fsa.hw import isa as hwisa
from rtl.convert import convert_block, sig

MODULE = "fsa_decode"
#: bits of the instruction index (the error register's [31:16])
IDX_BITS = 16


def field_signal(words, kind: str, name: str):
    """A (shadow) signal carrying field `name` of instruction type `kind`
    (fsa.hw.isa) read from the word signals `words` (word 0 first)."""
    f = hwisa.field(kind, name)
    parts = []
    for w, hi, lo in f.parts:
        parts.append(words[w](lo) if hi == lo and len(f.parts) == 1 else words[w](hi + 1, lo))
    return parts[0] if len(parts) == 1 else ConcatSignal(*parts)


def type_signal(word0):
    """The type field (fsa.hw.isa.TYPE_FIELD) of a first word."""
    t = hwisa.TYPE_FIELD
    return word0(t.hi + 1, t.lo)


@block
def fsa_decode(clk, rst, run, fresh, head, nonempty, pop, take, dec_full, w0, w1, w2, w3, inst_idx,
               to_mx, to_dma, is_fence, bad_func, illegal_type, cfg=None):
    """The decoder; see the module docstring."""
    T_FENCE, T_MX, T_DMA = hwisa.TYPES["FENCE"], hwisa.TYPES["MATRIX"], hwisa.TYPES["DMA"]
    N_MX, N_DMA = hwisa.WORDS["MATRIX"], hwisa.WORDS["DMA"]
    # the largest matrix code: 4, or 10 on a UD configuration (fsa.hw.isa.mx_func_max)
    MX_MAX = hwisa.mx_func_max(cfg.dataflow if cfg is not None else "reference")
    DMA_MAX = hwisa.field("DMA", "func").range[1]
    head_type = type_signal(head)
    w0_type = type_signal(w0)
    mx_func = field_signal((w0,), "MATRIX", "func")
    dma_func = field_signal((w0,), "DMA", "func")
    have = sig(3)                 # words collected for the current instruction
    need = sig(3)                 # words the current instruction needs
    @always_comb
    def classify():
        to_mx.next = dec_full and w0_type == T_MX and mx_func <= MX_MAX
        to_dma.next = dec_full and w0_type == T_DMA and dma_func <= DMA_MAX
        bad_func.next = dec_full and ((w0_type == T_MX and mx_func > MX_MAX)
                                      or (w0_type == T_DMA and dma_func > DMA_MAX))
        is_fence.next = dec_full and w0_type == T_FENCE

    @always_comb
    def pop_word():
        # the type of the first word decides the length; an unknown type
        # stops the decoder on that word (fsa/hw/errors.py PRECEDENCE: the
        # fault waits until the older instructions have settled)
        bad_type = have > 0 and w0_type > T_DMA
        pop.next = run and nonempty and not dec_full and not bad_type
        illegal_type.next = bad_type

    @always_seq(clk.posedge, reset=rst)
    def collect():
        if pop:
            if have == 0:
                w0.next = head
            elif have == 1:
                w1.next = head
            elif have == 2:
                w2.next = head
            else:
                w3.next = head
            if have == 0:
                if head_type == T_FENCE:
                    dec_full.next = True
                    have.next = 0
                elif head_type == T_MX or head_type == T_DMA:
                    have.next = 1
                    if head_type == T_MX:
                        need.next = N_MX
                    else:
                        need.next = N_DMA
                else:
                    have.next = 1
                    need.next = 1
            else:
                if have + 1 == need:
                    dec_full.next = True
                    have.next = 0
                else:
                    have.next = have + 1
        if take:
            dec_full.next = False
            inst_idx.next = inst_idx + 1
        if fresh:
            have.next = 0
            dec_full.next = False
            inst_idx.next = 0

    return classify, pop_word, collect


def ports(cfg=None) -> dict:
    return dict(clk=sig(1), rst=ResetSignal(0, active=1, isasync=False), run=sig(1), fresh=sig(1),
                head=sig(32), nonempty=sig(1), pop=sig(1), take=sig(1), dec_full=sig(1),
                w0=sig(32), w1=sig(32), w2=sig(32), w3=sig(32), inst_idx=sig(IDX_BITS),
                to_mx=sig(1), to_dma=sig(1), is_fence=sig(1), bad_func=sig(1),
                illegal_type=sig(1))


OUTPUTS = {"pop", "dec_full", "w0", "w1", "w2", "w3", "inst_idx", "to_mx", "to_dma", "is_fence",
           "bad_func", "illegal_type"}


def convert(outdir, cfg=None):
    p = ports(cfg)
    return convert_block(lambda: fsa_decode(**p, cfg=cfg), MODULE, outdir)
