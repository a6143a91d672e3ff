"""The FSA kernel language: tiles, instructions and semaphores, built into a
:class:`~fsa.program.Program` (docs/architecture.md section 11).

Nothing here is global: a :class:`KernelBuilder` is made against an explicit
:class:`~fsa.config.FSAConfig` and owns everything a kernel allocates (memory
layout, scratchpad and accumulator rows, semaphores) and emits (the
instruction list). :func:`kernel` turns a function ``fn(k, *tiles, **params)``
into a reusable :class:`KernelDef` whose :meth:`KernelDef.build` makes a fresh
builder each time.

The language is these modules; this package re-exports their public
names, so ``from fsa.kernel_lang import ...`` is all a kernel needs:

* :mod:`fsa.tiles` -- :class:`MemTile` (a 2-D view of a tensor in the memory
  window; ``alloc_mem`` lays tensors out from ``cfg.mem_base``, each aligned
  to ``cfg.mem_align`` with rows padded to a multiple of it),
  :class:`SpadTile` / :class:`AccTile` (scratchpad / accumulator rows), their
  ``split`` / slicing / ``reverse()``, and :class:`KernelError`.
* :mod:`fsa.program` -- :class:`Program` (instructions, memory layout, input
  and output conversion).
* :mod:`fsa.kernel_lang.builder` -- :class:`Semaphore`, :class:`KernelBuilder`
  and the ISA's field limits the builder checks.
* :mod:`fsa.kernel_lang.define` -- :func:`kernel`, :class:`KernelDef`,
  :class:`Input`.
* :mod:`fsa.cycle.dispatch` -- :func:`check_dispatch`, the deadlock and
  semaphore-race check every build runs.

The kernels written in it are :mod:`fsa.kernels`.

Instructions (each returns the emitted :mod:`fsa.isa` object):
``load_tile(dst, src)`` (DMA memory -> scratchpad/accumulator),
``store_tile(dst, src)`` (DMA accumulator -> memory),
``mx_load_stationary(q)``, ``mx_attn_score(k, l, accumulate, causal=)``,
``mx_attn_value(vt, o, accumulate)``, ``mx_reciprocal(l)``
(ATTENTION_LSE_NORM_SCALE), ``mx_attn_lse_norm(o)``,
``fence(mx=, dma=, stop=)`` and ``emit(instr)`` for a raw instruction.

Semaphores: ``Semaphore(id, n)`` (or ``k.semaphore(id, n)``) tracks the
semaphore's value in program order. An instruction given ``sem=s`` acquires
the current value and releases the next one, ``(value + 1) % n``, by
default; ``acquire=False`` / ``release=False`` leave either out (an
acquire-only instruction holds the semaphore until a later release-only
one), an integer gives the value explicitly. Each use thus passes a token
along a ring: ``load (0 -> 1)``, ``consume (1 -> 0)``, ``load (0 -> 1)`` ...

Every mistake raises :class:`KernelError` (a ValueError) whose message names
the instruction, the field or tile, and what to change. :meth:`KernelBuilder.build`
also runs the program through the cycle model's dispatcher
(:func:`check_dispatch`, built on :func:`fsa.cycle.model.simulate`) and
refuses a program that can deadlock or whose semaphore order depends on
timing.

Example::

    >>> from fsa import config
    >>> from fsa.kernel_lang import KernelBuilder
    >>> k = KernelBuilder(config.get("FSA4X4Fp16Config"))
    >>> x = k.alloc_mem((4, 4), "fp16", "X", role="input")
    >>> s = k.alloc_spad(4)
    >>> _ = k.load_tile(s, x)
    >>> prog = k.build()
    >>> [type(i).__name__ for i in prog.instructions]
    ['Dma', 'Fence']
"""
from fsa.cycle.dispatch import check_dispatch
from fsa.kernel_lang.builder import MEM_STRIDE_RANGE, KernelBuilder, Semaphore
from fsa.kernel_lang.define import Input, KernelDef, kernel
from fsa.program import Program, TensorInfo, View, memory_reader
from fsa.tiles import AccTile, KernelError, MemTile, SpadTile, SramTile

__all__ = [
    "KernelError", "MemTile", "SramTile", "SpadTile", "AccTile", "Semaphore", "KernelBuilder",
    "Program", "TensorInfo", "View", "KernelDef", "kernel", "Input", "check_dispatch",
    "memory_reader", "MEM_STRIDE_RANGE",
]
