"""The pipelined variants of the FMA unit (``fma_stages`` = 1..4).

``fsa_fma_pipe`` is ``rtl/fp/fsa_fma.py``'s unit with pipeline registers at
its natural cut points; the arithmetic is the same code (the processes of
``fsa_fma`` itself, clocked and, for the cuts inside ``fma_comb``, split at
a statement), so the results are bit-exact with ``fsa.numerics`` like the
combinational unit's, ``stages`` clock cycles later.  The cut points, in
datapath order:

* **S** after unpack, the exp2 split and the operand selection (``fma_comb``
  cut before the product);
* **M** after the multiplier (``fma_comb`` cut after the product);
* **A** after the alignment (``fma_comb`` cut before the add / subtract);
* **B** after the add and the result class: ``fma_comb``'s outputs (the
  exact sum, its exponent, class, sign, piece and match) are registers;
* **C** after normalise: the normalised sum and its exponent;
* **D** after the two roundings (the pack stage is left before the outputs).

A cut inside ``fma_comb`` registers every value a later part reads (locals
and input ports, named ``k<cut>_<name>``).  ``CUTS`` gives the cuts of each
stage count (1: B; 2: B, C; 3: A, B, C; 4: S, A, B, C), chosen by the
measured stage delays (docs/pipelining.md; M and D are measured
alternatives).  The result class, sign, piece
and match travel with the data to the outputs (``kc_cls``, ...).  The
gated variant's enable travels with them too (a valid pipeline: ``ka_en``,
``kb_en``, ...): each stage is gated by the enable of the vector it holds,
so a vector issued with ``en = 0`` comes out as all zeros ``stages`` cycles
later and the vectors around it are unaffected.  No reset: the registers
hold the last vector's values (a user reads the outputs ``stages`` cycles
after it issues).  Ports: those of ``fsa_fma`` and ``clk`` (last).
"""
from __future__ import annotations

import ast
import inspect
import itertools
import linecache
import textwrap
import types

from myhdl import Signal, always, always_comb, block, concat, intbv

from fsa.hw.config import MAX_FMA_STAGES
from fsa.formats import get_format
from rtl.convert import convert_block, sig
from rtl.fp import fsa_fma as comb
from rtl.prim import normalise, round_rne

__all__ = ["MAX_STAGES", "CUTS", "module_name", "fsa_fma_pipe", "convert"]

#: the largest ``fma_stages`` (``FSAConfig.fma_stages``)
MAX_STAGES = MAX_FMA_STAGES
#: the cut points of each stage count (see the module docstring)
CUTS = {1: "B", 2: "BC", 3: "ABC", 4: "SABC"}
#: the cuts inside ``fma_comb``: letter -> ("after" / "before", the first
#: line of the statement of its ``if en`` body there)
INNER_CUTS = {"S": ("before", "eaw[:] = concat(intbv(0)[EW - EM:], ea)"),
              "M": ("after", "prod[:] = sA * sb"), "A": ("before", "if ps == cs:")}


def check_stages(stages) -> int:
    """`stages` if it is an int in 0..MAX_STAGES; ValueError otherwise."""
    if isinstance(stages, bool) or not isinstance(stages, int) or not 0 <= stages <= MAX_STAGES:
        raise ValueError(f"fsa_fma: stages must be an int in 0..{MAX_STAGES} (pipeline "
                         f"registers of the FMA), got {stages!r}")
    return stages


def module_name(mul: str = "fp16", add: str = "fp32", pieces: int = 8, gated: bool = False,
                stages: int = 0) -> str:
    """Verilog module name: ``fsa_fma.module_name`` for ``stages = 0``, else
    with ``_s<stages>`` before the gated variant's ``_en``
    (``fsa_fma_fp16_fp32_p8_s2_en``)."""
    if check_stages(stages) == 0:
        return comb.module_name(mul, add, pieces, gated)
    return f"{comb.module_name(mul, add, pieces)}_s{stages}" + ("_en" if gated else "")


# ----------------------------------------------------------------- processes
_made = itertools.count(1)    # numbers the generated sources' pseudo file names


def _process(text: str, binds: dict, clk=None):
    """The generator of the function defined by `text` (one ``def``), its
    free names bound to `binds`' objects; ``always(clk.posedge)`` when `clk`
    is given, else ``always_comb``.  MyHDL reads the source back through
    ``linecache``; a signal it uses gets the name it has in `text` unless it
    has one already."""
    fdef = ast.parse(text).body[0]
    names = {n.id for n in ast.walk(fdef) if isinstance(n, ast.Name)}
    used = sorted(names & set(binds))
    src = (f"def _fsa_stage({', '.join(used)}):\n" + textwrap.indent(text, "    ")
           + f"\n    return {fdef.name}\n")
    fname = f"<fsa_fma_stage_{next(_made)}>"
    linecache.cache[fname] = (len(src), None, src.splitlines(True), fname)
    ns = {"intbv": intbv, "concat": concat}
    exec(compile(src, fname, "exec"), ns)  # noqa: S102 (fsa_fma's own processes, re-cut)
    return _decorate(ns["_fsa_stage"](**{n: binds[n] for n in used}), binds, clk)


def _decorate(func, binds: dict, clk=None):
    """``always(clk.posedge)(func)`` or ``always_comb(func)``, called from a
    frame whose locals are `binds` (MyHDL resolves a generator's names in the
    frame of the call that decorates it)."""
    loc = dict(binds, _fsa_func=func, _fsa_clk=clk)
    dec = "always(_fsa_clk.posedge)" if clk is not None else "always_comb"
    exec(f"_fsa_inst = {dec}(_fsa_func)",  # noqa: S102 (a fixed expression)
         {"always": always, "always_comb": always_comb}, loc)
    inst = loc["_fsa_inst"]
    inst.modctxt = True     # made for fsa_fma's block (MyHDL checks the caller of the caller)
    return inst


def _free(func) -> dict:
    """`func`'s free names and their objects."""
    return dict(zip(func.__code__.co_freevars, (c.cell_contents for c in func.__closure__ or ())))


class _Rename(ast.NodeTransformer):
    def __init__(self, names: dict):
        self.names = names

    def visit_Name(self, node):
        if node.id in self.names:
            return ast.copy_location(ast.Name(self.names[node.id], node.ctx), node)
        return node


def _stmts(text: str) -> list:
    return ast.parse(textwrap.dedent(text)).body


def _def(name: str, body: list) -> str:
    fdef = ast.FunctionDef(name=name, args=ast.arguments([], [], None, [], [], None, []),
                           body=body, decorator_list=[], returns=None)
    return ast.unparse(ast.fix_missing_locations(fdef))


def _reg_text(name: str, pairs: list) -> str:
    return f"def {name}():\n" + "".join(f"    {d}.next = {s}\n" for d, s in pairs)


def _assigned(stmts) -> set:
    out = set()
    for s in stmts:
        for n in ast.walk(s):
            for tg in (n.targets if isinstance(n, ast.Assign) else ()):
                tg = tg.value if isinstance(tg, ast.Subscript) else tg
                if isinstance(tg, ast.Name):
                    out.add(tg.id)
    return out


def _loads(stmts) -> set:
    return {n.id for s in stmts for n in ast.walk(s)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _split_comb(func, inner: str, gated: bool, outs: dict, binds: dict) -> list:
    """``fma_comb`` as clocked processes, one per segment between the cuts
    `inner` (letters of INNER_CUTS, in datapath order); the last one writes
    the outputs (cut B: `outs` renames ``piece``, ``match`` and names the
    enable's register, ``en``).  Every value a later segment reads, local or
    input port, is a register of the cut (``k<letter>_<name>``, added to
    `binds`), and so is the enable (gated).  Returns the processes' texts."""
    fdef = ast.parse(textwrap.dedent(inspect.getsource(func))).body[0]
    decls = [s for s in fdef.body if isinstance(s, ast.Assign)]
    gate = fdef.body[-1]
    assert isinstance(gate, ast.If) and ast.unparse(gate.test) == "en", "fma_comb's shape"
    heads = [ast.unparse(s).splitlines()[0] for s in gate.body]
    at = [heads.index(INNER_CUTS[x][1]) + (INNER_CUTS[x][0] == "after") for x in inner]
    bounds = [0] + at + [len(gate.body)]
    segs = [gate.body[b:e] for b, e in zip(bounds, bounds[1:])]
    local = {d.targets[0].id: d for d in decls}
    env = dict(func.__globals__, **_free(func))
    carried, ports_prev, prev, texts = [], [], "", []
    for i, seg in enumerate(segs):
        last = i == len(segs) - 1
        body = _stmts("\n".join(f"{n} = bool({prev}{n})" if isinstance(binds[prev + n]._val, bool)
                                 else f"{n}[:] = {prev}{n}" for n in carried)) + seg
        zero, live, ports, k = [], [], [], ""
        if not last:
            k = f"k{inner[i].lower()}_"
            done = [s for g in segs[:i + 1] for s in g]
            later = [s for g in segs[i + 1:] for s in g]
            live = sorted(_loads(later) & _assigned(done) & set(local))
            ports = [n for n in ("a", "b", "c", "exp2") if n in _loads(later)]
            for n in live + ports:
                if n in local:
                    v = eval(ast.unparse(local[n].value), env)  # noqa: S307 (bool(0) / intbv(0)[W:])
                    binds[k + n] = Signal(bool(0)) if isinstance(v, bool) else sig(len(v))
                else:
                    binds[k + n] = sig(len(binds[n]))
                zero.append(f"{k}{n}.next = 0")
            body += _stmts("\n".join(f"{k}{n}.next = {n}" for n in live + ports))
        used = _loads(body) | _assigned(body)
        pb = [d for d in decls if d.targets[0].id in used]
        if gated:                       # the enable travels with the data
            pb += _stmts(f"{outs['en'] if last else k + 'en'}.next = en")
            if not last:
                binds[k + "en"] = Signal(bool(0))
        pb.append(ast.If(ast.Name("en", ast.Load()), body,
                         gate.orelse if last else _stmts("\n".join(zero))))
        rename = {n: prev + n for n in ports_prev + (["en"] if gated and prev else [])}
        if last:
            rename.update({n: v for n, v in outs.items() if n != "en"})
        text = _def("fma_back" if last else f"fma_{inner[i].lower()}", pb)
        texts.append(ast.unparse(_Rename(rename).visit(ast.parse(text))))
        carried, ports_prev, prev = live, ports, k
    return texts


def stage_processes(stages: int, clk, fma_comb, exponent, pack, s: dict) -> list:
    """The processes and instances of the pipelined unit (``fsa_fma``'s
    ``pipe`` hook: `fma_comb`, `exponent`, `pack` are its processes, `s` its
    namespace)."""
    cuts = CUTS[check_stages(stages)]
    gated = s["gated"]
    binds = {n: s[n] for n in ("s_sum", "s_lw", "s_cls", "s_sgn", "s_lz", "s_y", "s_emsb",
                               "enc_a", "enc_m", "piece", "match", "en", "a", "b", "c", "exp2")}
    binds.update({n: v for n, v in _free(fma_comb.func).items() if n not in binds})
    binds.update({n: v for n, v in vars(comb).items() if n.isupper() and isinstance(v, int)})
    insts = []
    # the values that travel with the data after cut B: (class, sign, piece, match, en)
    later = "C" in cuts or "D" in cuts
    carry = {"s_cls": "s_cls", "s_sgn": "s_sgn", "piece": "kb_piece" if later else "piece",
             "match": "kb_match" if later else "match"}
    if later:
        binds["kb_piece"], binds["kb_match"] = sig(len(s["piece"])), Signal(bool(0))
    if gated:
        binds["kb_en"] = Signal(bool(0))
        carry["en"] = "kb_en"
    outs = {k: carry[k] for k in ("piece", "match", "en") if k in carry}
    for text in _split_comb(fma_comb.func, "".join(x for x in cuts if x in INNER_CUTS), gated,
                            outs, binds):
        insts.append(_process(text, binds, clk))

    def cut(letter, regs):
        """Registers of cut `letter`: `regs` (dst, src) and the carried values."""
        last = letter == cuts[-1]
        pairs = list(regs)
        for v, src in list(carry.items()):
            if v == "en" and letter == "D":
                continue        # nothing is gated after the roundings
            dst = v if last and v in ("piece", "match") else f"k{letter.lower()}_{v.split('_')[-1]}"
            if dst not in binds:
                binds[dst] = sig(len(binds[src])) if len(binds[src]) > 1 else Signal(bool(0))
            pairs.append((dst, src))
            carry[v] = dst
        insts.append(_process(_reg_text(f"cut_{letter.lower()}", pairs), binds, clk))

    en_b = binds[carry["en"]] if gated else None
    if "C" in cuts:
        binds["kc_yn"] = sig(len(s["s_y"]))
        insts.append(normalise(s["s_sum"], s["s_lz"], binds["kc_yn"], en_b))
        insts.append(_decorate(exponent.func, dict(binds, **_free(exponent.func)), clk))
        cut("C", [("s_y", "kc_yn")])
    else:
        insts.append(normalise(s["s_sum"], s["s_lz"], s["s_y"], en_b))
        insts.append(exponent)
    en_c = binds[carry["en"]] if gated else None
    fa, fm, ofs = s["fa"], s["fm"], s["OFS"]
    if "D" in cuts:
        binds["kd_enca"], binds["kd_encm"] = sig(len(s["enc_a"])), sig(len(s["enc_m"]))
        insts.append(round_rne(s["s_y"], s["s_emsb"], binds["kd_enca"], fa, ofs, en_c))
        insts.append(round_rne(s["s_y"], s["s_emsb"], binds["kd_encm"], fm, ofs, en_c))
        cut("D", [("enc_a", "kd_enca"), ("enc_m", "kd_encm")])
    else:
        insts.append(round_rne(s["s_y"], s["s_emsb"], s["enc_a"], fa, ofs, en_c))
        insts.append(round_rne(s["s_y"], s["s_emsb"], s["enc_m"], fm, ofs, en_c))
    ptext = textwrap.dedent(inspect.getsource(pack.func))
    ptext = "\n".join(ln for ln in ptext.splitlines() if not ln.lstrip().startswith("@"))
    ren = {"s_cls": carry["s_cls"], "s_sgn": carry["s_sgn"]}
    ptext = ast.unparse(_Rename(ren).visit(ast.parse(ptext)))
    pb = dict(binds, **_free(pack.func))
    pb.update({k: binds[k] for k in ren.values()})
    insts.append(_process(ptext, pb))
    for i in insts:
        i.modctxt = True    # all made for fsa_fma's block (see _decorate)
    return insts


_DOC = """Pipelined FMA with exp2 mode: ``fsa_fma``'s arithmetic with ``stages``
pipeline registers (rtl/fp/fsa_fma_pipe.py); every output belongs to the
vector issued ``stages`` clock cycles earlier."""


def _top():
    """``fsa_fma``'s block function under its pipelined docstring (the
    module's header comment)."""
    f = comb.fsa_fma.func
    g = types.FunctionType(f.__code__, f.__globals__, f.__name__, f.__defaults__, f.__closure__)
    g.__kwdefaults__, g.__doc__ = f.__kwdefaults__, _DOC
    return block(g)


def fsa_fma_pipe(a, b, c, exp2, out_a, out_e, piece, match, clk, mul="fp16", add="fp32",
                 pieces=8, en=None, stages=1):
    """The pipelined unit (a MyHDL block instance; ``stages`` >= 1)."""
    if check_stages(stages) == 0:
        raise ValueError("fsa_fma_pipe: stages = 0 is the combinational fsa_fma")

    def pipe(fma_comb, exponent, pack, ns):
        return stage_processes(stages, clk, fma_comb, exponent, pack, ns)
    return _top()(a, b, c, exp2, out_a, out_e, piece, match, mul=mul, add=add, pieces=pieces,
                  en=en, pipe=pipe, clk=clk)


def convert(outdir, mul: str = "fp16", add: str = "fp32", pieces: int = 8, gated: bool = False,
            stages: int = 0):
    """Write ``<outdir>/<module_name(...)>.v`` (``stages = 0``: ``fsa_fma.convert``)."""
    name = module_name(mul, add, pieces, gated, stages)
    if stages == 0:
        return comb.convert(outdir, mul, add, pieces, gated)
    fm, fa = get_format(mul), get_format(add)

    def factory():
        return fsa_fma_pipe(sig(fm.width), sig(fm.width), sig(fa.width), sig(1),
                            sig(fa.width), sig(fm.width), sig((pieces.bit_length() - 1)), sig(1),
                            sig(1), mul=fm.name, add=fa.name, pieces=pieces,
                            en=sig(1) if gated else None, stages=stages)

    return convert_block(factory, name, outdir)
