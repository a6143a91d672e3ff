"""The converted Verilog of a config's DMA (the unit bench's sources)."""
from __future__ import annotations

from pathlib import Path

from fsa import simrun
from tb.common.sources import unit_deps

_DMA_DEPS = unit_deps("rtl.fsa_dma")


def dma_verilog(cfg) -> list[Path]:
    """Converted Verilog of `cfg`'s DMA: the per-port module, then fsa_dma
    (cached by a hash of the inputs)."""
    from rtl import fsa_dma, fsa_dma_port

    return [simrun.cached_convert(f"fsa_dma_port_{cfg.name}",
                                  lambda d: fsa_dma_port.convert(d, cfg), cfg.to_json(), _DMA_DEPS),
            simrun.cached_convert(f"fsa_dma_{cfg.name}", lambda d: fsa_dma.convert(d, cfg),
                                  cfg.to_json(), _DMA_DEPS)]
