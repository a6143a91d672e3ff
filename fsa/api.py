"""``fsa.scaled_dot_product_attention``: torch's attention call, run on FSA.

The same contract as :func:`torch.nn.functional.scaled_dot_product_attention`
(inference only: no autograd), computed by the attention kernel
(:func:`fsa.kernels.attention`) on the golden model or on the RTL in an HDL
simulator; every engine gives the same bits::

    >>> import torch, fsa
    >>> q, k, v = (torch.randn(2, 3, 10, 6) for _ in range(3))   # [batch, heads, S, D]
    >>> o = fsa.scaled_dot_product_attention(q, k, v, is_causal=True,
    ...                                      config="FSA8X8Fp16Config", engine="golden")
    >>> o.shape, o.dtype
    (torch.Size([2, 3, 10, 6]), torch.float32)

How a call becomes one device run:

* **Shapes.** ``query [..., S_q, D]``, ``key [..., S_kv, D]``, ``value
  [..., S_kv, D_v]``, any number of leading dimensions. Every leading index
  of the query is one head of the kernel (the (batch, head) pairs
  flattened, C order), so ``[B, H, S, D]`` is ONE program and one simulator
  start. Key/value leading dimensions broadcast to the query's (torch's
  rule, e.g. a batch of 1 shared by every batch); with ``enable_gqa=True``
  the key/value heads (dimension -3) may divide the query heads, query head
  ``h`` reading kv head ``h // (H_q / H_kv)`` as torch does. Shared kv heads
  are stored once: each query head's DMA reads its kv head's addresses
  (``kv_map``), nothing is copied.
* **Padding.** The array takes ``d = R`` and blocks of ``C`` queries and
  ``R`` keys: D and D_v (<= R) are padded with zero columns (a zero column
  of Q meets a zero column of K: the product is +0 and adds nothing; V's
  zero columns give output columns that are dropped); queries are padded
  with zero rows that are dropped; padded keys contribute exactly 0: under
  ``is_causal`` with ``S_q <= S_kv`` every padded key lies beyond every
  real query, where the causal mask already hides it; otherwise the kernel
  masks the keys ``>= key_limit`` of each head's last key block
  (``mask_keys``, register ``key_limit``).
* **Scale.** ``scale`` (default ``1 / sqrt(D)``, D the query's last
  dimension, as torch) is a run-time value: the hardware's exp2 constants
  ``log2(e) * scale`` rounded to E and to A (``scale_e`` / ``scale_a``,
  :func:`fsa.config.scale_bits`), in the program's ``settings`` (written by
  the host before the start; the reference ISA is unchanged).
* **Numbers.** Inputs are rounded (RNE) to the config's element format E,
  the output is the accumulate format A, returned in the query's dtype.
* **Not supported** (raise, naming what is): ``attn_mask``
  (NotImplementedError; ``is_causal=True`` is the mask the hardware has),
  ``dropout_p > 0`` (NotImplementedError: inference only), ``D > R`` or
  ``D_v > R`` (ValueError naming a config that fits), a non-positive or
  non-finite ``scale`` (ValueError; FlashAttention's running max needs a
  positive scale) or one whose constants over- or underflow E or A,
  causal on a non-square array (ValueError).
* **Empty inputs** follow torch: a zero-sized leading dimension, ``S_q = 0``
  or ``D_v = 0`` give an empty result, ``S_kv = 0`` zeros; nothing runs.

``return_stats=True`` returns ``(output, AttentionStats)``: cycles (the
device's exec counter; with ``engine="golden"`` the cycle model's,
:mod:`fsa.cycle.model`), useful FLOPs and utilisation of the whole run, the
device counters, and the program and raw result for inspection.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fsa import config as fconfig
from fsa import kernels
from fsa import numerics as nx
from fsa.config import FSAConfig
from fsa.cycle import model as cm
from fsa.engines import GoldenEngine, SimEngine
from fsa.formats import get_format
from fsa.kernel_lang import MEM_STRIDE_RANGE
from fsa.isa import SIZES, Dma, Fence, InstrType, Matrix
from fsa.progress import Progress
from fsa.progress import enabled as progress_enabled
from fsa.report import bus_bytes_per_cycle, bus_figures, conversion_overflow, program_dma_bytes

__all__ = ["scaled_dot_product_attention", "AttentionStats", "AttentionJob", "prepare",
           "engine_for", "ENGINES", "DEFAULT_CONFIG"]

#: the engines, all bit-identical: the golden model and the RTL in two simulators
ENGINES = ("golden", "verilator", "icarus")
DEFAULT_CONFIG = "FSA8X8Fp16Config"


@dataclass
class AttentionStats:
    """What one :func:`scaled_dot_product_attention` call ran.

    Attributes:
        engine, config: where it ran.
        heads: query heads of the kernel (the query's leading dims, flattened).
        kv_heads: key/value heads stored in memory.
        shape: the caller's ``(S_q, S_kv, D, D_v)``.
        padded: the kernel's ``(seq_q, seq_kv, d)`` per head (d = R).
        scale: the softmax scale used; key_limit: keys kept in each head's
            last key block (None when no key is masked).
        settings: the registers written before the start (name -> value).
        cycles: device cycles of the whole run (None when nothing ran);
            cycles_from says where they come from.
        flops: useful FLOPs of the caller's shape: ``2 (D + D_v)`` per
            (query, key) pair the causal mask keeps, every head
            (:func:`fsa.kernels.attention_flops` when ``D_v = D``).
        utilisation: flops / (cycles 2 R C).
        kernel_utilisation: the same for the padded shape the kernel ran
            (``fsa run``'s figure, :attr:`fsa.engines.Result.utilisation`).
        counters: device (or model) counters.
        key_blocks: (query block, key block) steps of all heads.
        words: instruction words of the program.
        dma_bytes, bus_bytes_per_cycle, bus_occupancy, array_bound_cycles,
            bus_occupancy_ceiling: the DMA's bytes (loads and stores), what
            the ports move per cycle, bytes / (cycles x that), and the
            array's input bound -- every key block enters the array as R
            rows of K and R of V from the left: at least ``2R`` cycles per
            step -- with the occupancy at that bound
            (:func:`fsa.report.bus_figures`).
        inputs: per input, values that overflowed E or were already non-finite.
        notes: accuracy warnings for this call (:func:`accuracy_notes`; the
            call also issues them as RuntimeWarnings).
        program, result: the :class:`~fsa.kernel_lang.Program` and the raw
            :class:`~fsa.engines.Result` (None when nothing ran).
    """

    engine: str
    config: str
    heads: int
    kv_heads: int
    shape: tuple[int, int, int, int]
    padded: tuple[int, int, int] | None = None
    scale: float | None = None
    key_limit: int | None = None
    settings: dict[str, int] = field(default_factory=dict)
    cycles: int | None = None
    cycles_from: str | None = None
    flops: int = 0
    utilisation: float | None = None
    kernel_utilisation: float | None = None
    counters: dict[str, int] = field(default_factory=dict)
    key_blocks: int = 0
    words: int = 0
    dma_bytes: int = 0
    bus_bytes_per_cycle: int = 0
    bus_occupancy: float | None = None
    array_bound_cycles: int = 0
    bus_occupancy_ceiling: float | None = None
    inputs: dict[str, dict] = field(default_factory=dict, repr=False)
    notes: list[str] = field(default_factory=list)
    program: Any = field(default=None, repr=False)      # (large: left out of the repr)
    result: Any = field(default=None, repr=False)

    def as_dict(self) -> dict[str, Any]:
        """The figures as plain data (no program or result), e.g. for JSON."""
        return {k: v for k, v in self.__dict__.items() if k not in ("program", "result")}


# ------------------------------------------------------------------ checks
def _unsupported(attn_mask: Any, dropout_p: Any) -> None:
    if attn_mask is not None:
        raise NotImplementedError(
            "fsa.scaled_dot_product_attention: attn_mask is not supported: the hardware has no "
            "arbitrary mask; use attn_mask=None, with is_causal=True for the causal mask")
    if isinstance(dropout_p, bool) or not isinstance(dropout_p, (int, float, np.integer,
                                                                 np.floating)):
        raise ValueError(f"fsa.scaled_dot_product_attention: dropout_p must be a number, got "
                         f"{dropout_p!r}")
    if not 0.0 <= float(dropout_p) <= 1.0:
        raise ValueError(f"fsa.scaled_dot_product_attention: dropout_p must be in [0, 1], got "
                         f"{dropout_p!r}")
    if dropout_p != 0:
        raise NotImplementedError(
            f"fsa.scaled_dot_product_attention: dropout_p = {dropout_p} is not supported: FSA "
            f"runs inference only; use dropout_p=0.0")


#: numpy float dtypes torch has (not longdouble)
_NP_FLOATS = tuple(np.dtype(t) for t in (np.float16, np.float32, np.float64))


def _check_flag(name: str, x: Any) -> bool:
    """A bool argument, as torch checks it (a string "False" is not False)."""
    if not isinstance(x, (bool, np.bool_)):
        raise TypeError(f"fsa.scaled_dot_product_attention: {name} must be a bool, got "
                        f"{type(x).__name__} {x!r}")
    return bool(x)


def _as_array(name: str, x: Any) -> tuple[np.ndarray, Any]:
    """A torch tensor or numpy array -> (float64 array, torch dtype)."""
    import torch        # (heavy: loaded when the API is called, not when fsa is imported)

    if isinstance(x, torch.Tensor):
        if x.device.type == "meta":
            raise ValueError(f"fsa.scaled_dot_product_attention: {name} is a meta tensor (a "
                             f"shape without values); give a tensor that holds its values "
                             f"(e.g. on the CPU)")
        if not x.is_floating_point():
            raise ValueError(f"fsa.scaled_dot_product_attention: {name} must be a floating-point "
                             f"tensor, got dtype {x.dtype}")
        return x.detach().to("cpu", torch.float64).numpy(), x.dtype
    if isinstance(x, np.ndarray):
        if x.dtype.kind == "f" and not x.dtype.isnative:
            x = x.astype(x.dtype.newbyteorder("="))        # (e.g. big-endian >f4: the values)
        if x.dtype.kind != "f" or x.dtype not in _NP_FLOATS:
            raise ValueError(f"fsa.scaled_dot_product_attention: {name} must be a floating-point "
                             f"array of a dtype torch has (float16, float32, float64), got dtype "
                             f"{x.dtype}")
        dt = torch.from_numpy(np.zeros(0, x.dtype)).dtype
        return x.astype(np.float64), dt
    raise TypeError(f"fsa.scaled_dot_product_attention: {name} must be a torch.Tensor or a "
                    f"numpy.ndarray, got {type(x).__name__}")


def _kv_map(q_lead: tuple, kv_lead: tuple, enable_gqa: bool) -> np.ndarray:
    """For each query head (the query's leading index, flattened), the kv
    head (the key's leading index, flattened) it reads."""
    idx = np.arange(math.prod(kv_lead), dtype=np.int64).reshape(kv_lead)
    if enable_gqa and q_lead and kv_lead and q_lead[-1] != kv_lead[-1]:
        hq, hkv = q_lead[-1], kv_lead[-1]
        if hkv == 0 or hq % hkv:
            raise ValueError(f"fsa.scaled_dot_product_attention: enable_gqa: the key/value heads "
                             f"({hkv}, dimension -3) must divide the query heads ({hq})")
        idx = np.repeat(idx, hq // hkv, axis=-1)
    try:
        return np.broadcast_to(idx, q_lead).reshape(-1)
    except ValueError:
        gqa = ""
        if not enable_gqa:
            try:                          # suggest enable_gqa only where it would help
                _kv_map(q_lead, kv_lead, True)
                gqa = " (for fewer key/value heads than query heads, enable_gqa=True)"
            except ValueError:
                pass
        raise ValueError(f"fsa.scaled_dot_product_attention: the key/value leading dimensions "
                         f"{list(kv_lead)} do not broadcast to the query's {list(q_lead)}{gqa}; "
                         f"the output has the query's leading dimensions") from None


def _check_scale(scale: Any, d: int) -> float:
    if scale is None:
        return 1.0 / math.sqrt(d)
    if isinstance(scale, bool) or not isinstance(scale, (int, float, np.integer, np.floating)):
        raise ValueError(f"fsa.scaled_dot_product_attention: scale must be a positive number or "
                         f"None (1/sqrt(D)), got {scale!r}")
    s = float(scale)
    if not (math.isfinite(s) and s > 0):
        raise ValueError(f"fsa.scaled_dot_product_attention: scale must be positive and finite "
                         f"(FlashAttention's running max needs a positive scale), got {scale!r}")
    return s


def _fitting_configs(d: int) -> str:
    names = [n for n in fconfig.names() if fconfig.get(n).sa_rows >= d]
    return f" (e.g. {names[0]})" if names else ""


def word_count(instructions) -> int:
    """Instruction words of a program (``len(program.words())`` without
    encoding it: each instruction's size by type)."""
    n = {Fence: SIZES[InstrType.FENCE], Matrix: SIZES[InstrType.MATRIX],
         Dma: SIZES[InstrType.DMA]}
    return sum(n[type(x)] for x in instructions)


# ------------------------------------------------------------------ the job
@dataclass
class AttentionJob:
    """One attention call made ready to run: the program and its inputs.

    Made by :func:`prepare` (``fsa run`` uses it to run the same program on
    the golden model and on the RTL). Attributes: `cfg`, `program` (None
    when there is nothing to run: empty inputs), `inputs` (name -> E bits,
    for :meth:`fsa.engines.Engine.run`), `out_shape` (``[..., S_q, D_v]``),
    `causal`, `stats` (an :class:`AttentionStats` without the run's figures).
    """

    cfg: FSAConfig
    program: Any
    inputs: dict[str, np.ndarray]
    out_shape: tuple[int, ...]
    causal: bool
    stats: AttentionStats

    def output(self, res) -> np.ndarray:
        """The caller's output ``[..., S_q, D_v]`` (float64) from a Result
        (padding dropped); zeros when nothing ran."""
        if self.program is None:
            return np.zeros(self.out_shape)
        st, R = self.stats, self.cfg.sa_rows
        sq, dv, sq_p = st.shape[0], st.shape[3], st.padded[0]
        o = nx.to_float64(res.outputs["O"], self.cfg.a_type).reshape(st.heads, sq_p, R)
        return np.ascontiguousarray(o[:, :sq, :dv]).reshape(self.out_shape)

    def finish(self, res, engine: str) -> AttentionStats:
        """The stats of a run (`res`: its Result). An untimed engine (the
        golden model) gets the cycle model's cycles (with program fetch, the
        default of the simulator engines)."""
        st, cfg, prog = self.stats, self.cfg, self.program
        st.engine = engine
        if prog is None:
            return st
        cycles, cycles_from = res.cycles, "device exec counter"
        if cycles is None:
            # the program fetched from memory, as the simulator engines run it
            feed = cm.program_feed(cfg, "fetch", st.words)
            cycles, cycles_from = cm.simulate(cfg, prog.instructions, **feed).cycles, \
                "cycle model (fsa/cycle/model.py, program fetch)"
            res.cycles = cycles
        R, C = cfg.sa_rows, cfg.sa_cols
        st.cycles, st.cycles_from = cycles, cycles_from
        for name, value in bus_figures(cfg, st.dma_bytes, cycles, st.key_blocks).items():
            setattr(st, name, value)
        st.utilisation = kernels.utilisation(st.flops, cycles, R, C)
        st.kernel_utilisation = res.utilisation
        st.counters, st.program, st.result = dict(res.counters), prog, res
        return st


#: accumulate formats whose row sums lose precision on long key sequences:
#: S_kv from which a note is given, and the measured S_kv from which the
#: README's bounds failed (README "Accuracy limits": 8x8, FA3-style
#: inputs, 4 seeds each)
NARROW_ACCUMULATE = {"fp16": (512, 1024), "bf16": (1024, 2048)}
#: multiply-adds up to which the largest score is computed exactly for the note
SCORE_CHECK_MACS = 4e9


def accuracy_notes(cfg: FSAConfig, q: np.ndarray, k: np.ndarray, kv_map, scale: float,
                   seq_kv: int) -> list[str]:
    """Why a call may miss the README's accuracy bounds on `cfg`: row sums
    of many keys in a narrow accumulate format, and scores that overflow the
    element format (the PE register holds them in E, docs/array.md: those
    outputs become NaN).  `q` ``[H, S_q, D]`` and `k` ``[H_kv, S_kv, D]`` as
    float64; `kv_map` query head -> kv head.  (The largest score is computed
    when that costs at most :data:`SCORE_CHECK_MACS` multiply-adds, else not
    checked.)  Not noted: the rounding of large scores to E, which costs
    accuracy gradually (README "Accuracy limits")."""
    notes = []
    narrow = NARROW_ACCUMULATE.get(cfg.a_type)
    if narrow is not None and seq_kv > narrow[0]:
        notes.append(f"{cfg.name} accumulates the row sums and outputs in {cfg.a_type}: with "
                     f"{seq_kv} keys per query they lose precision (measured: the README's "
                     f"accuracy bounds start to fail from about {narrow[1]} keys; the presets "
                     f"with an fp32 accumulator have no such limit)")
    fe = get_format(cfg.e_type)
    if fe.man_bits >= 23 or q.size == 0 or k.size == 0:
        return notes
    macs = q.shape[0] * q.shape[1] * k.shape[1] * q.shape[2]
    if macs > SCORE_CHECK_MACS:
        return notes
    top = 0.0
    rows = max(1, int(4e6 // max(1, k.shape[1])))
    with np.errstate(all="ignore"):
        for h, g in enumerate(kv_map):
            for i in range(0, q.shape[1], rows):
                sc = np.abs(q[h, i:i + rows] @ k[int(g)].T)
                if sc.size:
                    top = max(top, float(np.nanmax(np.where(np.isfinite(sc), sc, 0.0))))
    largest = (2.0 - 2.0 ** -fe.man_bits) * 2.0 ** fe.emax
    if top > largest:
        notes.append(f"scores up to {top:.3g} overflow {cfg.e_type} (largest {largest:g}) in "
                     f"the array, which holds them in the element format: those queries' outputs "
                     f"become NaN (scale the inputs down, or use an fp32 preset)")
    return notes


def prepare(query: np.ndarray, key: np.ndarray, value: np.ndarray, is_causal: bool = False,
            scale: float | None = None, enable_gqa: bool = False, *,
            config: "FSAConfig | str" = DEFAULT_CONFIG, before_build=None,
            kernel: str | None = None) -> AttentionJob:
    """Check an attention call on float64 arrays and build its program.

    The shape, scale and config rules of :func:`scaled_dot_product_attention`
    (which calls this, after refusing attn_mask and dropout); ValueError as
    it raises them.
    `before_build(stats)`, if given, is called with the checked shape
    (``stats.heads``, ``stats.padded`` ...) before the program is built,
    e.g. to refuse a run too large for the golden model. `kernel`: as
    :func:`fsa.kernels.attention` (None: the config's dataflow decides).
    """
    cfg = fconfig.get(config)
    R, C = cfg.sa_rows, cfg.sa_cols
    q, k, v = query, key, value
    if min(q.ndim, k.ndim, v.ndim) < 2:
        raise ValueError(f"fsa.scaled_dot_product_attention: query, key and value must have at "
                         f"least 2 dimensions [..., S, D], got shapes {list(q.shape)}, "
                         f"{list(k.shape)}, {list(v.shape)}")
    sq, d = q.shape[-2:]
    skv, dv = v.shape[-2:]
    if k.shape[-1] != d:
        raise ValueError(f"fsa.scaled_dot_product_attention: key's last dimension ({k.shape[-1]})"
                         f" must equal the query's ({d})")
    if k.shape[:-1] != v.shape[:-1]:
        raise ValueError(f"fsa.scaled_dot_product_attention: key {list(k.shape)} and value "
                         f"{list(v.shape)} must agree in every dimension but the last")
    q_lead, kv_lead = q.shape[:-2], k.shape[:-2]
    kv_map = _kv_map(q_lead, kv_lead, bool(enable_gqa))
    if d == 0:
        raise ValueError("fsa.scaled_dot_product_attention: the head dimension D is 0")
    for name, x in (("D (query/key)", d), ("D_v (value)", dv)):
        if x > R:
            raise ValueError(f"fsa.scaled_dot_product_attention: head dimension {name} = {x} "
                             f"exceeds the array rows R = {R} of {cfg.name}; use D <= {R} or a "
                             f"config with sa_rows >= {x}{_fitting_configs(x)}")
    if is_causal and R != C:
        raise ValueError(f"fsa.scaled_dot_product_attention: is_causal needs a square array "
                         f"(R == C); {cfg.name} is {R}x{C}")
    sc = _check_scale(scale, d)
    heads, kv_heads = len(kv_map), math.prod(kv_lead)
    stats = AttentionStats("", cfg.name, heads, kv_heads, (sq, skv, d, dv), scale=sc)
    out_shape = tuple(q_lead) + (sq, dv)
    if heads == 0 or sq == 0 or dv == 0 or skv == 0:     # torch: empty, or zeros when S_kv = 0
        return AttentionJob(cfg, None, {}, out_shape, bool(is_causal), stats)

    sq_p, skv_p, key_limit = kernels.padded_shape(cfg, sq, skv, bool(is_causal))
    try:
        fconfig.scale_bits(cfg, sc)                 # representable in E and A
    except ValueError as e:
        raise ValueError(f"fsa.scaled_dot_product_attention: {e}") from None
    stats.padded, stats.key_limit = (sq_p, skv_p, R), key_limit
    if before_build is not None:
        before_build(stats)
    eb = get_format(cfg.e_type).width // 8
    stride_max = MEM_STRIDE_RANGE[1]            # the kernel language's DMA field check
    if kv_heads * skv_p * eb > stride_max:
        # V^T [D, kv_heads * S_kv] is one tensor: its row stride is a DMA field
        most = stride_max // (eb * kv_heads) // R * R
        raise ValueError(f"fsa.scaled_dot_product_attention: S_kv = {skv} (padded to {skv_p}) x "
                         f"{kv_heads} key/value heads is too long for one program on {cfg.name}: "
                         f"the transposed values' row stride ({kv_heads * skv_p * eb} bytes) must "
                         f"fit the DMA's memory-stride field (at most {stride_max}); "
                         f"use S_kv <= {most} per call (or fewer key/value heads per call)")
    prog = kernels.attention(cfg, sq_p, skv_p, causal=bool(is_causal), heads=heads,
                             kv_heads=kv_heads, kv_map=[int(x) for x in kv_map], scale=sc,
                             key_limit=key_limit, kernel=kernel)
    stats.settings = dict(prog.settings)

    def padded(x: np.ndarray, n: int, s: int, s_p: int, width: int) -> np.ndarray:
        buf = np.zeros((n, s_p, R))
        buf[:, :s, :width] = x.reshape(n, s, width)
        return nx.from_float64(buf.reshape(n * s_p, R), cfg.e_type)

    for name, x in (("query", q), ("key", k), ("value", v)):
        stats.inputs[name] = conversion_overflow(x, cfg.e_type)
    stats.notes = accuracy_notes(cfg, q.reshape(heads, sq, d), k.reshape(kv_heads, skv, d),
                                 kv_map, sc, skv)
    inputs = {"Q": padded(q, heads, sq, sq_p, d), "K": padded(k, kv_heads, skv, skv_p, d),
              "V": padded(v, kv_heads, skv, skv_p, dv)}
    pairs = kernels.attention_flops(sq, skv, 1, bool(is_causal)) // 4
    stats.flops = heads * pairs * 2 * (d + dv)
    stats.key_blocks, stats.words = prog.meta["key_blocks"], word_count(prog.instructions)
    stats.dma_bytes = program_dma_bytes(prog.instructions)
    stats.bus_bytes_per_cycle = bus_bytes_per_cycle(cfg)
    return AttentionJob(cfg, prog, inputs, out_shape, bool(is_causal), stats)


def engine_for(cfg: FSAConfig, engine: str, prog, progress=None, ticks=None,
               built: bool = False, **kw):
    """The :mod:`fsa.engines` engine called `engine` for `prog` (`progress`:
    callable(str) for messages; `ticks`: callable(done, total), the golden
    model's steps; `built`: `prog` comes unchanged from :func:`prepare`,
    :class:`~fsa.engines.GoldenEngine`'s argument)."""
    if engine not in ENGINES:
        raise ValueError(f"fsa.scaled_dot_product_attention: engine must be one of {ENGINES}, "
                         f"got {engine!r}")
    if engine == "golden":
        return GoldenEngine(cfg, progress=progress, ticks=ticks, built=built)
    # a generous cycle limit: the slowest preset needs about 100 cycles a key block
    kw.setdefault("max_cycles", max(1_000_000, 50 * cfg.sa_rows * prog.meta["key_blocks"]))
    return SimEngine(cfg, sim=engine, progress=progress, **kw)


# ------------------------------------------------------------------ the call
def scaled_dot_product_attention(query: Any, key: Any, value: Any, attn_mask: Any = None,
                                 dropout_p: float = 0.0, is_causal: bool = False,
                                 scale: float | None = None, enable_gqa: bool = False, *,
                                 config: "FSAConfig | str" = DEFAULT_CONFIG,
                                 engine: str = "golden", return_stats: bool = False,
                                 keep: bool = False, progress: "bool | None" = None,
                                 force: bool = False):
    """Attention ``softmax(Q K^T scale [+ causal mask]) V`` on FSA, torch's contract.

    Args:
        query: ``[..., S_q, D]`` torch tensor (or numpy array), floating point.
        key: ``[..., S_kv, D]``; value: ``[..., S_kv, D_v]`` (the same dtype
            as the query; leading dims that broadcast to the query's).
        attn_mask: must be None (NotImplementedError otherwise).
        dropout_p: must be 0 (NotImplementedError for > 0).
        is_causal: torch's top-left aligned causal mask (query i sees keys
            0..i); needs a square array.
        scale: the softmax scale, positive; default ``1 / sqrt(D)``.
        enable_gqa: grouped-query attention as torch (kv heads at dim -3
            dividing the query heads).
        config: an :class:`~fsa.config.FSAConfig` or preset name (D and D_v
            must be <= its ``sa_rows``).
        engine: "golden" (the bit-exact model), "verilator" or "icarus"
            (the RTL; the simulator is built on first use): the same bits.
        return_stats: also return an :class:`AttentionStats`.
        keep: keep the simulator's run folder (log, results, under ``sims/``)
            after a successful run on "verilator" or "icarus" (default: it is
            removed; a failed run keeps it and names it in the error).
        progress: progress bars with an ETA on stderr for the stages that
            run longer than a few seconds (:mod:`fsa.progress`: the dispatch
            check, the golden model's key-block steps, the simulation's
            stages); None (default): only when stderr is a terminal.
        force: run a call that ``fsa run`` would refuse (more than an hour,
            or more memory than the machine has, by the estimate of
            :func:`fsa.cli.common.golden_estimate`); without it such a call
            raises ValueError with the estimate.  Estimates over 30 s are
            printed on stderr when progress bars are on.

    Returns:
        A CPU torch tensor ``[..., S_q, D_v]`` of the query's dtype (the
        query's leading dims), or ``(tensor, AttentionStats)``.

    Raises:
        NotImplementedError: attn_mask, dropout_p > 0.
        ValueError: bad shapes, dtypes, scale (also one whose ``scale *
            log2(e)`` over- or underflows E or A), engine or config; D > R;
            a call too large to run (the estimate; ``force=True`` runs it).
        TypeError: inputs that are neither torch tensors nor numpy arrays;
            is_causal, enable_gqa or return_stats not a bool; a config that
            is neither a name nor an FSAConfig.
        fsa.engines.DeviceError: the device ended in its error state.
    """
    import torch

    _unsupported(attn_mask, dropout_p)
    is_causal, enable_gqa = _check_flag("is_causal", is_causal), _check_flag("enable_gqa", enable_gqa)
    return_stats, keep = _check_flag("return_stats", return_stats), _check_flag("keep", keep)
    force = _check_flag("force", force)
    try:
        bars = Progress(progress_enabled(progress))
    except TypeError as e:
        raise TypeError(f"fsa.scaled_dot_product_attention: {e}") from None
    if keep and engine == "golden":
        raise ValueError("fsa.scaled_dot_product_attention: keep=True: only with engine "
                         "'verilator' or 'icarus' (the golden model has no run folder)")
    if not isinstance(config, (str, FSAConfig)):
        raise TypeError(f"fsa.scaled_dot_product_attention: config must be a preset name, a path "
                        f"to an FSAConfig.json or an FSAConfig, got {type(config).__name__}")
    if engine not in ENGINES:
        raise ValueError(f"fsa.scaled_dot_product_attention: engine must be one of {ENGINES}, "
                         f"got {engine!r}")
    arrays = [_as_array(n, x) for n, x in (("query", query), ("key", key), ("value", value))]
    (q, dtype), (k, kdt), (v, vdt) = arrays
    if not dtype == kdt == vdt:
        raise ValueError(f"fsa.scaled_dot_product_attention: query, key and value must have the "
                         f"same dtype, got {dtype}, {kdt} and {vdt}")
    def fits(st) -> None:           # fsa run's refusal, before the program is built
        from fsa.cli.common import check_golden_fits
        what = "building and checking the program" + (" and the golden model"
                                                      if engine == "golden" else "")
        check_golden_fits(fconfig.get(config), st.padded[0], st.padded[1], is_causal, force,
                          st.heads, what=what, override="force=True",
                          tell=lambda m: bars.show and print(
                              f"fsa.scaled_dot_product_attention: {m}", file=bars.stream))

    with bars.active():
        job = prepare(q, k, v, is_causal, scale, enable_gqa, config=config, before_build=fits)
    for note in job.stats.notes:
        warnings.warn(f"fsa.scaled_dot_product_attention: {note}", RuntimeWarning, stacklevel=2)
    for name, conv in job.stats.inputs.items():
        if conv["overflow"]:
            warnings.warn(f"fsa.scaled_dot_product_attention: {conv['overflow']} finite values "
                          f"of {name} overflow {job.cfg.e_type} and became +-inf",
                          RuntimeWarning, stacklevel=2)
    res = None
    if job.program is not None:
        extra = {} if engine == "golden" else {"keep": keep}
        if engine == "golden":
            stage, say = bars.stage("golden model", 0, " key-block steps"), None
        else:           # the simulator reports its stages only: a clock with their names
            stage = bars.stage(f"{engine}").clock()

            def say(msg: str) -> None:
                stage.desc = f"{engine}: {msg}"
        try:
            with bars.active():
                # (built=True: the program comes unchanged from prepare above)
                res = engine_for(job.cfg, engine, job.program, progress=say, ticks=stage.update,
                                 built=True, **extra).run(job.program, job.inputs)
        finally:
            stage.close()
    out = torch.from_numpy(job.output(res)).to(dtype)
    return (out, job.finish(res, engine)) if return_stats else out
