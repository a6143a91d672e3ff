"""Kernel definitions of the kernel language: :func:`kernel` turns a
function ``fn(k, *tiles, **params)`` into a reusable :class:`KernelDef`
whose :meth:`KernelDef.build` runs it on a fresh
:class:`~fsa.kernel_lang.builder.KernelBuilder`, one memory input per
:class:`Input`.
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, Callable

from fsa.config import FSAConfig
from fsa.kernel_lang.builder import KernelBuilder
from fsa.program import Program
from fsa.tiles import KernelError

__all__ = ["Input", "KernelDef", "kernel"]


@dataclass(frozen=True)
class Input:
    """Declares one memory input of a :class:`KernelDef`: its shape, format
    (default the config's element format) and, optionally, a name."""

    shape: tuple[int, int]
    fmt: Any = None
    name: str | None = None


class KernelDef:
    """A reusable kernel: ``fn(k, *tiles, **params)`` -> output tile(s).

    :meth:`build` makes a fresh :class:`KernelBuilder`, allocates one input
    tensor per positional :class:`Input` (named after the function's
    parameters unless the Input names it), calls `fn`, marks what it returns
    as outputs and builds the :class:`Program`.
    """

    def __init__(self, fn: Callable[..., Any]):
        self.fn = fn
        self.name = fn.__name__
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn
        params = list(inspect.signature(fn).parameters.values())
        if not params:
            raise KernelError(f"@kernel {self.name}: the function must take the builder as its "
                              f"first argument: def {self.name}(k, *tiles)")
        pos = [p for p in params[1:] if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        self._tile_params = [p.name for p in pos]
        self._required = sum(1 for p in pos if p.default is p.empty)

    def build(self, cfg: "FSAConfig | str", *inputs: "Input | tuple", check: bool = True,
              **params: Any) -> Program:
        """Build the program for `cfg`.

        Args:
            cfg: config or preset name.
            inputs: one :class:`Input` (or a ``(shape, fmt)`` / shape tuple)
                per tile parameter of the function.
            check: run :func:`check_dispatch` (deadlocks, semaphore races).
            params: keyword arguments passed to the function.

        Raises:
            KernelError: wrong number of inputs, or anything the kernel raises.
        """
        k = KernelBuilder(cfg, self.name)
        if not self._required <= len(inputs) <= len(self._tile_params):
            raise KernelError(f"{self.name}: takes {len(self._tile_params)} tiles "
                              f"({', '.join(self._tile_params)}), got {len(inputs)} inputs; pass "
                              f"one Input(shape, fmt) per tile")
        tiles = []
        for pname, spec in zip(self._tile_params, inputs):
            if not isinstance(spec, Input):
                if isinstance(spec, tuple) and len(spec) == 2 and isinstance(spec[0], (tuple, list)):
                    spec = Input(tuple(spec[0]), spec[1])
                else:
                    spec = Input(tuple(spec))
            tiles.append(k.alloc_mem(spec.shape, spec.fmt, spec.name or pname, role="input"))
        out = self.fn(k, *tiles, **params)
        return k.build(out, check=check)

    __call__ = build

    def __repr__(self) -> str:
        return f"<kernel {self.name}({', '.join(self._tile_params)})>"


def kernel(fn: Callable[..., Any]) -> KernelDef:
    """Decorator: turn ``fn(k, *tiles, **params)`` into a :class:`KernelDef`."""
    return KernelDef(fn)
