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
        ValueError: not an ELF file, a segment whose file bytes lie beyond
            the end of the file (a truncated file) or with ``p_memsz <
            p_filesz``, or (with `cfg`) a segment outside the configured
            memory window (checked before its zero fill is allocated).
    """
    from elftools.common.exceptions import ELFError
    from elftools.elf.elffile import ELFFile

    out = []
    try:
        size = Path(path).stat().st_size
        with open(path, "rb") as f:
            elf = ELFFile(f)
            for k, seg in enumerate(elf.iter_segments()):
                if seg["p_type"] != "PT_LOAD":
                    continue
                addr, off = int(seg["p_paddr"]), int(seg["p_offset"])
                filesz, memsz = int(seg["p_filesz"]), int(seg["p_memsz"])
                what = f"{path}: PT_LOAD segment {k} (0x{addr:x})"
                if memsz < filesz:
                    raise ValueError(f"{what}: p_memsz {memsz} < p_filesz {filesz}")
                if off + filesz > size:
                    raise ValueError(f"{what}: its {filesz} file bytes from offset {off} end "
                                     f"beyond the file's {size} bytes (a truncated file?)")
                if cfg is not None:
                    _check_window(what, addr, memsz, cfg)
                data = seg.data()
                if len(data) != filesz:      # (pyelftools reads what is there)
                    raise ValueError(f"{what}: read {len(data)} of its {filesz} file bytes")
                out.append((addr, data + bytes(memsz - filesz)))
    except ELFError as e:
        raise ValueError(f"{path}: not a valid ELF file ({e})") from None
    except OSError as e:
        raise ValueError(f"{path}: {e}") from None
    return out


def _check_window(what: str, addr: int, n: int, cfg) -> None:
    lo, hi = cfg.mem_base, cfg.mem_base + cfg.mem_size
    if addr < lo or addr + n > hi:
        raise ValueError(f"{what}: 0x{addr:x}+{n} is outside the memory window "
                         f"[0x{lo:x}, 0x{hi:x})")


def write_elf(path: "str | Path", segments: list[tuple[int, bytes]]) -> None:
    """Write an ELF64 little-endian file with one PT_LOAD per segment."""
    Path(path).write_bytes(elf_bytes(segments))


def elf_bytes(segments: list[tuple[int, bytes]]) -> bytes:
    """The ELF64 little-endian file with one PT_LOAD per segment."""
    n = len(segments)
    ehsize, phentsize = 64, 56
    off = ehsize + n * phentsize
    header = struct.pack("<4sBBBBB7xHHIQQQIHHHHHH", b"\x7fELF", 2, 1, 1, 0, 0,
                         2, 0xF3, 1, 0, ehsize, 0, 0, ehsize, phentsize, n, 64, 0, 0)
    phdrs, blobs = b"", b""
    for addr, data in segments:
        phdrs += struct.pack("<IIQQQQQQ", 1, 6, off + len(blobs), addr, addr, len(data), len(data), 8)
        blobs += bytes(data)
    return header + phdrs + blobs
