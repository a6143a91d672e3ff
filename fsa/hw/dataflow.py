"""Hardware dataflows: what the generated hardware of each dataflow is made
of (``FSAConfig.dataflow``, docs/ud.md).

The RTL asks the descriptor of its configuration (:func:`of`) which parts
it needs, once, instead of testing the dataflow's name at each place:

* :attr:`Dataflow.pe_bits`, :attr:`Dataflow.cmp_cmds`,
  :attr:`Dataflow.acc_cmds`: the control words and command tables
  (:mod:`fsa.hw.control`) the PE, CMP and ACC decode and the matrix
  controller drives.
* :attr:`Dataflow.pe_qreg`: the PE's second register (``use_q``,
  ``load_q``, ``load_reg_di``); :attr:`Dataflow.cmp_latch`: the top CMP's
  ``LATCH``; :attr:`Dataflow.acc_scale2`: the ACC's second scale register.
* :attr:`Dataflow.bottom_row`: a row of bottom comparators (``fsa_bcmp``)
  below the last PE row, driven by the controller's BCMP lanes.
* :attr:`Dataflow.norm_slot`: the controller's third, ACC-only issue slot
  for :data:`fsa.hw.control.NORM_FUNCS`, with the instructions' early
  release, ``reset_max`` and a release channel per slot
  (:attr:`Dataflow.release_channels`).

A new dataflow is one :class:`Dataflow` value and its :func:`register` call.
"""
from __future__ import annotations

from dataclasses import dataclass

from fsa.hw import control

__all__ = ["Dataflow", "REFERENCE", "UD", "register", "of", "names"]


@dataclass(frozen=True)
class Dataflow:
    """The hardware parts of one dataflow (see the module docstring)."""

    name: str
    pe_bits: tuple[str, ...] = control.PE_BITS
    cmp_cmds: tuple[str, ...] = control.CMP_CMDS
    acc_cmds: tuple[str, ...] = control.ACC_CMDS
    pe_qreg: bool = False
    bottom_row: bool = False
    norm_slot: bool = False
    release_channels: int = 1

    def __post_init__(self):
        if self.norm_slot and not (self.bottom_row and self.release_channels == 3):
            raise ValueError(f"dataflow {self.name!r}: the third slot (norm_slot) drives the "
                             "bottom row and releases on three channels (bottom_row, "
                             "release_channels=3)")

    @property
    def cmp_latch(self) -> bool:
        """The top CMP decodes ``LATCH``."""
        return "LATCH" in self.cmp_cmds

    @property
    def acc_scale2(self) -> bool:
        """The ACC has the second scale register (``SET_SCALE2`` ...)."""
        return "SET_SCALE2" in self.acc_cmds

    @property
    def ctrl_bits(self) -> int:
        """The PE control word's width."""
        return len(self.pe_bits)


_REGISTRY: dict[str, Dataflow] = {}


def register(df: Dataflow) -> Dataflow:
    """Add `df` to the dataflows :func:`of` knows (by its name) and return it."""
    if df.name in _REGISTRY:
        raise ValueError(f"dataflow {df.name!r} is registered already")
    _REGISTRY[df.name] = df
    return df


#: The reference FSA dataflow (matrix functions 0..4).
REFERENCE = register(Dataflow("reference"))
#: The unidirectional dataflow (docs/ud.md): the PE's Q register, the CMP's
#: LATCH, the bottom comparator row, the ACC's scale2 and the third slot.
UD = register(Dataflow("ud", pe_bits=control.PE_BITS + control.UD_PE_BITS,
                       cmp_cmds=control.UD_CMP_CMDS, acc_cmds=control.UD_ACC_CMDS,
                       pe_qreg=True, bottom_row=True, norm_slot=True, release_channels=3))


def names() -> tuple[str, ...]:
    """The registered dataflows' names."""
    return tuple(_REGISTRY)


def of(cfg_or_name) -> Dataflow:
    """The descriptor of a configuration (anything with a ``dataflow``
    field), of a dataflow name, or `cfg_or_name` itself when it is one."""
    if isinstance(cfg_or_name, Dataflow):
        return cfg_or_name
    name = cfg_or_name if isinstance(cfg_or_name, str) else cfg_or_name.dataflow
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown dataflow {name!r}: one of {names()}") from None
