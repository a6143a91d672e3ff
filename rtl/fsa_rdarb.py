"""Read-channel arbiter of memory port 0: the DMA engine and the fetch unit
(``rtl/fsa_fetch.py``) share port 0's AR and R channels (docs/architecture.md
"Program fetch").

AR: a two-way multiplexer, the DMA first; a request presented and not yet
accepted keeps the channel (AXI: ARVALID and its payload stay until
ARREADY), so a grant changes only on an idle or accepted AR.  R: routed by
RID: ``FETCH_ID`` (all ones) to the fetch unit while it has a burst in
flight (``f_lock``), every other beat to the DMA, which checks RID = 0 and
that it owes the beat (so a stray beat or a wrong RID is still the DMA's
AXI_RD_ERR, as without program fetch); RREADY is the addressed master's.  R data, RRESP and
RLAST go to both masters unchanged (rtl/fsa_top.py wires them).

A fetch burst never starts while a DMA LOAD runs, so the fetch unit never
waits for the DMA's beats on the shared R channel: ``f_block`` keeps the
fetch unit from starting a burst while a LOAD runs (from the cycle its
command is accepted until the DMA engine's ``done`` of the last LOAD in
flight: the DMA keeps up to ``rtl.fsa_dma_if.INFLIGHT`` instructions in
flight and finishes them in the order accepted, so the arbiter keeps their
directions in that order, pushed on accept and popped on ``done``; with the
config's ``dma_rw_overlap`` a LOAD and a STORE may be in flight together).  A LOAD
command that comes while a fetch burst is in flight (``f_lock``) is held
(``c_ready`` low, the DMA engine's ``d_valid`` low) until the burst's last
beat is in; with one memory port only until the burst's tail (``f_tail``:
a beat has arrived and at most ``fsa.hw.fetch.LOAD_TAIL`` are owed), so
that the LOAD's latency overlaps the burst's last beats (its ARs reach the
memory after the burst's has been served, and its first beat comes after
the burst's last; the cycle model follows it).  STOREs (AW, W, B) are never held.

Ports::

    c_valid, c_ready, c_func   the core's DMA command handshake and function
                               (0 LOAD, 1 STORE)
    d_valid, d_ready, d_done   the DMA engine's side of it, and its done pulse
    f_lock, f_block            a fetch burst is in flight / a LOAD runs or is
                               accepted now
    f_tail                     the fetch burst in flight is in its last beats
                               (rtl/fsa_fetch.py ``tail``)
    da_*, fa_*                 AR of the DMA's port 0 and of the fetch unit
    m_ar*                      AR of memory port 0
    m_rid, m_rvalid, m_rready  R handshake of memory port 0
    dr_valid, dr_ready         R handshake of the DMA's port 0
    fr_valid, fr_ready         R handshake of the fetch unit
"""
from __future__ import annotations

from myhdl import ResetSignal, always_comb, always_seq, block

from fsa.hw.fetch import loads_wait_whole_burst
from rtl.convert import convert_block, sig

MODULE = "fsa_rdarb"
#: AR payload fields: (name, width or "A" for the address width)
AR_FIELDS = (("id", 1), ("addr", "A"), ("len", 8), ("size", 3), ("burst", 2), ("lock", 1),
             ("cache", 4), ("prot", 3))


@block
def fsa_rdarb(clk, rst, c_valid, c_ready, c_func, d_valid, d_ready, d_done, f_lock, f_tail,
              f_block,
              da_id, da_addr, da_len, da_size, da_burst, da_lock, da_cache, da_prot, da_valid,
              da_ready,
              fa_id, fa_addr, fa_len, fa_size, fa_burst, fa_lock, fa_cache, fa_prot, fa_valid,
              fa_ready,
              m_arid, m_araddr, m_arlen, m_arsize, m_arburst, m_arlock, m_arcache, m_arprot,
              m_arvalid, m_arready, m_rid, m_rvalid, m_rready, dr_valid, dr_ready, fr_valid,
              fr_ready, hold=True):
    """The arbiter; see the module docstring.  `hold`: LOAD commands wait
    while a fetch burst is in flight (several memory ports); without it
    (one port) a LOAD is accepted then and its beats follow the burst's."""
    HOLD = int(bool(hold))
    held, held_f = sig(1), sig(1)            # an AR waits for ARREADY; it is the fetch unit's
    sel_f = sig(1)
    # the DMA instructions in flight (0..2, done in the order accepted) and
    # whether the oldest / the younger is a LOAD (a LOAD and a STORE may be
    # in flight together with the config's dma_rw_overlap)
    n_fl, o_ld, y_ld = sig(2), sig(1), sig(1)
    hs_any, hs_load = sig(1), sig(1)         # an instruction / a LOAD is accepted now

    @always_comb
    def command():
        is_load = not c_func
        ok = not (is_load and f_lock and (HOLD == 1 or not f_tail))
        d_valid.next = c_valid and ok
        c_ready.next = d_ready and ok
        hs_any.next = c_valid and d_ready and ok
        hs_load.next = c_valid and d_ready and ok and is_load
        f_block.next = ((n_fl != 0 and o_ld) or (n_fl == 2 and y_ld)
                        or (c_valid and d_ready and ok and is_load))

    @always_comb
    def ar_select():
        if held:
            sel_f.next = held_f
        else:
            sel_f.next = fa_valid and not da_valid

    @always_comb
    def ar_mux():
        if sel_f:
            m_arid.next = fa_id
            m_araddr.next = fa_addr
            m_arlen.next = fa_len
            m_arsize.next = fa_size
            m_arburst.next = fa_burst
            m_arlock.next = fa_lock
            m_arcache.next = fa_cache
            m_arprot.next = fa_prot
            m_arvalid.next = fa_valid
        else:
            m_arid.next = da_id
            m_araddr.next = da_addr
            m_arlen.next = da_len
            m_arsize.next = da_size
            m_arburst.next = da_burst
            m_arlock.next = da_lock
            m_arcache.next = da_cache
            m_arprot.next = da_prot
            m_arvalid.next = da_valid
        fa_ready.next = sel_f and m_arready
        da_ready.next = not sel_f and m_arready

    # (valid and ready in separate blocks: the DMA's RREADY depends on its RVALID)
    to_f = sig(1)

    @always_comb
    def r_valid():
        to_f.next = m_rid and f_lock
        fr_valid.next = m_rvalid and m_rid and f_lock
        dr_valid.next = m_rvalid and not (m_rid and f_lock)

    @always_comb
    def r_ready():
        if to_f:
            m_rready.next = fr_ready
        else:
            m_rready.next = dr_ready

    @always_seq(clk.posedge, reset=rst)
    def seq():
        if d_done and n_fl != 0:        # the oldest leaves (and one may join)
            if hs_any:
                if n_fl == 1:
                    o_ld.next = hs_load
                else:
                    o_ld.next = y_ld
                    y_ld.next = hs_load
            else:
                o_ld.next = y_ld
                n_fl.next = n_fl - 1
        elif hs_any:
            if n_fl == 0:
                o_ld.next = hs_load
            else:
                y_ld.next = hs_load
            n_fl.next = n_fl + 1
        if sel_f:
            held.next = fa_valid and not m_arready
        else:
            held.next = da_valid and not m_arready
        held_f.next = sel_f

    return command, ar_select, ar_mux, r_valid, r_ready, seq


def ports(cfg) -> dict:
    p = dict(clk=sig(1), rst=ResetSignal(0, active=1, isasync=False), c_valid=sig(1),
             c_ready=sig(1), c_func=sig(1), d_valid=sig(1), d_ready=sig(1), d_done=sig(1),
             f_lock=sig(1), f_tail=sig(1), f_block=sig(1))
    for pre in ("da", "fa", "m"):
        sep = "_ar" if pre == "m" else "_"
        for n, w in AR_FIELDS:
            p[f"{pre}{sep}{n}"] = sig(cfg.axi_addr_bits if w == "A" else w)
        p[f"{pre}{sep}valid"] = sig(1)
        p[f"{pre}{sep}ready"] = sig(1)
    p.update(m_rid=sig(1), m_rvalid=sig(1), m_rready=sig(1), dr_valid=sig(1), dr_ready=sig(1),
             fr_valid=sig(1), fr_ready=sig(1))
    return p


OUTPUTS = {"c_ready", "d_valid", "f_block", "da_ready", "fa_ready", "m_arid", "m_araddr",
           "m_arlen", "m_arsize", "m_arburst", "m_arlock", "m_arcache", "m_arprot", "m_arvalid",
           "m_rready", "dr_valid", "fr_valid"}


def hold_loads(cfg) -> bool:
    """Whether LOAD commands wait for a fetch burst's last beat, not only
    for its tail (:func:`fsa.hw.fetch.loads_wait_whole_burst`)."""
    return loads_wait_whole_burst(cfg)


def convert(outdir, cfg):
    p = ports(cfg)
    return convert_block(lambda: fsa_rdarb(**p, hold=hold_loads(cfg)), MODULE, outdir)
