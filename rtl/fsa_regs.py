"""AXI4-Lite control and status registers (docs/architecture.md section 9, plus
ours after 0x30).  The map, the states, the identity and magic values are
the contract's (``fsa/hw/regs.py``); this table repeats it for the reader.

==========  ======  ==========================================================
offset      access  meaning
==========  ======  ==========================================================
0x00        W       push one instruction word; while the queue is full the
                    write is held (no B response) if the device is running,
                    and refused with SLVERR (the word dropped) if it is idle,
                    done or in error: nothing would drain the queue, and the
                    host must not hang
0x04        W       start: IDLE or DONE -> ACTIVE, a fresh program (semaphores,
                    index, error register and counters restart; see
                    fsa/hw/regs.py); ignored while ACTIVE or in ERROR
0x08        R       state: 0 idle, 1 active, 2 done, 3 error
0x0C        R       execution cycles
0x10        R       matrix-engine bubble cycles (active, matrix engine idle)
0x14        R       matrix-engine active cycles
0x18        R       DMA active cycles
0x1C        R       raw instruction words decoded
0x20        R       matrix instructions issued
0x24        R       DMA instructions issued
0x28        R       fences
0x2C        R       words enqueued
0x30        R       words dequeued
0x34        R       error: [3:0] code (fsa/hw/errors.py), [31:16] instruction index
0x38        R       free words in the instruction queue
0x3C        R       identity: [7:0] rows-1, [15:8] cols-1, [17:16] E format,
                    [19:18] A format (0 fp16, 1 bf16, 2 fp32), [23:20]
                    log2(exp2 pieces), [27:24] memory ports, [31:28] version
0x40        R       magic 0x46534131 ("FSA1")
0x44        R       scratchpad rows
0x48        R       accumulator rows
0x4C        R       instruction queue size (words)
0x50        W       abort / soft reset (any data, any state; fsa/hw/regs.py):
                    drain, empty the queue, IDLE
0x54        R       after DEADLOCK: [4:0] semaphore, [7:5] the value waited for,
                    [10:8] the value it holds
0x58        RW      scale_e: softmax scale * log2(e), E bits (output ``scale_e``)
0x5C        RW      scale_a: the same in A bits (output ``scale_a``)
0x60        RW      key_limit: 0..R (output ``key_limit``)
0x64        RW      program fetch: byte address bits [31:0]
0x68        RW      program fetch: byte address bits [38:32] (in [6:0])
0x6C        RW      program fetch: length in 32-bit words
0x70        W       fetch_start: a start (as 0x04) in fetch mode (rtl/fsa_fetch.py)
0x74        R       words the fetch unit put into the queue since the last start
==========  ======  ==========================================================

The settings 0x58-0x60 (fsa/hw/regs.py): reset (``rst``) to
``fsa.hw.regs.setting_defaults``, kept across start and abort; a write while
``state`` reads ACTIVE (running or aborting), or of a value outside the
register's range (bits above the format's width, key_limit > R), is refused
with SLVERR and the register keeps its value.  The fetch registers
0x64-0x6C may be written in any state (they act at fetch_start).

While an abort drains (``aborting``), and while a fetch-mode program that
has ended waits for its fetch burst to drain (``fmode`` and not ACTIVE),
writes to push, start and fetch_start are held (no B response) until it is
over; then they act on the IDLE (or DONE, ERROR) device.  In fetch mode a
push answers SLVERR (the word is dropped: the fetch unit owns the queue).

Unmapped offsets, writes to read-only registers and reads of write-only ones
answer SLVERR. Only address bits [7:0] are decoded (the device occupies a
256-byte window at its base, 0x8000 in the reference).

Handshake: one transaction at a time per direction; a write is accepted when
both AW and W are valid (AXI4-Lite allows either order), a read answers in
the cycle after AR.
"""
from __future__ import annotations

from myhdl import ConcatSignal, ResetSignal, always_comb, always_seq, block, intbv

from fsa.hw import regs as hwregs
from fsa.hw.errors import ERR_BITS
from fsa.hw.regs import FMT_CODE, MAGIC, VERSION, identity  # noqa: F401 (re-exported)
from rtl import fsa_cmp
from rtl.convert import convert_block, sig
from rtl.fsa_status import WAIT_BITS

MODULE = "fsa_regs"
OKAY, SLVERR = 0, 2
READ_REGS = hwregs.READ_OFFSETS
STATE_ACTIVE = int(hwregs.State.ACTIVE)


@block
def fsa_regs(clk, rst,
             s_axil_awaddr, s_axil_awprot, s_axil_awvalid, s_axil_awready,
             s_axil_wdata, s_axil_wstrb, s_axil_wvalid, s_axil_wready,
             s_axil_bresp, s_axil_bvalid, s_axil_bready,
             s_axil_araddr, s_axil_arprot, s_axil_arvalid, s_axil_arready,
             s_axil_rdata, s_axil_rresp, s_axil_rvalid, s_axil_rready,
             inst_valid, inst_ready, inst_word, start, abort_req, aborting, state, err_code,
             err_index, err_wait, q_free, fstart, prog_addr, prog_words, fmode, fetched,
             cnt_exec, cnt_bubble, cnt_mx_active, cnt_dma_active, cnt_words, cnt_mx, cnt_dma,
             cnt_fence, cnt_enq, cnt_deq, scale_e, scale_a, key_limit, cfg=None):
    """The register block; see the module docstring."""
    IDENT = identity(cfg)
    DEF = hwregs.setting_defaults(cfg)
    EW, AW, KLB = len(scale_e), len(scale_a), len(key_limit)
    KL_MAX = hwregs.setting_range(cfg, "key_limit")[1]
    A_SCE, A_SCA, A_KL = (hwregs.OFFSETS[n] for n in hwregs.SETTINGS)
    r_scale_e, r_scale_a, r_key_limit = sig(EW, DEF["scale_e"]), sig(AW, DEF["scale_a"]), \
        sig(KLB, DEF["key_limit"])
    set_ok = sig(1)             # a settings write may act: not ACTIVE and the value in range
    # the written value has no bit above the format's width (always, for 32 bits)
    e_fits, a_fits = sig(1, 1), sig(1, 1)
    SPR, ACR, QS = cfg.spad_rows, cfg.acc_rows, cfg.inst_queue_size

    DB = hwregs.ADDR_DECODE_BITS
    A_PUSH, A_START = hwregs.OFFSETS["push"], hwregs.OFFSETS["start"]
    A_ABORT = hwregs.OFFSETS["abort"]
    A_FLO, A_FHI = hwregs.OFFSETS["fetch_lo"], hwregs.OFFSETS["fetch_hi"]
    A_FWORDS, A_FSTART = hwregs.OFFSETS["fetch_words"], hwregs.OFFSETS["fetch_start"]
    FHB = hwregs.FETCH_HI_BITS
    f_lo, f_words = sig(32), sig(32)
    f_hi = sig(FHB)
    hold = sig(1)
    prog_cat = ConcatSignal(f_hi, f_lo)

    @always_comb
    def fetch_regs():
        prog_addr.next = prog_cat
        prog_words.next = f_words
        # push/start/fetch_start wait while an abort drains or a fetch-mode program drains
        hold.next = aborting or (fmode and state != STATE_ACTIVE)

    # ---- write channel: capture AW and W, then act, then B
    w_have_a, w_have_d = sig(1), sig(1)
    w_addr = sig(DB)
    wa = s_axil_awaddr(DB, 0)
    w_data = sig(32)
    fit_checks = []
    for fits, width in ((e_fits, EW), (a_fits, AW)):
        if width < 32:
            fit_checks.append(_fits(w_data, fits, width))
    b_pend = sig(1)
    b_resp = sig(2)
    unused_axil = sig(len(s_axil_awaddr) - DB + len(s_axil_araddr) - DB + 3 + 3 + 4)
    unused_in = ConcatSignal(s_axil_awaddr(len(s_axil_awaddr), DB), s_axil_araddr(len(s_axil_araddr), DB),
                             s_axil_awprot, s_axil_arprot, s_axil_wstrb)

    @always_comb
    def unused_sink():
        unused_axil.next = unused_in

    @always_comb
    def write_comb():
        s_axil_awready.next = not w_have_a and not b_pend
        s_axil_wready.next = not w_have_d and not b_pend
        s_axil_bvalid.next = b_pend
        s_axil_bresp.next = b_resp
        go = w_have_a and w_have_d and not b_pend
        inst_valid.next = go and w_addr == A_PUSH and not hold and not fmode
        inst_word.next = w_data
        start.next = go and w_addr == A_START and not hold
        fstart.next = go and w_addr == A_FSTART and not hold
        abort_req.next = go and w_addr == A_ABORT
        scale_e.next = r_scale_e
        scale_a.next = r_scale_a
        key_limit.next = r_key_limit

    @always_comb
    def settings_check():
        if state == STATE_ACTIVE:
            set_ok.next = False
        elif w_addr == A_SCE:
            set_ok.next = e_fits
        elif w_addr == A_SCA:
            set_ok.next = a_fits
        else:
            set_ok.next = w_data <= KL_MAX

    @always_seq(clk.posedge, reset=rst)
    def write_seq():
        if s_axil_awvalid and not w_have_a and not b_pend:
            w_have_a.next = True
            w_addr.next = wa
        if s_axil_wvalid and not w_have_d and not b_pend:
            w_have_d.next = True
            w_data.next = s_axil_wdata
        # (push, start and fetch_start are held while `hold`)
        if w_have_a and w_have_d and not b_pend and not (
                hold and (w_addr == A_PUSH or w_addr == A_START or w_addr == A_FSTART)):
            if w_addr == A_PUSH and fmode:     # the fetch unit owns the queue: refuse
                w_have_a.next = False
                w_have_d.next = False
                b_pend.next = True
                b_resp.next = SLVERR
            elif w_addr == A_PUSH:
                if inst_ready:
                    w_have_a.next = False
                    w_have_d.next = False
                    b_pend.next = True
                    b_resp.next = OKAY
                elif state != STATE_ACTIVE:  # full and not running: refuse
                    w_have_a.next = False
                    w_have_d.next = False
                    b_pend.next = True
                    b_resp.next = SLVERR
                # (full and running: held until the queue has room)
            else:
                w_have_a.next = False
                w_have_d.next = False
                b_pend.next = True
                if w_addr == A_FLO:
                    f_lo.next = w_data
                elif w_addr == A_FHI:
                    f_hi.next = w_data[FHB:0]
                elif w_addr == A_FWORDS:
                    f_words.next = w_data
                if (w_addr == A_START or w_addr == A_ABORT or w_addr == A_FSTART
                        or w_addr == A_FLO or w_addr == A_FHI or w_addr == A_FWORDS):
                    b_resp.next = OKAY
                elif (w_addr == A_SCE or w_addr == A_SCA or w_addr == A_KL) and set_ok:
                    b_resp.next = OKAY
                    if w_addr == A_SCE:
                        r_scale_e.next = w_data[EW:]
                    elif w_addr == A_SCA:
                        r_scale_a.next = w_data[AW:]
                    else:
                        r_key_limit.next = w_data[KLB:]
                else:
                    b_resp.next = SLVERR
        if b_pend and s_axil_bready:
            b_pend.next = False

    # ---- read channel
    r_pend = sig(1)
    r_data = sig(32)
    r_resp = sig(2)
    rd = sig(32)
    rd_ok = sig(1)

    # read mux over the contract's map (fsa/hw/regs.py): the offsets are the
    # table's; the mux must cover exactly its readable registers
    O = hwregs.OFFSETS
    mux_names = ("state",) + hwregs.COUNTERS + ("error", "q_free", "identity", "magic",
                                                "spad_rows", "acc_rows", "queue", "wait") \
        + hwregs.SETTINGS + ("fetch_lo", "fetch_hi", "fetch_words", "fetched")
    if tuple(O[n] for n in mux_names) != READ_REGS:
        raise AssertionError("fsa_regs: the read mux does not match fsa/hw/regs.py REGS")
    A_STATE, A_ERROR, A_QFREE, A_IDENT, A_MAGIC = (O[n] for n in ("state", "error", "q_free",
                                                                  "identity", "magic"))
    A_SPR, A_ACR, A_QUEUE, A_WAIT = O["spad_rows"], O["acc_rows"], O["queue"], O["wait"]
    A_FETCHED = O["fetched"]
    (A_EXEC, A_BUBBLE, A_MXA, A_DMAA, A_WORDS, A_MX, A_DMA, A_FENCE, A_ENQ,
     A_DEQ) = (O[c] for c in hwregs.COUNTERS)
    ra = s_axil_araddr(DB, 0)
    # registers narrower than 32 bits, zero-extended
    state32 = ConcatSignal(intbv(0)[32 - len(state):], state)
    err32 = ConcatSignal(err_index, intbv(0)[hwregs.ERR_INDEX_LSB - ERR_BITS:], err_code)
    qfree32 = ConcatSignal(intbv(0)[32 - len(q_free):], q_free)
    wait32 = ConcatSignal(intbv(0)[32 - len(err_wait):], err_wait)
    fhi32 = ConcatSignal(intbv(0)[32 - FHB:], f_hi)
    sce32 = ConcatSignal(intbv(0)[32 - EW:], r_scale_e) if EW < 32 else r_scale_e
    sca32 = ConcatSignal(intbv(0)[32 - AW:], r_scale_a) if AW < 32 else r_scale_a
    kl32 = ConcatSignal(intbv(0)[32 - KLB:], r_key_limit)

    @always_comb
    def read_mux():
        rd_ok.next = True
        if ra == A_STATE:
            rd.next = state32
        elif ra == A_EXEC:
            rd.next = cnt_exec
        elif ra == A_BUBBLE:
            rd.next = cnt_bubble
        elif ra == A_MXA:
            rd.next = cnt_mx_active
        elif ra == A_DMAA:
            rd.next = cnt_dma_active
        elif ra == A_WORDS:
            rd.next = cnt_words
        elif ra == A_MX:
            rd.next = cnt_mx
        elif ra == A_DMA:
            rd.next = cnt_dma
        elif ra == A_FENCE:
            rd.next = cnt_fence
        elif ra == A_ENQ:
            rd.next = cnt_enq
        elif ra == A_DEQ:
            rd.next = cnt_deq
        elif ra == A_ERROR:
            rd.next = err32
        elif ra == A_QFREE:
            rd.next = qfree32
        elif ra == A_IDENT:
            rd.next = IDENT
        elif ra == A_MAGIC:
            rd.next = MAGIC
        elif ra == A_SPR:
            rd.next = SPR
        elif ra == A_ACR:
            rd.next = ACR
        elif ra == A_QUEUE:
            rd.next = QS
        elif ra == A_WAIT:
            rd.next = wait32
        elif ra == A_SCE:
            rd.next = sce32
        elif ra == A_SCA:
            rd.next = sca32
        elif ra == A_KL:
            rd.next = kl32
        elif ra == A_FLO:
            rd.next = f_lo
        elif ra == A_FHI:
            rd.next = fhi32
        elif ra == A_FWORDS:
            rd.next = f_words
        elif ra == A_FETCHED:
            rd.next = fetched
        else:
            rd.next = 0
            rd_ok.next = False

    @always_comb
    def read_comb():
        s_axil_arready.next = not r_pend
        s_axil_rvalid.next = r_pend
        s_axil_rdata.next = r_data
        s_axil_rresp.next = r_resp

    @always_seq(clk.posedge, reset=rst)
    def read_seq():
        if s_axil_arvalid and not r_pend:
            r_pend.next = True
            r_data.next = rd
            if rd_ok:
                r_resp.next = OKAY
            else:
                r_resp.next = SLVERR
        elif r_pend and s_axil_rready:
            r_pend.next = False

    return (unused_sink, fetch_regs, write_comb, *fit_checks, settings_check, write_seq, read_mux, read_comb,
            read_seq)


@block
def _fits(w_data, fits, width):
    """fits: the bits of w_data above `width` are all 0."""
    @always_comb
    def check():
        fits.next = w_data[32:width] == 0
    return check


def ports(cfg, addr_bits: int = 16) -> dict:
    QB = (cfg.inst_queue_size - 1).bit_length()
    p = dict(clk=sig(1), rst=ResetSignal(0, active=1, isasync=False),
             s_axil_awaddr=sig(addr_bits), s_axil_awprot=sig(3), s_axil_awvalid=sig(1),
             s_axil_awready=sig(1), s_axil_wdata=sig(32), s_axil_wstrb=sig(4),
             s_axil_wvalid=sig(1), s_axil_wready=sig(1), s_axil_bresp=sig(2),
             s_axil_bvalid=sig(1), s_axil_bready=sig(1), s_axil_araddr=sig(addr_bits),
             s_axil_arprot=sig(3), s_axil_arvalid=sig(1), s_axil_arready=sig(1),
             s_axil_rdata=sig(32), s_axil_rresp=sig(2), s_axil_rvalid=sig(1),
             s_axil_rready=sig(1), inst_valid=sig(1), inst_ready=sig(1), inst_word=sig(32),
             start=sig(1), abort_req=sig(1), aborting=sig(1), state=sig(hwregs.STATE_BITS),
             err_code=sig(ERR_BITS), err_index=sig(hwregs.ERR_INDEX_BITS),
             err_wait=sig(WAIT_BITS), q_free=sig(QB + 1), fstart=sig(1),
             prog_addr=sig(32 + hwregs.FETCH_HI_BITS), prog_words=sig(32), fmode=sig(1),
             fetched=sig(32))
    for c in hwregs.COUNTERS:
        p[f"cnt_{c}"] = sig(hwregs.COUNTER_BITS)
    p.update(setting_ports(cfg))
    return p


def setting_ports(cfg) -> dict:
    """The settings outputs (fsa/hw/regs.py SETTINGS): scale_e (E width),
    scale_a (A width), key_limit (fsa_cmp.KL_BITS, holding 0..R)."""
    return dict(scale_e=sig(cfg.e_fmt.width), scale_a=sig(cfg.a_fmt.width),
                key_limit=sig(fsa_cmp.KL_BITS))


def convert(outdir, cfg):
    p = ports(cfg)
    return convert_block(lambda: fsa_regs(**p, cfg=cfg), MODULE, outdir)
