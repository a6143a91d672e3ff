"""The DMA engine of the cycle model (:func:`fsa.cycle.model.simulate`):
the in-flight queue of ``rtl/fsa_dma.py`` and the dispatch, cycle by cycle.

What it models (the RTL's rules, docs/architecture.md section 8):

* acceptance: the dispatch keeps at most :func:`fsa.hw.dmarules.inflight_depth`
  DMA instructions in flight (also while program fetch reads words: a fetch
  burst goes in between LOADs, :mod:`fsa.cycle.fetch`) (from the cycle after acceptance to their
  ``done`` cycle, inclusive); the engine accepts a command when its
  sequencer is idle and it holds nothing (an instruction leaves the engine
  the cycle before its ``done``), or, on one port, when the command is a
  LOAD of one-beat rows and everything it holds is such a LOAD into the
  same SRAM, or, on several ports (or one whose DMA works per port,
  :func:`fsa.hw.dmarules.per_port_dma`), when the command is a LOAD into the
  same SRAM as the LOAD held, that SRAM has a narrow port per bank and
  their rows are disjoint and neither writes one row over and over
  (:func:`fsa.hw.dmarules.second_load_ok`), or, with ``dma_rw_overlap``, when
  the command and the one held are a LOAD and a STORE of different SRAMs
  and disjoint memory bytes (:func:`fsa.hw.dmarules.load_store_ok`; each port
  then has a read and a write half, with their own bursts in flight and
  beat queues);
* the sequencer: checks the command in the cycle after acceptance, pushes
  one burst (a row, or with merged bursts several rows, as
  :func:`fsa.hw.dmarules.bursts` says) per cycle from the cycle after that while the port has
  fewer than ``dma_outstanding`` bursts unfinished (a LOAD burst finishes
  with its last beat, and counts from the next cycle), and is idle again the
  cycle after its last push (the cycle after the check when there is nothing
  to move);
* beats: one SRAM narrow-port access per cycle for the whole engine, in
  program order (several ports, or one working per port, into an SRAM with a narrow port per bank:
  each port moves its own bursts' beats in push order, per bank one beat a
  cycle, :meth:`DmaEngine._step_pp`); beat ``k`` of an instruction accepted in ``c0`` goes no
  earlier than ``c0 + first + k (+ lag)`` and not in a cycle where the array
  uses its bank (:class:`fsa.cycle.model.DmaTiming`);
* ``done``: ``base - first + 1`` cycles after the last beat (3 cycles after
  acceptance when there is nothing to move), in program order, at most one
  per cycle.

A slave that holds AR/AW back never stops the pushes in the model; in the
RTL, with merged bursts (``dma_burst_beats`` > 0) or ``dma_rw_overlap``
(where the sequencer's idle cycle decides when the other direction may
start) each port queues its
addresses in a FIFO of ``dma_outstanding`` entries so that it does not
either (behind a long burst cocotbext-axi's two-deep AR queue fills; with
the one-row bursts of the other configs the port's address register does
not hold the pushes in the runs the regression checks).

The RTL pushes a STORE's bursts against its B responses, which the model
estimates (a STORE burst counts until ``tail - 1`` cycles after its last
beat); without ``dma_rw_overlap`` it never needs them, because nothing is
accepted while a STORE is in flight in the engine (with it, the regression's
random DMA programs check the estimate).  Not modelled (as in the rest of the
cycle model): AXI pauses, 4 KiB splits, errors.
"""
from __future__ import annotations

import math

from fsa import isa
from fsa.hw.dmarules import (bursts, inflight_depth, load_store_ok, per_port_dma, rows_on_port0,
                          second_load_ok, several_port_rules, sram_bank_ports)

__all__ = ["DmaEngine"]

LOAD = isa.DmaFunc.LOAD


class DmaEngine:
    """The DMA engine and the dispatch's in-flight queue, for one run.

    Args:
        cfg: the config (AXI width, ports, ``dma_outstanding``).
        dma: the :class:`fsa.cycle.model.DmaTiming`.
        port_busy: ``port_busy(c, mem, bank)``: the array uses SRAM `mem`
            bank `bank` in cycle c.
    """

    def __init__(self, cfg, dma, port_busy):
        self.cfg, self.dma, self.port_busy = cfg, dma, port_busy
        self.depth = inflight_depth(cfg.mem_ports)
        self.outstanding = cfg.dma_outstanding
        self.beat = cfg.axi_data_bits // 8
        self.banks = {"spad": cfg.spad_banks, "acc": cfg.acc_banks}
        self.fl: list[dict] = []       # in flight (the dispatch's view), program order
        self.seq: "dict | None" = None  # the instruction whose bursts are being pushed
        self.seq_free = 0              # first cycle the sequencer is idle
        self.pushed = 0                # LOAD bursts pushed (one port)
        self.fins = 0                  # LOAD bursts finished before this cycle
        self.last_done = -10**9
        self.spans: list[tuple[int, int]] = []
        # several ports into a banked scratchpad: each bank has its own narrow
        # port (rtl/fsa_sram.py), so each AXI port moves its own beats
        self.ports = cfg.mem_ports
        # dma_rw_overlap: each port has a read half and a write half, each
        # with its own bursts in flight and beat queue (index p, P + p)
        self.overlap = cfg.dma_rw_overlap
        self.halves = 2 if self.overlap else 1
        # the ports queue their AR/AW addresses in a FIFO (rtl/fsa_dma.py)
        self.afifo = per_port_dma(cfg)
        self.per_bank = {m: sram_bank_ports(cfg, nb) for m, nb in self.banks.items()}
        self.rr = {m: [0] * nb for m, nb in self.banks.items()}   # the banks' arbiters
        self.seq_pp: "dict | None" = None   # the per-port instruction being pushed
        self.pp_live: list[dict] = []          # per-port instructions with beats to move
        self.pq: "dict | None" = None          # the ports' queues (per-port instructions)

    # ---------------------------------------------------------------- queries
    def inflight(self) -> bool:
        return bool(self.fl)

    def loading(self) -> bool:
        """A LOAD is in flight (the port-0 read arbiter's view)."""
        return any(e["func"] == LOAD for e in self.fl)

    def can_accept(self, c: int, x: isa.Dma) -> bool:
        """The dispatch may issue `x` in cycle c and the engine accepts it."""
        if len(self.fl) >= self.depth or c < self.seq_free:
            return False
        held = [e for e in self.fl if e["done"] is None or e["done"] > c]
        if not held:
            return True
        if len(held) >= self.depth:
            return False
        if self.overlap and len(held) == 1 and load_store_ok(held[0]["x"], x):
            return True     # a LOAD and a STORE at once (config dma_rw_overlap)
        if x.func != LOAD or \
                not all(e["func"] == LOAD and e["accum"] == bool(x.is_accum) for e in held):
            return False
        if not several_port_rules(self.cfg):
            return x.size <= self.beat and all(e["per_row"] <= 1 for e in held)
        # several ports (or per-port beats on one, fsa.hw.dmarules.per_port_dma):
        # LOADs into an SRAM with a narrow port per bank, rows disjoint from
        # those held (fsa.hw.dmarules.second_load_ok)
        mem = "acc" if x.is_accum else "spad"
        return self.per_bank[mem] and all(
            "pp" in e and second_load_ok(e["pp"]["x"], x) for e in held)

    def busy(self) -> bool:
        """Something changes every cycle (beats, pushes, a done to fix)."""
        return any(e["done"] is None for e in self.fl) or self.seq is not None or \
            bool(self.pp_live)

    def next_done(self, c: int) -> "int | None":
        ds = [e["done"] for e in self.fl if e["done"] is not None and e["done"] > c]
        return min(ds) if ds else None

    def done_now(self, c: int) -> "dict | None":
        """The instruction whose ``done`` pulses in cycle c (at most one)."""
        for e in self.fl:
            if e["done"] == c:
                return e
        return None

    # ---------------------------------------------------------------- events
    def accept(self, c: int, idx: int, x: isa.Dma) -> None:
        """The dispatch issues instruction `idx` (`x`) in cycle c."""
        dma = self.dma
        mem = "acc" if x.is_accum else "spad"     # (a STORE may read the scratchpad too)
        per_row = math.ceil(x.size / self.beat) if x.size else 0
        rows = x.repeat if per_row else 0
        nb = self.banks[mem]
        bank = [((x.sram_addr + i * x.sram_stride) % nb) for i in range(rows)
                for _ in range(per_row)]
        e = {"idx": idx, "x": x, "func": x.func, "accum": bool(x.is_accum), "c0": c, "mem": mem,
             "bank": bank, "k": 0, "first": dma.first(x), "per_row": per_row, "rows": rows,
             "lag": [dma.lag(x, per_row, k, self.cfg.mem_ports) for k in range(len(bank))],
             "tail": dma.base(x) - dma.first(x) + 1, "own": None, "done": None, "pushed": 0}
        if dma.ideal:
            e["own"] = c + 1
            self.seq_free = c + 1
        elif bank and self.per_bank[mem]:
            self._per_port(e, x)
        elif not bank:                     # nothing to move: done in c3
            e["own"] = c + 3
            self.seq_free = c + 2
        else:
            self.seq_free = c + 2          # (a LOAD on one port: after its last push)
            if x.func == LOAD and self.depth > 1:
                self.seq = e
                self.seq_free = 10**18
        self.fl.append(e)
        self._order()

    def _per_port(self, e: dict, x: isa.Dma) -> None:
        """Set up `e` for per-port beats (several ports, an SRAM with a
        narrow port per bank): bursts go round-robin over the ports (one row
        each, or several rows merged, :func:`fsa.hw.dmarules.bursts`); each port
        moves its own bursts' beats, one per cycle, in the order pushed (the
        bursts of two LOADs in flight queue behind each other); per bank a
        round-robin arbiter over the ports (a stalled request keeps its
        grant), the array's use of the bank first."""
        P, pr = self.ports, e["per_row"]
        solo = rows_on_port0(x)
        bl = bursts(x, self.beat, self.cfg.dma_burst_beats)
        nb = len(bl)
        e["pp"] = {"port": [0 if solo else j % P for j in range(nb)],
                   "bank": [e["bank"][r * pr:(r + n) * pr] for r, n in bl],
                   "push": [None] * nb, "next": 0, "left": nb, "bursts": nb,
                   # the first beat's data / SRAM read: LOAD 3 cycles after the
                   # push (AR, R), STORE 1 (the W data is read once queued)
                   "off": 3 if x.func == LOAD else 1,
                   "k": [0] * P,                   # beats moved per port
                   "x": x}
        if self.pq is None:
            # per port: for each burst pushed, in push order, the first cycle
            # it no longer counts as unfinished (None: not known yet; a LOAD
            # burst finishes with its last beat, a STORE burst with its B
            # response); the [instr, row, beat] queue of bursts with beats
            # to move; the last cycle a beat moved
            H = P * self.halves
            self.pq = {"out": [[] for _ in range(H)], "q": [[] for _ in range(H)],
                       "busy_to": [-1] * H}
        self.seq_free = 10**18
        self.seq_pp = e
        self.pp_live.append(e)

    def _step_pp(self, c: int) -> None:
        """Cycle c of the per-port instructions: one push, then each bank's beat."""
        st = self.pq
        e = self.seq_pp
        if e is not None:
            pp = e["pp"]
            i = pp["next"]
            p = pp["port"][i] + self._half(e)
            outl = st["out"][p]
            outl[:] = [t for t in outl if t is None or t > c]
            if i < pp["bursts"] and c >= e["c0"] + 2 and len(outl) < self.outstanding:
                pp["push"][i] = c
                outl.append(None)
                st["q"][p].append([e, i, 0])
                pp["next"] = i + 1
                if i + 1 == pp["bursts"]:
                    self.seq_free = c + 1
                    self.seq_pp = None
        # requests: each port's head beat, once its data is there
        # (per SRAM bank, the requests come from one half: a LOAD and a
        # STORE in flight together use different SRAMs)
        reqs: dict[tuple[str, int], list[int]] = {}
        n = self.ports
        for j in range(len(st["q"])):
            q = st["q"][j]
            if not q or c <= st["busy_to"][j]:
                continue
            h, i, k = q[0]
            hp = h["pp"]
            lag = self.dma.lag(hp["x"], h["per_row"], hp["k"][j % n], self.ports, self.afifo)
            if c >= hp["push"][i] + hp["off"] + k + lag:
                reqs.setdefault((h["mem"], hp["bank"][i][k]), []).append(j)
        done_rows = []
        for (mem, b), js in reqs.items():
            rr = self.rr[mem]
            g = min(js, key=lambda j: (j % n - rr[b]) % n)
            if self.port_busy(c, mem, b):
                rr[b] = g % n
                continue
            rr[b] = (g % n + 1) % n
            head = st["q"][g][0]
            h = head[0]
            head[2] += 1
            h["pp"]["k"][g % n] += 1
            st["busy_to"][g] = c
            if head[2] == len(h["pp"]["bank"][head[1]]):
                st["q"][g].pop(0)
                done_rows.append((g, h))
                h["pp"]["left"] -= 1
                if h["pp"]["left"] == 0:
                    h["own"] = c + h["tail"]
                    h["k"] = len(h["bank"])
        for g, h in done_rows:
            # a LOAD burst counts until this cycle's push, a STORE burst until
            # its B response's cycle
            outl = st["out"][g]
            outl[outl.index(None)] = c + 1 if h["func"] == LOAD else c + h["tail"] - 1
        self.pp_live = [h for h in self.pp_live if h["own"] is None]

    def _half(self, e: dict) -> int:
        """The index offset of `e`'s half of a port: P for a STORE with
        ``dma_rw_overlap`` (the write half), else 0."""
        return self.ports if self.overlap and e["func"] != LOAD else 0

    def step(self, c: int) -> None:
        """Pushes and beats of cycle c."""
        if self.pp_live:
            self._step_pp(c)
            self._order()
            return
        s = self.seq
        if s is not None and c >= s["c0"] + 2 and self.pushed - self.fins < self.outstanding:
            s["pushed"] += 1
            self.pushed += 1
            if s["pushed"] == s["rows"]:
                self.seq = None
                self.seq_free = c + 1
        fin = 0
        for e in self.fl:
            if e["own"] is not None:
                continue
            k = e["k"]
            if c >= e["c0"] + e["first"] + k + e["lag"][k] and \
                    not self.port_busy(c, e["mem"], e["bank"][k]):
                e["k"] = k + 1
                if e["func"] == LOAD and e["k"] % e["per_row"] == 0:
                    fin = 1
                if e["k"] == len(e["bank"]):
                    e["own"] = c + e["tail"]
            break                          # one beat per cycle, in program order
        self.fins += fin
        self._order()

    def retire(self, c: int) -> None:
        """End of cycle c: the instruction done in c leaves the queue."""
        self.fl = [e for e in self.fl if e["done"] != c]

    def _order(self) -> None:
        """``done`` in program order, at most one per cycle."""
        for e in self.fl:
            if e["done"] is not None:
                continue
            if e["own"] is None:
                break
            e["done"] = max(e["own"], self.last_done + 1)
            self.last_done = e["done"]
            self.spans.append((e["c0"], e["done"]))
