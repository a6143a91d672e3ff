"""Semaphores of the matrix engine (a part of ``fsa_core``).

``fsa.hw.isa.SEM_IDS`` semaphores, each a value of ``SEM_VALUE_BITS`` bits
and a *held* flag.  An instruction whose header has ``acquire_valid`` may
issue only when its semaphore holds exactly ``acquire_value`` and is not
held; issuing takes it (held).  When both pending instructions would take
the same semaphore in one cycle, the matrix one does (``dm_acq_ok`` is low
while ``mx_issue`` takes it), so a semaphore never has two holders.  A release (from the matrix controller when
its instruction finishes, or from the DMA engine's ``done`` for the DMA
instruction in flight) writes the release value and frees it.  A release
and a take of the same semaphore in one cycle: the release wins.

Ports::

    mx_acq_valid, mx_sem_id, mx_acq_value   header of the pending matrix instruction
    dm_acq_valid, dm_sem_id, dm_acq_value   header of the pending DMA instruction
    mx_acq_ok, dm_acq_ok                    its acquire would succeed now (or it
                                            does not acquire)
    mx_issue, dm_issue                      the pending instruction issues this cycle
    mx_rel_valid, mx_rel_id, mx_rel_value   release pulse of the matrix controller
    dm_rel_valid, dm_rel_id, dm_rel_value   release of the finishing DMA instruction
    mx_sem_cur, dm_sem_cur                  the value semaphore mx_sem_id / dm_sem_id
                                            holds now (the deadlock report)
    fresh                                   a fresh program (start, end of an abort):
                                            every semaphore 0 and free (wins over a
                                            release in the same cycle; the engines
                                            are idle then, so there is none)

UD configurations (``cfg.dataflow == "ud"``) add a second and a third matrix
release, ``mx2_rel_*`` and ``mx3_rel_*``: with ``early_release`` (docs/ud.md)
the controller's two instruction slots may release in the same cycle (slot 0
on ``mx_rel_*``, slot 1 on ``mx2_rel_*``), and so may its third slot
(NORM_SCALE / NORM, ``mx3_rel_*``); all take effect, as in the cycle model;
a matrix release wins over the DMA's.
"""
from __future__ import annotations

from myhdl import ResetSignal, Signal, always_comb, always_seq, block, intbv

from fsa.hw.isa import SEM_IDS, SEM_VALUE_BITS
from rtl.convert import convert_block, sig

MODULE = "fsa_sem"
ID_BITS = (SEM_IDS - 1).bit_length()


@block
def fsa_sem(clk, rst, mx_acq_valid, mx_sem_id, mx_acq_value, dm_acq_valid, dm_sem_id,
            dm_acq_value, mx_acq_ok, dm_acq_ok, mx_issue, dm_issue, mx_rel_valid, mx_rel_id,
            mx_rel_value, dm_rel_valid, dm_rel_id, dm_rel_value, mx_sem_cur, dm_sem_cur, fresh,
            mx2_rel_valid=None, mx2_rel_id=None, mx2_rel_value=None, mx3_rel_valid=None,
            mx3_rel_id=None, mx3_rel_value=None):
    """The semaphores; see the module docstring."""
    N = SEM_IDS
    sem_val = [Signal(intbv(0)[SEM_VALUE_BITS:]) for _ in range(N)]
    sem_held = [Signal(bool(0)) for _ in range(N)]
    # one-hot (bit i: semaphore i) takes and releases of this cycle
    take_mx, take_dm, rel_mx, rel_dm = sig(N), sig(N), sig(N), sig(N)

    @always_comb
    def acquire_check():
        mx_acq_ok.next = (not mx_acq_valid) or (sem_val[mx_sem_id] == mx_acq_value
                                                and not sem_held[mx_sem_id])
        # both engines taking one semaphore in one cycle: the matrix engine gets it
        # (two holders would break "held"; found by tb/faults/test_fault_fuzz.py)
        dm_acq_ok.next = (not dm_acq_valid) or (sem_val[dm_sem_id] == dm_acq_value
                                                and not sem_held[dm_sem_id]
                                                and not (mx_issue and mx_acq_valid
                                                         and mx_sem_id == dm_sem_id))
        mx_sem_cur.next = sem_val[mx_sem_id]
        dm_sem_cur.next = sem_val[dm_sem_id]

    @always_comb
    def select():
        take_mx.next = 0
        take_dm.next = 0
        rel_mx.next = 0
        rel_dm.next = 0
        if mx_issue and mx_acq_valid:
            take_mx.next = 1 << mx_sem_id
        if dm_issue and dm_acq_valid:
            take_dm.next = 1 << dm_sem_id
        if mx_rel_valid:
            rel_mx.next = 1 << mx_rel_id
        if dm_rel_valid:
            rel_dm.next = 1 << dm_rel_id

    @always_seq(clk.posedge, reset=rst)
    def update():
        for i in range(N):
            if fresh:
                sem_val[i].next = 0
                sem_held[i].next = False
            elif rel_mx[i]:
                sem_val[i].next = mx_rel_value
                sem_held[i].next = False
            elif rel_dm[i]:
                sem_val[i].next = dm_rel_value
                sem_held[i].next = False
            elif take_mx[i] or take_dm[i]:
                sem_held[i].next = True

    if mx2_rel_valid is None:
        return acquire_check, select, update
    rel_mx2, rel_mx3 = sig(N), sig(N)

    @always_comb
    def select2():
        rel_mx2.next = 0
        if mx2_rel_valid:
            rel_mx2.next = 1 << mx2_rel_id
        rel_mx3.next = 0
        if mx3_rel_valid:
            rel_mx3.next = 1 << mx3_rel_id

    @always_seq(clk.posedge, reset=rst)
    def update2():
        for i in range(N):
            if fresh:
                sem_val[i].next = 0
                sem_held[i].next = False
            elif rel_mx[i]:
                sem_val[i].next = mx_rel_value
                sem_held[i].next = False
            elif rel_mx2[i]:
                sem_val[i].next = mx2_rel_value
                sem_held[i].next = False
            elif rel_mx3[i]:
                sem_val[i].next = mx3_rel_value
                sem_held[i].next = False
            elif rel_dm[i]:
                sem_val[i].next = dm_rel_value
                sem_held[i].next = False
            elif take_mx[i] or take_dm[i]:
                sem_held[i].next = True
    return acquire_check, select, select2, update2


def ports(cfg=None) -> dict:
    return dict(clk=sig(1), rst=ResetSignal(0, active=1, isasync=False),
                mx_acq_valid=sig(1), mx_sem_id=sig(ID_BITS), mx_acq_value=sig(SEM_VALUE_BITS),
                dm_acq_valid=sig(1), dm_sem_id=sig(ID_BITS), dm_acq_value=sig(SEM_VALUE_BITS),
                mx_acq_ok=sig(1), dm_acq_ok=sig(1), mx_issue=sig(1), dm_issue=sig(1),
                mx_rel_valid=sig(1), mx_rel_id=sig(ID_BITS), mx_rel_value=sig(SEM_VALUE_BITS),
                dm_rel_valid=sig(1), dm_rel_id=sig(ID_BITS), dm_rel_value=sig(SEM_VALUE_BITS),
                mx_sem_cur=sig(SEM_VALUE_BITS), dm_sem_cur=sig(SEM_VALUE_BITS), fresh=sig(1),
                **(dict(mx2_rel_valid=sig(1), mx2_rel_id=sig(ID_BITS),
                        mx2_rel_value=sig(SEM_VALUE_BITS), mx3_rel_valid=sig(1),
                        mx3_rel_id=sig(ID_BITS), mx3_rel_value=sig(SEM_VALUE_BITS))
                   if cfg is not None and cfg.dataflow == "ud" else {}))


OUTPUTS = {"mx_acq_ok", "dm_acq_ok", "mx_sem_cur", "dm_sem_cur"}


def convert(outdir, cfg=None):
    p = ports(cfg)
    return convert_block(lambda: fsa_sem(**p), MODULE, outdir)
