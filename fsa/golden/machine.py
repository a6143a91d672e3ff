"""Instruction-level bit-exact model of FSA: executes an instruction stream
against modelled scratchpad, accumulator, array and memory state.

Matrix instructions use the tile model (``fsa.golden.tile``) on the array
state they find (the PE registers, the CMP maxima, the ACC scale), so any
program is modelled, not only the attention kernel. DMA instructions move
rows between memory and the SRAMs. The matrix and DMA queues run
concurrently in the hardware, ordered by semaphores; the model interleaves
them the same way (an instruction runs when its semaphore acquire can
succeed), so a race-free program gives the hardware's memory image.  When
both engines' pending instructions can run, the older one (in program order)
runs first, as it started first on the device.

Dispatch is modelled as the device does it (``rtl/fsa_dispatch.py``): the
decoder hands instructions on in program order into one pending register
per engine (it waits while that one is full; a fence waits until the engines
it names have nothing pending), and a pending instruction runs when its
semaphore acquire succeeds (the value matches and the semaphore is not held:
an instruction that acquires and does not release keeps it held).  So a program the device deadlocks on deadlocks
here too, with the same report: :class:`Deadlock` (code DEADLOCK) names the
oldest blocked pending instruction, its semaphore, the value it waits for
and the value held; a program that ends without a stop fence (the empty
program too) raises ``MachineError("NO_STOP")`` with the index of the
missing next instruction (``fsa/hw/errors.py``).  Faults follow the
contract's precedence (``fsa.hw.errors``, STAGES): a decode fault
(ILLEGAL_TYPE / ILLEGAL_FUNC) or a matrix instruction whose walk leaves its
SRAM (SRAM_RANGE, checked as it enters its pending register, before its
semaphore) stops the decoder there; the older instructions run on until
nothing more can (an older DMA instruction's error is raised instead), then
the fault is raised.  :meth:`Machine.fetch` runs
a program read from the model's memory, as the device's program fetch does
(``fsa/hw/regs.py``): the same errors, and FETCH_RANGE (index 0) for an
address that is not a multiple of the AXI beat size or a program outside the
memory window.  Each :meth:`Machine.run`
is a fresh program as after a start (semaphores 0, index 0, counters 0);
memory, SRAMs, PE registers, CMP maxima and ACC scale are kept, and
:meth:`Machine.abort` models the abort register (a CMP RESET).

The host settings (``fsa.hw.regs.SETTINGS``: ``scale_e``, ``scale_a``,
``key_limit``) are :attr:`Machine.settings`, reset values at construction,
changed with :meth:`Machine.write_setting` between programs (the device
refuses the write while a program runs) and kept across runs and aborts.
ATTENTION_SCORE uses the two scales, and ``key_limit`` when its
``mask_keys`` flag is set.

Input-delayer flags: each matrix function is modelled for the flags the
array's schedule is built for (docs/architecture.md section 7): LOAD_STATIONARY
without delay, ATTENTION_SCORE with rev_input + rev_output + delay_output,
ATTENTION_VALUE with rev_input + delay_output; other combinations feed
misaligned data to the array and raise :class:`UnsupportedProgram`.
"""
from __future__ import annotations

import time

import numpy as np

from fsa import numerics as nx
from fsa import dataflows
from fsa.config import FSAConfig
from fsa.isa import (SIZES, Dma, DmaFunc, Fence, IllegalInstruction, Matrix, MxFunc,
                     decode_device)
from fsa.golden import tile
from fsa.golden.errors import Deadlock, MachineError, UnsupportedProgram
from fsa.hw.errors import sram_walks
from fsa.hw.isa import SEM_IDS, TYPE_FIELD
from fsa.hw.regs import check_setting, setting_defaults

#: instruction type code -> words
SIZES_BY_CODE = {int(t): n for t, n in SIZES.items()}

__all__ = ["Machine", "MachineError", "UnsupportedProgram", "Deadlock"]


def _u(fmt) -> type:
    return np.uint16 if nx.get_format(fmt).width == 16 else np.uint32


class Memory:
    """Byte-addressed memory window [base, base + size), stored sparsely in
    4 KiB pages (unwritten bytes read as 0)."""

    PAGE = 4096

    def __init__(self, base: int, size: int):
        self.base, self.size = base, size
        self.pages: dict[int, bytearray] = {}

    def _check(self, addr: int, n: int, index: int | None) -> int:
        off = addr - self.base
        if off < 0 or off + n > self.size:
            raise MachineError("MEM_RANGE", f"access 0x{addr:x}+{n} outside memory window "
                               f"[0x{self.base:x}, 0x{self.base + self.size:x})", index)
        return off

    def read(self, addr: int, n: int, index: int | None = None) -> bytes:
        off = self._check(addr, n, index)
        out = bytearray(n)
        pos = 0
        while pos < n:
            page, o = divmod(off + pos, self.PAGE)
            k = min(n - pos, self.PAGE - o)
            if page in self.pages:
                out[pos:pos + k] = self.pages[page][o:o + k]
            pos += k
        return bytes(out)

    def write(self, addr: int, b: bytes, index: int | None = None) -> None:
        off = self._check(addr, len(b), index)
        pos = 0
        while pos < len(b):
            page, o = divmod(off + pos, self.PAGE)
            k = min(len(b) - pos, self.PAGE - o)
            self.pages.setdefault(page, bytearray(self.PAGE))[o:o + k] = b[pos:pos + k]
            pos += k

    def segments(self) -> list[tuple[int, bytes]]:
        """Written pages as (address, bytes), in address order."""
        return [(self.base + p * self.PAGE, bytes(self.pages[p])) for p in sorted(self.pages)]


class Machine:
    """The model. ``run(program)`` executes a list of instructions or words.

    Attributes:
        spad: (spad_rows, R) E bits.  acc: (acc_rows, C) A bits.
        pe: (R, C) E bits, the PE registers.  mem: the memory window.
        sem: 32 semaphore values.  counters: instruction counts.
        settings: the setting registers (name -> value, fsa/hw/regs.py).
    """

    def __init__(self, cfg: FSAConfig, mem: Memory | None = None):
        self.cfg = cfg
        R, C = cfg.sa_rows, cfg.sa_cols
        self.ue, self.ua = _u(cfg.e_type), _u(cfg.a_type)
        self.spad = np.zeros((cfg.spad_rows, R), self.ue)
        self.acc = np.zeros((cfg.acc_rows, C), self.ua)
        self.pe = np.zeros((R, C), self.ue)
        self.state = tile.TileState(cfg)        # CMP maxima and ACC scale
        self.mem = mem if mem is not None else Memory(cfg.mem_base, cfg.mem_size)
        self.sem = [0] * SEM_IDS
        self.held = [False] * SEM_IDS
        self.counters = {"matrix": 0, "dma": 0, "fence": 0}
        self.settings: dict[str, int] = setting_defaults(cfg)

    def write_setting(self, name: str, value: int) -> None:
        """A host write of setting register `name` (between programs).

        Raises:
            KeyError: not a setting.  ValueError: a value the device refuses
                (outside ``fsa.hw.regs.setting_range``).
        """
        if name not in self.settings:
            raise KeyError(f"{name!r} is not a setting; settings: {', '.join(self.settings)}")
        self.settings[name] = check_setting(self.cfg, name, value)

    # ------------------------------------------------------------ helpers
    def _rows(self, addr: int, stride: int, n: int, limit: int, what: str, index: int,
              code: str = "SRAM_RANGE") -> list[int]:
        rows = [addr + i * stride for i in range(n)]
        bad = [r for r in rows if not 0 <= r < limit]
        if bad:
            raise MachineError(code, f"{what} row {bad[0]} outside 0..{limit - 1}", index)
        return rows

    def acc_walk(self, rows: list[int], zero: bool, add: np.ndarray,
                 scale: "np.ndarray | None" = None) -> None:
        """Write an accumulator walk: walk index ``i`` writes ``scale * old_i +
        add[i]`` (each of the C lanes; ``scale`` the ACC's, or `scale`: UD
        NORM's ``scale2``) into ``rows[i]``.

        ``old_i`` is what the hardware reads for index ``i``: 0 with `zero`,
        else its row.  When the walk's rows repeat (stride 0), that is the row
        as written by index ``i - 2`` or earlier: every plan reads index ``i``
        one cycle before writing it, one index per cycle, and the SRAM gives
        the old word when a row is read in the cycle it is written
        (tests/test_machine.py checks both against the plans); with distinct
        rows it is the row before the instruction.  The row keeps the last
        index's write.
        """
        a = self.cfg.a_type
        scale = self.state.scale if scale is None else scale
        if len(set(rows)) == len(rows):
            old = np.zeros((len(rows), self.cfg.sa_cols), self.ua) if zero else self.acc[rows]
            self.acc[rows] = nx.fma(scale[None, :], old, add, mul=a, acc=a)
            return
        wrote: dict[int, list[tuple[int, np.ndarray]]] = {}
        for i, r in enumerate(rows):
            seen = [v for j, v in wrote.get(r, []) if j <= i - 2]
            old = np.zeros(self.cfg.sa_cols, self.ua) if zero else (
                seen[-1] if seen else self.acc[r])
            wrote.setdefault(r, []).append((i, nx.fma(scale, old, add[i], mul=a, acc=a)))
        for r, ws in wrote.items():
            self.acc[r] = ws[-1][1]

    def _range_fault(self, ins: Matrix, index: int) -> "MachineError | None":
        """SRAM_RANGE for a matrix instruction entering its pending register
        with a walk (``fsa.hw.errors.sram_walks``) outside its SRAM, else None."""
        cfg = self.cfg
        for sram, n, strided in sram_walks(MxFunc(ins.func).name, cfg.sa_rows, cfg.sa_cols):
            addr, stride = ((ins.spad_addr, ins.spad_stride) if sram == "spad"
                            else (ins.acc_addr, ins.acc_stride if strided else 0))
            limit = cfg.spad_rows if sram == "spad" else cfg.acc_rows
            bad = [addr + k * stride for k in range(n) if not 0 <= addr + k * stride < limit]
            if bad:
                return MachineError("SRAM_RANGE", f"{sram} row {bad[0]} outside 0..{limit - 1}",
                                    index)
        return None

    # ------------------------------------------------------------ matrix
    def matrix(self, ins: Matrix, index: int = 0) -> None:
        """Execute one matrix instruction (its data effect)."""
        cfg = self.cfg
        R, C = cfg.sa_rows, cfg.sa_cols
        f = MxFunc(ins.func)
        flags = (ins.rev_input, ins.rev_output, ins.delay_output)
        st = self.state
        dataflows.get(cfg).check_modelled(self, ins, index)     # with its own state
        if f == MxFunc.LOAD_STATIONARY:
            if ins.delay_output:
                raise UnsupportedProgram("LOAD_STATIONARY with delay_output is not modelled")
            rows = self._rows(ins.spad_addr, ins.spad_stride, C, cfg.spad_rows, "spad", index)
            for i, row in enumerate(rows):
                data = self.spad[row]
                lane = np.empty(R, self.ue)
                for e in range(R):
                    p = R - 1 - e if ins.rev_input else e
                    lane[R - 1 - p if ins.rev_output else p] = data[e]
                self.pe[:, C - 1 - i] = lane           # column c holds read C-1-c
        elif f == MxFunc.ATTENTION_SCORE:
            if flags != (True, True, True):
                raise UnsupportedProgram(f"ATTENTION_SCORE with flags rev_input/rev_output/"
                                         f"delay_output = {flags} is not modelled (use 1/1/1)")
            rows = self._rows(ins.spad_addr, ins.spad_stride, R, cfg.spad_rows, "spad", index)
            lrow = self._rows(ins.acc_addr, 0, 1, cfg.acc_rows, "acc", index)[0]
            st.l = self.acc[lrow].copy()
            cs = self.settings
            tr = tile.score(st, self.pe.T.copy(), self.spad[rows], zero=ins.zero,
                            causal=ins.causal,
                            key_limit=cs["key_limit"] if ins.mask_keys else None,
                            scale_bits=(cs["scale_e"], cs["scale_a"]))
            self.acc[lrow] = st.l
            self.pe = tr.p[:, ::-1].T.copy()           # PE(r, c) = p[c][R-1-r]
        elif f == MxFunc.ATTENTION_VALUE:
            if flags != (True, False, True):
                raise UnsupportedProgram(f"ATTENTION_VALUE with flags rev_input/rev_output/"
                                         f"delay_output = {flags} is not modelled (use 1/0/1)")
            rows = self._rows(ins.spad_addr, ins.spad_stride, R, cfg.spad_rows, "spad", index)
            orow = self._rows(ins.acc_addr, ins.acc_stride, R, cfg.acc_rows, "acc", index)
            p = self.pe[::-1, :].T.copy()              # p[c][j] = PE(R-1-j, c)
            v = self.spad[rows].T.copy()               # v[j][i] = V^T row i, element j
            self.acc_walk(orow, ins.zero, tile.value_products(cfg, p, v))   # = tile.value
            st.o_t = self.acc[orow].copy()
        elif f == MxFunc.ATTENTION_LSE_NORM_SCALE:
            lrow = self._rows(ins.acc_addr, 0, 1, cfg.acc_rows, "acc", index)[0]
            st.l = np.zeros(C, self.ua) if ins.zero else self.acc[lrow].copy()
            tile.lse_norm_scale(st)
        elif f == MxFunc.ATTENTION_LSE_NORM:
            orow = self._rows(ins.acc_addr, ins.acc_stride, R, cfg.acc_rows, "acc", index)
            st.reset_max()                             # = tile.lse_norm
            self.acc_walk(orow, ins.zero, np.zeros((R, C), self.ua))
            st.o_t = self.acc[orow].copy()
        if (msg := dataflows.illegal(cfg, ins)) is not None:      # as the decoder
            raise MachineError("ILLEGAL_FUNC", msg, index)
        dataflows.get(cfg).execute(self, ins, index)      # the dataflow's own functions
        self.counters["matrix"] += 1

    # ------------------------------------------------------------ DMA
    def dma(self, ins: Dma, index: int = 0) -> None:
        """Execute one DMA instruction: rows of `size` bytes between memory
        and the scratchpad (or the accumulator with `is_accum`)."""
        cfg = self.cfg
        if ins.repeat == 0 or ins.size == 0:       # (a device-decoded word stream only)
            self.counters["dma"] += 1               # the device completes it, moving nothing
            return
        sram = self.acc if ins.is_accum else self.spad
        name = "acc" if ins.is_accum else "spad"
        row_bytes = cfg.acc_row_bytes if ins.is_accum else cfg.spad_row_bytes
        if ins.size > row_bytes:
            raise MachineError("DMA_SIZE", f"size {ins.size} bytes exceeds a {name} row "
                               f"({row_bytes} bytes)", index)
        if ins.size % cfg.mem_align:
            raise MachineError("DMA_ALIGN", f"size {ins.size} is not a multiple of "
                               f"{cfg.mem_align} bytes", index)
        rows = self._rows(ins.sram_addr, ins.sram_stride, ins.repeat, sram.shape[0], name, index,
                          "DMA_SRAM_RANGE")
        for i, row in enumerate(rows):
            addr = ins.mem_addr + i * ins.mem_stride
            if addr % cfg.mem_align:
                raise MachineError("DMA_ALIGN", f"row {i} address 0x{addr:x} is not "
                                   f"{cfg.mem_align}-byte aligned", index)
            raw = sram[row].tobytes()
            if ins.func == DmaFunc.LOAD:
                b = self.mem.read(addr, ins.size, index)
                new = bytearray(raw)
                new[:ins.size] = b
                sram[row] = np.frombuffer(bytes(new), sram.dtype)
            else:
                self.mem.write(addr, raw[:ins.size], index)
        self.counters["dma"] += 1

    # ------------------------------------------------------------ programs
    def abort(self) -> None:
        """The abort register's effect on the modelled state (fsa/hw/regs.py):
        semaphores 0, the CMP RESET (maxima -inf) and, on UD hardware, the
        bottom row's RESET (rtl/fsa_core.py: maxima -inf, the LIFO empty,
        nothing in the u path); the rest (settings, ``qreg``, the max
        difference included) is kept."""
        self.sem = [0] * SEM_IDS
        self.held = [False] * SEM_IDS
        fresh = tile.TileState(self.cfg)
        self.state.new_max, self.state.old_max = fresh.new_max, fresh.old_max
        dataflows.get(self.cfg).abort(self)

    def fetch(self, addr: int, n_words: int, **kw) -> dict:
        """Run the `n_words`-word program at byte address `addr` of the
        model's memory (program fetch, fetch_start); as :meth:`run`.

        Raises:
            MachineError: FETCH_RANGE (index 0) for a misaligned address or a
                program outside the memory window; the errors of :meth:`run`.
        """
        beat = self.cfg.axi_data_bits // 8
        lo, hi = self.cfg.mem_base, self.cfg.mem_base + self.cfg.mem_size
        if addr % beat or addr < lo or addr + 4 * n_words > hi:
            self.counters = {"matrix": 0, "dma": 0, "fence": 0}
            raise MachineError("FETCH_RANGE", f"program fetch: 0x{addr:x} + {4 * n_words} bytes "
                               f"is misaligned (beat {beat} bytes) or outside "
                               f"[0x{lo:x}, 0x{hi:x})", 0)
        raw = self.mem.read(addr, 4 * n_words) if n_words else b""
        words = [int.from_bytes(raw[4 * i:4 * i + 4], "little") for i in range(n_words)]
        return self.run(words, **kw)

    @staticmethod
    def _stream(program):
        """(at, length) for a program: ``at(i)`` is instruction i, or None
        past the end.  A word stream is decoded lazily, one instruction at a
        time as the decoder reaches it, with the device's rules
        (:func:`fsa.isa.decode_device`): an illegal word is reported when the
        device would see it (so a deadlock before it wins, as on the device),
        and a stream that ends inside an instruction just ends."""
        if not (program and isinstance(program[0], int)):
            seq = list(program)
            return (lambda i: seq[i] if i < len(seq) else None), len(seq)
        words = [int(w) for w in program]
        decoded: list = []
        pos = [0]

        def at(i: int):
            while len(decoded) <= i:
                try:
                    got = decode_device(words, pos[0])
                except IllegalInstruction as e:
                    raise MachineError(e.code, str(e), len(decoded)) from None
                if got is None:
                    return None
                decoded.append(got[0])
                pos[0] += got[1]
            return decoded[i]

        total, k = 0, 0                         # instructions, for progress reports
        while k < len(words):
            t = TYPE_FIELD.extract([words[k] & 0xFFFF_FFFF])
            if t not in SIZES_BY_CODE:
                break
            total, k = total + 1, k + SIZES_BY_CODE[t]
        return at, total

    def run(self, program, max_steps: int = 10_000_000, progress=None) -> dict:
        """Execute a program (instructions or 32-bit words) as a fresh program
        (semaphores 0, counters 0) up to its fence with `stop`.

        `progress`, if given, is called as ``progress(done, total)`` (program
        instructions dispatched so far, program length) about every 5 seconds
        of a long run.

        Returns:
            The counters (instructions of each kind) of this program.

        Raises:
            Deadlock: every engine waits for a semaphore that nothing can
                release (code DEADLOCK; the device reports the same).
            MachineError: an out-of-range SRAM row or memory access, a bad
                DMA, NO_STOP (the program ended without a stop fence); for
                a word stream also ILLEGAL_TYPE / ILLEGAL_FUNC, when the
                decoder reaches the word, as on the device.
            UnsupportedProgram: a matrix instruction the model does not define.
        """
        at, total = self._stream(program)
        self.sem = [0] * SEM_IDS
        # held: acquired and not yet released (an acquire without a release
        # keeps its semaphore held, as in rtl/fsa_sem.py)
        self.held = [False] * SEM_IDS
        self.counters = {"matrix": 0, "dma": 0, "fence": 0}
        pend: dict[str, tuple[int, object] | None] = {"mx": None, "dma": None}
        pc = 0
        fault: MachineError | None = None
        steps = 0
        next_report = time.monotonic() + 5.0
        while True:
            steps += 1
            if progress is not None and time.monotonic() >= next_report:
                progress(pc, total)
                next_report = time.monotonic() + 5.0
            if steps > max_steps:
                raise MachineError("TIMEOUT", f"program did not finish in {max_steps} steps")
            moved = False
            # the decoder: in program order, while the engine's pending register
            # is free; a decode or pending fault stops it there and waits for the
            # older instructions to settle (fsa/hw/errors.py, precedence)
            while fault is None:
                try:
                    ins = at(pc)
                except MachineError as e:           # ILLEGAL_TYPE / ILLEGAL_FUNC
                    fault = e
                    break
                if ins is None:
                    break
                if isinstance(ins, Fence):
                    if ((ins.mx or ins.stop) and pend["mx"]) or ((ins.dma or ins.stop)
                                                                 and pend["dma"]):
                        break
                    self.counters["fence"] += 1
                    pc += 1
                    moved = True
                    if ins.stop:
                        return dict(self.counters)
                    continue
                if (msg := dataflows.illegal(self.cfg, ins)) is not None:     # as the decoder
                    fault = MachineError("ILLEGAL_FUNC", msg, pc)
                    break
                q = "mx" if isinstance(ins, Matrix) else "dma"
                if pend[q] is not None:
                    break
                if q == "mx" and (fault := self._range_fault(ins, pc)) is not None:
                    break                           # it sits pending and never issues
                pend[q] = (pc, ins)
                pc += 1
                moved = True
            # the pending instructions oldest first: an engine's instruction
            # that came first in program order has started first on the device
            for q in sorted((q for q in ("dma", "mx") if pend[q] is not None),
                            key=lambda q: pend[q][0]):
                if pend[q] is None:
                    continue
                idx, ins = pend[q]
                if ins.acquire_valid and (self.sem[ins.sem_id] != ins.acquire_value
                                          or self.held[ins.sem_id]):
                    continue
                pend[q] = None
                if ins.acquire_valid:
                    self.held[ins.sem_id] = True
                if isinstance(ins, Matrix):
                    self.matrix(ins, idx)
                else:
                    self.dma(ins, idx)
                if ins.release_valid:
                    self.sem[ins.sem_id] = ins.release_value
                    self.held[ins.sem_id] = False
                moved = True
            if moved:
                continue
            if fault is not None:                   # the older instructions have settled
                raise fault
            blocked = [(pend[q][0], q, pend[q][1]) for q in ("mx", "dma") if pend[q] is not None]
            if not blocked:
                raise MachineError("NO_STOP", "the program ended without a stop fence", pc)
            idx, q, ins = min(blocked, key=lambda t: t[0])
            raise Deadlock(q, idx, ins.sem_id, ins.acquire_value, self.sem[ins.sem_id])
