"""Periods skipped in :func:`fsa.cycle.model.simulate` (``periodic=True``): the
dispatch check of a long program at the cost of a few of its periods.

A kernel's program repeats: key block after key block, query block after
query block, the same instructions but for their memory addresses. Once
the model's state repeats too, the rest of the repetition is known.

**The rule.** At a checkpoint (the top of a cycle after a matrix
or DMA instruction started) the model's state is normalised (:meth:`Skipper.signature`):
every cycle relative to the current cycle ``c``, every instruction index
relative to the smallest one the state refers to (``r``: a running or
pending instruction, the DMA's in-flight ones, the decoder's), values that
can no longer matter dropped (retired slots, bursts finished, a past
``last_done``), the rest exact (semaphores, queues, the DMA's beats,
bursts, arbiters). Suppose the state at ``(c2, r2)`` equals the one at an
earlier checkpoint ``(c1, r1)``, shifted by ``dc = c2 - c1`` cycles and ``dp
= r2 - r1`` instructions. The model is deterministic and reads nothing but
its state, the instructions and time differences (no absolute cycle:
checked by the tests, which compare every cycle, counter, matrix start and
DMA span with and without skipping), so the run from ``c2`` repeats the
run from ``c1`` shifted, as long as the instructions it reads repeat: the
run from ``c1`` to ``c2`` read only indices in ``[r1, M2]`` (``M2``: the
largest index the state at ``c2`` refers to; each engine takes its
instructions in order), so ``k`` more periods are the same run shifted by
``k dp`` when instruction ``j`` equals instruction ``j + dp`` -- in every
field the model reads (:meth:`Skipper.keys`) -- for every ``j`` in ``[r1,
M2 + (k - 1) dp]``. The skip then sets the state to the one at ``c2``
shifted by ``k dc`` and ``k dp``, adds ``k`` times the counters of one period,
and appends the matrix starts and DMA spans of the period shifted ``k``
times. A deadlock or race in a skipped period would have been found in the
period it repeats, at the same place.

**Which fields are read** (:meth:`Skipper.keys`): every field of matrix
instructions and fences; of DMA instructions every field but ``mem_addr``,
which the model reads only through :func:`fsa.hw.dmarules.bursts` (4 KiB
boundaries: the bursts it returns are kept in the key) and
:func:`fsa.hw.dmarules.load_store_ok`
between an instruction and the DMA instructions in flight with it (at most
the :func:`fsa.hw.dmarules.inflight_depth` before it in DMA order: those
verdicts are kept in the key instead of the address).

Only without a host feed or program fetch (the dispatch check's setting);
a DMA engine state with a field this module does not know stops skipping
(the model then runs every cycle, as without ``periodic``).
"""
from __future__ import annotations

import numpy as np

from fsa import isa
from fsa.hw.dmarules import bursts, inflight_depth, load_store_ok

__all__ = ["Skipper"]

_E_KEYS = {"idx", "x", "func", "accum", "c0", "mem", "bank", "k", "first", "per_row", "rows",
           "lag", "tail", "own", "done", "pushed", "pp"}
_PP_KEYS = {"port", "bank", "push", "next", "left", "bursts", "off", "k", "x"}
_ENG_KEYS = {"cfg", "dma", "port_busy", "depth", "outstanding", "beat", "banks", "fl", "seq",
             "seq_free", "pushed", "fins", "last_done", "spans", "ports", "overlap", "halves",
             "afifo", "per_bank", "rr", "seq_pp", "pp_live", "pq"}
_FAR = 10**17       # seq_free's "not before the sequencer says so"


def _rel(t, c):
    return None if t is None else t - c


class Skipper:
    """The periods of one :func:`fsa.cycle.model.simulate` run (see the
    module docstring). `ins`: the instructions; `golden`: the golden
    dispatch (its decoder parks on a fence with the queues holding every
    instruction up to it: ``pc`` is kept absolute, the queues by their heads)."""

    def __init__(self, cfg, ins, golden: bool, retire: list, eng):
        self.ins, self.golden, self.RET = ins, golden, retire
        self.n = len(ins)
        self.ok = set(vars(eng)) == _ENG_KEYS
        self.keys = self._keys(cfg, ins)
        self.seen: dict = {}
        self.skipped = 0            # periods skipped (for the tests)

    # ------------------------------------------------------------ instructions
    @staticmethod
    def _keys(cfg, ins) -> np.ndarray:
        """An integer per instruction, equal for two instructions the model
        cannot tell apart (see the module docstring)."""
        depth = inflight_depth(cfg.mem_ports)
        beat = cfg.axi_data_bits // 8
        ids: dict = {}
        out = np.empty(len(ins), np.int64)
        prev: list = []               # the DMA instructions before, latest last
        for j, x in enumerate(ins):
            if isinstance(x, isa.Dma):
                f = tuple((name, getattr(x, name)) for name in x.__dataclass_fields__
                          if name != "mem_addr")
                rel = tuple(load_store_ok(p, x) for p in prev[::-1])
                k = ("d", f, tuple(bursts(x, beat, cfg.dma_burst_beats)), rel)
                prev = (prev + [x])[-depth:]
            else:
                k = (type(x).__name__,) + tuple(getattr(x, name)
                                                for name in x.__dataclass_fields__)
            out[j] = ids.setdefault(k, len(ids))
        return out

    def extent(self, start: int, dp: int) -> int:
        """The first j >= start whose instruction differs from j + dp's (or
        n - dp when none does)."""
        a, b = self.keys[start:self.n - dp], self.keys[start + dp:]
        bad = np.flatnonzero(a != b)
        return start + (int(bad[0]) if bad.size else len(a))

    # ------------------------------------------------------------ the state
    def signature(self, c, pc, have, dec_full, mxq, dmq, slots, last, rlast, wave, wave_last,
                  val, held, eng):
        """(signature, r, M): the normalised state, the smallest and the
        largest instruction index it refers to; None when skipping is off."""
        if not self.ok:
            return None
        RET = self.RET
        live = [s if s is not None and c < s[1] + RET[s[0]] else None for s in slots]
        refs = [s[2] for s in live if s is not None] + mxq[:1] + dmq[:1]
        refs += [e["idx"] for e in eng.fl]
        if not self.golden:
            refs.append(pc)
        if not refs:
            return None
        r, m = min(refs), max(refs)
        for e in eng.fl:
            if set(e) - _E_KEYS or ("pp" in e and set(e["pp"]) != _PP_KEYS):
                self.ok = False
                return None
        fl = tuple(self._entry(e, c, r) for e in eng.fl)
        pq = None
        if eng.pq is not None:
            st = eng.pq
            pq = (tuple(tuple(None if t is None else t - c for t in o if t is None or t > c)
                        for o in st["out"]),
                  tuple(tuple((h["idx"] - r, i, k) for h, i, k in q) for q in st["q"]),
                  tuple(max(t - c, -1) for t in st["busy_to"]))
        dma = (fl, pq, None if eng.seq is None else eng.seq["idx"] - r,
               None if eng.seq_pp is None else eng.seq_pp["idx"] - r,
               tuple(e["idx"] - r for e in eng.pp_live),
               "far" if eng.seq_free >= _FAR else max(eng.seq_free - c, 0),
               eng.pushed - eng.fins, self._last_done(eng, c),
               tuple((mname, tuple(v)) for mname, v in sorted(eng.rr.items())))
        if self.golden:
            queues = (pc, tuple(q[0] - r if q else None for q in (mxq, dmq)))
        else:
            queues = (pc - r, tuple(tuple(j - r for j in q) for q in (mxq, dmq)))
        w = None if wave is None or wave[1] <= c else wave[1] - c
        sig = (queues, have, dec_full,
               tuple(None if s is None else (s[0], s[1] - c, s[2] - r) for s in live),
               last, rlast, w, wave_last, tuple(val), tuple(held), dma)
        return sig, r, m

    @staticmethod
    def _entry(e: dict, c: int, r: int) -> tuple:
        pp = e.get("pp")
        ppt = None if pp is None else (
            tuple(pp["port"]), tuple(tuple(b) for b in pp["bank"]),
            tuple(_rel(t, c) for t in pp["push"]), pp["next"], pp["left"], pp["bursts"],
            pp["off"], tuple(pp["k"]))
        return (e["idx"] - r, e["func"], e["accum"], e["c0"] - c, e["mem"], tuple(e["bank"]),
                e["k"], e["first"], e["per_row"], e["rows"], tuple(e["lag"]), e["tail"],
                _rel(e["own"], c), _rel(e["done"], c), e["pushed"], ppt)

    @staticmethod
    def _last_done(eng, c: int):
        """``last_done`` matters only while it is at least the earliest
        ``own`` a later instruction can get (``c + min(1, tail)``)."""
        d = eng.dma
        tails = [1] if d.ideal else [d.load_base - d.load_first + 1,
                                     d.store_base - d.store_first + 1, 1, 3]
        floor = min(0, min(tails) - 1) - 1
        return max(eng.last_done - c, floor)

    # ------------------------------------------------------------ the skip
    def find(self, sig_r_m, c: int, cnt: dict, n_starts: int, n_spans: int):
        """Record this checkpoint; when it repeats an earlier one with room
        for whole periods: (k, dc, dp, (counters, starts, spans) of the
        earlier checkpoint), else None."""
        sig, r, m = sig_r_m
        here = (c, r, dict(cnt), n_starts, n_spans)
        seen = self.seen.get(sig)
        if seen is None:
            if len(self.seen) > 50_000:
                self.seen.clear()
            self.seen[sig] = [here, here]          # the first and the latest
            return None
        best = None
        for c1, r1, cnt1, s1, sp1 in seen:          # the longest period first
            dc, dp = c - c1, r - r1
            if dp <= 0 or dc <= 0 or m + dp >= self.n:
                continue
            end = self.extent(r1, dp)
            if end <= m:
                continue
            k = min((end - 1 - m) // dp + 1, (self.n - 1 - m) // dp)
            if k > 0 and (best is None or k * dp > best[0] * best[2]):
                best = (k, dc, dp, (cnt1, s1, sp1))
        seen[1] = here
        return best

    def shift_engine(self, eng, dc: int, dp: int) -> None:
        """The DMA engine's state moved `dc` cycles and `dp` instructions on."""
        ins = self.ins
        for e in eng.fl:
            e["idx"] += dp
            e["x"] = ins[e["idx"]]
            e["c0"] += dc
            for f in ("own", "done"):
                if e[f] is not None:
                    e[f] += dc
            pp = e.get("pp")
            if pp is not None:
                pp["x"] = e["x"]
                pp["push"] = [None if t is None else t + dc for t in pp["push"]]
        if eng.seq_free < _FAR:
            eng.seq_free += dc
        eng.last_done += dc
        if eng.pq is not None:
            st = eng.pq
            st["out"] = [[None if t is None else t + dc for t in o] for o in st["out"]]
            st["busy_to"] = [t + dc for t in st["busy_to"]]
