"""Fast memory contract: the interface of the fast memory wrapper
``fsa_memtop`` (``rtl/fsa_memwrap.py`` builds it; :mod:`fsa.fastmem` makes
it for a generated folder and ``fsa.harness.device`` drives it): its module
name and the backdoor files through which the simulation loads and dumps
the memory, in the simulator's working folder (the run folder).
"""
from __future__ import annotations

__all__ = ["MODULE", "LOAD_FILE", "DUMP_FILE"]

#: the wrapper's module name
MODULE = "fsa_memtop"
#: the backdoor files: read into the memory at the start of the simulation,
#: written from it at its end
LOAD_FILE = "fsa_mem_in.hex"
DUMP_FILE = "fsa_mem_out.hex"
