"""The DMA engine's up-front instruction checks (``rtl/fsa_dma.py``, state
CHECK): the row size against the SRAM's row bytes (``szbad``: ERR_DMA_SIZE),
the first and last SRAM row inside the SRAM (``srbad``: ERR_SRAM_RANGE; the
rows are an arithmetic sequence, so every row is then inside) and, with
several ports, whether the rows overlap so that every row must go to port 0
(``solo_c``: a LOAD with SRAM stride 0 into one row several times, a STORE
with ``|mem_stride| < size``).  A helper returning the MyHDL processes for
``fsa_dma`` (a MyHDL block whose logic is inlined there, not a Verilog
module of its own; its processes are labelled ``instruction_checks0_*``);
every signal is ``fsa_dma``'s.
"""
from __future__ import annotations

from myhdl import always_comb, block

__all__ = ["instruction_checks"]


@block
def instruction_checks(cfg, ports, *, c_accum, c_store, c_size, c_saddr, c_sneg, c_smag, c_mmag,
                       c_rep, rm1_14, smag14, prod, prod20, size21, szbad, srbad, solo_c):
    """The processes ``checks``, ``rowcheck`` and (`ports` > 1) ``overlap``
    (``prod`` = (repeat - 1) * |sram stride|, and the flags above)."""
    AROWS, SROWS = cfg.acc_rows, cfg.spad_rows
    ARB, SRB = cfg.acc_row_bytes, cfg.spad_row_bytes

    @always_comb
    def checks():
        prod.next = rm1_14 * smag14
        if c_accum:
            szbad.next = c_size > ARB
        else:
            szbad.next = c_size > SRB

    @always_comb
    def rowcheck():
        if c_accum:
            if c_sneg:
                srbad.next = (c_saddr >= AROWS or prod20 > c_saddr
                              or c_saddr - prod20 >= AROWS)
            else:
                srbad.next = c_saddr >= AROWS or c_saddr + prod20 >= AROWS
        else:
            if c_sneg:
                srbad.next = (c_saddr >= SROWS or prod20 > c_saddr
                              or c_saddr - prod20 >= SROWS)
            else:
                srbad.next = c_saddr >= SROWS or c_saddr + prod20 >= SROWS

    if ports == 1:
        return [checks, rowcheck]

    @always_comb
    def overlap():
        if c_store:
            solo_c.next = c_mmag < size21
        else:
            solo_c.next = c_smag == 0 and c_rep > 1
    return [checks, rowcheck, overlap]
