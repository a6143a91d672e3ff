"""Helpers to convert MyHDL blocks to Verilog, one module per call.

MyHDL's ``convert()`` flattens a design into one module.  To keep the
hierarchy (one ``fsa_pe`` module instantiated R*C times, ...), every leaf
unit is converted once with :func:`convert_block`, and parents instantiate
it through a ``verilog_code`` wrapper (see :func:`submodule`).

Inside ``with module_prefix("fsa16_"):`` every module written and every
instance text rendered carries the prefix (``fsa16_fsa_pe``), so that two
configurations can be integrated in one design; the default is no prefix.

The text is made canonical twice over: MyHDL's internals are patched while
a unit converts (:func:`rtl.compat_myhdl.conversion`: sorted registers,
fresh names) and the written text is post-processed (:func:`_canonical`:
what MyHDL orders by Python hash, the date and path of its header).
"""
from __future__ import annotations

import contextlib
import re
from pathlib import Path
from typing import Callable

from myhdl import Signal, intbv, block

from rtl import compat_myhdl

__all__ = ["convert_block", "sig", "instance_text", "submodule", "Const", "module_prefix",
           "check_prefix", "named"]

_prefix = ""     # module-name prefix in force (module_prefix)


def check_prefix(prefix: str) -> None:
    """Raise ValueError unless `prefix` is empty or can start a Verilog
    identifier (letters, digits, ``_``; not starting with a digit)."""
    if prefix and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", prefix):
        raise ValueError(f"module prefix {prefix!r} must be letters, digits and _ "
                         "and must not start with a digit")


@contextlib.contextmanager
def module_prefix(prefix: str):
    """Within the block, :func:`convert_block` writes module ``prefix + name``
    (file ``prefix + name.v``) and instances refer to ``prefix + module``."""
    global _prefix
    check_prefix(prefix)
    saved, _prefix = _prefix, prefix
    try:
        yield
    finally:
        _prefix = saved


def sig(width: int, init: int = 0) -> Signal:
    """An unsigned signal of `width` bits (width 1 gives a bool signal)."""
    if width == 1:
        return Signal(bool(init))
    return Signal(intbv(init)[width:])


def named(inst, name: str):
    """Give a block instance its name in the hierarchy (instead of MyHDL's
    ``<function><counter>``) and return it.  MyHDL names an internal signal
    after the instances above the block where it is first a local, so the
    signals inside become ``<name>_<local>`` (e.g. ``slot0_down_mac_hit``).
    Names must be unique among the instance's siblings."""
    inst.name = name
    return inst


def convert_block(factory: Callable[[], object], name: str, outdir: "str | Path",
                  init_memories: bool = False) -> Path:
    """Elaborate ``factory()`` (returns a MyHDL block instance) and write
    ``<outdir>/<name>.v`` containing one module called `name` (both with the
    :func:`module_prefix` in force in front).

    Args:
        init_memories: zero the module's memories at time 0 (simulation:
            Verilator and Icarus then agree on never-written rows).

    Returns:
        The path of the written Verilog file.
    """
    import warnings

    from myhdl import ToVerilogWarning

    global _converting
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    name = _prefix + name
    _converting = True     # submodules elaborate as stubs: their insides are other modules
    try:
        # MyHDL's internals patched for a canonical text and speed (rtl/compat_myhdl.py)
        with warnings.catch_warnings(), compat_myhdl.conversion():
            # MyHDL's "driven but not read" notes are expected here (unused_*
            # sinks, ports of unit instances): keep them off the terminal
            warnings.simplefilter("ignore", ToVerilogWarning)
            inst = factory()
            # (convert() elaborates the design once more; keep the stubs for that too)
            inst.convert(hdl="Verilog", path=str(outdir), name=name, testbench=False,
                         initial_values=init_memories, timescale="1ns/1ps")
    finally:
        _converting = False
    path = outdir / f"{name}.v"
    # Make the text depend only on the design: MyHDL stamps the date and the
    # output path into the header, and orders combinational sensitivity lists
    # by Python set order (different in every process).
    text = path.read_text()
    text = re.sub(r"// (Date|File): .*\n", "", text)
    if init_memories:
        # MyHDL gives every register an initial value too: keep only the
        # memories' initial blocks (registers are reset by rst)
        text = re.sub(r"^((?:reg|wire) [^=;]*?) = [^;]+;$", r"\1;", text, flags=re.M)
    path.write_text(_canonical(text))
    return path


_SENS = re.compile(r"always @\(([^()]*)\)")
_DECL = re.compile(r"^(reg|wire|integer)\b")


def _canonical(text: str) -> str:
    """Order what MyHDL orders by Python hash (different in every process):
    sensitivity lists, runs of declarations, and the assignments of reset
    branches; none of it changes the meaning. A deterministic text keeps the
    simulator build cache (and ccache) effective across processes."""
    text = _SENS.sub(lambda m: "always @(" + ", ".join(sorted(m.group(1).split(", "))) + ")", text)
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if _DECL.match(line):
            j = i
            while j < len(lines) and _DECL.match(lines[j]):
                j += 1
            out += sorted(lines[i:j])
            i = j
            continue
        m = re.match(r"^(\s*)if \(rst == 1\) begin$", line)
        if m:
            end = m.group(1) + "end"
            j = i + 1
            while j < len(lines) and lines[j] != end:
                j += 1
            body = lines[i + 1:j]
            if all(re.match(r"^\s*[\w\[\]:-]+ <= [^;]*;$", b) for b in body):
                body = sorted(body)
            out += [line] + body
            i = j
            continue
        out.append(line)
        i += 1
    return "\n".join(out)


def instance_text(module: str, inst_name: str, ports: dict[str, str]) -> str:
    """Verilog text instantiating `module` as `inst_name` with named ports
    (for a parent block's ``verilog_code``; the module prefix in force is
    put in front of `module`)."""
    conns = ",\n".join(f"    .{p}({s})" for p, s in ports.items())
    return f"{_prefix}{module} {inst_name} (\n{conns}\n);\n"


_converting = False


_stubs: dict = {}


def _stub_for(names: tuple):
    """A @block taking the given port names, standing in for a submodule's
    contents while its parent is converted: it holds the port signals as
    locals (so MyHDL names the parent's wires after the ports) and nothing
    else (the unit's insides are its own module)."""
    if names not in _stubs:
        from myhdl import delay, instance
        # the generator mentions every port so that the converter marks the
        # parent's signals as used (and declares them)
        src = (f"def fsa_stub({', '.join(names)}):\n"
               f"    @instance\n"
               f"    def idle():\n"
               f"        while True:\n"
               f"            yield {', '.join(names)}\n"
               f"    return idle\n")
        import linecache
        fname = f"<fsa_stub_{len(_stubs)}>"
        # MyHDL reads a block's source with inspect: register it in linecache
        linecache.cache[fname] = (len(src), None, src.splitlines(True), fname)
        ns = {"instance": instance, "delay": delay}
        exec(compile(src, fname, "exec"), ns)  # noqa: S102 (generated from port names only)
        _stubs[names] = block(ns["fsa_stub"])
    return _stubs[names]


class Const:
    """A constant tied to a submodule port (``Const(width, value)``)."""

    def __init__(self, width: int, value: int):
        if not 0 <= value < (1 << width):
            raise ValueError(f"constant {value} does not fit {width} bits")
        self.width, self.value = width, value

    def signal(self):
        return sig(self.width, self.value)


def _port_text(s) -> str:
    if isinstance(s, Const):
        return f"{s.width}'d{s.value}"
    return str(s)


class _InstanceText:
    """Verilog instance text, rendered at conversion time (when the parent's
    signals have their final names); the module prefix is the one in force
    when the parent block was elaborated."""

    def __init__(self, module: str, inst_name: str, ports: dict):
        self.module, self.inst_name, self.ports = _prefix + module, inst_name, ports

    def __str__(self) -> str:
        conns = ",\n".join(f"    .{p}({_port_text(s)})" for p, s in self.ports.items())
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
    # constants: the simulation model gets a constant signal
    args = tuple(a.signal() if isinstance(a, Const) else a for a in args)
    kwargs = {k: (v.signal() if isinstance(v, Const) else v) for k, v in kwargs.items()}
    if _converting:
        sigs = {p: s for p, s in ports.items() if not isinstance(s, Const)}
        sub = _stub_for(tuple(sigs))(**sigs)
    else:
        sub = blockfunc(*args, **kwargs)
    for p, s in ports.items():
        if isinstance(s, Const):
            continue
        if p in outputs:
            s.driven = "wire"
        else:
            s.read = True
    return sub


submodule.verilog_code = "$fsa_instance_text"


_expr_blocks: dict = {}


def _exec_block(name: str, src: str):
    """Compile generated block source so that MyHDL can read it back."""
    import linecache
    from myhdl import always_comb
    fname = f"<fsa_gen_{len(_expr_blocks) + len(_stubs)}>"
    linecache.cache[fname] = (len(src), None, src.splitlines(True), fname)
    ns = {"always_comb": always_comb, "block": block}
    exec(compile(src, fname, "exec"), ns)  # noqa: S102 (generated from our own constants)
    return ns[name]


@block
def comb_expr(out, expr: str, **signals):
    """A block driving ``out.next = <expr>`` combinationally.

    `expr` is Python (MyHDL-convertible) text over the names in `signals`
    and integer literals; use it for logic generated from tables (e.g.
    interval comparators ``(f == 1 and t >= 5 and t < 9) or ...``), which
    MyHDL cannot express with tuple indexing inside expressions.
    """
    names = ("out",) + tuple(sorted(signals))
    key = (names, expr)
    if key not in _expr_blocks:
        src = (f"@block\n"
               f"def fsa_expr({', '.join(names)}):\n"
               f"    @always_comb\n"
               f"    def comb():\n"
               f"        out.next = {expr}\n"
               f"    return comb\n")
        _expr_blocks[key] = _exec_block("fsa_expr", src)
    inst = _expr_blocks[key](out, *(signals[n] for n in names[1:]))
    return inst
