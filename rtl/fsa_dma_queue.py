"""The in-flight queue of the DMA engine (``rtl/fsa_dma.py``): slot
allocation on accept, per-slot "still issuing" flags and (one port) per-slot
counts of bursts not finished, the oldest slot's ``done``, and ``cmd_ready``.
A helper that returns MyHDL instances for ``fsa_dma`` (a MyHDL block whose
logic is inlined there, not a Verilog module of its own); every signal is
``fsa_dma``'s.

In-flight queue (LOADs of one-beat rows: with longer rows the slave's AR
queue, two deep in cocotbext-axi's AxiRam, would hold the sequencer and
expose the latency in a way the cycle model does not follow).  The sequencer
is idle again the cycle after it queued an
instruction's last burst (the cycle after the check when there is none), and
the instruction waits in a queue slot (``INFLIGHT`` = 2 slots, one port; one
slot with several ports) until its bursts have finished: each slot counts
its bursts queued and not finished (a port's bursts finish in order, so a
finishing burst belongs to the oldest slot with one unfinished).  The oldest
slot with no burst left and nothing more to queue is done: ``done`` pulses
in the next cycle and the slot is free in that cycle.  A command that is not
a LOAD into the SRAM of the instructions held waits until the queue is empty
(``cmd_ready``), so the ports' direction and the SRAM they use never change
while a burst is in flight.
"""
from __future__ import annotations

from myhdl import ConcatSignal, always_comb, always_seq, block

from rtl.convert import sig

__all__ = ["inflight_queue"]


@block
def inflight_queue(clk, rst, QD, _S_IDLE, _S_CHECK, _S_RUN, _CNT_BITS, *, state, rp, wp, cur,
                   occ, iss0, iss1, h_iss, rdy, acc_cmd, seq_end, hd_done, fslot, done_r,
                   err_r, aborting, c_rep, c_size, szbad, sz_lo, srbad, rowerr, issue, second,
                   xing, left, cmd_func, cmd_is_accum, cmd_valid, c_store, c_accum, all_idle,
                   fins, cmd_size, BB):
    """The queue's logic (see the module docstring); `QD` slots (1 or 2)."""
    P = len(fins)
    insts = []
    @always_comb
    def head_sel():
        if rp:
            h_iss.next = iss1
        else:
            h_iss.next = iss0
    insts.append(head_sel)

    @always_comb
    def ending():
        if state == _S_CHECK:
            seq_end.next = (err_r or aborting or c_rep == 0 or c_size == 0 or szbad
                            or sz_lo != 0 or srbad)
        elif state == _S_RUN:
            seq_end.next = (err_r or aborting or rowerr
                            or (issue and (second or not xing) and left == 1))
        else:
            seq_end.next = 0
    insts.append(ending)

    if QD > 1:
        # one port: its bursts finish in order, so a burst count per slot
        # tells when the oldest instruction's last burst has finished
        cnt0, cnt1, h_cnt = sig(_CNT_BITS), sig(_CNT_BITS), sig(_CNT_BITS)
        fin0 = fins[0]

        @always_comb
        def admit():
            if rp:
                h_cnt.next = cnt1
            else:
                h_cnt.next = cnt0
            rdy.next = state == _S_IDLE and (occ == 0 or (
                occ < QD and not cmd_func and not c_store and cmd_is_accum == c_accum
                and c_size <= BB and cmd_size <= BB))
            acc_cmd.next = state == _S_IDLE and not aborting and cmd_valid and (occ == 0 or (
                occ < QD and not cmd_func and not c_store and cmd_is_accum == c_accum
                and c_size <= BB and cmd_size <= BB))
        insts.append(admit)

        @always_comb
        def oldest():
            hd_done.next = occ != 0 and not h_iss and h_cnt == 0
            # (nothing in flight: a stray beat or response is the oldest's error)
            if all_idle or h_iss or h_cnt != 0:
                fslot.next = rp
            else:
                fslot.next = not rp
        insts.append(oldest)

        @always_seq(clk.posedge, reset=rst)
        def counts():
            if issue and not cur and not (fin0 and not fslot):
                cnt0.next = cnt0 + 1
            elif fin0 and not fslot and not (issue and not cur):
                cnt0.next = cnt0 - 1
            if issue and cur and not (fin0 and fslot):
                cnt1.next = cnt1 + 1
            elif fin0 and fslot and not (issue and cur):
                cnt1.next = cnt1 - 1
        insts.append(counts)
    else:
        # several ports: one instruction at a time, done when every port is idle
        @always_comb
        def admit():
            rdy.next = state == _S_IDLE and occ == 0
            acc_cmd.next = state == _S_IDLE and not aborting and cmd_valid and occ == 0
        insts.append(admit)

        fin_v = ConcatSignal(*reversed(fins))
        unused_fins = sig(P)    # (the ports' idle flags tell the same here)

        @always_comb
        def oldest():
            hd_done.next = occ != 0 and not h_iss and all_idle
            fslot.next = rp
            unused_fins.next = fin_v
        insts.append(oldest)

    @always_seq(clk.posedge, reset=rst)
    def track():
        done_r.next = hd_done
        if acc_cmd:
            cur.next = wp
            wp.next = not wp
        if hd_done:
            rp.next = not rp
        if acc_cmd and not hd_done:
            occ.next = occ + 1
        elif hd_done and not acc_cmd:
            occ.next = occ - 1
        if acc_cmd and not wp:
            iss0.next = 1
        elif seq_end and not cur:
            iss0.next = 0
        if acc_cmd and wp:
            iss1.next = 1
        elif seq_end and cur:
            iss1.next = 0
    insts.append(track)
    return insts
