"""Device state and error register of the matrix engine (a part of
``fsa_core``).

States and codes are the contract's (``fsa/hw/regs.py`` State,
``fsa/hw/errors.py``).  ``start`` moves IDLE or DONE to ACTIVE.  While
ACTIVE, the first of these (in this priority) ends the program:

=====================================  ======  ==================================
condition                              state   code, index
=====================================  ======  ==================================
``illegal_type`` (and not dec_full)    ERROR   ILLEGAL_TYPE, the decoder's index
``bad_func``                           ERROR   ILLEGAL_FUNC, the decoder's index
``mx_range_bad``                       ERROR   SRAM_RANGE, the pending matrix
                                               instruction's index
``dma_err``                            ERROR   DMA_CODE_BASE + ``dma_err_code``,
                                               the DMA instruction in flight
``stop_go``                            DONE    (unchanged)
=====================================  ======  ==================================

Only a reset leaves ERROR.
"""
from __future__ import annotations

from myhdl import ResetSignal, always_seq, block

from fsa.hw.errors import CODES, DMA_CODE_BASE, ERR_BITS
from fsa.hw.regs import STATE_BITS, State
from rtl.convert import convert_block, sig
from rtl.fsa_decode import IDX_BITS

MODULE = "fsa_status"
DMA_ERR_BITS = 3


@block
def fsa_status(clk, rst, start, dec_full, illegal_type, bad_func, mx_range_bad, dma_err,
               dma_err_code, stop_go, inst_idx, mx_idx, dm_fidx, state, err_code, err_index):
    """The state machine and error register; see the module docstring."""
    IDLE, ACTIVE, DONE, ERROR = (int(s) for s in (State.IDLE, State.ACTIVE, State.DONE,
                                                   State.ERROR))
    E_TYPE, E_FUNC, E_RANGE = CODES["ILLEGAL_TYPE"], CODES["ILLEGAL_FUNC"], CODES["SRAM_RANGE"]
    BASE = DMA_CODE_BASE

    @always_seq(clk.posedge, reset=rst)
    def seq():
        if start and (state == IDLE or state == DONE):
            state.next = ACTIVE
        if state == ACTIVE:
            if illegal_type and not dec_full:
                state.next = ERROR
                err_code.next = E_TYPE
                err_index.next = inst_idx
            elif bad_func:
                state.next = ERROR
                err_code.next = E_FUNC
                err_index.next = inst_idx
            elif mx_range_bad:
                state.next = ERROR
                err_code.next = E_RANGE
                err_index.next = mx_idx
            elif dma_err:
                state.next = ERROR
                err_code.next = BASE + dma_err_code
                err_index.next = dm_fidx
            elif stop_go:
                state.next = DONE

    return seq


def ports(cfg=None) -> dict:
    return dict(clk=sig(1), rst=ResetSignal(0, active=1, isasync=False), start=sig(1),
                dec_full=sig(1), illegal_type=sig(1), bad_func=sig(1), mx_range_bad=sig(1),
                dma_err=sig(1), dma_err_code=sig(DMA_ERR_BITS), stop_go=sig(1),
                inst_idx=sig(IDX_BITS), mx_idx=sig(IDX_BITS), dm_fidx=sig(IDX_BITS),
                state=sig(STATE_BITS), err_code=sig(ERR_BITS), err_index=sig(IDX_BITS))


OUTPUTS = {"state", "err_code", "err_index"}


def convert(outdir, cfg=None):
    p = ports(cfg)
    return convert_block(lambda: fsa_status(**p), MODULE, outdir)
