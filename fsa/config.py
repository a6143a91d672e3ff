"""FSA hardware configurations: one frozen dataclass and its named presets.

The single source of truth read by both the generator (``rtl/generate.py``
writes it to ``gen/<name>/FSAConfig.json``) and the software (which reads it
back with :func:`FSAConfig.from_json`).

Example::

    >>> from fsa import config
    >>> cfg = config.get("FSA8X8Fp16Config")
    >>> cfg.sa_rows, cfg.e_type, cfg.a_type
    (8, 'fp16', 'fp32')
"""
from __future__ import annotations

import difflib
import json
import math
import re
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from . import configfile
from .formats import FORMATS, FPFormat, get_format

__all__ = ["FSAConfig", "PRESETS", "get", "names", "DEFAULT", "with_axi_bits", "DATAFLOWS",
           "ud_twin_name", "memory_system", "burst_beats"]

#: (element, accumulate) format pairs the hardware supports.
FORMAT_PAIRS = {("fp16", "fp32"), ("bf16", "fp32"), ("fp32", "fp32"),
                ("fp16", "fp16"), ("bf16", "bf16")}

DEFAULT = "FSA4X4Fp16Config"

#: The array's dataflows (FSAConfig.dataflow): the reference schedules, or
#: the unidirectional one of docs/ud.md.
DATAFLOWS = ("reference", "ud")

#: The most pipeline registers of the FMA (FSAConfig.fma_stages).
MAX_FMA_STAGES = 4


@dataclass(frozen=True)
class FSAConfig:
    """One FSA hardware configuration.

    Attributes:
        name: preset name (also the folder under ``gen/``).
        sa_rows: systolic array rows R (= head dimension d = key block Bc).
        sa_cols: systolic array columns C (= query block Br).
        e_type: element (multiply) format, "fp16" | "bf16" | "fp32".
        a_type: accumulate format, "fp32" | "fp16" | "bf16".
        spad_rows: scratchpad rows of R elements; 0 means the reference size
            ``2*C + 4*R`` (Q, K and V double-buffered).
        acc_rows: accumulator rows of C elements; 0 means the reference size
            ``1 + R`` (running sum l plus R rows of O transposed).
        spad_banks, acc_banks: SRAM banks (power of two).
        inst_queue_size: instruction queue depth in 32-bit words.
        mem_ports: number of AXI4 memory master ports.
        axi_data_bits: AXI4 data width (a beat) in bits (the dataclass default
            is 64; the presets take :func:`memory_system`'s width, one beat
            per scratchpad row up to 512 bits, and ``...Axi64Config`` keeps
            the narrow bus).
        axi_addr_bits: AXI4 address width in bits.
        dma_outstanding: AXI bursts each memory port keeps in flight per
            direction (the DMA port's descriptor FIFO, rtl/fsa_dma_port.py):
            2, 4, 8 or 16; default 8, the fewest that never stall against a
            memory answering like cocotbext-axi's AxiRam (a STORE of one-beat
            rows waits ~6 cycles for each B response), and the depth the
            cycle model is calibrated for (it assumes the depth never limits).
        dma_burst_beats: the longest AXI burst (beats) the DMA makes by
            merging rows: 0 (default, the reference's way) gives every row
            its own burst; a power of two 2..256 lets an instruction whose
            rows follow each other in memory (``mem_stride == size``, a
            power of two) and in the SRAM (``sram_stride == 1``) move up to
            that many beats of whole rows in one INCR burst, never across a
            4 KiB boundary (``fsa.hw.dmarules.bursts``).  Needs at least two
            banks in each SRAM: the SRAMs then get a narrow port per bank
            also with one AXI port (``fsa.hw.dmarules.bank_ports``), and the
            DMA moves each port's beats as with several ports (the cycle
            model follows merged bursts in those per-port beats).
        dma_rw_overlap: let a LOAD and a STORE be in flight in the DMA at
            once (default False, the reference's way: a STORE waits until
            nothing is in flight, and so does a LOAD behind a STORE).  Each
            memory port then has a read half (AR, R) and a write half (AW,
            W, B); the two instructions use different SRAMs and disjoint
            memory bytes (``fsa.hw.dmarules.load_store_ok``; otherwise the
            second waits as before).  Needs at least two banks in each
            SRAM, as ``dma_burst_beats``.
        mem_base, mem_size: the memory window the DMA may touch (bytes).
        exp2_pieces: P, pieces of the exp2 piecewise-linear approximation.
        div_bits_per_cycle: quotient bits per cycle of the ACC divider.
        ctrl_base: base address of the AXI4-Lite control registers.
        dataflow: "reference" (the reference FSA schedules, matrix function
            codes 0..4) or "ud" (adds the unidirectional dataflow of
            docs/ud.md: codes 5..10, the bottom comparator row, Q resident in
            a second PE register; needs ``sa_cols <= sa_rows + exp2_pieces
            + 1``).  Written to ``FSAConfig.fsa.json``, never to the
            reference's 12-key ``FSAConfig.json``.
        fma_stages: pipeline registers of the FMA (rtl/fp/fsa_fma_pipe.py),
            0..MAX_FMA_STAGES: 0 (default) is the single-cycle FMA; N adds N
            cycles of latency.  Only 0 builds a device so far: the PE, ACC
            and the plans do not take the latency yet (docs/pipelining.md).
            Written to ``FSAConfig.fsa.json`` like ``dataflow``.
    """

    name: str
    sa_rows: int
    sa_cols: int
    e_type: str = "fp16"
    a_type: str = "fp32"
    spad_rows: int = 0
    acc_rows: int = 0
    spad_banks: int = 1
    acc_banks: int = 1
    inst_queue_size: int = 256
    mem_ports: int = 1
    axi_data_bits: int = 64
    axi_addr_bits: int = 39
    dma_outstanding: int = 8
    dma_burst_beats: int = 0
    dma_rw_overlap: bool = False
    mem_base: int = 0x8000_0000
    mem_size: int = 0x1000_0000
    exp2_pieces: int = 8
    div_bits_per_cycle: int = 2
    ctrl_base: int = 0x8000
    dataflow: str = "reference"
    fma_stages: int = 0

    def __post_init__(self) -> None:
        for f in fields(self):             # the types first: JSON may hold anything
            v = getattr(self, f.name)
            want = {str: str, "str": str, bool: bool, "bool": bool}.get(f.type, int)
            if type(v) is not want:
                what = {str: "a string", bool: "true or false"}.get(want, "an integer")
                raise ValueError(f"{self.name if isinstance(self.name, str) else 'FSAConfig'}: "
                                 f"{f.name} must be {what}, got {type(v).__name__} {v!r}")
        if self.spad_rows == 0:
            object.__setattr__(self, "spad_rows", 2 * self.sa_cols + 4 * self.sa_rows)
        if self.acc_rows == 0:
            object.__setattr__(self, "acc_rows", 1 + self.sa_rows)
        self.validate()

    # ------------------------------------------------------------------ checks
    def validate(self) -> None:
        """Raise ValueError naming the field and what to change."""
        def need(cond: bool, msg: str) -> None:
            if not cond:
                raise ValueError(f"{self.name}: {msg}")

        def pow2(v: int) -> bool:
            return isinstance(v, int) and v >= 1 and (v & (v - 1)) == 0

        need(isinstance(self.name, str) and self.name.isidentifier(),
             f"name must be an identifier (letters, digits, _), got {self.name!r}")
        for f in ("sa_rows", "sa_cols"):
            v = getattr(self, f)
            need(isinstance(v, int) and 2 <= v <= 256, f"{f} must be an integer in 2..256, got {v!r}")
        need(self.e_type in FORMATS, f"e_type must be one of {sorted(FORMATS)}, got {self.e_type!r}")
        need(self.a_type in FORMATS, f"a_type must be one of {sorted(FORMATS)}, got {self.a_type!r}")
        need((self.e_type, self.a_type) in FORMAT_PAIRS,
             f"(e_type, a_type) = ({self.e_type}, {self.a_type}) is not supported; "
             f"use one of {sorted(FORMAT_PAIRS)}")
        need(get_format(self.a_type).width >= get_format(self.e_type).width,
             "a_type must be at least as wide as e_type")
        need(self.spad_rows >= self.sa_cols + 2 * self.sa_rows,
             f"spad_rows must hold at least one Q tile and one K and V tile "
             f"(>= {self.sa_cols + 2 * self.sa_rows}), got {self.spad_rows}")
        need(self.acc_rows >= 1 + self.sa_rows,
             f"acc_rows must be >= 1 + sa_rows = {1 + self.sa_rows}, got {self.acc_rows}")
        need(self.spad_rows < (1 << 20) and self.acc_rows < (1 << 20),
             "spad_rows and acc_rows must fit the 20-bit row address of the ISA")
        for f in ("spad_banks", "acc_banks"):
            v = getattr(self, f)
            need(pow2(v) and v <= 16, f"{f} must be a power of two in 1..16, got {v!r}")
        need(pow2(self.inst_queue_size) and 4 <= self.inst_queue_size <= 4096,
             f"inst_queue_size must be a power of two in 4..4096, got {self.inst_queue_size!r}")
        need(isinstance(self.mem_ports, int) and 1 <= self.mem_ports <= 8,
             f"mem_ports must be in 1..8, got {self.mem_ports!r}")
        need(self.axi_data_bits in (32, 64, 128, 256, 512),
             f"axi_data_bits must be one of 32, 64, 128, 256, 512, got {self.axi_data_bits!r}")
        need(isinstance(self.axi_addr_bits, int) and 32 <= self.axi_addr_bits <= 39,
             f"axi_addr_bits must be in 32..39 (the ISA carries 39-bit addresses), got {self.axi_addr_bits!r}")
        need(type(self.dma_outstanding) is int and self.dma_outstanding in (2, 4, 8, 16),
             f"dma_outstanding must be 2, 4, 8 or 16 (AXI bursts in flight per port), "
             f"got {self.dma_outstanding!r}")
        need(self.dma_burst_beats == 0 or (pow2(self.dma_burst_beats)
                                           and 2 <= self.dma_burst_beats <= 256),
             f"dma_burst_beats must be 0 (one burst per row) or a power of two in 2..256 "
             f"(AXI4's longest INCR burst), got {self.dma_burst_beats!r}")
        need(self.dma_burst_beats == 0 or (self.spad_banks >= 2 and self.acc_banks >= 2),
             f"dma_burst_beats = {self.dma_burst_beats} needs spad_banks >= 2 and acc_banks >= 2 "
             f"(merged bursts go through a narrow port per bank; with a shared narrow port the "
             f"DMA keeps one row per burst), got spad_banks = {self.spad_banks}, acc_banks = "
             f"{self.acc_banks}; set dma_burst_beats = 0 or change those")
        need(not self.dma_rw_overlap or (self.spad_banks >= 2 and self.acc_banks >= 2),
             f"dma_rw_overlap needs spad_banks >= 2 and acc_banks >= 2 (each SRAM's narrow "
             f"port per bank serves the LOAD's or the STORE's beats), got spad_banks = "
             f"{self.spad_banks}, acc_banks = {self.acc_banks}; set dma_rw_overlap = false or "
             f"change those")
        need(self.mem_size > 0 and self.mem_base >= 0
             and self.mem_base + self.mem_size <= (1 << self.axi_addr_bits),
             f"memory window [0x{self.mem_base:x}, +0x{self.mem_size:x}) must fit in "
             f"{self.axi_addr_bits} address bits")
        need(self.mem_base % self.mem_align == 0 and self.mem_size % self.mem_align == 0,
             f"mem_base and mem_size must be multiples of mem_align = {self.mem_align}")
        max_pieces = 32 if get_format(self.a_type).exp_max >= 32 else 16
        need(pow2(self.exp2_pieces) and 2 <= self.exp2_pieces <= max_pieces,
             f"exp2_pieces must be a power of two in 2..{max_pieces} (the piece index "
             f"travels in the {self.a_type} exponent field), got {self.exp2_pieces!r}")
        from .numerics import pwl_constants
        for fmts in ((self.e_type, self.a_type), (self.a_type, self.a_type)):
            try:
                pwl_constants(self.exp2_pieces, *fmts)
            except ValueError as err:
                need(False, f"exp2_pieces = {self.exp2_pieces} does not work with "
                            f"{self.a_type} intercepts ({err})")
        need(self.div_bits_per_cycle in (1, 2, 4),
             f"div_bits_per_cycle must be 1, 2 or 4, got {self.div_bits_per_cycle!r}")
        need(isinstance(self.ctrl_base, int) and not isinstance(self.ctrl_base, bool)
             and 0 <= self.ctrl_base < (1 << 32) and self.ctrl_base % 0x100 == 0,
             f"ctrl_base must be a non-negative 32-bit address, a multiple of 0x100 (the "
             f"register block), got {self.ctrl_base!r}")
        need(self.dataflow in DATAFLOWS,
             f"dataflow must be one of {DATAFLOWS}, got {self.dataflow!r}")
        need(0 <= self.fma_stages <= MAX_FMA_STAGES,
             f"fma_stages must be in 0..{MAX_FMA_STAGES} (pipeline registers of the FMA; "
             f"0 = single-cycle), got {self.fma_stages!r}")
        need(self.fma_stages == 0,
             f"fma_stages = {self.fma_stages}: the pipelined FMA exists (rtl/fp/fsa_fma_pipe.py) "
             f"but the PE, the ACC and the plans do not take its latency yet; use 0")
        if self.dataflow == "ud":
            need(self.sa_cols <= self.sa_rows + self.exp2_pieces + 1,
                 f"dataflow 'ud' needs sa_cols <= sa_rows + exp2_pieces + 1 = "
                 f"{self.sa_rows + self.exp2_pieces + 1} (two issue slots cover a STEP's "
                 f"{self.sa_cols - 1}-cycle column skew only up to there), got sa_cols = {self.sa_cols}")
        # What the generator and the DMA need (checked here so that a bad config
        # fails at construction, naming the field, not later in rtl/).
        beat = self.axi_data_bits
        for what, bits, how in (("scratchpad", self.sa_rows * get_format(self.e_type).width,
                                 "sa_rows x e_type"),
                                ("accumulator", self.sa_cols * get_format(self.a_type).width,
                                 "sa_cols x a_type")):
            need(bits >= beat and bits % beat == 0,
                 f"axi_data_bits = {beat} must divide the {what} row ({bits} bits = {how}): "
                 f"the DMA moves whole beats into one SRAM row; "
                 + (f"use axi_data_bits in {ok}" if (ok := [b for b in (32, 64, 128, 256, 512)
                                                           if b <= bits and bits % b == 0])
                    else "no AXI width fits: change the array size or the formats"))
        for f, rows, banks in (("spad", self.spad_rows, self.spad_banks),
                               ("acc", self.acc_rows, self.acc_banks)):
            need(rows >= 2 * banks,
                 f"{f}_rows must be >= 2 x {f}_banks = {2 * banks} (at least two rows per bank), "
                 f"got {rows}")

    # --------------------------------------------------------------- derived
    @property
    def e_fmt(self) -> FPFormat:
        return get_format(self.e_type)

    @property
    def a_fmt(self) -> FPFormat:
        return get_format(self.a_type)

    @property
    def mem_align(self) -> int:
        """Byte alignment of DMA rows in memory (one AXI beat)."""
        return self.axi_data_bits // 8

    @property
    def spad_row_bytes(self) -> int:
        return self.sa_rows * self.e_fmt.bytes

    @property
    def acc_row_bytes(self) -> int:
        return self.sa_cols * self.a_fmt.bytes

    @property
    def spad_size(self) -> int:
        """Scratchpad size in bytes."""
        return self.spad_rows * self.spad_row_bytes

    @property
    def acc_size(self) -> int:
        """Accumulator size in bytes."""
        return self.acc_rows * self.acc_row_bytes

    @property
    def attention_scale(self) -> float:
        """log2(e) / sqrt(d) with d = sa_rows (before rounding to E or A)."""
        return math.log2(math.e) / math.sqrt(self.sa_rows)

    def attention_scale_bits(self, fmt: str) -> int:
        """The attention scale rounded to `fmt`: the spad constant
        (fmt = e_type) and the ACC constant (fmt = a_type)."""
        return attention_scale_bits(self.sa_rows, fmt)

    # ----------------------------------------------------------------- JSON
    #: The reference's FSAConfig.json keys, in its order (fsa/configfile.py)
    REFERENCE_KEYS = configfile.REFERENCE_KEYS

    def reference_dict(self) -> dict[str, Any]:
        """Exactly the reference's 12 FSAConfig.json fields (sizes in bytes)."""
        return configfile.reference_dict(self)

    def to_dict(self) -> dict[str, Any]:
        """The reference's fields plus ours under ``"fsa"`` (one self-contained
        dict, for hashing and for passing a config between processes)."""
        return configfile.to_dict(self)

    @staticmethod
    def sibling_path(path: "str | Path") -> Path:
        """Where our extra fields live beside a reference FSAConfig.json:
        ``X.json`` -> ``X.fsa.json``."""
        return configfile.sibling_path(path)

    def to_json(self, path: "str | Path | None" = None) -> str:
        """Without `path`: the JSON text of :meth:`to_dict` (every field).

        With `path`: writes the reference-compatible file there (exactly the 12
        reference keys, loadable by the reference's own tools) and our fields
        to the sibling :meth:`sibling_path` (``{"fsa": {...}}``), which
        :meth:`from_json` reads back; returns the reference file's text.
        """
        if path is None:
            return json.dumps(self.to_dict(), indent=2, sort_keys=False) + "\n"
        return configfile.write_json(self, path)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "FSAConfig":
        """Rebuild a config from :meth:`to_dict` output, or from a
        reference-style FSAConfig.json (:func:`fsa.configfile.from_dict`);
        unknown keys are refused, naming the nearest known one."""
        return configfile.from_dict(cls, d)

    @classmethod
    def from_json(cls, path: "str | Path") -> "FSAConfig":
        """Read an FSAConfig.json: ours (with its ``.fsa.json`` sibling, or an
        older file with the ``"fsa"`` key inside) or the reference's.

        Raises:
            ValueError: unreadable, an unknown key, or the file and its
                sibling disagreeing on a reference field.
        """
        return configfile.from_json(cls, path)

    def replace(self, **changes: Any) -> "FSAConfig":
        """A copy with some fields changed (validated)."""
        return replace(self, **changes)


def attention_scale_bits(sa_rows: int, fmt: str) -> int:
    """log2(e)/sqrt(sa_rows) computed in float64, rounded (RNE) to `fmt`."""
    from .numerics import from_float64

    return int(from_float64(math.log2(math.e) / math.sqrt(sa_rows), fmt))


def scale_bits(cfg: "FSAConfig", s: float) -> tuple[int, int]:
    """The ``(scale_e, scale_a)`` register values (fsa/hw/regs.py) for the
    softmax scale `s` (scores are multiplied by `s` before the softmax, as
    torch's ``scale``): ``s * log2(e)`` in float64, rounded (RNE) to E and
    to A.  ``s = 1/sqrt(R)`` gives the reset values
    (``cfg.attention_scale_bits``).

    Raises:
        ValueError: `s` not a positive finite number, or ``s * log2(e)``
            overflowing a format or rounding to 0 in one.
    """
    from .numerics import from_float64, to_float64

    try:
        sf = float(s)
    except (TypeError, ValueError):
        raise ValueError(f"scale must be a positive number, got {s!r}") from None
    if not (math.isfinite(sf) and sf > 0):
        raise ValueError(f"scale must be a positive finite number, got {s!r}")
    x = sf * math.log2(math.e)
    out = []
    for fmt in (cfg.e_type, cfg.a_type):
        b = int(from_float64(x, fmt))
        v = float(to_float64(b, fmt))
        if not math.isfinite(v) or v == 0:
            raise ValueError(f"scale {sf!r}: scale * log2(e) = {x!r} does not fit {fmt} "
                             f"({'overflows' if v else 'rounds to 0'})")
        out.append(b)
    return out[0], out[1]


# ---------------------------------------------------------------- presets
_SUFFIX = {"Fp16": ("fp16", "fp32"), "Bf16": ("bf16", "fp32"), "Fp32": ("fp32", "fp32"),
           "Fp16Only": ("fp16", "fp16"), "Bf16Only": ("bf16", "bf16")}

#: the widest AXI data bus a preset gets (the widest the config allows)
MAX_PRESET_AXI_BITS = 512
#: the most AXI memory ports a preset gets (the most the config allows)
MAX_PRESET_PORTS = 8


def memory_system(sa_rows: int, sa_cols: int, e_type: str, a_type: str) -> dict[str, int]:
    """The memory system the presets give an array, for both dataflows (a
    preset and its UD twin share it): ``axi_data_bits``, ``spad_banks`` and,
    where they differ from the defaults, ``spad_rows``, ``acc_rows``,
    ``mem_ports`` and ``acc_banks`` (keyword arguments of :class:`FSAConfig`).

    Demand per key block (d = R; one K and one V^T tile of R rows, Q and O
    once per query block; :func:`fsa.cycle.predict.dma_demand` computes it):
    ``2 R^2 e`` bytes (e = bytes per element) = ``2 R ceil(R e / W)`` beats
    of W bytes, i.e. 2R rows of ``b = ceil(R e / W)`` beats,

    * in the reference key-block period ``T = 4R + C + P + 5`` (R = C), and
    * in the UD period ``T_ud = 2R + P + 3`` (about half: twice the bytes
      per cycle).

    The DMA moves at most one beat per cycle per scratchpad narrow port
    (one port, or one per bank with several AXI ports,
    :func:`fsa.hw.dmarules.bank_ports`) and queues at most one row (burst) per
    cycle; each LOAD pays about ``6 + b`` cycles of fixed latency
    (:data:`fsa.cycle.model.DEFAULT_DMA`), hidden by a second LOAD in flight
    (:func:`fsa.hw.dmarules.inflight_depth`, :func:`fsa.hw.dmarules.second_load_ok`).
    Hence:

    * ``acc_rows = 2 (1 + R)``: two accumulator sets (``l`` and ``O^T`` of
      two query blocks), so that a query block's normalisation and O store
      overlap the next block's steps (both kernels use them; the UD kernel's
      non-blocking NORM_SCALE / NORM need them, docs/ud.md: with one set the
      next block's first PV part waits for the store).

    * ``axi_data_bits``: one AXI beat per scratchpad row (``R x e_type``
      bits) up to 512 bits, so that a tile of R rows is R beats; also a
      divisor of the accumulator row (``C x a_type``), as the DMA needs.
    * Rows of one beat (up to 512 bits): one AXI port; ``spad_banks`` = 2
      (row-interleaved: the DMA writes rows of one bank while the array
      reads the other's), and the scratchpad holds three UD KV slots
      (``spad_rows = C + 6R`` where that is more than the reference's
      ``2C + 4R``; the reference kernel uses 2C + 4R of them): with two
      slots the UD kernel's K/V loads, which share the one read port with
      program fetch, cannot run a key block ahead, and 4x4 fp32 .. 16x16 UD
      lose 3-13 % to the DMA at N = 4096 (with three: 0.1-0.4 %; 4x4 fp32
      UD 4 % until program fetch bursts were capped at 32 words, 0.1 %
      since).  The 64-bit presets (4x4 and 4x8 fp16/bf16) had one bank and
      the reference's scratchpad until a LOAD could follow a fetch burst on
      R (``rtl/fsa_rdarb.py``); their UD twins lost 18-25 % then, 0.3-1 %
      with the two banks, the third slot and that (model, N = 1024).
    * Rows of ``b > 1`` beats (64x64 fp16, 32x32 fp32 and larger):
      ``mem_ports = min(2b, 8)`` AXI ports, so that the UD kernel's K/V
      stream (``2R b`` beats per ``T_ud``, about ``2R`` cycles) takes about
      half of each port's narrow-port cycles (``b`` ports would need 92-96 %
      of them at 64x64 and 128x128); ``spad_banks = 2 x ports`` (at most 16;
      each port's rows alternate between two banks, so the array's use of
      one bank stalls a port only every other row), ``acc_banks`` = one per
      port (the O store moves a beat per port per cycle), each bank with its
      own narrow port; and the third UD KV slot as above.  With the second
      LOAD in flight (K and V^T of a step, disjoint rows) these twins run at
      ``T_ud`` (docs/performance.md, section 1f; with ``b`` ports, two KV
      slots and one LOAD in flight they lost 5.5-8 % at N = 4096).
    """
    spad = sa_rows * get_format(e_type).width
    acc = sa_cols * get_format(a_type).width
    bits = 64
    for w in (32, 64, 128, 256, 512):
        if w <= min(spad, MAX_PRESET_AXI_BITS) and spad % w == 0 and acc % w == 0:
            bits = w
    beats = -(-spad // bits)
    # the third UD KV slot, where C + 6R is more than the reference's 2C + 4R
    kv3 = {"spad_rows": sa_cols + 6 * sa_rows} if 2 * sa_rows > sa_cols else {}
    kv3["acc_rows"] = 2 * (1 + sa_rows)         # two accumulator sets
    if beats == 1:
        return {"axi_data_bits": bits, "spad_banks": 2, **kv3}
    ports = min(MAX_PRESET_PORTS, 2 * beats)

    def pow2(n: int, cap: int) -> int:
        return min(cap, 1 << (n - 1).bit_length())
    # at least two rows per bank (FSAConfig.validate): acc_rows = 1 + R
    acc_cap = 1 << (((1 + sa_rows) // 2).bit_length() - 1)
    out = {"axi_data_bits": bits, "mem_ports": ports, "spad_banks": pow2(2 * ports, 16),
           "acc_banks": pow2(ports, min(16, acc_cap)), **kv3}
    mb = burst_beats(beats, ports)
    if mb:
        out["dma_burst_beats"] = mb
    out["dma_rw_overlap"] = True        # a LOAD and a STORE in flight at once
    return out


def burst_beats(beats: int, ports: int) -> int:
    """The presets' ``dma_burst_beats`` for scratchpad rows of `beats` AXI
    beats on `ports` ports: four rows per burst (``4 x beats``) where a row
    is at most four beats and there are several ports; else 0 (one burst
    per row).  (A tile of fewer than 4 x `ports` rows then uses fewer ports;
    the presets' tiles have 8 to 16 rows per port.)

    Measured (``fsa predict`` at N = 4096 against ``--free-dma``, the UD
    twins; bench/memory.py): one burst per row leaves the DMA's sequencer
    (one burst a cycle) nearly as busy as the UD period (+1.2 % at 32x32
    fp32 to +4.7 % at 128x128 fp16); four rows per burst bring 32x32 fp32,
    64x64 fp16 / fp32 and 128x128 fp16 to +0.01 .. +0.08 %.  Two rows
    sometimes do less (+3.1 % at 128x128 fp16), and eight or more queue a
    port's next rows behind a long burst and make the ports meet in the
    same banks (+1.7 % .. +28 %).  Rows of eight beats (128x128 fp32) keep
    one burst per row: their narrow ports are 96 % busy in the UD period
    and merged bursts lose 16 % and more there."""
    if ports < 2 or beats > 4:
        return 0
    return 4 * beats


def _build_presets() -> dict[str, FSAConfig]:
    out: dict[str, FSAConfig] = {}

    def add(cfg: FSAConfig) -> None:
        out[cfg.name] = cfg

    def preset(name: str, r: int, c: int, e: str = "fp16", a: str = "fp32", **kw: Any) -> FSAConfig:
        return FSAConfig(name, r, c, e, a, **{**memory_system(r, c, e, a), **kw})

    for n in (4, 8, 16, 32, 64, 128):
        for suf in ("Fp16", "Bf16", "Fp32"):
            e, a = _SUFFIX[suf]
            add(preset(f"FSA{n}X{n}{suf}Config", n, n, e, a))
    for n in (4, 8):
        for suf in ("Fp16Only", "Bf16Only"):
            e, a = _SUFFIX[suf]
            add(preset(f"FSA{n}X{n}{suf}Config", n, n, e, a))
    # non-square arrays
    for r, c in ((16, 8), (8, 16), (8, 4), (4, 8)):
        add(preset(f"FSA{r}X{c}Fp16Config", r, c))
    # two AXI memory ports (the multi-port split on small arrays, no UD twin:
    # the reference's scratchpad, not the three UD slots)
    # (4x4: one scratchpad bank, so its two ports share one narrow port)
    add(preset("FSA4X4Fp16TwoPortConfig", 4, 4, mem_ports=2, spad_rows=0, acc_rows=0,
               spad_banks=1))
    add(preset("FSA8X8Fp16TwoPortConfig", 8, 8, mem_ports=2, spad_rows=0, acc_rows=0))
    # narrow-bus variants for small SoCs: the 64-bit AXI and single scratchpad
    # bank every preset had before (the DMA sets the pace from 8x8 up)
    for n in (8, 16, 32, 64, 128):
        add(FSAConfig(f"FSA{n}X{n}Fp16Axi64Config", n, n))
    return out


PRESETS: dict[str, FSAConfig] = _build_presets()

#: The size/format presets (FSA<R>X<C><format>Config) that get a UD twin.
_SIZE_FORMAT = re.compile(r"FSA\d+X\d+(?:" + "|".join(_SUFFIX) + r")Config")


def ud_twin_name(name: str) -> str:
    """``FSA<R>X<C><fmt>Config`` -> ``FSA<R>X<C><fmt>UdConfig``."""
    return name[:-len("Config")] + "UdConfig"


# One UD twin per size/format preset, derived from the list above (so any
# change to a preset, e.g. its AXI width, carries over): identical except
# for the dataflow.
PRESETS.update({ud_twin_name(n): c.replace(name=ud_twin_name(n), dataflow="ud")
                for n, c in list(PRESETS.items()) if _SIZE_FORMAT.fullmatch(n)})


def names() -> list[str]:
    """All preset names."""
    return list(PRESETS)


def get(name: "str | FSAConfig") -> FSAConfig:
    """Return the preset called `name` (or a config unchanged).

    Also accepts a path to an ``FSAConfig.json``.

    Raises:
        ValueError: unknown name; the message lists the closest preset names.
    """
    if isinstance(name, FSAConfig):
        return name
    if name in PRESETS:
        return PRESETS[name]
    p = Path(name)
    if p.suffix == ".json":
        if not p.is_file():
            raise ValueError(f"config file {name}: {'is a folder' if p.is_dir() else 'not found'}")
        return FSAConfig.from_json(p)
    close = difflib.get_close_matches(name, PRESETS, n=4, cutoff=0.5)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    raise ValueError(f"unknown config {name!r}{hint} (`fsa configs` lists all {len(PRESETS)})")


def with_axi_bits(cfg: "str | FSAConfig", bits: int) -> FSAConfig:
    """`cfg` with another AXI data width, named ``<name>Axi<bits>``
    (ValueError for a width the device does not support)."""
    cfg = get(cfg)
    out = {"axi_data_bits": bits, "name": f"{cfg.name}Axi{bits}"}
    if cfg.dma_burst_beats:     # merged bursts: the presets' rule for the new row length
        out["dma_burst_beats"] = burst_beats(-(-cfg.spad_row_bytes * 8 // bits), cfg.mem_ports)
    return cfg.replace(**out)
