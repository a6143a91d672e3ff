"""``fsa exec``: run raw instruction streams (``inst.bin`` / ELF, the
reference compiler's output or ours) one after another on one device, then
dump memory (the command line is in :mod:`fsa.cli.commands`)."""
from __future__ import annotations

import argparse
import sys

from fsa.cli.common import Outputs, json_safe, say, warn

__all__ = ["cmd_exec"]


def _parse_load(spec: str) -> tuple[str, int | None]:
    if "@" in spec:
        path, addr = spec.rsplit("@", 1)
        try:
            return path, int(addr, 0)
        except ValueError:
            raise ValueError(f"--load {spec!r}: the address {addr!r} is not a number; use "
                             f"data.bin@0xADDRESS, or a mem.elf without @") from None
    return spec, None



def _device_decode(words, why: str) -> list:
    """The instructions of `words` as the device's decoder reads them
    (:func:`fsa.isa.decode_device`); ValueError(`why`) for a stream it would
    stop on (an unknown type or function code, a truncated instruction)."""
    from fsa import isa

    out, at = [], 0
    while at < len(words):
        try:
            got = isa.decode_device(words, at)
        except isa.IllegalInstruction:
            raise ValueError(why) from None
        if got is None:
            raise ValueError(why)
        out.append(got[0])
        at += got[1]
    return out


def _store_regions(instructions) -> list[tuple[int, int]]:
    """(address, bytes) spans the DMA STOREs of `instructions` write."""
    from fsa.isa import Dma, DmaFunc

    out = []
    for x in instructions:
        if isinstance(x, Dma) and x.func == DmaFunc.STORE and x.repeat and x.size:
            first, last = x.mem_addr, x.mem_addr + (x.repeat - 1) * x.mem_stride
            lo = min(first, last)
            out.append((lo, max(first, last) + x.size - lo))
    return out


def _fetch_addr(cfg, programs, memory, dumps) -> int:
    """The program fetch address for `fsa exec`, checked against the data: the
    memory image, the dumps and every region a program STOREs to (a program
    that overwrote its own words would run differently on the device, which
    fetches them as it goes, than on the golden model)."""
    from fsa.simdev import program_address
    stores = [r for _, _, prog in programs for r in _store_regions(prog)]
    return program_address(cfg, max(len(w) for _, w, _ in programs),
                           [(a, len(b)) for a, b in memory] + [(a, n) for _, a, n in dumps]
                           + stores)


def cmd_exec(args: argparse.Namespace) -> int:
    """Run one or more raw programs (``--program`` repeated) one after another
    on one device without a reset (each start is a fresh program, from DONE;
    after a program that ends in ERROR the device is aborted before the
    next), then dump memory.  Exit 0 when every program reached DONE."""
    import json
    from pathlib import Path

    from fsa import config, isa
    from fsa.elf import load_segments

    cfg = config.get(args.config)
    if args.sim == "golden":
        given = [opt for opt, v in (("--max-cycles", args.max_cycles), ("--keep", args.keep or None))
                 if v is not None]
        if given:
            raise ValueError(f"{', '.join(given)}: only with --sim verilator or icarus (the "
                             f"golden model has no simulation to limit or keep)")
    outs = Outputs(args.force)
    outs.file(args.json, "--json")
    programs = []                               # (file, words, instructions)
    for path in args.program:
        try:
            raw = Path(path).read_bytes()
        except OSError as e:
            raise ValueError(f"--program: {e}") from None
        try:
            words = isa.from_bytes(raw)
        except ValueError as e:
            raise ValueError(f"--program {path}: {e}") from None
        try:
            prog = isa.decode(words)            # strict: raises on anything unusual
        except ValueError as e:
            # what the device runs anyway (reserved bits set, a DMA of 0 rows or
            # bytes) runs here too, with a warning; anything else is refused
            prog = _device_decode(words, f"--program {path}: {e}")
            say(f"warning: --program {path}: {e}; the device ignores reserved bits and "
                 f"completes a DMA of 0 rows or bytes without moving anything, and so does "
                 f"this run")
        programs.append((str(path), words, prog))
    memory = []
    for spec in args.load or []:
        path, addr = _parse_load(spec)
        if addr is None:
            memory += load_segments(path, cfg)
        else:
            try:
                memory.append((addr, Path(path).read_bytes()))
            except OSError as e:
                raise ValueError(f"--load {spec}: {e}") from None
    for a, b in memory:
        if a < cfg.mem_base or a + len(b) > cfg.mem_base + cfg.mem_size:
            raise ValueError(f"--load: segment 0x{a:x}+{len(b)} is outside the memory window "
                             f"[0x{cfg.mem_base:x}, 0x{cfg.mem_base + cfg.mem_size:x})")
    dumps = []
    for spec in args.dump or []:
        try:
            path, addr, size = spec.rsplit(":", 2)
            dumps.append((path, int(addr, 0), int(size, 0)))
        except ValueError:
            raise ValueError(f"--dump {spec!r}: use FILE:ADDRESS:SIZE, e.g. out.bin:0x80001000:256") from None
    lo, hi = cfg.mem_base, cfg.mem_base + cfg.mem_size
    if len({str(Path(p).expanduser().resolve()) for p, _, _ in dumps}
           | ({str(Path(args.json).expanduser().resolve())} if args.json else set())) \
            < len(dumps) + bool(args.json):
        raise ValueError("--dump/--json: two outputs name the same file")
    for path, a, n in dumps:
        outs.file(path, "--dump")
        if n <= 0:
            raise ValueError(f"--dump {path}:0x{a:x}:{n}: the size must be positive")
        if a < lo or a + n > hi:
            raise ValueError(f"--dump {path}:0x{a:x}:{n}: 0x{a:x}+{n} is outside the memory window "
                             f"[0x{lo:x}, 0x{hi:x}) of {cfg.name}")
    n_ins = sum(len(p) for _, _, p in programs)
    say(f"{cfg.name}: {len(programs)} program(s), {n_ins} instructions, "
         f"{sum(len(b) for _, b in memory)} bytes of memory image, on {args.sim}")
    report = {"config": cfg.name, "engine": args.sim, "instructions": n_ins, "programs": []}
    entries = report["programs"]
    if args.sim == "golden":
        from fsa.golden.machine import Deadlock, Machine, MachineError
        m = Machine(cfg)
        for a, b in memory:
            m.mem.write(a, b)
        at = None if args.push else _fetch_addr(cfg, programs, memory, dumps)
        for path, words, prog in programs:       # (the golden model has no cycles)
            e = dict(program=path, state="done", error="NONE", error_index=0, wait=None,
                     counters=None, cycles=None)
            try:
                if at is None:
                    e["counters"] = m.run(prog)
                else:                            # program fetch: the words in memory
                    m.mem.write(at, b"".join(w.to_bytes(4, "little") for w in words))
                    e["counters"] = m.fetch(at, len(words))
            except MachineError as err:
                e.update(state="error", error=err.code, error_index=err.index, message=str(err),
                         counters=dict(m.counters))
                if isinstance(err, Deadlock):
                    e["wait"] = {"sem_id": err.sem_id, "want": err.want, "have": err.have}
                m.abort()
            entries.append(e)
        data = [m.mem.read(a, n) for _, a, n in dumps]
    else:
        from fsa.simdev import run_on_device
        res = run_on_device(cfg, programs[0][1], memory, [(a, n) for _, a, n in dumps],
                            sim=args.sim, max_cycles=args.max_cycles or 20_000_000, progress=say,
                            programs=[w for _, w, _ in programs],
                            fetch=False if args.push else _fetch_addr(cfg, programs, memory, dumps))
        for (path, _, _), run in zip(programs, res["runs"]):
            entries.append({"program": path, "state": run["state"], "error": run["error"],
                            "error_index": run["error_index"], "wait": run.get("wait"),
                            "counters": run["counters"], "cycles": run["counters"]["exec"]})
        report.update(run_dir=res["run_dir"], run_dir_kept=True)
        data = res["dumps"]
    last = entries[-1]
    # (the single-program fields of earlier versions: the last program's)
    report.update(state=last["state"], error=last["error"], error_index=last["error_index"],
                  counters=last["counters"])
    # the memory after the last program, also when a program failed (to look at)
    for (path, a, n), b in zip(dumps, data):
        if outs.write(path, "--dump", b, f"memory 0x{a:x}+{n}"):
            say(f"dumped 0x{a:x}+{n} to {path}")
    failed = [(k, e) for k, e in enumerate(entries) if e["state"] != "done"]
    if failed:
        where = f" (run folder {report['run_dir']})" if "run_dir" in report else ""
        for k, e in failed:
            warn(f"program {k + 1} ({e['program']}): device state {e['state']}, error "
                 f"{e['error']} at instruction {e['error_index']}{where}")
    elif "run_dir" in report:
        if args.keep:
            say(f"run folder {report['run_dir']}")
        else:
            import shutil
            shutil.rmtree(report["run_dir"], ignore_errors=True)
            report["run_dir_kept"] = False
    if not failed:
        print("counters: " + ", ".join(f"{k} {v}" for k, v in report["counters"].items()))
    if args.json and outs.write(args.json, "--json", json.dumps(json_safe(report), indent=2),
                                "report"):
        say(f"report written to {args.json}")
    return outs.code(1 if failed else 0)
