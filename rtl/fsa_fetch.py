"""Program fetch: reads a program's instruction words from memory over AXI
port 0 into the instruction queue (docs/architecture.md "Program fetch";
the host's side, registers 0x64-0x74, in ``fsa/hw/regs.py``).

Ports::

    start, fstart         the control port's start / fetch_start pulses
    state, aborting       the core's state and abort flag
    prog_addr, prog_words the fetch_lo/fetch_hi and fetch_words registers
    q_free, inst_ready    the queue's free words, and room for one word
    rd_block              a DMA LOAD runs or is accepted this cycle (rtl/fsa_rdarb.py):
                          no new burst
    f_valid, f_word       a word into the queue (the queue's write port is the
                          fetch unit's while f_valid, the host's otherwise)
    ar*, r*               AXI4 read channels (AR with ID FETCH_ID, R beats the
                          arbiter routed here by RID while ``busy``; RREADY is
                          always 1)
    fmode                 fetch mode: from an accepted fetch_start until ``flush``
    more, all_in          fetch mode, no error, words still to deliver / all delivered
    busy                  a burst is in flight (ARVALID, or R beats owed)
    tail                  a beat of the burst in flight has arrived and at most
                          ``TAIL`` are still owed (rtl/fsa_rdarb.py: a DMA LOAD
                          may then be accepted, its beats come after them)
    err, err_code         a fetch error (sticky until ``flush``): code 0 a read
                          error (RRESP != OKAY, wrong RLAST, a beat not owed),
                          1 the program's range (checked at fetch_start)
    flush                 one cycle: the fetch-mode program is over (DONE, ERROR or
                          aborting) and no burst is in flight: the queue and the
                          beat FIFO are emptied, fetch mode ends
    fetched               words delivered into the queue since the last start

Behaviour.  An accepted start (``start`` or ``fstart`` in IDLE or DONE, not
aborting: the core's rule) with ``fstart`` loads the address and the word
count and enters fetch mode; the range check (address a multiple of the beat
size ``BB``, ``[addr, addr + 4 * words)`` in the memory window) sets ``err``
with code 1 in the same edge.  While the device runs (ACTIVE, not aborting)
in fetch mode without an error, one INCR burst at a time is issued: ``L =
min(burst_beats(cfg), beats left, beats to the next 4 KiB boundary)`` beats
(full strobes, ``arsize = log2(BB)``), when the previous burst's last beat
has arrived, ``rd_block`` is low, the beat FIFO (``max(2, burst_beats)``
beats) has room for ``L`` beats, and the queue has room for the words
already held here plus ``L * W`` (``W = BB / 4`` words per beat; ``Q``, the
queue's size, instead where ``burst_beats * W > Q``): the words of a burst
always fit, so R is never stalled and a burst takes exactly its beats on the
bus.  Every R beat goes into the beat FIFO;
one word per cycle leaves the head beat into the queue (word 0 first, the
little-endian order of memory) while the device runs, no fetch error is
pending and the queue has room;
the last beat's words past the count are dropped.

Timing (a slave answering at once): burst decided in cycle ``i`` (registered
ARVALID from ``i + 1``), beat ``j`` accepted in ``i + F + j`` (``F`` is the
slave's; ``fsa.cycle.fetch.FETCH_FIRST`` for cocotbext-axi's AxiRam), in the
beat FIFO from the next cycle; word ``w`` is pushed in ``p_w = max(p_(w-1) + 1,
beat arrival + 1)`` and can be popped by the decoder from ``p_w + 1``.
``fsa/cycle/fetch.py`` (in the cycle model) models exactly this.
"""
from __future__ import annotations

from myhdl import ConcatSignal, ResetSignal, always_comb, always_seq, block, intbv

from fsa.hw.fetch import BURST_MAX, LOAD_TAIL, burst_beats  # noqa: F401 (re-exported)
from fsa.hw.regs import FETCH_HI_BITS, STATE_BITS, State
from rtl.convert import comb_expr, convert_block, sig
from rtl.prim import clog2, fifo, mux_tree, vsig, zext

MODULE = "fsa_fetch"
#: the fetch unit's AXI ID: all ones (the DMA uses ID 0)
FETCH_ID = 1
ID_BITS = 1
AXCACHE = 0b0011    # normal non-cacheable bufferable, as the DMA
AXBURST_INCR = 1
ADDR_BITS = 32 + FETCH_HI_BITS
WORDS_BITS = 32


@block
def fsa_fetch(clk, rst, start, fstart, state, aborting, prog_addr, prog_words, q_free,
              inst_ready, rd_block, f_valid, f_word,
              arid, araddr, arlen, arsize, arburst, arlock, arcache, arprot, arvalid, arready,
              rdata, rresp, rlast, rvalid, rready,
              fmode, more, all_in, busy, tail, err, err_code, flush, fetched, cfg=None):
    """The fetch unit; see the module docstring."""
    LB = cfg.axi_data_bits
    W = LB // 32
    WB = clog2(W)
    BB = LB // 8
    LBB = BB.bit_length() - 1
    AB = cfg.axi_addr_bits
    Q = cfg.inst_queue_size
    BM = burst_beats(cfg)
    D = max(2, BM)                           # beat FIFO depth (the primitive needs >= 2)
    CB = clog2(D) + 1
    LENB = clog2(BM + 1)
    MBASE, MEND = cfg.mem_base, cfg.mem_base + cfg.mem_size
    IDLE, ACTIVE, DONE, ERROR = (int(s) for s in (State.IDLE, State.ACTIVE, State.DONE,
                                                   State.ERROR))

    fm, err_r, code_r, ar_pend = sig(1), sig(1), sig(1), sig(1)
    addr = sig(AB)
    beats_left = sig(WORDS_BITS + 1)
    words_left = sig(WORDS_BITS)
    r_left = sig(LENB)
    got = sig(1)            # a beat of the burst in flight has arrived
    widx = vsig(WB)
    ar_addr, ar_len = sig(AB), sig(8)
    issue, run, acc, range_bad = sig(1), sig(1), sig(1), sig(1)
    fpush, fpop, lastw = sig(1), sig(1), sig(1)
    fhead, fcount = sig(LB), sig(CB)
    frst = ResetSignal(0, active=1, isasync=False)
    cnt = sig(WORDS_BITS)
    SHW = WB if W > 1 else 0
    # lengths in N = 16 bits (bursts, FIFO and queue words, beats to 4 KiB)
    N = 16
    lb = sig(N)                              # the next burst's length in beats
    held = sig(N)                            # words in the beat FIFO not yet pushed
    lo16 = zext(addr(12, LBB), N)            # the address's beat within its 4 KiB page
    to4k = sig(N)                            # beats to the next 4 KiB boundary
    PAGE_BEATS = 4096 >> LBB
    bl16 = sig(N)                            # beats left, saturated at 2**15
    bl_lo = zext(beats_left(N - 1, 0), N)
    WM1 = W - 1
    # the program's beats: ceil(words / W)
    beats_init = sig(WORDS_BITS + 1)
    if W > 1:
        pw_hi, pw_rem = zext(prog_words(WORDS_BITS, SHW), WORDS_BITS + 1), prog_words(SHW, 0)
        init_blk = comb_expr(beats_init, "hi + (rem != 0)", hi=pw_hi, rem=pw_rem)
    else:
        init_blk = comb_expr(beats_init, "pw", pw=zext(prog_words, WORDS_BITS + 1))
    fc16, qf16 = zext(fcount, N), zext(q_free, N)
    # words of the next burst (at most Q: the FIFO's words always fit into an empty queue)
    need = zext(ConcatSignal(lb(N - SHW, 0), intbv(0)[SHW:]), N) if SHW else lb
    room_ok = sig(1)           # the queue has room for the held words and the next burst's
    if BM * W > Q:
        room_blk = comb_expr(room_ok, f"qf >= held + {Q}", qf=qf16, held=held)
    else:
        room_blk = comb_expr(room_ok, "qf >= held + need", qf=qf16, held=held, need=need)
    # the range check in 41 bits
    pa41 = zext(prog_addr, ADDR_BITS + 2)
    pw41 = ConcatSignal(intbv(0)[ADDR_BITS - WORDS_BITS:], prog_words, intbv(0)[2:])
    prog_end = sig(ADDR_BITS + 2)
    MBASE_C, MEND_C = sig(ADDR_BITS + 2, MBASE), sig(ADDR_BITS + 2, MEND)   # constants
    lb33 = zext(lb, WORDS_BITS + 1)
    # the burst's bytes (one flat concatenation: MyHDL drops a nested one)
    lbb = ConcatSignal(intbv(0)[AB - N - LBB:], lb, intbv(0)[LBB:])

    ring = fifo(clk, frst, fpush, rdata, fpop, fhead, fcount, D)
    # the word at widx of the head beat (little-endian: word 0 in bits [31:0])
    word_sel = sig(32)
    if W > 1:
        pick = mux_tree([fhead(32 * (k + 1), 32 * k) for k in range(W)], widx, word_sel)
    else:
        pick = None
        word_sel = fhead

    @always_comb
    def len8():
        if lb != 0:
            ar_len_next.next = lb[8:0] - 1
        else:
            ar_len_next.next = 0
    ar_len_next = sig(8)

    @always_comb
    def fifo_reset():
        frst.next = rst or (fm and not ar_pend and r_left == 0
                            and (state == DONE or state == ERROR or aborting))

    @always_comb
    def limits():
        prog_end.next = pa41 + pw41
        to4k.next = PAGE_BEATS - lo16
        if beats_left[WORDS_BITS + 1:N - 1] != 0:
            bl16.next = 1 << (N - 1)
        else:
            bl16.next = bl_lo

    @always_comb
    def blen():
        if bl16 < BM and bl16 <= to4k:
            lb.next = bl16
        elif to4k < BM:
            lb.next = to4k
        else:
            lb.next = BM

    @always_comb
    def decide():
        run.next = state == ACTIVE and not aborting
        acc.next = (start or fstart) and (state == IDLE or state == DONE) and not aborting
        range_bad.next = (prog_addr[LBB:0] != 0 or pa41 < MBASE_C or prog_end > MEND_C)
        issue.next = (fm and state == ACTIVE and not aborting and not err_r and beats_left != 0
                      and not ar_pend and r_left == 0 and not rd_block
                      and fc16 + lb <= D and room_ok)
        busy.next = ar_pend or r_left != 0
        more.next = fm and not err_r and words_left != 0
        all_in.next = fm and not err_r and words_left == 0
        flush.next = fm and not ar_pend and r_left == 0 and (state == DONE or state == ERROR
                                                            or aborting)
        fmode.next = fm
        err.next = err_r
        err_code.next = code_r
        fetched.next = cnt

    @always_comb
    def words():
        v = fm and run and not err_r and fcount != 0 and words_left != 0 and inst_ready
        f_valid.next = v
        lw = widx == W - 1 or words_left == 1
        lastw.next = lw
        fpop.next = v and lw
        fpush.next = rvalid and r_left != 0

    @always_comb
    def word_out():
        f_word.next = word_sel
    @always_comb
    def axi_out():
        arid.next = FETCH_ID
        araddr.next = ar_addr
        arlen.next = ar_len
        arsize.next = LBB
        arburst.next = AXBURST_INCR
        arlock.next = 0
        arcache.next = AXCACHE
        arprot.next = 0
        arvalid.next = ar_pend
        rready.next = True

    @always_seq(clk.posedge, reset=rst)
    def prog_state():
        if acc:
            fm.next = fstart
            cnt.next = 0
            widx.next = 0
            if fstart:
                addr.next = prog_addr[AB:0]
                beats_left.next = beats_init
                words_left.next = prog_words
                err_r.next = range_bad
                code_r.next = range_bad
        elif fm and not ar_pend and r_left == 0 and (state == DONE or state == ERROR or aborting):
            fm.next = False                  # flush
            beats_left.next = 0
            words_left.next = 0
            err_r.next = False
            code_r.next = False
            widx.next = 0
        else:
            if issue:
                beats_left.next = beats_left - lb33
                addr.next = addr + lbb
            if rvalid and fm and (r_left == 0 or rresp != 0 or (rlast and r_left != 1)
                                  or (not rlast and r_left == 1)):
                err_r.next = True
                code_r.next = False
            if f_valid:
                words_left.next = words_left - 1
                cnt.next = cnt + 1
                if lastw:
                    widx.next = 0
                else:
                    widx.next = widx + 1

    @always_seq(clk.posedge, reset=rst)
    def held_count():
        if frst:
            held.next = 0
        elif fpush and not f_valid:
            held.next = held + W
        elif fpush and f_valid:
            held.next = held + WM1
        elif f_valid:
            held.next = held - 1

    @always_seq(clk.posedge, reset=rst)
    def channels():
        if issue:
            ar_pend.next = True
            ar_addr.next = addr
            ar_len.next = ar_len_next
            r_left.next = lb[LENB:0]
            got.next = False
        else:
            if ar_pend and arready:
                ar_pend.next = False
            if rvalid and r_left != 0:
                r_left.next = r_left - 1
                got.next = True

    extra = [pick] if pick is not None else []
    # (bursts of at most LOAD_TAIL beats are in their tail once a beat is in)
    if LOAD_TAIL >= BM:
        extra.append(comb_expr(tail, "got", got=got))
    else:
        extra.append(comb_expr(tail, f"got and r_left <= {LOAD_TAIL}", got=got, r_left=r_left))
    return (*extra, room_blk, init_blk, ring, len8, fifo_reset, limits, blen, decide, held_count, words, word_out, axi_out, prog_state, channels)


def ports(cfg) -> dict:
    from rtl.fsa_queue import ptr_bits
    QB = ptr_bits(cfg)
    LB = cfg.axi_data_bits
    return dict(clk=sig(1), rst=ResetSignal(0, active=1, isasync=False), start=sig(1),
                fstart=sig(1), state=sig(STATE_BITS), aborting=sig(1),
                prog_addr=sig(ADDR_BITS), prog_words=sig(WORDS_BITS), q_free=sig(QB + 1),
                inst_ready=sig(1), rd_block=sig(1), f_valid=sig(1), f_word=sig(32),
                arid=sig(ID_BITS), araddr=sig(cfg.axi_addr_bits), arlen=sig(8), arsize=sig(3),
                arburst=sig(2), arlock=sig(1), arcache=sig(4), arprot=sig(3), arvalid=sig(1),
                arready=sig(1), rdata=sig(LB), rresp=sig(2), rlast=sig(1), rvalid=sig(1),
                rready=sig(1), fmode=sig(1), more=sig(1), all_in=sig(1), busy=sig(1), tail=sig(1),
                err=sig(1),
                err_code=sig(1), flush=sig(1), fetched=sig(WORDS_BITS))


OUTPUTS = {"f_valid", "f_word", "arid", "araddr", "arlen", "arsize", "arburst", "arlock",
           "arcache", "arprot", "arvalid", "rready", "fmode", "more", "all_in", "busy", "tail",
           "err",
           "err_code", "flush", "fetched"}


def convert(outdir, cfg):
    p = ports(cfg)
    return convert_block(lambda: fsa_fetch(**p, cfg=cfg), MODULE, outdir)
