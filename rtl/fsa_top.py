"""The FSA device: ``fsa_top`` (docs/architecture.md sections 2, 8, 9).

Ports::

    clk, rst            clock; synchronous reset, active high
    s_axil_*            AXI4-Lite slave (32-bit data): control and status
                        registers (rtl/fsa_regs.py has the map)
    m_axi_*             AXI4 master(s) to memory (``m_axi0_*``, ``m_axi1_*``,
                        ... when cfg.mem_ports > 1): the DMA engine
    irq                 high while the device is DONE or in ERROR

Inside: ``fsa_regs`` (control port), ``fsa_core`` (instruction queue,
decoder, semaphores, matrix controller, SRAMs, array), ``fsa_dma``,
``fsa_fetch`` (program fetch into the queue) and ``fsa_rdarb`` (memory port
0's AR/R channels shared by the DMA and the fetch unit, and the turns of DMA
LOADs and fetch bursts); each is its own Verilog module.  The queue's write
port takes the fetch unit's word when it has one, else the host's push (the
control port refuses pushes in fetch mode); the core's start is ``start`` or
``fetch_start``.
"""
from __future__ import annotations

from myhdl import ResetSignal, always_comb, block

from rtl import fsa_core, fsa_dma, fsa_fetch, fsa_rdarb, fsa_regs
from rtl.convert import convert_block, sig, submodule
from rtl.fsa_dma_if import AXI_SIGNALS

MODULE = "fsa_top"
AXIL_ADDR_BITS = 16


class _Bundle:
    """Signals grouped under one top-level argument: MyHDL names the ports
    ``<argument>_<attribute>``."""

    def __init__(self, **signals):
        self.__dict__.update(signals)


@block
def fsa_top(clk, rst, irq, s_axil, m, cfg=None):
    """The device; see the module docstring. `s_axil` and `m` are bundles
    (see :func:`ports`)."""
    insts = []
    cp = fsa_core.ports(cfg)
    # core <-> registers
    core_sigs = {k: v for k, v in cp.items() if k not in ("clk", "rst")}
    core_sigs.update(clk=clk, rst=rst)
    # the DMA's own port 0 AR/R handshake, between it and the arbiter
    pre0 = fsa_dma.axi_prefixes(cfg)[0][2:]          # "axi" or "axi0"
    ext0 = getattr(m, pre0)
    own = {n: sig(len(getattr(ext0, n))) for n, _, _ in AXI_SIGNALS
           if n.startswith("ar") or n in ("rvalid", "rready")}
    m_int = _Bundle(**{k: v for k, v in m.__dict__.items()})
    setattr(m_int, pre0, _Bundle(**{n: own.get(n, getattr(ext0, n)) for n, _, _ in AXI_SIGNALS}))
    d_valid, d_ready = sig(1), sig(1)            # the DMA engine's command handshake
    # core <-> DMA: command, status, narrow SRAM ports
    dma_flat = {}
    for n, d, w in fsa_dma.port_table(cfg):
        if n in ("clk", "rst"):
            dma_flat[n] = clk if n == "clk" else rst
        elif n == "cmd_valid":
            dma_flat[n] = d_valid
        elif n == "cmd_ready":
            dma_flat[n] = d_ready
        elif n.startswith("cmd_"):
            dma_flat[n] = core_sigs[f"dma_{n[4:]}"]
        elif n in ("done", "busy", "err", "err_code", "err_slot"):
            dma_flat[n] = core_sigs[f"dma_{n}"]
        elif n == "aborting":                   # the core is aborting: drain
            dma_flat[n] = core_sigs["aborting"]
        elif n.startswith("spad_"):
            dma_flat[n] = core_sigs[f"sp_{n[5:]}"]
        elif n.startswith("acc_"):
            dma_flat[n] = core_sigs[f"ac_{n[4:]}"]
        else:                                   # m_axi..._<sig>
            pre, rest = n.split("_", 1)          # "m", "axi_awaddr" / "axi0_awaddr"
            bundle, name = rest.split("_", 1)
            dma_flat[n] = getattr(getattr(m_int, bundle), name)
    dma_out = {n for n, d, w in fsa_dma.port_table(cfg) if d == "out"}
    # the DMA's own (bundled) keyword arguments, with our signals
    dkw = dict(clk=clk, rst=rst, done=dma_flat["done"], busy=dma_flat["busy"],
               err=dma_flat["err"], err_code=dma_flat["err_code"], err_slot=dma_flat["err_slot"],
               aborting=dma_flat["aborting"])
    dkw["cmd"] = _Bundle(**{k[4:]: v for k, v in dma_flat.items() if k.startswith("cmd_")})
    dkw["spad"] = _Bundle(**{k[5:]: v for k, v in dma_flat.items() if k.startswith("spad_")})
    dkw["acc"] = _Bundle(**{k[4:]: v for k, v in dma_flat.items() if k.startswith("acc_")})
    dkw["m"] = m_int
    insts.append(submodule(fsa_dma.fsa_dma, (), dict(dkw, cfg=cfg), fsa_dma.MODULE, "u_dma",
                           dma_flat, dma_out))

    # ---- program fetch and the port-0 read arbiter
    h_valid, h_word, h_start = sig(1), sig(32), sig(1)     # the host's push and start
    fp = fsa_fetch.ports(cfg)
    fp.update(clk=clk, rst=rst, start=h_start, state=core_sigs["state"], aborting=core_sigs["aborting"],
              q_free=core_sigs["q_free"], inst_ready=core_sigs["inst_ready"],
              more=core_sigs["fetch_more"], all_in=core_sigs["fetch_end"],
              busy=core_sigs["fetch_busy"], err=core_sigs["fetch_err"],
              err_code=core_sigs["fetch_err_code"], flush=core_sigs["fetch_flush"])
    insts.append(submodule(fsa_fetch.fsa_fetch, (), dict(fp, cfg=cfg), fsa_fetch.MODULE,
                           "u_fetch", fp, fsa_fetch.OUTPUTS))
    ap = fsa_rdarb.ports(cfg)
    ap.update(clk=clk, rst=rst, c_valid=core_sigs["dma_valid"], c_ready=core_sigs["dma_ready"],
              c_func=core_sigs["dma_func"], d_valid=d_valid, d_ready=d_ready,
              d_done=core_sigs["dma_done"], f_lock=fp["busy"], f_tail=fp["tail"],
              f_block=fp["rd_block"],
              m_rid=ext0.rid, m_rvalid=ext0.rvalid, m_rready=ext0.rready,
              dr_valid=own["rvalid"], dr_ready=own["rready"], fr_valid=fp["rvalid"],
              fr_ready=fp["rready"])
    for n, _ in fsa_rdarb.AR_FIELDS + (("valid", 1), ("ready", 1)):
        ap[f"da_{n}"] = own[f"ar{n}"]
        ap[f"fa_{n}"] = fp[f"ar{n}"]
        ap[f"m_ar{n}"] = getattr(ext0, f"ar{n}")
    insts.append(submodule(fsa_rdarb.fsa_rdarb, (), dict(ap, hold=fsa_rdarb.hold_loads(cfg)),
                           fsa_rdarb.MODULE, "u_rdarb", ap, fsa_rdarb.OUTPUTS))
    # R payload: to both the DMA (directly) and the fetch unit
    fr_data, fr_resp, fr_last = fp["rdata"], fp["rresp"], fp["rlast"]
    e_rdata, e_rresp, e_rlast = ext0.rdata, ext0.rresp, ext0.rlast

    @always_comb
    def fetch_r():
        fr_data.next = e_rdata
        fr_resp.next = e_rresp
        fr_last.next = e_rlast
    insts.append(fetch_r)
    # the queue's write port: the fetch unit's word, else the host's push
    q_valid, q_word = core_sigs["inst_valid"], core_sigs["inst_word"]
    f_valid, f_word = fp["f_valid"], fp["f_word"]
    f_start = fp["fstart"]
    c_start = core_sigs["start"]

    @always_comb
    def queue_in():
        if f_valid:
            q_valid.next = True
            q_word.next = f_word
        else:
            q_valid.next = h_valid
            q_word.next = h_word
        c_start.next = h_start or f_start
    insts.append(queue_in)

    core_out = {"inst_ready", "state", "err_code", "err_index", "err_wait", "aborting", "q_free",
                "dma_valid",
                "dma_func", "dma_repeat", "dma_sram_addr", "dma_sram_stride", "dma_is_accum",
                "dma_mem_addr", "dma_mem_stride", "dma_size", "sp_n_ready", "sp_n_rvalid",
                "sp_n_rdata", "ac_n_ready", "ac_n_rvalid", "ac_n_rdata"} | \
        {f"cnt_{c}" for c in fsa_core.COUNTERS}
    insts.append(submodule(fsa_core.fsa_core, (), dict(core_sigs, cfg=cfg), fsa_core.MODULE,
                           "u_core", core_sigs, core_out))

    rp = {n: getattr(s_axil, n[len("s_axil_"):]) for n in fsa_regs.ports(cfg) if n.startswith("s_axil_")}
    for n in ("inst_ready", "abort_req", "aborting", "state",
              "err_code", "err_index", "err_wait", "q_free"):
        rp[n] = core_sigs[n]
    rp.update(inst_valid=h_valid, inst_word=h_word, start=h_start, fstart=f_start,
              prog_addr=fp["prog_addr"], prog_words=fp["prog_words"], fmode=fp["fmode"],
              fetched=fp["fetched"])
    for c in fsa_core.COUNTERS:
        rp[f"cnt_{c}"] = core_sigs[f"cnt_{c}"]
    for n in fsa_regs.setting_ports(cfg):       # the setting registers drive the core
        rp[n] = core_sigs[n]
    rp.update(clk=clk, rst=rst)
    regs_out = {"s_axil_awready", "s_axil_wready", "s_axil_bresp", "s_axil_bvalid",
                "s_axil_arready", "s_axil_rdata", "s_axil_rresp", "s_axil_rvalid",
                "inst_valid", "inst_word", "start", "abort_req", "fstart", "prog_addr",
                "prog_words"} | set(fsa_regs.setting_ports(cfg))
    insts.append(submodule(fsa_regs.fsa_regs, (), dict(rp, cfg=cfg), fsa_regs.MODULE, "u_regs",
                           rp, regs_out))
    state = core_sigs["state"]

    @always_comb
    def interrupt():
        irq.next = state >= 2         # done or error
    insts.append(interrupt)
    return insts


def ports(cfg) -> dict:
    """Fresh top-level signals: clk, rst, irq and the bundles s_axil, m."""
    rp = fsa_regs.ports(cfg, AXIL_ADDR_BITS)
    s_axil = _Bundle(**{n[len("s_axil_"):]: s for n, s in rp.items() if n.startswith("s_axil_")})
    m = fsa_dma.ports(cfg)["m"]
    return dict(clk=sig(1), rst=ResetSignal(0, active=1, isasync=False), irq=sig(1),
                s_axil=s_axil, m=m)


def convert(outdir, cfg):
    p = ports(cfg)
    return convert_block(lambda: fsa_top(**p, cfg=cfg), MODULE, outdir)
