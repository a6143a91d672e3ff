"""Elaboration-time parts inside one process body.

A unit that serves several dataflows (``fsa.hw.dataflow``) is one ``@block``
whose Python code decides which signals, generators and ports exist.  Inside
a generator, MyHDL converts the source text, so a statement cannot be left
out by a Python ``if`` around it.  :func:`part_of` does that at elaboration:
the generator is written once with every part's statements, a part the
configuration does not have is bound to ``None`` in the block (``qreg =
sig(E) if df.pe_qreg else None``), and :func:`part_of` returns the
function without the statements that mention an absent part:

* an ``if`` / ``elif`` whose test names an absent part is replaced by its
  ``else`` (the chain continues with the next ``elif``);
* any other statement that names an absent part is dropped (a local it
  assigns is then absent too), and an ``if`` left without statements.

The result is the function the configuration would have had written by
hand (the same MyHDL AST, so the same Verilog).  Decorate it in the block
function itself (MyHDL takes the block's names from the caller's frame)::

    step = always_seq(clk.posedge, reset=rst)(part_of(step))

A part's ports come as bundles (``rtl.prim.Bundle``: MyHDL names a
converted block's bundle argument ``x`` with signals ``a, b`` as ports
``x_a, x_b``), one keyword argument each instead of one per signal;
:func:`flat_ports` gives the Verilog port names a parent's instance text
connects.
"""
from __future__ import annotations

import ast
import inspect
import linecache
import textwrap

__all__ = ["part_of", "flat_ports"]


def _names(node) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _prune(stmts: list, absent: set[str]) -> list:
    """`stmts` without those naming a name of `absent` (which grows by the
    local variables the dropped assignments would have set)."""
    out = []
    for s in stmts:
        if isinstance(s, ast.If):
            if _names(s.test) & absent:
                out += _prune(s.orelse, absent)
                continue
            s.body = _prune(s.body, absent)
            s.orelse = _prune(s.orelse, absent)
            if not s.body and s.orelse:
                raise ValueError(f"part_of: line {s.lineno}: every statement of an 'if' "
                                 "branch with an 'else' belongs to an absent part")
            if s.body:
                out.append(s)
        elif isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant):
            out.append(s)                       # a docstring
        elif _names(s) & absent:
            if isinstance(s, ast.Assign):       # a local of an absent part is absent too
                absent |= {t.id for t in s.targets if isinstance(t, ast.Name)}
        else:
            out.append(s)
    return out


def part_of(func, name: "str | None" = None, doc: "str | None" = None):
    """`func` (a generator function defined in a block, not decorated)
    without the statements naming an absent part (a free variable bound to
    ``None``); renamed to `name` and with docstring `doc` when given.
    Returns `func` itself when nothing changes."""
    free = dict(zip(func.__code__.co_freevars,
                    (c.cell_contents for c in (func.__closure__ or ()))))
    absent = frozenset(n for n, v in free.items() if v is None)
    if not absent and name is None and doc is None:
        return func
    key = (func.__code__, absent, name, doc)
    if key not in _makers:
        _makers[key] = _maker(func, set(free), absent, name, doc)
    make, used = _makers[key]
    return make(**{n: free[n] for n in used})


#: (code, absent parts, name, doc) -> (the compiled maker, the free names it takes)
_makers: dict = {}


def _maker(func, free: set, absent: frozenset, name, doc):
    """Compile the pruned function inside a maker taking its free variables."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(func)))
    fdef = tree.body[0]
    fdef.decorator_list = []
    body = fdef.body
    has_doc = body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
    if doc is not None:
        node = ast.Expr(ast.Constant(doc))
        body = [node] + body[1:] if has_doc else [node] + body
    fdef.body = _prune(body, set(absent))
    if name is not None:
        fdef.name = name
    used = sorted(_names(fdef) & (free - absent))
    text = (f"def _fsa_part({', '.join(used)}):\n"
            + textwrap.indent(ast.unparse(fdef), "    ") + f"\n    return {fdef.name}\n")
    fname = f"<fsa_part_{len(_makers)}>"
    # MyHDL reads a generator's source with inspect: register it in linecache
    linecache.cache[fname] = (len(text), None, text.splitlines(True), fname)
    ns = dict(func.__globals__)
    exec(compile(text, fname, "exec"), ns)  # noqa: S102 (our own function, pruned)
    return ns["_fsa_part"], used


def flat_ports(ports: dict) -> dict:
    """`ports` (port name or bundle name -> signal or ``Bundle``) with each
    bundle expanded into its Verilog port names, in order (``bcmp`` with
    ``max``, ``up`` -> ``bcmp_max``, ``bcmp_up``)."""
    from rtl.prim import Bundle

    out = {}
    for name, s in ports.items():
        if isinstance(s, Bundle):
            out.update({f"{name}_{k}": v for k, v in vars(s).items()})
        else:
            out[name] = s
    return out
