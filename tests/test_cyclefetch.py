"""Program fetch without a simulator: the cycle model's fetch unit
(fsa/cycle/fetch.py: bursts, 4 KiB splits, the turns with DMA LOADs), the
golden model's Machine.fetch (the device's errors), the harness's program
address and the register contract (tb/fetch/test_fetch.py checks the RTL against
all of it)."""
from __future__ import annotations

import pytest

from fsa import config, isa, kernels
from fsa.cycle import model as cm
from fsa.cycle.fetch import FETCH_FIRST, Fetch, FetchTiming
from fsa.hw.fetch import burst_beats
from fsa.golden.machine import Machine, MachineError
from fsa.hw import errors, regs
from fsa.simdev import PROGRAM_ALIGN, program_address

CFG = config.get("FSA4X4Fp16Config")


def test_burst_length_and_fifo_fit_the_queue():
    assert burst_beats(CFG) == 16                               # 64-bit: 32 words a burst
    assert burst_beats(config.get("FSA4X4Fp32Config")) == 8     # 128-bit: 32 words
    big = config.get("FSA32X32Fp16Config").__class__(
        "X", sa_rows=32, sa_cols=32, e_type="fp16", a_type="fp32", axi_data_bits=512)
    assert burst_beats(big) == 2                                # 16 words a beat: two beats
    assert burst_beats(big) * 16 <= big.inst_queue_size // 2
    small = CFG.replace(name="Q16", inst_queue_size=16)
    assert burst_beats(small) == 4                              # half the queue's 16 words
    tiny = big.replace(name="Q16", inst_queue_size=16)
    assert burst_beats(tiny) * 16 <= 16                         # one beat: the whole queue


def test_bursts_split_at_4k_and_words_follow_their_beats():
    top = CFG.mem_base + 5 * 4096
    fe = Fetch(FetchTiming(top - 3 * 8), CFG, 100)             # 3 beats before a 4 KiB line
    assert fe.try_issue(0, load_blocked=False)
    assert fe.bursts == [(0, 3, FETCH_FIRST + 2)]
    assert not fe.try_issue(1, load_blocked=False)              # one burst at a time
    assert fe.locked(1) and fe.locked(FETCH_FIRST + 2) and not fe.locked(FETCH_FIRST + 3)
    # word w enters the queue one cycle after its beat, at most one a cycle
    assert fe.push_t == [FETCH_FIRST + 1 + k for k in range(6)]
    # the next burst (16 beats) waits for room in the beat FIFO: all 3 beats out
    free = fe.push_t[-1] + 1
    assert not fe.try_issue(free - 1, load_blocked=False)
    assert not fe.try_issue(free, load_blocked=True)            # a LOAD runs
    assert fe.try_issue(free, load_blocked=False)
    assert fe.bursts[1] == (free, 16, free + FETCH_FIRST + 15)  # the next 4 KiB line
    assert not fe.available(0, FETCH_FIRST + 1) and fe.available(0, FETCH_FIRST + 2)


def test_fetch_waits_for_room_in_the_queue():
    fe = Fetch(FetchTiming(CFG.mem_base), CFG, 4000)
    c, issued = 0, 0
    while c < 2000:                                             # nothing popped
        issued += fe.try_issue(c, load_blocked=False)
        c += 1
    # the words in the queue and in the beat FIFO never exceed the queue's size
    assert issued == CFG.inst_queue_size // (2 * burst_beats(CFG))
    assert sum(b for _, b, _ in fe.bursts) * 2 == CFG.inst_queue_size


def test_model_fetch_between_full_queue_and_host_pushes_and_loads_follow_bursts():
    prog = kernels.attention(CFG, 64, 64)
    words = prog.words()
    fetch = FetchTiming(program_address(CFG, len(words)))
    m = cm.simulate(CFG, prog.instructions, fetch=fetch)
    full = cm.simulate(CFG, prog.instructions)
    pushed = cm.simulate(CFG, prog.instructions, host=cm.HARNESS_HOST)
    assert full.cycles < m.cycles < pushed.cycles
    assert m.counters["mx"] == full.counters["mx"] and m.counters["dma"] == full.counters["dma"]
    assert sum(b for _, b, _ in m.fetch_bursts) == -(-len(words) // 2)
    # no burst starts while a LOAD runs; with one port a LOAD may be accepted
    # while a burst's beats come (its beats follow them: it is done at the
    # earliest base + beats after the burst's last beat), with several not
    def loads(cfg, m, prog):
        return [(span, ins) for span, ins in zip(m.dma_spans, [
            i for i in prog.instructions if isinstance(i, isa.Dma)])
            if ins.func == isa.DmaFunc.LOAD]
    during = 0
    for start, _, last in m.fetch_bursts:
        for (a, d), ins in loads(CFG, m, prog):
            assert not (a <= start <= d), (start, a, d)
            if start + 1 <= a <= last:
                during += 1
                beats = ins.repeat * (ins.size // (CFG.axi_data_bits // 8))
                assert d >= last + 1 + beats + 1, (start, last, a, d)
    assert during > 0, "no LOAD was accepted during a fetch burst"
    two = config.get("FSA4X4Fp16TwoPortConfig")
    prog2 = kernels.attention(two, 64, 64)
    m2 = cm.simulate(two, prog2.instructions,
                             fetch=FetchTiming(program_address(two, len(prog2.words()))))
    for start, _, last in m2.fetch_bursts:
        for (a, d), _ in loads(two, m2, prog2):
            assert not (start + 1 <= a <= last), (start, last, a)
            assert not (a <= start <= d), (start, a, d)


def test_machine_fetch_reports_the_device_errors():
    words = isa.encode([isa.Fence(mx=True)] * 3 + [isa.Fence(stop=True)])
    addr = program_address(CFG, len(words))
    m = Machine(CFG)
    m.mem.write(addr, b"".join(w.to_bytes(4, "little") for w in words))
    assert m.fetch(addr, len(words)) == Machine(CFG).run(words)
    with pytest.raises(MachineError) as e:
        m.fetch(addr, 3)                                        # past its words: no stop
    assert (e.value.code, e.value.index) == ("NO_STOP", 3)
    for bad in (addr + 4, CFG.mem_base - 4096, CFG.mem_base + CFG.mem_size - 8):
        with pytest.raises(MachineError) as e:
            m.fetch(bad, len(words))
        assert (e.value.code, e.value.index) == ("FETCH_RANGE", 0)
        assert e.value.code in errors.CODES


def test_program_address_is_the_top_of_the_window_and_checked():
    top = CFG.mem_base + CFG.mem_size
    assert program_address(CFG, 1) == top - PROGRAM_ALIGN
    assert program_address(CFG, 4577) == top - 5 * PROGRAM_ALIGN
    assert program_address(CFG, 4577) % (CFG.axi_data_bits // 8) == 0
    with pytest.raises(ValueError, match="overlaps"):
        program_address(CFG, 10, [(top - 100, 16)])
    with pytest.raises(ValueError, match="do not fit"):
        program_address(CFG, CFG.mem_size // 4 + 1)


def test_register_contract_has_the_fetch_registers():
    by_name = {r.name: r for r in regs.REGS}
    assert [(by_name[n].offset, by_name[n].access) for n in
            ("fetch_lo", "fetch_hi", "fetch_words", "fetch_start", "fetched")] == \
        [(0x64, "RW"), (0x68, "RW"), (0x6C, "RW"), (0x70, "W"), (0x74, "R")]
    assert {0x64, 0x68, 0x6C, 0x74} <= set(regs.READ_OFFSETS) and 0x70 not in regs.READ_OFFSETS
    assert errors.CODES["FETCH_RD_ERR"] == 12 and errors.CODES["FETCH_RANGE"] == 13
    assert max(errors.ERRORS) < 1 << errors.ERR_BITS
