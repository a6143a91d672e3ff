"""The hardware contract: everything the hardware (``rtl/``), the software
(``fsa/``) and the testbenches (``tb/``) must agree on, in one place.

* :mod:`fsa.hw.timing`: the divider latency, the RECIPROCAL length and the
  execution plans of a configuration (what the matrix controller runs).
* :mod:`fsa.hw.isa`: the instruction field table (word, bit range,
  signedness and range of every field), reserved bits, the semaphore count.
* :mod:`fsa.hw.regs`: the device states, the counters, the AXI4-Lite
  register map and the setting registers (run-time scale, key limit).
* :mod:`fsa.hw.errors`: the error codes.
* :mod:`fsa.hw.verilog`: how software obtains the generated Verilog (by
  running the generator, since ``fsa/`` never imports ``rtl/``).

``rtl/`` builds from these tables; ``fsa/isa.py`` encodes with them;
``fsa/harness/device.py`` reads registers by them.  Each module's docstring documents
its table.
"""
from __future__ import annotations

from fsa.hw.errors import CODES, DMA_CODE_BASE, ERR_BITS, ERRORS
from fsa.hw.isa import FIELDS, RESERVED_MASKS, SEM_IDS, SEM_VALUE_BITS, TYPE_FIELD, Field, field
from fsa.hw.regs import COUNTERS, REGS, State, identity
from fsa.hw.timing import divider_latency, plan, plans, reciprocal_cycles

__all__ = ["CODES", "DMA_CODE_BASE", "ERR_BITS", "ERRORS", "FIELDS", "RESERVED_MASKS", "SEM_IDS",
           "SEM_VALUE_BITS", "TYPE_FIELD", "Field", "field", "COUNTERS", "REGS", "State",
           "identity", "divider_latency", "plan", "plans", "reciprocal_cycles"]
