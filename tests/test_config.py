"""Config presets: validation, lookup, JSON round trip."""
import json

import pytest

from fsa import config
from fsa.config import FSAConfig


def test_required_presets_exist():
    for n in (4, 8, 16, 32, 64, 128):
        for suf, (e, a) in {"Fp16": ("fp16", "fp32"), "Bf16": ("bf16", "fp32"),
                            "Fp32": ("fp32", "fp32")}.items():
            cfg = config.get(f"FSA{n}X{n}{suf}Config")
            assert (cfg.sa_rows, cfg.sa_cols, cfg.e_type, cfg.a_type) == (n, n, e, a)
    nonsq = config.get("FSA16X8Fp16Config")
    assert (nonsq.sa_rows, nonsq.sa_cols) == (16, 8)
    assert config.get("FSA4X4Fp16TwoPortConfig").mem_ports == 2


def test_reference_sizes():
    cfg = config.FSAConfig("Ref8x4", 8, 4)  # R=8, C=4, the reference's default sizes
    assert cfg.spad_rows == 2 * 4 + 4 * 8
    # the preset's scratchpad holds three UD K/V slots besides Q (memory_system)
    assert config.get("FSA8X4Fp16Config").spad_rows == 4 + 6 * 8
    assert cfg.acc_rows == 1 + 8
    assert cfg.spad_size == cfg.spad_rows * 8 * 2
    assert cfg.acc_size == cfg.acc_rows * 4 * 4


def test_unknown_name_suggests_close_ones():
    with pytest.raises(ValueError, match="did you mean FSA8X8Fp16Config"):
        config.get("FSA8x8Fp16Config")
    with pytest.raises(ValueError, match="unknown config"):
        config.get("NoSuchThing")


@pytest.mark.parametrize("field,value,msg", [
    ("sa_rows", 1, "sa_rows must be an integer in 2..256"),
    ("sa_cols", 300, "sa_cols must be an integer in 2..256"),
    ("e_type", "fp8", "e_type must be one of"),
    ("a_type", "fp16", r"\(e_type, a_type\) = \(bf16, fp16\) is not supported"),
    ("exp2_pieces", 6, "exp2_pieces must be a power of two"),
    ("exp2_pieces", 64, "exp2_pieces must be a power of two in 2..32"),
    ("div_bits_per_cycle", 3, "div_bits_per_cycle must be 1, 2 or 4"),
    ("acc_rows", 3, "acc_rows must be >= 1 \\+ sa_rows"),
    ("spad_banks", 3, "spad_banks must be a power of two"),
    ("axi_data_bits", 48, "axi_data_bits must be one of"),
    ("mem_ports", 0, "mem_ports must be in 1..8"),
    ("inst_queue_size", 100, "inst_queue_size must be a power of two"),
    ("mem_base", 3, "multiples of mem_align"),
])
def test_validation_says_what_to_change(field, value, msg):
    base = config.get("FSA4X4Bf16Config")
    with pytest.raises(ValueError, match=msg):
        base.replace(**{field: value})


def test_fp16_accumulate_limits_pieces():
    with pytest.raises(ValueError, match="2..16"):
        config.get("FSA4X4Fp16OnlyConfig").replace(exp2_pieces=32)


def test_json_round_trip(tmp_path):
    for name in config.names():
        cfg = config.get(name)
        p = tmp_path / f"{name}.json"
        cfg.to_json(p)
        d = json.loads(p.read_text())
        # exactly the reference's keys, in its order; ours in the sibling file
        assert list(d) == ["sa_rows", "sa_cols", "inst_queue_size", "e_type", "a_type", "mem_base",
                           "mem_size", "mem_align", "spad_base", "spad_size", "acc_base",
                           "acc_size"], list(d)
        assert (tmp_path / f"{name}.fsa.json").is_file()
        assert FSAConfig.from_json(p) == cfg
        assert config.get(str(p)) == cfg


def test_json_loads_with_the_reference_loader(tmp_path):
    """The reference's Python loader does FSAConfig(**json) on a frozen
    dataclass with exactly its 12 fields: our file must load there."""
    import dataclasses

    Ref = dataclasses.make_dataclass("Ref", [(k, object) for k in FSAConfig.REFERENCE_KEYS],
                                     frozen=True)
    for name in ("FSA4X4Fp16Config", "FSA16X16Bf16Config", "FSA8X8Fp16TwoPortConfig"):
        cfg = config.get(name)
        cfg.to_json(tmp_path / "FSAConfig.json")
        ref = Ref(**json.loads((tmp_path / "FSAConfig.json").read_text()))
        assert (ref.sa_rows, ref.sa_cols, ref.e_type, ref.spad_size) == (
            cfg.sa_rows, cfg.sa_cols, cfg.e_type, cfg.spad_rows * cfg.spad_row_bytes)


def test_json_sibling_must_agree(tmp_path):
    p = tmp_path / "FSAConfig.json"
    config.get("FSA4X4Fp16Config").to_json(p)
    d = json.loads(p.read_text())
    d["mem_size"] = 0x100000
    p.write_text(json.dumps(d))
    with pytest.raises(ValueError, match="mem_size = 1048576 disagree with FSAConfig.fsa.json"):
        FSAConfig.from_json(p)
    (tmp_path / "FSAConfig.fsa.json").unlink()          # the reference file alone still loads
    assert FSAConfig.from_json(p).mem_size == 0x100000


def test_old_json_with_fsa_key_still_loads(tmp_path):
    cfg = config.get("FSA8X8Bf16Config")
    p = tmp_path / "old.json"
    p.write_text(cfg.to_json())
    assert FSAConfig.from_json(p) == cfg


def test_reference_style_json_is_accepted(tmp_path):
    p = tmp_path / "ref.json"
    p.write_text(json.dumps({"sa_rows": 8, "sa_cols": 8, "inst_queue_size": 256, "e_type": "bf16",
                             "a_type": "fp32", "mem_base": 0x80000000, "mem_size": 0x10000000,
                             "mem_align": 8, "spad_base": 0, "spad_size": 768,
                             "acc_base": 0, "acc_size": 288}))
    cfg = FSAConfig.from_json(p)
    assert (cfg.sa_rows, cfg.e_type, cfg.a_type) == (8, "bf16", "fp32")
    # the SRAM sizes and the alignment carry over
    assert (cfg.spad_rows, cfg.acc_rows, cfg.axi_data_bits) == (48, 9, 64)


REF = {"sa_rows": 8, "sa_cols": 8, "inst_queue_size": 256, "e_type": "bf16", "a_type": "fp32",
       "mem_base": 0x80000000, "mem_size": 0x10000000, "mem_align": 8, "spad_base": 0,
       "spad_size": 768, "acc_base": 0, "acc_size": 288}


@pytest.mark.parametrize("doc, words", [
    ({**REF, "sa_rows": 4.5}, "sa_rows must be an integer, got float 4.5"),
    ({**REF, "sa_rows": None}, "sa_rows must be an integer, got NoneType"),
    ({**REF, "mem_base": "0x80000000"}, "mem_base must be an integer, got str"),
    ({**REF, "spad_size": 1001}, "spad_size = 1001 bytes is not a whole number of 16-byte rows"),
    ({**REF, "mem_align": 8.0}, "mem_align must be an integer"),
    ({"fsa": [1]}, '"fsa" must be an object, got list'),
    ({"fsa": {"name": "X", "sa_cols": 4}}, '"fsa" lacks sa_rows'),
    ({"fsa": {"name": "X", "sa_rows": 4, "sa_cols": 4, "spad_rows": 64.0}},
     "spad_rows must be an integer, got float 64.0"),
    ({"fsa": {"name": "X", "sa_rows": 4, "sa_cols": 4, "e_type": ["fp16"]}},
     "e_type must be a string, got list"),
    ([1, 2], "expected an object, got list"),
])
def test_bad_json_fields_are_refused_naming_the_field(tmp_path, doc, words):
    """Wrong types, fractions and sizes that are not whole rows: a ValueError
    that names the file and the field (no traceback from deep inside, no
    value silently truncated or replaced by a default)."""
    p = tmp_path / "cfg.json"
    p.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match=words) as e:
        config.get(str(p))
    assert str(p) in str(e.value)


def test_int_fields_refuse_floats_and_bools_in_python_too():
    base = config.get("FSA4X4Fp16Config")
    for field, value in (("sa_rows", 4.0), ("axi_data_bits", 64.0), ("mem_ports", True),
                         ("name", 3)):
        with pytest.raises(ValueError, match=f"{field} must be"):
            base.replace(**{field: value})


def test_bf16_intercepts_limit_pieces_to_8():
    cfg = config.get("FSA4X4Bf16OnlyConfig")
    assert cfg.replace(exp2_pieces=8).exp2_pieces == 8
    with pytest.raises(ValueError, match="does not work with bf16 intercepts"):
        cfg.replace(exp2_pieces=16)


def test_missing_json_file_is_reported_as_such(tmp_path):
    with pytest.raises(ValueError, match="config file .*nope.json: not found"):
        config.get(str(tmp_path / "nope.json"))
    (tmp_path / "d.json").mkdir()
    with pytest.raises(ValueError, match="is a folder"):
        config.get(str(tmp_path / "d.json"))


@pytest.mark.parametrize("where, key, words", [
    ("fsa", "exp2_piece", "unknown key 'exp2_piece'; did you mean 'exp2_pieces'?"),
    ("fsa", "sa_row", "did you mean 'sa_rows'?"),
    ("fsa", "colour", "unknown key 'colour' (known: name, sa_rows"),
    ("top", "mem_alignment", "unknown key 'mem_alignment'; did you mean 'mem_align'?"),
    ("sibling", "dma_burst_beat", "did you mean 'dma_burst_beats'?"),
    ("reference", "inst_queue_sz", "did you mean 'inst_queue_size'?"),
])
def test_unknown_keys_are_refused_with_the_nearest(tmp_path, where, key, words):
    """A misspelt key would silently give the default: every form refuses it."""
    cfg = config.get("FSA4X4Fp16Config")
    p = tmp_path / "FSAConfig.json"
    if where in ("fsa", "top"):
        d = json.loads(cfg.to_json())
        (d["fsa"] if where == "fsa" else d)[key] = 4
        p.write_text(json.dumps(d))
        assert FSAConfig.from_dict({k: v for k, v in d.items() if k != key} if where == "top"
                                   else json.loads(cfg.to_json())) == cfg
    elif where == "sibling":
        cfg.to_json(p)
        side = FSAConfig.sibling_path(p)
        d = json.loads(side.read_text())
        d["fsa"][key] = 4
        side.write_text(json.dumps(d))
    else:
        p.write_text(json.dumps(dict(REF, **{key: 4})))
    with pytest.raises(ValueError) as e:
        config.get(str(p))
    assert words in str(e.value) and str(p) in str(e.value)
    cfg.to_json(tmp_path / "ok.json")                  # the file as written still loads
    assert FSAConfig.from_json(tmp_path / "ok.json") == cfg
