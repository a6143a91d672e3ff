"""Instruction-level golden model: attention programs against the tile model,
DMA semantics, semaphores, fences and error reporting."""
import numpy as np
import pytest

from fsa import config as fconfig
from fsa import numerics as nx
from fsa.golden import tile
from fsa.golden.machine import Deadlock, Machine, MachineError, UnsupportedProgram
from fsa.isa import Dma, DmaFunc, Fence, Matrix, MxFunc, encode
from tb.common.programs import simple_attention_program

STOP = Fence(mx=True, dma=True, stop=True)


def run_attention(name, seq_q, seq_kv, causal=False, seed=0, as_words=False):
    cfg = fconfig.get(name)
    R = cfg.sa_rows
    rng = np.random.default_rng(seed)
    q, k, v = (nx.from_float64(rng.standard_normal((n, R)), cfg.e_type) for n in (seq_q, seq_kv, seq_kv))
    prog, (q_at, k_at, vt_at, ot_at) = simple_attention_program(cfg, seq_q, seq_kv, causal, cfg.mem_base)
    m = Machine(cfg)
    m.mem.write(q_at, q.tobytes())
    m.mem.write(k_at, k.tobytes())
    m.mem.write(vt_at, np.ascontiguousarray(v.T).tobytes())
    counters = m.run(encode(prog) if as_words else prog)
    ot = np.frombuffer(m.mem.read(ot_at, R * seq_q * cfg.a_fmt.bytes), q.dtype if cfg.a_fmt.width == 16
                       else np.uint32).reshape(R, seq_q)
    return cfg, ot.T, tile.attention(cfg, q, k, v, causal), counters


@pytest.mark.parametrize("name,sq,skv,causal", [
    ("FSA4X4Fp16Config", 8, 12, False), ("FSA4X4Fp16Config", 8, 8, True),
    ("FSA8X8Bf16Config", 16, 24, False), ("FSA8X4Fp16Config", 8, 16, False),
    ("FSA4X4Fp32Config", 4, 8, False), ("FSA4X4Fp16OnlyConfig", 8, 8, True)])
def test_attention_program_equals_tile_model(name, sq, skv, causal):
    cfg, got, want, counters = run_attention(name, sq, skv, causal)
    assert got.dtype == want.dtype and np.array_equal(got, want)
    assert counters["matrix"] > 0 and counters["dma"] > 0


def test_program_given_as_words():
    _, got, want, _ = run_attention("FSA4X4Fp16Config", 8, 8, as_words=True)
    assert np.array_equal(got, want)


def test_16x16_seq256():
    """256 key-block steps (the model's speed is measured by bench/golden_speed.py)."""
    _, got, want, _ = run_attention("FSA16X16Fp16Config", 256, 256)
    assert np.array_equal(got, want)


def test_dma_load_partial_row_and_store():
    cfg = fconfig.get("FSA4X4Fp16Config")
    m = Machine(cfg)
    m.mem.write(cfg.mem_base, bytes(range(64)))
    m.run([Dma(DmaFunc.LOAD, repeat=2, sram_addr=3, sram_stride=2, mem_addr=cfg.mem_base + 8,
               mem_stride=16, size=8), STOP])
    assert m.spad[3].tobytes() == bytes(range(8, 16)) and m.spad[5].tobytes() == bytes(range(24, 32))
    m.acc[2] = np.arange(4, dtype=np.uint32)
    m.run([Dma(DmaFunc.STORE, repeat=1, sram_addr=2, is_accum=True, mem_addr=cfg.mem_base + 128,
               size=16), STOP])
    assert m.mem.read(cfg.mem_base + 128, 16) == np.arange(4, dtype=np.uint32).tobytes()


@pytest.mark.parametrize("ins,code", [
    (Dma(DmaFunc.LOAD, repeat=1, sram_addr=0, mem_addr=0x10, size=8), "MEM_RANGE"),
    (Dma(DmaFunc.LOAD, repeat=2, sram_addr=47, mem_addr=0x80000000, size=8), "DMA_SRAM_RANGE"),
    (Dma(DmaFunc.LOAD, repeat=1, sram_addr=0, mem_addr=0x80000004, size=8), "DMA_ALIGN"),
    (Dma(DmaFunc.LOAD, repeat=1, sram_addr=0, mem_addr=0x80000000, size=16), "DMA_SIZE"),
    (Matrix(MxFunc.ATTENTION_VALUE, spad_addr=46, spad_stride=1, rev_input=True, delay_output=True,
            acc_addr=1, acc_stride=1), "SRAM_RANGE"),
])
def test_errors_have_codes(ins, code):
    m = Machine(fconfig.get("FSA4X4Fp16Config"))
    with pytest.raises(MachineError) as e:
        m.run([ins, STOP])
    assert e.value.code == code and e.value.index == 0


def test_semaphores_order_queues_and_deadlock_is_reported():
    cfg = fconfig.get("FSA4X4Fp16Config")
    m = Machine(cfg)
    # the matrix instruction waits for the DMA's release even though it comes first
    prog = [Matrix(MxFunc.LOAD_STATIONARY, sem_id=3, acquire_valid=True, acquire_value=1),
            Dma(DmaFunc.LOAD, repeat=4, sram_addr=0, sram_stride=1, mem_addr=cfg.mem_base, size=8,
                sem_id=3, release_valid=True, release_value=1), STOP]
    m.mem.write(cfg.mem_base, bytes([1] * 32))
    m.run(prog)
    assert m.sem[3] == 1 and (m.pe == 0x0101).all()
    with pytest.raises(Deadlock, match="semaphore 5 == 2"):
        Machine(cfg).run([Matrix(MxFunc.LOAD_STATIONARY, sem_id=5, acquire_valid=True, acquire_value=2)])


def test_unmodelled_flags_are_rejected():
    with pytest.raises(UnsupportedProgram, match="ATTENTION_SCORE"):
        Machine(fconfig.get("FSA4X4Fp16Config")).run([Matrix(MxFunc.ATTENTION_SCORE), STOP])


def test_stop_fence_ends_the_program():
    cfg = fconfig.get("FSA4X4Fp16Config")
    m = Machine(cfg)
    counters = m.run([Fence(stop=True), Dma(DmaFunc.LOAD, mem_addr=0x10, size=8)])
    assert counters == {"matrix": 0, "dma": 0, "fence": 1}


# ---------------------------------------------------------------- issue 13: restart, deadlock, no stop
def _kernel_case(cfg, seq_q=4, seq_kv=8, seed=3):
    from fsa import kernels
    prog = kernels.attention(cfg, seq_q=seq_q, seq_kv=seq_kv, causal=False)
    rng = np.random.default_rng(seed)
    q, k, v = (rng.standard_normal((n, cfg.sa_rows)) for n in (seq_q, seq_kv, seq_kv))
    return prog, {"Q": q, "K": k, "V": v}


def test_kernel_runs_back_to_back_on_one_machine():
    """The kernel ends with semaphores at non-zero values; each run is a fresh
    program (semaphores 0), so the same kernel runs N times bit-exact (before
    issue 13 the second run deadlocked on semaphore 4)."""
    cfg = fconfig.get("FSA4X4Fp16Config")
    prog, inputs = _kernel_case(cfg)
    m = Machine(cfg)
    prog.write_inputs(m.mem, inputs)
    first = None
    for _ in range(3):
        m.run(list(prog.instructions))
        assert any(m.sem), "the kernel should leave semaphores set (else this test shows nothing)"
        out = prog.read_outputs(m.mem)
        if first is None:
            first = out
        for name in first:
            assert out[name].tobytes() == first[name].tobytes()


def test_deadlock_reports_oldest_blocked_instruction_and_semaphore():
    cfg = fconfig.get("FSA4X4Fp16Config")
    prog = [Dma(DmaFunc.LOAD, repeat=1, sram_addr=0, mem_addr=cfg.mem_base, size=8),
            Matrix(MxFunc.LOAD_STATIONARY, sem_id=5, acquire_valid=True, acquire_value=2),
            Dma(DmaFunc.LOAD, repeat=1, sram_addr=0, mem_addr=cfg.mem_base, size=8, sem_id=7,
                acquire_valid=True, acquire_value=1),
            STOP]
    with pytest.raises(Deadlock) as e:
        Machine(cfg).run(prog)
    d = e.value
    assert (d.code, d.index, d.engine, d.sem_id, d.want, d.have) == ("DEADLOCK", 1, "mx", 5, 2, 0)


def test_one_pending_instruction_per_engine_as_in_the_device():
    """A later DMA cannot overtake a second matrix instruction stuck behind a
    blocked one: the decoder waits (device behaviour), so this deadlocks."""
    cfg = fconfig.get("FSA4X4Fp16Config")
    prog = [Matrix(MxFunc.LOAD_STATIONARY, sem_id=1, acquire_valid=True, acquire_value=1),
            Matrix(MxFunc.LOAD_STATIONARY),
            Dma(DmaFunc.LOAD, repeat=1, sram_addr=0, mem_addr=cfg.mem_base, size=8, sem_id=1,
                release_valid=True, release_value=1), STOP]
    with pytest.raises(Deadlock) as e:
        Machine(cfg).run(prog)
    assert e.value.index == 0 and e.value.sem_id == 1


@pytest.mark.parametrize("prog,index", [([], 0), ([Fence(dma=True)], 1),
                                        ([Dma(DmaFunc.LOAD, repeat=1, sram_addr=0,
                                              mem_addr=0x80000000, size=8)], 1)])
def test_program_without_stop_is_no_stop(prog, index):
    with pytest.raises(MachineError) as e:
        Machine(fconfig.get("FSA4X4Fp16Config")).run(prog)
    assert e.value.code == "NO_STOP" and e.value.index == index
    assert not isinstance(e.value, Deadlock)


def test_abort_resets_the_comparator_maxima():
    cfg = fconfig.get("FSA4X4Fp16Config")
    m = Machine(cfg)
    m.state.new_max[:] = 0x3C00
    m.sem[4] = 2
    m.abort()
    neg_inf = cfg.a_fmt.sign_mask | cfg.a_fmt.pos_inf
    assert (m.state.new_max == neg_inf).all() and (m.state.old_max == neg_inf).all()
    assert not any(m.sem)


def test_acquire_without_release_keeps_the_semaphore_held():
    """As in rtl/fsa_sem.py: the value matches but the semaphore is held."""
    cfg = fconfig.get("FSA4X4Fp16Config")
    ld = dict(repeat=1, sram_addr=0, mem_addr=cfg.mem_base, size=8, sem_id=2, acquire_valid=True,
              acquire_value=0)
    with pytest.raises(Deadlock) as e:
        Machine(cfg).run([Dma(DmaFunc.LOAD, **ld), Dma(DmaFunc.LOAD, **ld), STOP])
    assert (e.value.index, e.value.engine, e.value.sem_id, e.value.want, e.value.have) == \
        (1, "dma", 2, 0, 0)


# ---------------------------------------------------------------- word streams
# A word stream runs as the device decodes it: one instruction at a time, when
# the decoder reaches it (fsa.isa.decode_device).
CFG4 = fconfig.get("FSA4X4Fp16Config")
BAD_TYPE = 0xE000_0000                        # type 7
BAD_FUNC = encode([Matrix(MxFunc.LOAD_STATIONARY)])
BAD_FUNC[0] |= 31 << 11                       # matrix function code 31


def test_word_stream_reports_an_illegal_word_with_the_device_code_and_index():
    pre = [Dma(DmaFunc.LOAD, repeat=1, mem_addr=CFG4.mem_base, size=8)] * 2
    for bad, code in (([BAD_TYPE], "ILLEGAL_TYPE"), (BAD_FUNC, "ILLEGAL_FUNC")):
        with pytest.raises(MachineError) as e:
            Machine(CFG4).run(encode(pre) + bad + encode([STOP]))
        assert (e.value.code, e.value.index) == (code, 2)
        # the strict tool decoder rejects the same stream up front
        with pytest.raises(ValueError):
            from fsa.isa import decode
            decode(encode(pre) + bad + encode([STOP]))


def test_a_deadlock_before_an_illegal_word_is_the_deadlock():
    # both engines' pending registers block, the illegal word is never decoded
    blocked = [Matrix(MxFunc.LOAD_STATIONARY, sem_id=1, acquire_valid=True, acquire_value=1),
               Dma(DmaFunc.LOAD, repeat=1, mem_addr=CFG4.mem_base, size=8, sem_id=2,
                   acquire_valid=True, acquire_value=3),
               Matrix(MxFunc.LOAD_STATIONARY)]
    with pytest.raises(Deadlock) as e:
        Machine(CFG4).run(encode(blocked) + [BAD_TYPE] + encode([STOP]))
    assert (e.value.code, e.value.index, e.value.sem_id, e.value.want) == ("DEADLOCK", 0, 1, 1)
    # the same instructions as a list: the same report
    with pytest.raises(Deadlock) as e2:
        Machine(CFG4).run(blocked + [STOP])
    assert e2.value.index == 0


def test_word_stream_follows_the_device_on_reserved_bits_zero_dma_and_truncation():
    ld = Dma(DmaFunc.LOAD, repeat=1, sram_addr=0, mem_addr=CFG4.mem_base, size=8)
    from fsa.isa import RESERVED_MASKS, InstrType
    mask = RESERVED_MASKS[InstrType.DMA]
    w = encode([ld, STOP])
    k = next(i for i, m in enumerate(mask) if m)
    w[k] |= mask[k] & -mask[k]                 # set the lowest reserved bit of that word
    m = Machine(CFG4)
    m.mem.write(CFG4.mem_base, bytes(range(8)))
    assert m.run(w) == {"matrix": 0, "dma": 1, "fence": 1}
    assert m.spad[0].tobytes()[:8] == bytes(range(8))
    # repeat 0 and size 0: the device's no-op DMA (counted, nothing moved, no
    # check made: here a misaligned address and rows outside the scratchpad)
    bad = Dma(DmaFunc.LOAD, repeat=4, sram_addr=CFG4.spad_rows - 1, sram_stride=1,
              mem_addr=CFG4.mem_base + 2, size=8)
    with pytest.raises(MachineError):
        Machine(CFG4).run(encode([bad, STOP]))
    for field in ("repeat", "size"):
        z = encode([bad, STOP])
        from fsa.hw.isa import field as hw_field
        for w, hi, lo in hw_field("DMA", field).parts:     # clear the field
            z[w] &= ~(((1 << (hi - lo + 1)) - 1) << lo)
        assert hw_field("DMA", field).extract(z) == 0
        m = Machine(CFG4)
        m.mem.write(CFG4.mem_base, bytes(range(1, 9)))
        assert m.run(z) == {"matrix": 0, "dma": 1, "fence": 1}
        assert not m.spad.any()
    # a stream that ends inside an instruction: the device waits, then NO_STOP
    with pytest.raises(MachineError) as e:
        Machine(CFG4).run(encode([ld])[:3])
    assert (e.value.code, e.value.index) == ("NO_STOP", 0)


# ---------------------------------------------------------------- accumulator walks
@pytest.mark.parametrize("name", ["FSA4X4Fp16Config", "FSA8X4Fp16Config", "FSA4X4Fp16UdConfig",
                                  "FSA16X16Fp32UdConfig"])
def test_accumulator_walks_read_each_row_one_cycle_before_writing_it(name):
    """The rule Machine.acc_walk relies on, from the plans the hardware is
    generated from: index i of a walk is read one cycle before it is
    written, one index per cycle."""
    from fsa.cycle import model as cm

    for plan in cm._plans(fconfig.get(name)):
        writes = [c for c, cmd in plan.acc if cmd in ("ACC_SA", "ACC")]
        reads = sorted((r.index, r.cycle) for r in plan.acc_reads)
        if not writes:
            continue
        assert [i for i, _ in reads] == list(range(len(writes))), plan.func
        assert [c + 1 for _, c in reads] == writes, plan.func
        assert writes == list(range(writes[0], writes[0] + len(writes))), plan.func


def test_value_walk_with_stride_zero_sees_the_writes_two_indices_back():
    """ATTENTION_VALUE with acc_stride 0 writes one row R times: index i
    reads the row as index i - 2 wrote it (index 0 and 1: as it was), and
    the row keeps index R-1's value (what the RTL does; the RTL regression
    tb/top/test_random_programs.py compares raw bits)."""
    cfg = fconfig.get("FSA4X4Fp16Config")
    R, C = cfg.sa_rows, cfg.sa_cols
    a = cfg.a_type
    rng = np.random.default_rng(3)
    m = Machine(cfg)
    m.spad[:] = nx.from_float64(rng.standard_normal(m.spad.shape), cfg.e_type)
    m.acc[:] = nx.from_float64(rng.standard_normal(m.acc.shape) + 2, a)
    m.pe[:] = nx.from_float64(rng.standard_normal(m.pe.shape), cfg.e_type)
    m.state.scale = nx.from_float64(rng.uniform(0.5, 1.5, C), a)
    before, scale = m.acc.copy(), m.state.scale.copy()
    ins = Matrix(func=MxFunc.ATTENTION_VALUE, spad_addr=4, spad_stride=1, rev_input=True,
                 delay_output=True, acc_addr=2, acc_stride=0)
    add = tile.value_products(cfg, m.pe[::-1, :].T.copy(), m.spad[4:4 + R].T.copy())
    m.matrix(ins)
    v = []
    for i in range(R):
        old = v[i - 2] if i >= 2 else before[2]
        v.append(nx.fma(scale, old, add[i], mul=a, acc=a))
    assert np.array_equal(m.acc[2], v[-1])
    assert not np.array_equal(m.acc[2], nx.fma(scale, before[2], add[R - 1], mul=a, acc=a))
    assert np.array_equal(np.delete(m.acc, 2, axis=0), np.delete(before, 2, axis=0))


def test_reference_function_while_ud_scores_wait_is_not_modelled():
    cfg = fconfig.get("FSA4X4Fp16UdConfig")
    ud = dict(rev_input=True, delay_output=True)
    m = Machine(cfg)
    m.matrix(Matrix(func=MxFunc.KSTEP, spad_addr=0, spad_stride=1, **ud))
    score = Matrix(func=MxFunc.ATTENTION_SCORE, spad_addr=0, spad_stride=1, rev_input=True,
                   rev_output=True, delay_output=True, acc_addr=0)
    with pytest.raises(UnsupportedProgram, match="bottom row"):
        m.matrix(score)
    m.matrix(Matrix(func=MxFunc.ATTENTION_LSE_NORM_SCALE, acc_addr=0))     # (the UD kernel's order)
    m.matrix(Matrix(func=MxFunc.PVSTEP, spad_addr=4, spad_stride=1, acc_addr=0, acc_stride=1,
                    **ud))
    m.matrix(score)                                                         # scores consumed


def test_pending_instructions_run_oldest_first():
    """No semaphore between a matrix instruction and a later DMA load into the
    rows it reads: the device starts the older (matrix) one first, and so does
    the golden model (it used to run a pending DMA before a pending matrix
    instruction, so the matrix saw the later load's rows)."""
    import numpy as np

    from fsa import config
    from fsa.golden.machine import Machine
    from fsa.isa import Dma, DmaFunc, Fence, Matrix, MxFunc

    cfg = config.get("FSA4X4Fp16Config")
    m = Machine(cfg)
    a = np.arange(16, dtype=np.uint16).reshape(4, 4) + 0x3C00       # fp16 1.0, 1.0009765625, ...
    b = a + 0x100
    base = cfg.mem_base
    m.mem.write(base, a.tobytes())
    m.mem.write(base + 64, b.tobytes())
    load = dict(func=DmaFunc.LOAD, repeat=4, sram_addr=0, sram_stride=1, mem_stride=8, size=8)
    m.run([Dma(mem_addr=base, **load), Fence(dma=True),
           Matrix(MxFunc.LOAD_STATIONARY, spad_addr=0, spad_stride=1),
           Dma(mem_addr=base + 64, **load), Fence(stop=True)])
    assert set(np.unique(m.pe)) <= set(np.unique(a)) and not set(np.unique(m.pe)) & set(np.unique(b))
