"""cocotb bench of the UD array units (the UD ``fsa_pe`` and ``fsa_bcmp``),
driven from ``tb/test_ud_units.py``: the same driver, monitor and checker as
``tb/tb_units.py`` (one .npz case named by ``$FSA_UNIT_CASE``: per-cycle
inputs, the model's registers after every edge and combinational outputs
during every cycle, compared bit for bit)."""
from __future__ import annotations

import cocotb

from tb_units import _run


@cocotb.test()
async def pe_ud_sequence(dut):
    """The UD fsa_pe against tb.ud_unit_models.UDPEModel."""
    await _run(dut, "pe_ud")


@cocotb.test()
async def bcmp_sequence(dut):
    """fsa_bcmp against tb.ud_unit_models.BCMPModel."""
    await _run(dut, "bcmp")
