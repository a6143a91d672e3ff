"""The FSA hardware in MyHDL.  Importing any of it makes MyHDL's conversion
deterministic (rtl.convert: registers of ``always_seq`` blocks in sorted
order)."""
from rtl import convert as _convert  # noqa: F401
