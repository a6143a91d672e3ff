"""The hardware contract: everything the hardware (``rtl/``), the software
(``fsa/``) and the testbenches (``tb/``) must agree on, in one place.
``rtl/`` imports nothing of the project but this package, ``fsa.formats``
and ``fsa.numerics`` (tests/test_rtl_imports.py checks every import).

* :mod:`fsa.hw.isa`: the instruction field table (word, bit range,
  signedness and range of every field), reserved bits, the semaphore count,
  and the matrix function table (name and dataflow by ISA code) that the
  ``fsa.isa.MxFunc`` enum, the plans and the decoder are built from.
* :mod:`fsa.hw.control`: the PE control bits, the CMP / ACC / BCMP command
  codes and the matrix controller's issue slots.
* :mod:`fsa.hw.timing`: the divider latency, the RECIPROCAL length and the
  execution plans of a configuration (what the matrix controller runs).
* :mod:`fsa.hw.dataflow`: what the hardware of each dataflow is made of.
* :mod:`fsa.hw.dmarules`: the DMA's in-flight queue and bank ports.
* :mod:`fsa.hw.fetch`: the program fetch unit's bursts and their turns with
  the DMA's LOADs.
* :mod:`fsa.hw.regs`: the device states, the counters, the AXI4-Lite
  register map and the setting registers (run-time scale, key limit).
* :mod:`fsa.hw.errors`: the error codes.
* :mod:`fsa.hw.config`: the configuration type (``fsa.config``'s
  FSAConfig) the hardware is built for.
* :mod:`fsa.hw.fastmem`: the fast memory wrapper's module and backdoor files.
* :mod:`fsa.hw.waivers`: the lint waiver file written beside the Verilog.
* :mod:`fsa.hw.verilog`: the generated folder (default place, which folders
  may be replaced) and how software obtains the generated Verilog (by
  running the generator, since ``fsa/`` never imports ``rtl/``).

``rtl/`` builds from these tables; ``fsa/isa.py`` encodes with them;
``fsa/harness/device.py`` reads registers by them.  Each module's docstring
documents its table.  The package imports none of them itself: import the
module that holds a fact.
"""
