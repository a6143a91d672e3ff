"""The device harness: the cocotb side of a simulation of the whole device
(``fsa_top``), shipped inside the package so that an installed ``fsa``
(not only a checkout) can run the simulator engines.

* :mod:`fsa.harness.tb_top`: the generic cocotb test that runs a case file
  (program(s), memory, dumps, faults) and writes ``result.json``; the test
  module :func:`fsa.simdev.run_on_device` (hence ``SimEngine``, ``fsa run``,
  ``fsa exec``) hands to the simulator.
* :mod:`fsa.harness.device`: the driver of the device over its buses
  (:class:`~fsa.harness.device.Device`), also used by the benches in ``tb/``.
* :mod:`fsa.harness.axi_faults`: the AXI4 memory model that can inject error
  responses and protocol violations.

These modules import cocotb and run inside the simulator's Python; nothing
else in ``fsa`` imports them (this package's ``__init__`` imports nothing).
"""
