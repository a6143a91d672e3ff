"""Memory images as ELF files (the reference simulator's mem.elf): read the
PT_LOAD segments with pyelftools, and write a minimal ELF64 image of our own
programs' memory."""
from __future__ import annotations

import struct
from pathlib import Path


def load_segments(path: "str | Path", cfg=None) -> list[tuple[int, bytes]]:
    """(physical address, bytes) of every PT_LOAD segment (file contents,
    zero-filled up to p_memsz).

    Raises:
        ValueError: not an ELF file, or (with `cfg`) a segment outside the
            configured memory window.
    """
    from elftools.common.exceptions import ELFError
    from elftools.elf.elffile import ELFFile

    out = []
    try:
        with open(path, "rb") as f:
            elf = ELFFile(f)
            for seg in elf.iter_segments():
                if seg["p_type"] != "PT_LOAD":
                    continue
                data = seg.data() + bytes(seg["p_memsz"] - seg["p_filesz"])
                out.append((int(seg["p_paddr"]), data))
    except ELFError as e:
        raise ValueError(f"{path}: not a valid ELF file ({e})") from None
    except OSError as e:
        raise ValueError(f"{path}: {e}") from None
    if cfg is not None:
        lo, hi = cfg.mem_base, cfg.mem_base + cfg.mem_size
        for a, b in out:
            if a < lo or a + len(b) > hi:
                raise ValueError(f"{path}: segment 0x{a:x}+{len(b)} is outside the memory window "
                                 f"[0x{lo:x}, 0x{hi:x})")
    return out


def write_elf(path: "str | Path", segments: list[tuple[int, bytes]]) -> None:
    """Write an ELF64 little-endian file with one PT_LOAD per segment."""
    n = len(segments)
    ehsize, phentsize = 64, 56
    off = ehsize + n * phentsize
    header = struct.pack("<4sBBBBB7xHHIQQQIHHHHHH", b"\x7fELF", 2, 1, 1, 0, 0,
                         2, 0xF3, 1, 0, ehsize, 0, 0, ehsize, phentsize, n, 64, 0, 0)
    phdrs, blobs = b"", b""
    for addr, data in segments:
        phdrs += struct.pack("<IIQQQQQQ", 1, 6, off + len(blobs), addr, addr, len(data), len(data), 8)
        blobs += bytes(data)
    Path(path).write_bytes(header + phdrs + blobs)
