"""Helpers to convert MyHDL blocks to Verilog, one module per call.

MyHDL's ``convert()`` flattens a design into one module.  To keep the
hierarchy (one ``fsa_pe`` module instantiated R*C times, ...), every leaf
unit is converted once with :func:`convert_block`, and parents instantiate
it through a ``verilog_code`` wrapper (see :func:`instance_text`).
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Callable

from myhdl import Signal, intbv, block

__all__ = ["convert_block", "sig", "instance_text", "submodule"]


def sig(width: int, init: int = 0) -> Signal:
    """An unsigned signal of `width` bits (width 1 gives a bool signal)."""
    if width == 1:
        return Signal(bool(init))
    return Signal(intbv(init)[width:])


def convert_block(factory: Callable[[], object], name: str, outdir: "str | Path") -> Path:
    """Elaborate ``factory()`` (returns a MyHDL block instance) and write
    ``<outdir>/<name>.v`` containing one module called `name`.

    Returns:
        The path of the written Verilog file.
    """
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    inst = factory()
    inst.convert(hdl="Verilog", path=str(outdir), name=name, testbench=False,
                 initial_values=False, timescale="1ns/1ps")
    path = outdir / f"{name}.v"
    # MyHDL stamps the conversion date into the header: strip it so the file
    # content depends only on the design.
    text = path.read_text()
    text = re.sub(r"// Date: .*\n", "", text)
    path.write_text(text)
    return path


def instance_text(module: str, inst_name: str, ports: dict[str, str]) -> str:
    """Verilog text instantiating `module` as `inst_name` with named ports
    (for a parent block's ``verilog_code``)."""
    conns = ",\n".join(f"    .{p}({s})" for p, s in ports.items())
    return f"{module} {inst_name} (\n{conns}\n);\n"


class _InstanceText:
    """Verilog instance text, rendered at conversion time (when the parent's
    signals have their final names)."""

    def __init__(self, module: str, inst_name: str, ports: dict):
        self.module, self.inst_name, self.ports = module, inst_name, ports

    def __str__(self) -> str:
        conns = ",\n".join(f"    .{p}({s})" for p, s in self.ports.items())
        return f"{self.module} {self.inst_name} (\n{conns}\n);"


@block
def submodule(blockfunc, args: tuple, kwargs: dict, module: str, inst_name: str,
              ports: dict, outputs):
    """Instantiate a separately converted module inside a parent block.

    In MyHDL simulation the instance behaves as ``blockfunc(*args, **kwargs)``
    (the unit's real MyHDL code); in conversion it becomes the Verilog
    instance ``module inst_name (.port(signal), ...)``, so the parent keeps
    hierarchy. Call it from the parent's @block function.

    Args:
        blockfunc, args, kwargs: the unit's @block function and its arguments.
        module: the unit's Verilog module name (converted on its own with
            :func:`convert_block`).
        inst_name: instance name, unique in the parent.
        ports: port name -> the parent's Signal connected to it.
        outputs: the port names the unit drives.
    """
    # must exist before `sub` is created: MyHDL snapshots this frame's locals then
    fsa_instance_text = _InstanceText(module, inst_name, ports)  # noqa: F841 (used by verilog_code)
    sub = blockfunc(*args, **kwargs)
    for p, s in ports.items():
        if p in outputs:
            s.driven = "wire"
        else:
            s.read = True
    return sub


submodule.verilog_code = "$fsa_instance_text"
