"""Device state, error register, abort and deadlock detection of the matrix
engine (a part of ``fsa_core``).

States and codes are the contract's (``fsa/hw/regs.py`` State and the
restart/abort rules in its docstring; ``fsa/hw/errors.py`` codes, the
deadlock rules and DEADLOCK_CYCLES / IDLE_CYCLES).

Start.  ``start`` in IDLE or DONE (not while aborting) is accepted:
``restart`` pulses (the semaphores, the decoder's index and the counters
start afresh, ``fresh``) and the state becomes ACTIVE with the error register
cleared.  A start while ACTIVE or in ERROR is ignored.

Abort.  ``abort_req`` (a pulse, any state) sets ``aborting`` and the state ACTIVE; ``run``
(ACTIVE and not aborting, what lets the decoder and the dispatcher work) is
low from then on, the DMA engine sees ``aborting`` (it issues no new burst
and drains the ones in flight).  When nothing runs any more (``drained``: no
matrix slot busy, the DMA idle, no DMA instruction in flight) ``clear``
pulses (queue emptied, pending instructions dropped, ``fresh``, a CMP RESET)
and the state becomes IDLE with the error register cleared.

While running, the first of these (in this priority) ends the program
(the order of ``fsa.hw.errors.PRECEDENCE``; the faults of the decoder and
of the pending matrix instruction wait until the older instructions have
settled, so that an older DMA instruction's error comes first: ``settled``
is ``quiet`` below, ``settled_rng`` the same without the pending matrix
instruction, which is the faulty one and never issues):

=====================================  ======  ==================================
condition                              state   code, index
=====================================  ======  ==================================
``mx_range_bad`` and ``settled_rng``   ERROR   SRAM_RANGE, the pending matrix
                                               instruction's index (older than
                                               the decoder's)
``illegal_type`` (and not dec_full)    ERROR   ILLEGAL_TYPE, the decoder's index
and ``settled``
``bad_func`` and ``settled``           ERROR   ILLEGAL_FUNC, the decoder's index
``dma_err``                            ERROR   DMA_CODE_BASE + ``dma_err_code``,
                                               the DMA instruction in flight
``fetch_err``                          ERROR   FETCH_RD_ERR (``fetch_err_code``
                                               0) or FETCH_RANGE (1), the
                                               decoder's index
``stop_go``                            DONE    (unchanged)
blocked for DEADLOCK_CYCLES            ERROR   DEADLOCK, the oldest pending
                                               instruction; ``wait`` its semaphore
dry for IDLE_CYCLES, or dry and        ERROR   DEADLOCK as above if an instruction
``fetch_end``                                  is pending, else NO_STOP with the
                                               decoder's index
=====================================  ======  ==================================

``quiet``: no matrix slot busy, no DMA busy or in flight, and each pending
instruction's acquire fails.  ``blocked``: quiet and either the decoder
holds a complete instruction it does not hand on this cycle, or both engines'
pending registers are full (no later instruction can reach an engine to
release their semaphores, whatever the host pushes).  ``dry``: quiet, the
decoder holds no complete instruction, the queue is empty, nothing is
pushed and the fetch unit has no words still to deliver (``fetch_more``; with
``fetch_end`` every word of a fetched program is in, so a dry program can
never get its stop: it ends at once).  ``drained`` (the end of an abort) also
waits for the fetch unit's burst in flight (``fetch_busy``).  Each has its own counter of consecutive cycles (reset when the
condition drops, and while not running).
"""
from __future__ import annotations

from myhdl import ResetSignal, always_comb, always_seq, block, concat

from fsa.hw.errors import CODES, DEADLOCK_CYCLES, DMA_CODE_BASE, ERR_BITS, IDLE_CYCLES
from fsa.hw.isa import SEM_VALUE_BITS
from fsa.hw.regs import STATE_BITS, State
from rtl.convert import convert_block, sig
from rtl.fsa_decode import IDX_BITS
from rtl.fsa_sem import ID_BITS

MODULE = "fsa_status"
DMA_ERR_BITS = 3
#: bits of the wait register: sem id, value waited for, value held
WAIT_BITS = ID_BITS + 2 * SEM_VALUE_BITS


@block
def fsa_status(clk, rst, start, abort_req, dec_full, illegal_type, bad_func, mx_range_bad, dma_err,
               dma_err_code, stop_go, inst_idx, mx_idx, dm_fidx, state, err_code, err_index,
               run, aborting, restart, clear, fresh, err_wait, take, nonempty, push, mx_busy,
               dma_busy, dm_inflight, mx_pend, dm_pend, dm_idx, mx_acq_ok, dm_acq_ok,
               mx_sem_id, mx_acq_value, mx_sem_cur, dm_sem_id, dm_acq_value, dm_sem_cur,
               fetch_more, fetch_end, fetch_busy, fetch_err, fetch_err_code):
    """The state machine and error register; see the module docstring."""
    IDLE, ACTIVE, DONE, ERROR = (int(s) for s in (State.IDLE, State.ACTIVE, State.DONE,
                                                   State.ERROR))
    E_TYPE, E_FUNC, E_RANGE = CODES["ILLEGAL_TYPE"], CODES["ILLEGAL_FUNC"], CODES["SRAM_RANGE"]
    E_DEAD, E_NOSTOP = CODES["DEADLOCK"], CODES["NO_STOP"]
    E_FRD, E_FRANGE = CODES["FETCH_RD_ERR"], CODES["FETCH_RANGE"]
    BASE = DMA_CODE_BASE
    DL_LAST, IDLE_LAST = DEADLOCK_CYCLES - 1, IDLE_CYCLES - 1
    dl_cnt = sig(max(1, DL_LAST.bit_length()))
    idle_cnt = sig(max(1, IDLE_LAST.bit_length()))
    abort_r = sig(1)
    blocked, dry, drained, mx_oldest = sig(1), sig(1), sig(1), sig(1)
    settled, settled_rng = sig(1), sig(1)

    @always_comb
    def conditions():
        run.next = state == ACTIVE and not abort_r
        aborting.next = abort_r
        restart.next = start and (state == IDLE or state == DONE) and not abort_r
        d = not mx_busy and not dma_busy and not dm_inflight and not fetch_busy
        drained.next = d
        clear.next = abort_r and d
        fresh.next = (abort_r and d) or (start and (state == IDLE or state == DONE)
                                         and not abort_r)
        q = d and (not mx_pend or not mx_acq_ok) and (not dm_pend or not dm_acq_ok)
        # a decode fault waits for the older instructions to settle (quiet);
        # a range fault too, but its own pending matrix instruction never issues
        settled.next = q
        settled_rng.next = d and (not dm_pend or not dm_acq_ok)
        blocked.next = q and ((dec_full and not take) or (mx_pend and dm_pend))
        dry.next = q and not dec_full and not nonempty and not push and not fetch_more
        mx_oldest.next = mx_pend and (not dm_pend or mx_idx < dm_idx)

    @always_seq(clk.posedge, reset=rst)
    def seq():
        running = state == ACTIVE and not abort_r
        if running and blocked:
            if dl_cnt != DL_LAST:
                dl_cnt.next = dl_cnt + 1
        else:
            dl_cnt.next = 0
        if running and dry:
            if idle_cnt != IDLE_LAST:
                idle_cnt.next = idle_cnt + 1
        else:
            idle_cnt.next = 0
        if abort_req and not abort_r:
            abort_r.next = True
            state.next = ACTIVE
        elif abort_r:
            if drained:
                abort_r.next = False
                state.next = IDLE
                err_code.next = 0
                err_index.next = 0
                err_wait.next = 0
        elif start and (state == IDLE or state == DONE):
            state.next = ACTIVE
            err_code.next = 0
            err_index.next = 0
            err_wait.next = 0
        elif state == ACTIVE:
            if mx_range_bad and settled_rng:     # older than what the decoder holds
                state.next = ERROR
                err_code.next = E_RANGE
                err_index.next = mx_idx
            elif illegal_type and not dec_full and settled:
                state.next = ERROR
                err_code.next = E_TYPE
                err_index.next = inst_idx
            elif bad_func and settled:
                state.next = ERROR
                err_code.next = E_FUNC
                err_index.next = inst_idx
            elif dma_err:
                state.next = ERROR
                err_code.next = BASE + dma_err_code
                err_index.next = dm_fidx
            elif fetch_err:
                state.next = ERROR
                if fetch_err_code:
                    err_code.next = E_FRANGE
                else:
                    err_code.next = E_FRD
                err_index.next = inst_idx
            elif stop_go:
                state.next = DONE
            elif ((blocked and dl_cnt == DL_LAST) or (dry and idle_cnt == IDLE_LAST)
                  or (dry and fetch_end)):
                state.next = ERROR
                if mx_pend or dm_pend:
                    err_code.next = E_DEAD
                    if mx_oldest:
                        err_index.next = mx_idx
                        err_wait.next = concat(mx_sem_cur, mx_acq_value, mx_sem_id)
                    else:
                        err_index.next = dm_idx
                        err_wait.next = concat(dm_sem_cur, dm_acq_value, dm_sem_id)
                else:
                    err_code.next = E_NOSTOP
                    err_index.next = inst_idx

    return conditions, seq


def ports(cfg=None) -> dict:
    return dict(clk=sig(1), rst=ResetSignal(0, active=1, isasync=False), start=sig(1),
                abort_req=sig(1), dec_full=sig(1), illegal_type=sig(1), bad_func=sig(1),
                mx_range_bad=sig(1), dma_err=sig(1), dma_err_code=sig(DMA_ERR_BITS),
                stop_go=sig(1), inst_idx=sig(IDX_BITS), mx_idx=sig(IDX_BITS),
                dm_fidx=sig(IDX_BITS), state=sig(STATE_BITS), err_code=sig(ERR_BITS),
                err_index=sig(IDX_BITS), run=sig(1), aborting=sig(1), restart=sig(1),
                clear=sig(1), fresh=sig(1), err_wait=sig(WAIT_BITS), take=sig(1),
                nonempty=sig(1), push=sig(1), mx_busy=sig(1), dma_busy=sig(1),
                dm_inflight=sig(1), mx_pend=sig(1), dm_pend=sig(1), dm_idx=sig(IDX_BITS),
                mx_acq_ok=sig(1), dm_acq_ok=sig(1), mx_sem_id=sig(ID_BITS),
                mx_acq_value=sig(SEM_VALUE_BITS), mx_sem_cur=sig(SEM_VALUE_BITS),
                dm_sem_id=sig(ID_BITS), dm_acq_value=sig(SEM_VALUE_BITS),
                dm_sem_cur=sig(SEM_VALUE_BITS), fetch_more=sig(1), fetch_end=sig(1),
                fetch_busy=sig(1), fetch_err=sig(1), fetch_err_code=sig(1))


OUTPUTS = {"state", "err_code", "err_index", "run", "aborting", "restart", "clear", "fresh",
           "err_wait"}


def convert(outdir, cfg=None):
    p = ports(cfg)
    return convert_block(lambda: fsa_status(**p), MODULE, outdir)
