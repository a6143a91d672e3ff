"""Timing contract: the divider and reciprocal lengths and the matrix
controller's plans of a configuration.

Two numbers are easily confused, so they have distinct names:

* :func:`divider_latency` is the ``fsa_div`` unit's own latency: cycles from
  the rising edge that samples its ``start`` to the rising edge after which
  ``done`` is high.  The divider produces ``bits_per_cycle`` quotient bits
  per iteration, so ``N = ceil(precision / bits_per_cycle)`` iterations plus
  one normalise and one round/pack cycle: ``N + 2``.
* :func:`reciprocal_cycles` is how many cycles the matrix controller keeps
  the ACC row's RECIPROCAL command on in ATTENTION_LSE_NORM_SCALE: the start
  cycle, the divider latency, and the cycle in which ``done`` is seen and the
  scale register written: ``divider_latency + 2``.  (fp32 accumulators with 2
  bits per cycle: ``ceil(24 / 2) + 2 = 14`` divider cycles, 16 RECIPROCAL
  cycles.)

:func:`plans` / :func:`plan` are the execution plans (``fsa/plan.py``) of a
configuration with these parameters; :class:`Plan` is their type and
:func:`compact` their timer form (per control bit and wave kind, merged
``(start, length)`` intervals), from which the controller is built.  The matrix controller
(``rtl/fsa_mxctrl.py``) is generated from :func:`plans`, the cycle model
(``fsa/cycle/model.py``) simulates them, ``fsa plan show`` draws them and the
testbenches compare the hardware with them: one function, so all of these
agree by construction.
"""
from __future__ import annotations

from fsa import config as fconfig
from fsa import plan as fplan
from fsa.formats import get_format
from fsa.hw.isa import mx_funcs
from fsa.plan import Plan, compact

__all__ = ["DIVIDER_FORMATS", "DIVIDER_BITS_PER_CYCLE", "divider_iterations", "divider_latency",
           "reciprocal_cycles", "plan", "plans", "Plan", "compact"]

#: Formats the reciprocal divider supports (the accumulate formats).
DIVIDER_FORMATS = ("fp16", "bf16", "fp32")
#: Quotient bits per divider iteration that the divider supports.
DIVIDER_BITS_PER_CYCLE = (1, 2, 4)


def _check(a_type: str, bits_per_cycle: int) -> None:
    if a_type not in DIVIDER_FORMATS:
        raise ValueError(f"divider: format must be one of {DIVIDER_FORMATS}, got {a_type!r}")
    if isinstance(bits_per_cycle, bool) or bits_per_cycle not in DIVIDER_BITS_PER_CYCLE:
        raise ValueError(f"divider: bits_per_cycle must be one of {DIVIDER_BITS_PER_CYCLE}, "
                         f"got {bits_per_cycle!r}")


def divider_iterations(a_type: str, bits_per_cycle: int) -> int:
    """Quotient iterations of the divider: ``ceil(precision / bits_per_cycle)``."""
    _check(a_type, bits_per_cycle)
    return -(-get_format(a_type).precision // bits_per_cycle)


def divider_latency(a_type: str, bits_per_cycle: int) -> int:
    """Cycles from the edge that samples the divider's ``start`` to the edge
    after which its ``done`` is high: iterations + 2 (normalise, round)."""
    return divider_iterations(a_type, bits_per_cycle) + 2


def reciprocal_cycles(a_type: str, bits_per_cycle: int) -> int:
    """Cycles of RECIPROCAL commands in ATTENTION_LSE_NORM_SCALE: the start
    cycle, the divider latency, and the cycle that writes the scale."""
    return divider_latency(a_type, bits_per_cycle) + 2


def plan(cfg, func: "str | int") -> Plan:
    """The execution plan of matrix function `func` (name or ISA code) that
    the hardware of `cfg` (a preset name or FSAConfig) runs."""
    cfg = fconfig.get(cfg)
    return fplan.make_plan(func, cfg.sa_rows, cfg.sa_cols, cfg.exp2_pieces,
                           reciprocal_cycles=reciprocal_cycles(cfg.a_type, cfg.div_bits_per_cycle))


def plans(cfg) -> list[Plan]:
    """The plans of every matrix function of `cfg`, indexed by ISA code
    (codes 5..10, the UD functions, only for ``dataflow = "ud"``:
    :func:`fsa.hw.isa.mx_funcs`)."""
    cfg = fconfig.get(cfg)
    return [plan(cfg, f) for f in mx_funcs(cfg.dataflow)]
