"""The FSA device: ``fsa_top`` (docs/architecture.md sections 2, 8, 9).

Ports::

    clk, rst            clock; synchronous reset, active high
    s_axil_*            AXI4-Lite slave (32-bit data): control and status
                        registers (rtl/fsa_regs.py has the map)
    m_axi_*             AXI4 master(s) to memory (``m_axi0_*``, ``m_axi1_*``,
                        ... when cfg.mem_ports > 1): the DMA engine
    irq                 high while the device is DONE or in ERROR

Inside: ``fsa_regs`` (control port), ``fsa_core`` (instruction queue,
decoder, semaphores, matrix controller, SRAMs, array) and ``fsa_dma``; each
is its own Verilog module.
"""
from __future__ import annotations

from myhdl import ResetSignal, always_comb, block

from rtl import fsa_core, fsa_dma, fsa_regs
from rtl.convert import convert_block, sig, submodule

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
    # core <-> DMA: command, status, narrow SRAM ports
    dma_flat = {}
    for n, d, w in fsa_dma.port_table(cfg):
        if n in ("clk", "rst"):
            dma_flat[n] = clk if n == "clk" else rst
        elif n.startswith("cmd_"):
            dma_flat[n] = core_sigs[f"dma_{n[4:]}"]
        elif n in ("done", "busy", "err", "err_code"):
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
            dma_flat[n] = getattr(getattr(m, bundle), name)
    dma_out = {n for n, d, w in fsa_dma.port_table(cfg) if d == "out"}
    # the DMA's own (bundled) keyword arguments, with our signals
    dkw = dict(clk=clk, rst=rst, done=dma_flat["done"], busy=dma_flat["busy"],
               err=dma_flat["err"], err_code=dma_flat["err_code"], aborting=dma_flat["aborting"])
    dkw["cmd"] = _Bundle(**{k[4:]: v for k, v in dma_flat.items() if k.startswith("cmd_")})
    dkw["spad"] = _Bundle(**{k[5:]: v for k, v in dma_flat.items() if k.startswith("spad_")})
    dkw["acc"] = _Bundle(**{k[4:]: v for k, v in dma_flat.items() if k.startswith("acc_")})
    dkw["m"] = m
    insts.append(submodule(fsa_dma.fsa_dma, (), dict(dkw, cfg=cfg), fsa_dma.MODULE, "u_dma",
                           dma_flat, dma_out))

    core_out = {"inst_ready", "state", "err_code", "err_index", "err_wait", "aborting", "q_free",
                "dma_valid",
                "dma_func", "dma_repeat", "dma_sram_addr", "dma_sram_stride", "dma_is_accum",
                "dma_mem_addr", "dma_mem_stride", "dma_size", "sp_n_ready", "sp_n_rvalid",
                "sp_n_rdata", "ac_n_ready", "ac_n_rvalid", "ac_n_rdata"} | \
        {f"cnt_{c}" for c in fsa_core.COUNTERS}
    insts.append(submodule(fsa_core.fsa_core, (), dict(core_sigs, cfg=cfg), fsa_core.MODULE,
                           "u_core", core_sigs, core_out))

    rp = {n: getattr(s_axil, n[len("s_axil_"):]) for n in fsa_regs.ports(cfg) if n.startswith("s_axil_")}
    for n in ("inst_valid", "inst_ready", "inst_word", "start", "abort_req", "aborting", "state",
              "err_code", "err_index", "err_wait", "q_free"):
        rp[n] = core_sigs[n]
    for c in fsa_core.COUNTERS:
        rp[f"cnt_{c}"] = core_sigs[f"cnt_{c}"]
    for n in fsa_regs.setting_ports(cfg):       # the setting registers drive the core
        rp[n] = core_sigs[n]
    rp.update(clk=clk, rst=rst)
    regs_out = {"s_axil_awready", "s_axil_wready", "s_axil_bresp", "s_axil_bvalid",
                "s_axil_arready", "s_axil_rdata", "s_axil_rresp", "s_axil_rvalid",
                "inst_valid", "inst_word", "start", "abort_req"} | set(fsa_regs.setting_ports(cfg))
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
