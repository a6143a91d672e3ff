"""cocotb-side driver of the whole device (``fsa_top``) over its buses:
cocotbext-axi ``AxiLiteMaster`` on the control port, a
:class:`axi_faults.FaultyAxiRam` on every memory port (one shared sparse
memory, one shared list of injectable AXI error responses: :func:`poison`),
optional random pauses on all five AXI channels of every port, and the
program flow: push the instruction words (0x00, held while the queue is
full), start (0x04), wait for ``irq`` with a cycle limit, read the state, the
error register and the counters. For a program longer than the queue the
rest is pushed while the device runs; ``fsa.cycle.model.HARNESS_HOST`` is
the rate of these pushes, measured on the RTL.

API for device-level tests (all coroutines on :class:`Device`):

* ``reset()``: the reset pin.
* ``run(words, max_cycles)``: push, start, wait for irq, return
  :meth:`status` plus ``waited`` (cycles) and ``push_refused``.  Calling it
  again runs the next program on the same device without a reset (a start
  from DONE, or from IDLE after an abort: a fresh program, fsa/hw/regs.py).
  ``run(words, max_cycles, fetch_addr=a)`` instead writes the words to
  memory at ``a`` and starts in fetch mode (registers fetch_lo, fetch_hi,
  fetch_words, fetch_start: the device reads the program itself).
* ``abort(max_cycles)``: write the abort register (0x50) and wait until the
  device is IDLE; returns the cycles the abort took (DeviceTimeout if not).
* ``status()``: state, error name, error_index, ``wait`` (semaphore id, the
  value waited for and the value held, after DEADLOCK), q_free, counters.
* ``write_settings(values)``: the setting registers (fsa/hw/regs.py), each
  write checked (OKAY, read back).
* ``push(words)``, ``start()``, ``read(name)``, ``write(name, value)``,
  ``write_mem``/``read_mem``; :func:`poison` injects AXI error responses.
* The toplevel is ``fsa_top`` or, on Verilator, ``fsa_memtop``
  (fsa/fastmem.py), the same device with a memory inside the simulation
  that its ``fast`` input selects at run time: ``Device(..., memory="axi")``
  (default) sets it to 0 (the ``m_axi*`` ports pass through to the
  cocotbext-axi models), ``memory="fast"`` to 1: no cocotbext-axi memory
  models, no pauses, no faults; ``write_mem`` is staged until ``await
  load_mem()`` and memory is read with ``await dump_mem(addr, n)`` (both
  also work, immediately, on the AxiRam path).

Speed: the bus models log at WARNING (cocotbext-axi logs every transfer at
INFO otherwise), and every cycle limit is one ``Timer`` of that many clock
periods (:func:`cycle_limit`), not ``ClockCycles``, which resumes a Python
coroutine on every clock edge for the whole wait.
"""
from __future__ import annotations

import logging
import random
from pathlib import Path

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, FallingEdge, First, RisingEdge, Timer
from cocotbext.axi import AxiBus, AxiLiteBus, AxiLiteMaster

from fsa.harness.axi_faults import Fault, FaultList, FaultyAxiRam

from fsa import errors
from fsa.hw import regs as hwregs

# the register map, counters and states: the contract in fsa/hw/regs.py
REGS = hwregs.OFFSETS
COUNTERS = hwregs.COUNTERS
STATES = {int(s): s.name.lower() for s in hwregs.State}
CTRL_BASE = 0x8000
PERIOD_NS = 10          # the clock period Device drives


def cycle_limit(n: int) -> Timer:
    """A trigger `n` clock periods from now: a cycle limit as one simulator
    callback (ClockCycles would run Python on each of the `n` edges)."""
    return Timer(max(1, int(n)) * PERIOD_NS, unit="ns")


def quiet(*models) -> None:
    """Log only warnings from cocotbext-axi models (their interfaces log
    every transfer at INFO)."""
    for m in models:
        for part in ("write_if", "read_if"):
            log = getattr(getattr(m, part, None), "log", None)
            if log is not None:
                log.setLevel(logging.WARNING)


class DeviceTimeout(AssertionError):
    """The device did not finish within its cycle limit."""


def pause_gen(seed: int, p: float):
    """Random pause pattern: True (pause) with probability p, in bursts."""
    rng = random.Random(seed)
    while True:
        if rng.random() < p:
            for _ in range(rng.randint(1, 8)):
                yield True
        else:
            yield False


class Device:
    """The device under test and its bus models.

    Args:
        dut: the fsa_top handle.
        cfg: its FSAConfig.
        pauses: probability of a pause on each AXI channel each cycle (0: none).
        seed: seed of the pause patterns.
    """

    def __init__(self, dut, cfg, pauses: float = 0.0, seed: int = 1, memory: str = "axi"):
        self.dut, self.cfg = dut, cfg
        self.clk, self.rst = dut.clk, dut.rst
        self.pushed = self.refused = 0     # pushes answered / refused (see push())
        cocotb.start_soon(Clock(dut.clk, PERIOD_NS, unit="ns").start())
        self.ctrl = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil"), dut.clk, dut.rst)
        self.fast = None
        if memory not in ("axi", "fast"):
            raise ValueError(f"memory must be 'axi' or 'fast', got {memory!r}")
        wrapped = hasattr(dut, "bd_load")      # fsa_memtop (fsa/fastmem.py) around fsa_top
        if wrapped:
            for name in ("fast", "bd_load", "bd_dump"):
                getattr(dut, name).value = int(name == "fast" and memory == "fast")
        if memory == "fast":
            if not wrapped:
                raise ValueError("memory='fast' needs the fsa_memtop toplevel (fsa/fastmem.py)")
            if pauses > 0:
                raise ValueError("memory='fast' has no pause generators: use memory='axi'")
            self.fast = FastMemory(dut, cfg.axi_data_bits // 8)
            self.rams, self.faults, self.mem = [], None, None
            quiet(self.ctrl)
            return
        prefixes = ["m_axi"] if cfg.mem_ports == 1 else [f"m_axi{i}" for i in range(cfg.mem_ports)]
        self.rams = []
        self.faults = FaultList()       # AXI error responses to inject (see poison())
        mem = None
        for i, pre in enumerate(prefixes):
            ram = FaultyAxiRam(AxiBus.from_prefix(dut, pre), dut.clk, dut.rst, size=2 ** 39,
                               mem=mem, faults=self.faults)
            mem = ram.mem
            if pauses > 0:
                for j, ch in enumerate((ram.write_if.aw_channel, ram.write_if.w_channel,
                                        ram.write_if.b_channel, ram.read_if.ar_channel,
                                        ram.read_if.r_channel)):
                    ch.set_pause_generator(pause_gen(seed * 100 + i * 10 + j, pauses))
            self.rams.append(ram)
        self.mem = self.rams[0]
        quiet(self.ctrl, *self.rams)

    # ------------------------------------------------------------ basics
    async def reset(self, cycles: int = 4):
        self.dut.rst.value = 1
        await ClockCycles(self.clk, cycles)
        self.dut.rst.value = 0
        await ClockCycles(self.clk, 2)

    #: cycles a register read may wait for its R response (the RTL answers
    #: in the cycle after AR)
    read_limit = 1000

    async def read(self, name: str) -> int:
        """Read a register.

        Raises:
            DeviceTimeout: no response within ``read_limit`` cycles.
        """
        task = await self._bounded(self.ctrl.read_dword(CTRL_BASE + REGS[name]), self.read_limit)
        if task is None:
            raise DeviceTimeout(f"AXI4-Lite read of {name} (0x{REGS[name]:02x}) got no response "
                                f"within {self.read_limit} cycles")
        return task.result()

    async def _bounded(self, coro, n: int):
        """Run `coro` for at most `n` clock cycles: its finished task,
        or None (cancelled) if it did not finish."""
        task = cocotb.start_soon(coro)
        await First(task, cycle_limit(n))
        if task.done():
            return task
        task.cancel()
        return None

    #: cycles a register write may wait for its B response (a push is held
    #: while the queue is full and the device runs; run() sets it to its limit)
    write_limit = 100_000

    async def write(self, name: str, value: int) -> int:
        """Write a register; returns the B response (0 OKAY, 2 SLVERR).

        Raises:
            DeviceTimeout: no response within ``write_limit`` cycles.
        """
        task = await self._bounded(self.ctrl.write(CTRL_BASE + REGS[name],
                                                   int(value).to_bytes(4, "little")),
                                   self.write_limit)
        if task is None:
            st = await self.status()
            raise DeviceTimeout(f"AXI4-Lite write of {name} (0x{REGS[name]:02x}) got no response "
                                f"within {self.write_limit} cycles: {st}")
        return int(task.result().resp)

    async def write_settings(self, values: dict) -> dict:
        """Write setting registers (name -> value) and read each back.

        Returns:
            name -> the value read back.

        Raises:
            AssertionError: a write answered SLVERR or a read-back differing.
        """
        out = {}
        for name, value in values.items():
            resp = await self.write(name, int(value))
            out[name] = await self.read(name)
            if resp != 0 or out[name] != int(value):
                raise AssertionError(f"setting {name} = {int(value)}: response {resp}, read back "
                                     f"{out[name]} (state {await self.read('state')})")
        return out

    def write_mem(self, addr: int, data: bytes) -> None:
        """Write memory (fast memory: staged until :meth:`load_mem`)."""
        if self.fast is not None:
            self.fast.write(addr, data)
        else:
            self.mem.write(addr, data)

    def read_mem(self, addr: int, n: int) -> bytes:
        """Read memory (the AxiRam's; the fast memory needs :meth:`dump_mem`)."""
        if self.fast is not None:
            raise RuntimeError("memory='fast': read the memory with `await dump_mem()`")
        return bytes(self.mem.read(addr, n))

    async def load_mem(self) -> None:
        """Make the writes of :meth:`write_mem` visible to the device: the
        fast memory's backdoor load (one clock cycle); nothing for AxiRam."""
        if self.fast is not None:
            await self.fast.load(self.clk)

    async def dump_mem(self, addr: int, n: int) -> bytes:
        """Read `n` bytes of memory at `addr` (the fast memory: a backdoor
        dump, one clock cycle)."""
        if self.fast is not None:
            return await self.fast.dump(self.clk, addr, n)
        return self.read_mem(addr, n)

    # ------------------------------------------------------------ programs
    async def push(self, words) -> None:
        """Push instruction words. A push to a full queue is held while the
        device runs and refused (SLVERR, counted in ``self.refused``) when it
        is idle, done or in error (rtl/fsa_regs.py). ``self.pushed`` counts
        the pushes answered since the last run() started."""
        for w in words:
            if await self.write("push", int(w)) != 0:
                self.refused += 1
            self.pushed += 1

    async def start(self) -> None:
        await self.write("start", 1)

    async def wait_irq(self, max_cycles: int) -> int:
        """Wait for irq (done or error), at most `max_cycles`; returns the cycles waited.

        Raises:
            DeviceTimeout: naming the state, the queue and the counters.
        """
        if int(self.dut.irq.value):
            return 0
        t0 = cocotb.utils.get_sim_time("ns")
        await First(RisingEdge(self.dut.irq), cycle_limit(max_cycles))
        waited = int((cocotb.utils.get_sim_time("ns") - t0) // 10)
        if not int(self.dut.irq.value):
            st = await self.status()
            raise DeviceTimeout(f"device did not finish within {max_cycles} cycles (irq never rose): "
                                f"{st}")
        return waited

    async def counters(self) -> dict:
        return {c: await self.read(c) for c in COUNTERS}

    async def status(self) -> dict:
        state = await self.read("state")
        err = await self.read("error")
        return {"state": STATES.get(state, state), "error": errors.name(err & ((1 << errors.ERR_BITS) - 1)),
                "error_index": err >> hwregs.ERR_INDEX_LSB,
                "wait": hwregs.decode_wait(await self.read("wait")),
                "q_free": await self.read("q_free"), "counters": await self.counters()}

    async def abort(self, max_cycles: int = 100_000) -> int:
        """Abort (register 0x50): the device stops issuing, drains what is in
        flight, empties its queue and goes IDLE.  Waits until the state
        reads IDLE; returns the cycles from the abort write to then.

        Raises:
            DeviceTimeout: not IDLE within `max_cycles`.
        """
        t0 = cocotb.utils.get_sim_time("ns")
        await self.write("abort", 1)
        idle = int(hwregs.State.IDLE)
        while await self.read("state") != idle:
            if (cocotb.utils.get_sim_time("ns") - t0) // 10 > max_cycles:
                raise DeviceTimeout(f"abort: the device is not IDLE after {max_cycles} cycles: "
                                    f"{await self.status()}")
        return int((cocotb.utils.get_sim_time("ns") - t0) // 10)

    async def start_fetch(self, words, addr: int) -> None:
        """Write `words` to memory at `addr` and start them in fetch mode."""
        self.write_mem(addr, b"".join(int(w).to_bytes(4, "little") for w in words))
        await self.load_mem()
        await self.write("fetch_lo", addr & 0xFFFFFFFF)
        await self.write("fetch_hi", addr >> 32)
        await self.write("fetch_words", len(words))
        await self.write("fetch_start", 1)

    async def run(self, words, max_cycles: int, fetch_addr: "int | None" = None) -> dict:
        """Push (or, with `fetch_addr`, place in memory and fetch), start,
        wait for irq; return the status (state, error, counters)."""
        self.write_limit = max(1000, max_cycles)
        self.pushed = self.refused = 0
        if fetch_addr is not None:
            await self.start_fetch(words, fetch_addr)
        elif len(words) <= self.cfg.inst_queue_size:
            await self.push(words)
            await self.start()
        else:
            # the program is longer than the queue: fill the queue, start, and
            # push the rest while the device runs (each push is held while the
            # queue is full); max_cycles covers the pushes and the rest of the run
            q = self.cfg.inst_queue_size
            await self.push(words[:q])
            pusher = cocotb.start_soon(self.push(words[q:]))
            await self.start()
            t0 = cocotb.utils.get_sim_time("ns")
            if not int(self.dut.irq.value):
                await First(pusher, RisingEdge(self.dut.irq), cycle_limit(max_cycles))
            if int(self.dut.irq.value):
                # stopped (an error) with words still to push: the rest are
                # refused at once; let the pusher finish
                await First(pusher, cycle_limit(16 * len(words)))
            if not pusher.done():
                pusher.cancel()
                if not int(self.dut.irq.value):
                    st = await self.status()
                    raise DeviceTimeout(f"device did not finish within {max_cycles} cycles: the "
                                        f"host had pushed {self.pushed} of {len(words)} words "
                                        f"(the queue holds {q}): {st}")
            used = int((cocotb.utils.get_sim_time("ns") - t0) // 10)
            max_cycles = max(1, max_cycles - used)       # (0 waited if irq is already high)
        waited = await self.wait_irq(max_cycles)
        st = await self.status()
        st["waited"] = waited
        st["push_refused"] = self.refused
        st["fetched"] = await self.read("fetched")
        return st


class FastMemory:
    """The Python side of ``fsa_memtop``'s memory (rtl/fsa_memwrap.py): the
    backdoor load and dump through hex files in the simulator's working
    folder (the run folder).  Writes are staged per beat word; a word written
    only in part is completed from earlier backdoor writes (zero elsewhere),
    not from what the device stored, so load all memory before the programs
    run (as fsa/harness/tb_top.py does)."""

    def __init__(self, dut, lanes: int):
        from fsa.hw.fastmem import DUMP_FILE, LOAD_FILE
        self.dut, self.lanes = dut, lanes
        self.lb = lanes.bit_length() - 1
        self.load_file, self.dump_file = Path(LOAD_FILE).resolve(), Path(DUMP_FILE).resolve()
        self.shadow: dict[int, bytearray] = {}
        self.pending: set[int] = set()

    def write(self, addr: int, data: bytes) -> None:
        lanes = self.lanes
        for i in range(0, len(data)):
            a = addr + i
            word = self.shadow.get(a >> self.lb)
            if word is None:
                word = self.shadow[a >> self.lb] = bytearray(lanes)
            word[a & (lanes - 1)] = data[i]
            self.pending.add(a >> self.lb)

    async def _pulse(self, clk, name: str) -> None:
        sig = getattr(self.dut, name)
        sig.value = 1
        await RisingEdge(clk)
        await FallingEdge(clk)           # the rising edge has run the $readmemh / $writememh
        sig.value = 0

    async def load(self, clk) -> None:
        if not self.pending:
            return
        lines, prev = [], None
        for k in sorted(self.pending):
            if prev is None or k != prev + 1:
                lines.append(f"@{k:x}")
            lines.append(bytes(reversed(self.shadow[k])).hex())
            prev = k
        self.load_file.write_text("\n".join(lines) + "\n")
        self.pending.clear()
        await self._pulse(clk, "bd_load")

    async def dump(self, clk, addr: int, n: int) -> bytes:
        if n <= 0:
            return b""
        lo, hi = addr >> self.lb, (addr + n - 1) >> self.lb
        self.dut.bd_lo.value, self.dut.bd_hi.value = lo, hi
        if self.dump_file.exists():
            self.dump_file.unlink()
        await self._pulse(clk, "bd_dump")
        words: dict[int, bytes] = {}
        k = lo
        for tok in self.dump_file.read_text().split() if self.dump_file.exists() else []:
            if tok.startswith("@"):
                k = int(tok[1:], 16)
                continue
            words[k] = int(tok, 16).to_bytes(self.lanes, "little")
            k += 1
        blob = b"".join(words.get(j, bytes(self.lanes)) for j in range(lo, hi + 1))
        off = addr - (lo << self.lb)
        return blob[off:off + n]


def poison(dev: Device, reads: "tuple[int, int] | None" = None,
           writes: "tuple[int, int] | None" = None, resp: str = "SLVERR",
           beat: "str | int" = "range") -> None:
    """Make the memory answer `resp` (SLVERR or DECERR) for reads / writes
    in [lo, hi): on every beat in the range, or on the first / middle / last
    beat (or beat k) of every burst touching it (fsa/harness/axi_faults.py)."""
    if dev.fast is not None and (reads is not None or writes is not None):
        raise ValueError("memory='fast' injects no faults: use memory='axi'")
    if reads is not None:
        dev.faults.add(Fault("read", *reads, resp=resp, beat=beat))
    if writes is not None:
        dev.faults.add(Fault("write", *writes, resp=resp, beat=beat))
