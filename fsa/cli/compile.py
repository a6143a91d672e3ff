"""``fsa compile``: the attention kernel as ``inst.bin`` + ``mem.elf``
(inputs included), for ``fsa exec`` or other simulators."""
from __future__ import annotations

import argparse

from fsa.cli.common import Outputs, check_golden_fits, read_user_qkv, say

__all__ = ["cmd_compile", "load_block_inputs"]


def load_block_inputs(args, cfg):
    """Q, K, V as float64 arrays ``[S, R]`` (the user's .npy files or generated)."""
    import numpy as np

    from fsa.report import fa3_inputs

    R = cfg.sa_rows

    def check_shape(name, path, a):
        if a.ndim != 2 or a.shape[1] != R:
            raise ValueError(f"--{name} {path}: shape {a.shape}; {cfg.name} needs "
                             f"(sequence, {R}) (head dimension = array rows)")
        if a.shape[0] == 0:
            raise ValueError(f"--{name} {path}: the sequence is empty (shape {a.shape})")

    user = read_user_qkv(args, check_shape)
    if user is not None:
        q, k, v = user
        if k.shape != v.shape:
            raise ValueError(f"--k and --v must have the same shape, got {k.shape} and {v.shape}")
        return q, k, v
    rng = np.random.default_rng(args.seed or 0)
    sq, skv = args.seq_q or 64, args.seq_kv or 64
    return fa3_inputs(rng, (sq, R)), fa3_inputs(rng, (skv, R)), fa3_inputs(rng, (skv, R))


def cmd_compile(args: argparse.Namespace) -> int:
    """Write the program and the memory image; print the ``fsa exec`` line."""
    from fsa import config, isa, kernels, numerics
    from fsa.elf import elf_bytes

    cfg = config.get(args.config)
    outs = Outputs(args.force)
    program = outs.file(args.program, "--program")
    elf = outs.file(args.elf, "--elf")
    if program.resolve() == elf.resolve():
        raise ValueError(f"--program and --elf name the same file {args.program}")
    q, k, v = load_block_inputs(args, cfg)
    R, C = cfg.sa_rows, cfg.sa_cols
    if q.shape[0] % C or k.shape[0] % R:
        raise ValueError(f"fsa compile writes whole blocks only: seq_q must be a multiple of C = "
                         f"{C} and seq_kv of R = {R} on {cfg.name} (got {q.shape[0]} and "
                         f"{k.shape[0]}); fsa run pads other lengths (their key mask needs the "
                         f"key_limit register, which inst.bin and mem.elf do not carry)")
    kernels.check_attention_shape(cfg, q.shape[0], k.shape[0], args.causal)
    check_golden_fits(cfg, q.shape[0], k.shape[0], args.causal, args.force,
                      what="building and checking the program")
    prog = kernels.attention(cfg, q.shape[0], k.shape[0], causal=args.causal, kernel=args.kernel)
    enc = {"Q": numerics.from_float64(q, cfg.e_type), "K": numerics.from_float64(k, cfg.e_type),
           "Vt": numerics.from_float64(v.T.copy(), cfg.e_type)}
    wrote_p = outs.write(program, "--program", isa.to_bytes(prog.words()), "program")
    wrote_e = outs.write(elf, "--elf", elf_bytes(prog.memory_image(enc)), "memory image")
    if not (wrote_p and wrote_e):
        return outs.code(0)
    (addr, size), = prog.output_regions()
    say(f"wrote {program} ({len(prog.words())} words) and {elf}; the output O^T "
        f"[{cfg.sa_rows}, {q.shape[0]}] ({cfg.a_type}) is at 0x{addr:x}, {size} bytes:")
    print(f"fsa exec --config {cfg.name} --program {program} --load {elf} "
          f"--dump out.bin:0x{addr:x}:{size}")
    return 0
