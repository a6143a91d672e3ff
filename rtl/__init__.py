"""The FSA hardware in MyHDL.  Importing it patches nothing: MyHDL's
internals are patched only while a unit converts (rtl/compat_myhdl.py)."""
