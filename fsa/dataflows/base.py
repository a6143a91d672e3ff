"""The interface every dataflow implements (:class:`Dataflow`): what the
software asks of the dataflow a config was built with.  One module per
dataflow subclasses it (:mod:`fsa.dataflows.reference`,
:mod:`fsa.dataflows.ud`) and :mod:`fsa.dataflows` registers the instances.
"""
from __future__ import annotations

from fsa.hw import dataflow as hw_dataflow
from fsa.hw.isa import mx_funcs

__all__ = ["Dataflow"]


class Dataflow:
    """One dataflow of the matrix engine.

    Attributes:
        name: the config's ``dataflow`` value.
        label: how messages name its hardware ("UD").
        kernel: the attention kernel built for it by default (a key of
            :data:`fsa.kernels.KERNELS`).
        hw: its hardware half (:mod:`fsa.hw.dataflow`: the units' parts and
            tables, which the RTL builds from).
    """

    name = "reference"
    label = "reference"
    kernel = "reference"

    @property
    def hw(self) -> hw_dataflow.Dataflow:
        return hw_dataflow.of(self.name)

    @property
    def funcs(self) -> tuple[str, ...]:
        """The matrix functions its hardware runs, indexed by ISA code (the
        reference functions first: every dataflow runs them;
        :data:`fsa.hw.isa.MX_FUNC_TABLE`)."""
        return mx_funcs(self.name)

    @property
    def own_funcs(self) -> tuple[str, ...]:
        """Its functions beyond the reference ones."""
        return self.funcs[len(mx_funcs("reference")):]

    @property
    def pe_bits(self) -> tuple[str, ...]:
        """The PE control bits, in ``ctrl`` order."""
        return self.hw.pe_bits

    # -------------------------------------------------------- cycle model
    def norm_slack(self, P: int) -> int:
        """Cycles after a third-slot (normalisation) instruction within
        which its partner starts; 0 without such functions."""
        return 0

    def period(self, R: int, C: int, P: int) -> int:
        """The kernel's key-block period in steady state (cycles)."""
        raise NotImplementedError

    # -------------------------------------------------------- golden model
    def execute(self, m, ins, index: int) -> None:
        """Run matrix instruction `ins` of this dataflow's own functions on
        golden machine `m` (the reference functions are the machine's)."""

    def abort(self, m) -> None:
        """The abort register's effect on this dataflow's own golden state."""

    def check_modelled(self, m, ins, index: int) -> None:
        """Raise :class:`fsa.golden.errors.UnsupportedProgram` when golden
        machine `m` cannot run matrix instruction `ins` in the state this
        dataflow's own functions left (nothing to check by default)."""

    def __repr__(self) -> str:
        return f"<dataflow {self.name}>"
