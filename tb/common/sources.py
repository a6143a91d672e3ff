"""The source files behind a bench's cached conversion."""
from fsa.simrun import ROOT


def unit_deps(module: str) -> list[str]:
    """Repository-relative source files a unit's conversion reads (the import
    closure of `module`, e.g. "rtl.fsa_dma"): the key of a bench's cached
    conversion (:func:`fsa.simrun.cached_convert`), computed, never listed by hand."""
    from rtl.generate import source_files

    return [str(p.relative_to(ROOT)) for p in source_files(start=module)]
