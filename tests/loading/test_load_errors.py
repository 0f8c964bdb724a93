"""Bad checkpoints: each raises one error naming file and tensor, and changes no parameter.

Corrupt files are built byte by byte from a good one (truncation, rewritten headers), so the
tests do not depend on what the safetensors writer would allow.
"""

from __future__ import annotations

import json
import pickle
import struct
import zipfile

import pytest
import torch
from torch import nn

from qlinear.layers import MergedReplicatedLinear
from qlinear.loading import (
    CheckpointError,
    dtype_accepted,
    load_checkpoint,
    read_header,
    read_quantization_config,
    save_checkpoint,
)

PARENT = "model.layers.0.self_attn"
SHARDS = ["q_a_proj", "kv_a_proj_with_mqa"]
FUSED = {"fused_qkv_a_proj": SHARDS}
K = 40
SIZES = [24, 16]


def make_layer(**kwargs) -> MergedReplicatedLinear:
    layer = MergedReplicatedLinear(K, SIZES, bias=True, params_dtype=torch.float32, prefix=f"{PARENT}.fused_qkv_a_proj", **kwargs)
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for p in layer.parameters():
            p.copy_(torch.randn(p.shape, generator=gen))
    return layer


def good_tensors(seed: int = 1) -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    out = {}
    for shard, n in zip(SHARDS, SIZES):
        out[f"{PARENT}.{shard}.weight"] = torch.randn(n, K, generator=gen)
        out[f"{PARENT}.{shard}.bias"] = torch.randn(n, generator=gen)
    return out


def snapshot(module: nn.Module) -> dict[str, torch.Tensor]:
    return {n: p.detach().clone() for n, p in module.named_parameters()}


def assert_unchanged(module: nn.Module, before: dict[str, torch.Tensor]) -> None:
    after = snapshot(module)
    assert sorted(after) == sorted(before)
    for name, t in before.items():
        assert torch.equal(t.view(torch.uint8), after[name].view(torch.uint8)), f"{name} changed"
    assert all(not getattr(p, "loaded_shards", set()) for p in module.parameters())
    assert not getattr(module, "weights_finished", False)


def refused(path, match: str, **kwargs) -> CheckpointError | ValueError:
    """Load into a fresh layer, expect a ValueError matching ``match``, and check nothing changed."""
    layer = make_layer()
    before = snapshot(layer)
    with pytest.raises(ValueError, match=match) as info:
        load_checkpoint(layer, path, fused_modules=FUSED, **kwargs)
    assert_unchanged(layer, before)
    return info.value


# -- raw header surgery ---------------------------------------------------------------------------


def split_file(path):
    data = path.read_bytes()
    (n,) = struct.unpack("<Q", data[:8])
    return json.loads(data[8 : 8 + n]), data[8 + n :]


def write_raw(path, header: dict | bytes, body: bytes) -> None:
    raw = header if isinstance(header, bytes) else json.dumps(header).encode()
    raw += b" " * (-len(raw) % 8)
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + body)


@pytest.fixture
def good_file(tmp_path):
    path = tmp_path / "model.safetensors"
    save_checkpoint(good_tensors(), path)
    return path


def test_mismatches_listed_together_before_any_change(tmp_path):
    tensors = good_tensors()
    tensors.pop(f"{PARENT}.kv_a_proj_with_mqa.bias")  # missing
    tensors[f"{PARENT}.q_a_proj.bias"] = torch.randn(SIZES[0], 2)  # wrong rank
    tensors[f"{PARENT}.kv_a_proj_with_mqa.weight"] = torch.randint(0, 5, (SIZES[1], K), dtype=torch.int32)  # wrong dtype
    tensors[f"{PARENT}.q_a_proj.weight"] = torch.randn(SIZES[0], K + 1)  # wrong shape
    tensors[f"{PARENT}.o_proj.weight"] = torch.randn(3, 3)  # unexpected
    save_checkpoint(tensors, tmp_path / "ckpt", max_shard_bytes=2000)
    err = refused(tmp_path / "ckpt", "5 problems, refused, no parameter was changed")
    assert isinstance(err, CheckpointError) and len(err.problems) == 5
    text = str(err)
    assert f"tensor '{PARENT}.q_a_proj.bias'" in text and "expected shape (24,), got (24, 2)" in text
    assert "expected dtype torch.float32 (or a float dtype that widens to it exactly), got torch.int32" in text
    assert "shard 0: expected shape (24, 40), got (24, 41)" in text
    assert f"tensor '{PARENT}.o_proj.weight': unexpected" in text
    assert f"bias[kv_a_proj_with_mqa]: missing: no tensor '{PARENT}.kv_a_proj_with_mqa.bias'" in text
    # each tensor problem names the file it is in
    assert all(p.startswith("model-0000") or "missing" in p for p in err.problems)


def test_fp8_dtype_must_match_exactly(tmp_path):
    fp8 = pytest.importorskip("qlinear.testing.fp8")
    from qlinear.quantization import get_quantization_config

    qc = get_quantization_config(fp8.fp8_block_config())
    layer = MergedReplicatedLinear(256, [128, 72], params_dtype=torch.bfloat16, quant_config=qc, prefix=f"{PARENT}.fused_qkv_a_proj")
    tensors = {}
    for shard, n in zip(SHARDS, [128, 72]):
        part = fp8.quantize_fp8_block(torch.randn(n, 256))
        tensors[f"{PARENT}.{shard}.weight"] = part["weight"]
        tensors[f"{PARENT}.{shard}.weight_scale_inv"] = part["weight_scale_inv"]
    tensors[f"{PARENT}.kv_a_proj_with_mqa.weight"] = tensors[f"{PARENT}.kv_a_proj_with_mqa.weight"].to(torch.bfloat16)
    tensors[f"{PARENT}.q_a_proj.weight_scale_inv"] = tensors[f"{PARENT}.q_a_proj.weight_scale_inv"].double()  # would narrow
    save_checkpoint(tensors, tmp_path / "f.safetensors")
    with pytest.raises(CheckpointError) as info:
        load_checkpoint(layer, tmp_path / "f.safetensors", fused_modules=FUSED)
    assert len(info.value.problems) == 2
    assert "expected dtype torch.float8_e4m3fn exactly, got torch.bfloat16" in str(info.value)
    assert "expected dtype torch.float32 (or a float dtype that widens to it exactly), got torch.float64" in str(info.value)


def test_dtype_rule_matches_the_parameters_own_loader():
    """dtype_accepted (used before loading) agrees with QParameter.load on every dtype pair."""
    from qlinear.parameter import LoadError, ShardedParameter, ShardPlan, DimMap

    plan = ShardPlan.replicated([4], 3)
    dtypes = [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.float8_e4m3fn, torch.int32, torch.int8, torch.uint8]
    if hasattr(torch, "float8_e8m0fnu"):
        dtypes.append(torch.float8_e8m0fnu)
    for want in dtypes:
        for convertible in (False, True):
            p = ShardedParameter(torch.zeros(4, 3, dtype=want), plan=plan, output=DimMap(0), convertible=convertible)
            for got in dtypes:
                src = torch.ones(4, 3).to(got)
                try:
                    p.load(src)
                    ok = True
                except LoadError:
                    ok = False
                assert dtype_accepted(p, got) == ok, (want, convertible, got)


@pytest.mark.parametrize("name", ["pytorch_model.bin", "model.pt", "model.pth", "model.ckpt", "weights.pkl"])
def test_pickle_formats_refused_by_name(tmp_path, name):
    path = tmp_path / name
    path.write_bytes(pickle.dumps({"weight": [1, 2, 3]}))
    refused(path, rf"{name}: refused: .*never unpickles")
    # a directory with only such a file is refused too, naming it
    refused(tmp_path, rf"refused: holds only \['{name}'\]")


@pytest.mark.parametrize("kind", ["pickle", "zip"])
def test_disguised_pickle_refused_without_unpickling(tmp_path, kind):
    path = tmp_path / "model.safetensors"
    if kind == "pickle":
        path.write_bytes(pickle.dumps({"weight": 1}, protocol=4))
    else:
        with zipfile.ZipFile(path, "w") as z:
            z.writestr("archive/data.pkl", pickle.dumps({"weight": 1}))
    refused(path, rf"model\.safetensors: refused: this is a .*(pickle|zip)")


def test_truncated_file(good_file):
    data = good_file.read_bytes()
    good_file.write_bytes(data[:-10])
    err = refused(good_file, "truncated")
    assert "model.safetensors: tensor 'model.layers.0.self_attn." in str(err) and "run past the end" in str(err)


@pytest.mark.parametrize("cut", [4, 20])
def test_truncated_inside_header(good_file, cut):
    good_file.write_bytes(good_file.read_bytes()[:cut])
    refused(good_file, r"model\.safetensors: (file is 4 bytes long|header length .* runs past the end)")


def test_overlapping_offsets(good_file):
    header, body = split_file(good_file)
    names = sorted(header, key=lambda n: header[n]["data_offsets"][0])
    a, b = names[1], names[2]
    # b starts inside a; the size stays consistent with its shape (so only the overlap is wrong)
    size = header[b]["data_offsets"][1] - header[b]["data_offsets"][0]
    start = header[a]["data_offsets"][0] + 4
    header[b]["data_offsets"] = [start, start + size]
    write_raw(good_file, header, body)
    err = refused(good_file, "overlap")
    assert f"tensor '{b}': bytes [{start}, {start + size}) overlap tensor '{a}'" in str(err)


def test_offsets_past_the_end(good_file):
    header, body = split_file(good_file)
    name = next(iter(header))
    begin, end = header[name]["data_offsets"]
    header[name]["data_offsets"] = [len(body) + 8, len(body) + 8 + end - begin]
    write_raw(good_file, header, body)
    refused(good_file, rf"tensor '{name}': data_offsets .* run past the end")


@pytest.mark.parametrize(
    "mutate, match",
    [
        (lambda h, n: h[n].update(dtype="Q7"), r"unknown or unsupported dtype 'Q7'"),
        (lambda h, n: h[n].update(shape=[-1, 4]), r"shape must be a list of non-negative ints"),
        (lambda h, n: h[n].update(shape=[1, 2, 3]), r"span \d+ bytes, but dtype F32 shape \[1, 2, 3\] needs 24"),
        (lambda h, n: h[n].pop("data_offsets"), r"header entry lacks \['data_offsets'\]"),
        (lambda h, n: h[n].update(data_offsets=[8]), r"data_offsets must be \[begin, end\]"),
        (lambda h, n: h.__setitem__(n, 5), r"header entry must be an object"),
        (lambda h, n: h.__setitem__("__metadata__", {"a": 1}), r"__metadata__ must map strings to strings"),
    ],
)
def test_bad_header_entries(good_file, mutate, match):
    header, body = split_file(good_file)
    name = sorted(header)[0]
    mutate(header, name)
    write_raw(good_file, header, body)
    err = refused(good_file, match)
    assert "model.safetensors" in str(err)


@pytest.mark.parametrize(
    "raw, match",
    [
        (b"{not json", "header is not valid JSON"),
        (b"[1, 2]", "header must be a JSON object"),
        (b'{"a": {"dtype": "F32", "shape": [0], "data_offsets": [0, 0]}, "a": {"dtype": "F32", "shape": [0], "data_offsets": [0, 0]}}',
         "key 'a' appears twice"),
    ],
)
def test_unparseable_header(good_file, raw, match):
    _, body = split_file(good_file)
    write_raw(good_file, raw, body)
    refused(good_file, rf"model\.safetensors: .*{match}")


def test_header_length_past_end(good_file):
    data = good_file.read_bytes()
    good_file.write_bytes(struct.pack("<Q", len(data) * 4) + data[8:])
    refused(good_file, r"header length \d+ bytes runs past the end")


def test_hole_in_data_section(good_file):
    header, body = split_file(good_file)
    for spec in header.values():
        spec["data_offsets"] = [o + 16 for o in spec["data_offsets"]]
    write_raw(good_file, header, b"\0" * 16 + body)
    refused(good_file, r"bytes \[0, 16\) of the data section belong to no tensor")


def test_header_problem_strict_false_skips_the_file(tmp_path):
    tensors = good_tensors()
    save_checkpoint(tensors, tmp_path / "ckpt", max_shard_bytes=2000)
    index = json.loads((tmp_path / "ckpt" / "model.safetensors.index.json").read_text())
    bad_file = tmp_path / "ckpt" / index["weight_map"][f"{PARENT}.kv_a_proj_with_mqa.weight"]
    bad_file.write_bytes(bad_file.read_bytes()[:-3])
    layer = make_layer()
    report = load_checkpoint(layer, tmp_path / "ckpt", fused_modules=FUSED, strict=False)
    assert any("run past the end" in p for p in report.problems)
    assert any("file is damaged" in why for why in report.skipped.values())
    assert report.loaded and list(report.unfinished) == [f"{PARENT}.fused_qkv_a_proj"]


def test_index_naming_a_missing_file(tmp_path):
    save_checkpoint(good_tensors(), tmp_path, max_shard_bytes=2000)
    index = json.loads((tmp_path / "model.safetensors.index.json").read_text())
    gone = index["weight_map"][f"{PARENT}.q_a_proj.bias"]
    (tmp_path / gone).unlink()
    err = refused(tmp_path, rf"names file '{gone}' for tensors .*'{PARENT}.q_a_proj.bias'.* does not exist")
    assert "model.safetensors.index.json" in str(err)


def test_index_escaping_the_directory(tmp_path):
    save_checkpoint(good_tensors(), tmp_path / "ckpt", max_shard_bytes=2000)
    path = tmp_path / "ckpt" / "model.safetensors.index.json"
    index = json.loads(path.read_text())
    index["weight_map"][f"{PARENT}.q_a_proj.bias"] = "../elsewhere.safetensors"
    path.write_text(json.dumps(index))
    refused(tmp_path / "ckpt", r"'\.\./elsewhere\.safetensors' .* lies outside")


def test_index_and_files_disagree(tmp_path):
    save_checkpoint(good_tensors(), tmp_path, max_shard_bytes=2000)
    path = tmp_path / "model.safetensors.index.json"
    index = json.loads(path.read_text())
    files = sorted(set(index["weight_map"].values()))
    name = f"{PARENT}.q_a_proj.weight"
    index["weight_map"][name] = next(f for f in files if f != index["weight_map"][name])
    index["weight_map"]["model.norm.weight"] = files[0]
    path.write_text(json.dumps(index))
    err = refused(tmp_path, "is listed in")
    assert f"tensor {name!r} is listed in" in str(err) and "'model.norm.weight' is listed in" in str(err)


@pytest.mark.parametrize("malformed", ["not json", '{"weight_map": [1]}', '{"weight_map": {"a": 3}}'])
def test_malformed_index(tmp_path, malformed):
    save_checkpoint(good_tensors(), tmp_path, max_shard_bytes=2000)
    (tmp_path / "model.safetensors.index.json").write_text(malformed)
    refused(tmp_path, r"model\.safetensors\.index\.json: ")


def test_duplicated_tensor_across_shards(tmp_path):
    tensors = good_tensors()
    save_checkpoint(tensors, tmp_path, max_shard_bytes=2000)
    index = json.loads((tmp_path / "model.safetensors.index.json").read_text())
    name = f"{PARENT}.q_a_proj.bias"
    other = next(f for f in sorted(set(index["weight_map"].values())) if f != index["weight_map"][name])
    from safetensors.torch import load_file, save_file

    extra = load_file(str(tmp_path / other))
    extra[name] = tensors[name]
    save_file(extra, str(tmp_path / other))
    refused(tmp_path, rf"tensor '{name}' appears in 2 files")
    layer = make_layer()
    report = load_checkpoint(layer, tmp_path, fused_modules=FUSED, strict=False)
    assert len(report.problems) == 1 and name in report.loaded and not report.unfinished


def test_fused_and_per_shard_tensor_for_the_same_rows(tmp_path):
    tensors = good_tensors()
    tensors[f"{PARENT}.fused_qkv_a_proj.bias"] = torch.randn(sum(SIZES))
    save_checkpoint(tensors, tmp_path / "m.safetensors")
    refused(tmp_path / "m.safetensors", "is also loaded from tensor")


def test_several_files_without_index(tmp_path):
    save_checkpoint(good_tensors(), tmp_path / "a.safetensors")
    save_checkpoint(good_tensors(), tmp_path / "b.safetensors")
    refused(tmp_path, r"2 \.safetensors files .* and no model\.safetensors\.index\.json")


def test_missing_path_and_empty_dir(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_checkpoint(make_layer(), tmp_path / "nope")
    refused(tmp_path, r"no \.safetensors file")


def test_fused_modules_must_match_the_layer(good_file):
    layer = make_layer()
    with pytest.raises(ValueError, match=r"gives .* 3 shards .* but the layer has 2"):
        load_checkpoint(layer, good_file, fused_modules={"fused_qkv_a_proj": ["a", "b", "c"]})
    with pytest.raises(ValueError, match="the layer's shard_names say"):
        load_checkpoint(make_layer(shard_names=["x", "y"]), good_file, fused_modules=FUSED)
    with pytest.raises(TypeError, match="fused_modules: expected"):
        load_checkpoint(layer, good_file, fused_modules={"fused_qkv_a_proj": "q_a_proj"})


# -- read_quantization_config ---------------------------------------------------------------------


def test_quantization_config_found(tmp_path):
    assert read_quantization_config(tmp_path) is None  # no config.json: unquantized
    cfg = {"quant_method": "fp8", "weight_block_size": [128, 128]}
    save_checkpoint(good_tensors(), tmp_path / "m.safetensors", config=cfg)
    assert read_quantization_config(tmp_path) == cfg
    assert read_quantization_config(tmp_path / "m.safetensors") == cfg  # beside the file
    assert read_quantization_config(tmp_path / "config.json") == cfg
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "deepseek_v3"}))
    assert read_quantization_config(tmp_path) is None
    (tmp_path / "config.json").write_text(json.dumps({"quantization_config": None}))
    assert read_quantization_config(tmp_path) is None
    (tmp_path / "config.json").write_text(json.dumps({"compression_config": cfg}))
    assert read_quantization_config(tmp_path) == cfg


@pytest.mark.parametrize(
    "text, match",
    [
        ("{bad json", "malformed JSON"),
        ("[1, 2]", "top level must be a JSON object"),
        ('{"quantization_config": "fp8"}', "'quantization_config' must be an object"),
        ('{"quantization_config": [1]}', "'quantization_config' must be an object"),
        ('{"quantisation_config": {"quant_method": "fp8"}}', "'quantisation_config' but no 'quantization_config': misspelled"),
        ('{"quantization_configs": {"quant_method": "fp8"}}', "misspelled"),
    ],
)
def test_quantization_config_errors_name_the_file(tmp_path, text, match):
    (tmp_path / "config.json").write_text(text)
    with pytest.raises(ValueError, match=match) as info:
        read_quantization_config(tmp_path)
    assert str(tmp_path / "config.json") in str(info.value)


def test_read_header_agrees_with_safetensors(good_file):
    from safetensors import safe_open

    header = read_header(good_file)
    assert not header.problems
    with safe_open(str(good_file), framework="pt") as f:
        assert sorted(f.keys()) == sorted(header.tensors)
        for name in f.keys():
            sl = f.get_slice(name)
            assert tuple(sl.get_shape()) == header.tensors[name].shape
            assert f.get_tensor(name).dtype == header.tensors[name].dtype


@pytest.mark.parametrize("header_len", [640, 896, 1152, 1408])
def test_header_length_that_looks_like_a_pickle_marker_is_still_safetensors(tmp_path, header_len):
    """A header of 640 bytes starts the file with 80 02 00..: the pickle sniff must not fire."""
    import json
    import struct

    from qlinear.loading import read_header

    data = torch.randn(4, 4)
    meta = {"w": {"dtype": "F32", "shape": [4, 4], "data_offsets": [0, 64]}}
    body = json.dumps({**meta, "__metadata__": {"pad": ""}}, separators=(",", ":"))
    pad = header_len - len(body)
    body = json.dumps({**meta, "__metadata__": {"pad": "x" * pad}}, separators=(",", ":"))
    assert len(body) == header_len
    path = tmp_path / "model.safetensors"
    path.write_bytes(struct.pack("<Q", header_len) + body.encode() + data.numpy().tobytes())
    assert path.read_bytes()[:2] in (b"\x80\x02", b"\x80\x03", b"\x80\x04", b"\x80\x05")
    header = read_header(path)
    assert not header.problems, header.problems
