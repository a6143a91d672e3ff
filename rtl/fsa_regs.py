"""AXI4-Lite control and status registers (architecture.md section 9, plus
ours after 0x30).

==========  ======  ==========================================================
offset      access  meaning
==========  ======  ==========================================================
0x00        W       push one instruction word; while the queue is full the
                    write is held (no B response) if the device is running,
                    and refused with SLVERR (the word dropped) if it is idle,
                    done or in error: nothing would drain the queue, and the
                    host must not hang
0x04        W       start (from DONE it also clears the counters)
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
0x34        R       error: [3:0] code (fsa/errors.py), [31:16] instruction index
0x38        R       free words in the instruction queue
0x3C        R       identity: [7:0] rows-1, [15:8] cols-1, [17:16] E format,
                    [19:18] A format (0 fp16, 1 bf16, 2 fp32), [23:20]
                    log2(exp2 pieces), [27:24] memory ports, [31:28] version
0x40        R       magic 0x46534131 ("FSA1")
0x44        R       scratchpad rows
0x48        R       accumulator rows
0x4C        R       instruction queue size (words)
==========  ======  ==========================================================

Unmapped offsets, writes to read-only registers and reads of write-only ones
answer SLVERR. Only address bits [7:0] are decoded (the device occupies a
256-byte window at its base, 0x8000 in the reference).

Handshake: one transaction at a time per direction; a write is accepted when
both AW and W are valid (AXI4-Lite allows either order), a read answers in
the cycle after AR.
"""
from __future__ import annotations

from myhdl import ResetSignal, always_comb, always_seq, block

from rtl.convert import convert_block, sig
from rtl.fsa_core import S_ACTIVE as STATE_ACTIVE

MODULE = "fsa_regs"
MAGIC = 0x46534131
VERSION = 1
FMT_CODE = {"fp16": 0, "bf16": 1, "fp32": 2}
OKAY, SLVERR = 0, 2
READ_REGS = (0x08, 0x0C, 0x10, 0x14, 0x18, 0x1C, 0x20, 0x24, 0x28, 0x2C, 0x30, 0x34, 0x38,
             0x3C, 0x40, 0x44, 0x48, 0x4C)


def identity(cfg) -> int:
    """The identity register's value for a config."""
    return (((cfg.sa_rows - 1) & 0xFF) | (((cfg.sa_cols - 1) & 0xFF) << 8)
            | (FMT_CODE[cfg.e_type] << 16) | (FMT_CODE[cfg.a_type] << 18)
            | ((cfg.exp2_pieces.bit_length() - 1) << 20) | ((cfg.mem_ports & 0xF) << 24)
            | (VERSION << 28))


@block
def fsa_regs(clk, rst,
             s_axil_awaddr, s_axil_awprot, s_axil_awvalid, s_axil_awready,
             s_axil_wdata, s_axil_wstrb, s_axil_wvalid, s_axil_wready,
             s_axil_bresp, s_axil_bvalid, s_axil_bready,
             s_axil_araddr, s_axil_arprot, s_axil_arvalid, s_axil_arready,
             s_axil_rdata, s_axil_rresp, s_axil_rvalid, s_axil_rready,
             inst_valid, inst_ready, inst_word, start, state, err_code, err_index, q_free,
             cnt_exec, cnt_bubble, cnt_mx_active, cnt_dma_active, cnt_words, cnt_mx, cnt_dma,
             cnt_fence, cnt_enq, cnt_deq, cfg=None):
    """The register block; see the module docstring."""
    IDENT = identity(cfg)
    SPR, ACR, QS = cfg.spad_rows, cfg.acc_rows, cfg.inst_queue_size

    # ---- write channel: capture AW and W, then act, then B
    w_have_a, w_have_d = sig(1), sig(1)
    w_addr = sig(8)
    w_data = sig(32)
    b_pend = sig(1)
    b_resp = sig(2)
    unused_axil = sig(len(s_axil_awaddr) - 8 + len(s_axil_araddr) - 8 + 3 + 3 + 4)
    from myhdl import ConcatSignal
    unused_in = ConcatSignal(s_axil_awaddr(len(s_axil_awaddr), 8), s_axil_araddr(len(s_axil_araddr), 8),
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
        inst_valid.next = go and w_addr == 0x00
        inst_word.next = w_data
        start.next = go and w_addr == 0x04

    @always_seq(clk.posedge, reset=rst)
    def write_seq():
        if s_axil_awvalid and not w_have_a and not b_pend:
            w_have_a.next = True
            w_addr.next = s_axil_awaddr[8:]
        if s_axil_wvalid and not w_have_d and not b_pend:
            w_have_d.next = True
            w_data.next = s_axil_wdata
        if w_have_a and w_have_d and not b_pend:
            if w_addr == 0x00:
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
                if w_addr == 0x04:
                    b_resp.next = OKAY
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

    @always_comb
    def read_mux():
        rd_ok.next = True
        a = s_axil_araddr[8:]
        if a == 0x08:
            rd.next = state
        elif a == 0x0C:
            rd.next = cnt_exec
        elif a == 0x10:
            rd.next = cnt_bubble
        elif a == 0x14:
            rd.next = cnt_mx_active
        elif a == 0x18:
            rd.next = cnt_dma_active
        elif a == 0x1C:
            rd.next = cnt_words
        elif a == 0x20:
            rd.next = cnt_mx
        elif a == 0x24:
            rd.next = cnt_dma
        elif a == 0x28:
            rd.next = cnt_fence
        elif a == 0x2C:
            rd.next = cnt_enq
        elif a == 0x30:
            rd.next = cnt_deq
        elif a == 0x34:
            rd.next = (err_index << 16) | err_code
        elif a == 0x38:
            rd.next = q_free
        elif a == 0x3C:
            rd.next = IDENT
        elif a == 0x40:
            rd.next = MAGIC
        elif a == 0x44:
            rd.next = SPR
        elif a == 0x48:
            rd.next = ACR
        elif a == 0x4C:
            rd.next = QS
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

    return unused_sink, write_comb, write_seq, read_mux, read_comb, read_seq


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
             start=sig(1), state=sig(2), err_code=sig(4), err_index=sig(16), q_free=sig(QB + 1))
    for c in ("exec", "bubble", "mx_active", "dma_active", "words", "mx", "dma", "fence", "enq", "deq"):
        p[f"cnt_{c}"] = sig(32)
    return p


def convert(outdir, cfg):
    p = ports(cfg)
    return convert_block(lambda: fsa_regs(**p, cfg=cfg), MODULE, outdir)
