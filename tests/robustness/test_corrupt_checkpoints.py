"""Corrupt checkpoints, one test each: ONE clear error naming the file and the tensor (or setting),
and every layer of the model exactly as before (all parameter / buffer bytes, storages, shard
bookkeeping and ``weights_finished`` flags compared).

Files are written byte by byte where the safetensors writer would refuse the corruption
(``[u64 little-endian header length][JSON header][data]``). The model is a realistic two-layer one:
a merged GPTQ act-order layer (``q_a_proj`` + ``kv_a_proj_with_mqa``) and a single ``down_proj``
layer, loaded from a three-file sharded checkpoint with an index, unless a test needs another
format.

Scale policy (``SCALE_POLICY`` below, documented in notes/ROBUSTNESS.md): NaN / +-inf in any scale
is an error; a zero or negative *weight* scale loads (it decodes to a well-defined weight) with a
warning naming the tensor, since no producer writes one; an input (activation) scale that is
zero, negative, NaN or inf is an error (activations are divided by it). Every format applies it
through ``qlinear.quantization.base.check_scales``.
"""

from __future__ import annotations

import json
import pickle
import struct
import warnings
from pathlib import Path

import pytest
import torch
from torch import nn

import _robust_common as rc
from _robust_formats import PARENT, build_case, ct_int_config, ct_int_tensors
from qlinear.loading import CheckpointError, load_checkpoint, read_quantization_config, save_checkpoint
from qlinear.quantization import get_quantization_config

pytest.importorskip("compressed_tensors")

FUSED = f"{PARENT}.fused_qkv_a_proj"


class Model(nn.Module):
    def __init__(self, merged, single):
        super().__init__()
        self.attn = merged.make_layer(FUSED)
        self.mlp = single.make_layer("model.layers.0.mlp.down_proj")


def cases(fmt="gptq", seed=3, **choices):
    defaults = dict(gptq=dict(bits=4, group=16, sym=False, desc_act=True, sizes=[16, 8], k=64))
    merged = build_case(fmt, seed, n_shards=2, **{**defaults.get(fmt, {}), **choices})
    single_choices = {k: v for k, v in merged.choices.items() if k != "sizes"}
    single = build_case(fmt, seed + 1, n_shards=1, **single_choices)
    single.names = ["down_proj"]
    return merged, single


def checkpoint_tensors(merged, single) -> dict[str, torch.Tensor]:
    out = merged.checkpoint()
    out.update({f"model.layers.0.mlp.down_proj.{k}": v for k, v in single.shards[0].items()})
    return out


def write(tensors, path: Path, *, shards: int = 3, config=None) -> Path:
    """One file (``path`` ending in .safetensors) or ``shards`` files + index in directory ``path``."""
    if path.suffix == ".safetensors":
        save_checkpoint(tensors, path, config=config)
        return path
    total = sum(t.numel() * t.element_size() for t in tensors.values())
    files = save_checkpoint(tensors, path, max_shard_bytes=total // shards + 1, config=config)
    assert len(files) >= 2
    return path


def refused(model: nn.Module, path, *needles: str, strict: bool = True) -> CheckpointError:
    """``load_checkpoint`` must raise one ``CheckpointError`` whose text holds every needle, and
    change nothing at all."""
    before = rc.snapshot(model)
    with pytest.raises(CheckpointError) as info:
        load_checkpoint(model, path, strict=strict)
    text = str(info.value)
    for needle in needles:
        assert needle in text, f"{needle!r} not in error:\n{text}"
    assert "no parameter was changed" in text or "every change was undone" in text
    rc.assert_same(model, before)
    return info.value


@pytest.fixture
def gptq(tmp_path):
    merged, single = cases()
    return merged, single, checkpoint_tensors(merged, single), tmp_path


def split_file(path: Path) -> tuple[dict, bytes]:
    raw = path.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    return json.loads(raw[8 : 8 + n]), raw[8 + n :]


def write_raw(path: Path, header: dict | bytes, body: bytes, pad_to: int | None = None) -> None:
    raw = header if isinstance(header, bytes) else json.dumps(header).encode()
    raw += b" " * ((pad_to - len(raw)) if pad_to is not None else (-len(raw) % 8))
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + body)


def one_file(gptq) -> tuple[Model, Path]:
    merged, single, tensors, tmp = gptq
    return Model(merged, single), write(tensors, tmp / "model.safetensors")


def test_good_checkpoint_loads(gptq):
    """Control: the checkpoint every corruption below starts from loads in both layouts."""
    merged, single, tensors, tmp = gptq
    for path in (write(tensors, tmp / "one.safetensors"), write(tensors, tmp / "sharded")):
        report = load_checkpoint(Model(merged, single), path)
        assert report.ok and sorted(report.finished) == ["attn", "mlp"]


# ---------------------------------------------------------------------------------------------------
# the file itself
# ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("where", ["in the length", "in the header", "in the data", "last byte"])
def test_truncated_file(gptq, where):
    model, path = one_file(gptq)
    raw = path.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    cut = {"in the length": 5, "in the header": 8 + n // 2, "in the data": 8 + n + (len(raw) - 8 - n) // 2,
           "last byte": len(raw) - 1}[where]
    path.write_bytes(raw[:cut])
    err = refused(model, path, "model.safetensors")
    if where in ("in the data", "last byte"):
        assert "run past the end" in str(err) and "tensor '" in str(err)  # names the tensor cut off


def test_header_offsets_overlap(gptq):
    model, path = one_file(gptq)
    header, body = split_file(path)
    names = sorted((n for n in header if n != "__metadata__"), key=lambda n: header[n]["data_offsets"][0])
    a, b = names[0], names[1]
    size = header[b]["data_offsets"][1] - header[b]["data_offsets"][0]
    start = header[a]["data_offsets"][0] + 4  # b now starts inside a; its size still fits its shape
    header[b]["data_offsets"] = [start, start + size]
    write_raw(path, header, body)
    refused(model, path, "model.safetensors", f"tensor '{b}'", "overlap", f"'{a}'")


def test_header_offsets_past_the_end(gptq):
    model, path = one_file(gptq)
    header, body = split_file(path)
    name = sorted(n for n in header if n != "__metadata__")[-1]
    begin, end = header[name]["data_offsets"]
    header[name]["data_offsets"] = [len(body) + 64, len(body) + 64 + end - begin]
    write_raw(path, header, body)
    refused(model, path, "model.safetensors", f"tensor '{name}'", "past the end")


def test_header_length_past_the_end(gptq):
    model, path = one_file(gptq)
    raw = path.read_bytes()
    path.write_bytes(struct.pack("<Q", 2**40) + raw[8:])
    refused(model, path, "model.safetensors", "header length")


def test_valid_file_whose_header_length_looks_like_pickle_magic(tmp_path):
    """A valid safetensors file whose header is 640 bytes long starts with b"\\x80\\x02": the same
    two bytes as a protocol-2 pickle. It must load (safetensors itself opens it).

    Regression test: the fuzz property of test_loader_properties.py found that ``read_header``
    refused such files as "a Python pickle" (header lengths with ``n % 65536`` in {640, 896,
    1152, 1408}: about 1 file in 2000); ``_sniff_foreign`` now looks at byte 8 first."""
    merged, single = cases("dense", 5, sizes=[3, 2], k=4)
    tensors = checkpoint_tensors(merged, single)
    good = tmp_path / "ref.safetensors"
    save_checkpoint(tensors, good)
    header, body = split_file(good)
    for pad_to in (640, 896, 1152, 1408):
        path = tmp_path / f"h{pad_to}.safetensors"
        write_raw(path, header, body, pad_to=pad_to)
        assert path.read_bytes()[:2] in (b"\x80\x02", b"\x80\x03", b"\x80\x04", b"\x80\x05")
        from safetensors import safe_open

        with safe_open(str(path), framework="pt") as f:  # control: safetensors accepts the file
            assert sorted(f.keys()) == sorted(tensors)
        expected, model = Model(merged, single), Model(merged, single)
        load_checkpoint(expected, good)
        load_checkpoint(model, path)
        rc.assert_models_equal(model, expected)


def test_index_naming_a_missing_file(gptq):
    merged, single, tensors, tmp = gptq
    path = write(tensors, tmp / "ckpt")
    index = json.loads((path / "model.safetensors.index.json").read_text())
    gone = sorted(set(index["weight_map"].values()))[1]
    (path / gone).unlink()
    victim = next(n for n, f in index["weight_map"].items() if f == gone)
    refused(Model(merged, single), path, "model.safetensors.index.json", gone, victim, "does not exist")


def test_duplicated_tensor_across_shards(gptq):
    merged, single, tensors, tmp = gptq
    path = write(tensors, tmp / "ckpt")
    index = json.loads((path / "model.safetensors.index.json").read_text())
    name = f"{PARENT}.kv_a_proj_with_mqa.scales"
    other = next(f for f in sorted(set(index["weight_map"].values())) if f != index["weight_map"][name])
    from safetensors.torch import load_file, save_file

    extra = load_file(str(path / other))
    extra[name] = tensors[name]
    save_file(extra, str(path / other))
    refused(Model(merged, single), path, f"tensor '{name}' appears in 2 files", other)


# ---------------------------------------------------------------------------------------------------
# a tensor with the right name and the wrong dtype / shape / rank
# ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "tensor, change, needle",
    [
        ("q_a_proj.qweight", lambda t: t.to(torch.int64), "expected dtype torch.int32 exactly, got torch.int64"),
        ("q_a_proj.qweight", lambda t: t.view(torch.float32), "expected dtype torch.int32 exactly, got torch.float32"),
        ("kv_a_proj_with_mqa.scales", lambda t: t.double(), "got torch.float64"),
        ("q_a_proj.g_idx", lambda t: t.float(), "expected dtype torch.int32 exactly, got torch.float32"),
        ("q_a_proj.qweight", lambda t: t[:, :-1], "expected shape (8, 16), got (8, 15)"),
        ("kv_a_proj_with_mqa.qzeros", lambda t: torch.cat([t, t], 1), "expected shape (4, 1), got (4, 2)"),
        ("q_a_proj.g_idx", lambda t: t[:-1], "expected shape (64,), got (63,)"),
        ("q_a_proj.scales", lambda t: t.t(), "expected shape (4, 16), got (16, 4)"),
        ("q_a_proj.scales", lambda t: t[None], "expected shape (4, 16), got (1, 4, 16)"),
        ("kv_a_proj_with_mqa.scales", lambda t: t.reshape(-1), "expected shape (4, 8), got (32,)"),
        ("q_a_proj.g_idx", lambda t: t[None], "expected shape (64,), got (1, 64)"),
    ],
    ids=["int64-qweight", "float-bits-qweight", "fp64-scales", "float-g_idx", "shape-qweight", "shape-qzeros",
         "shape-g_idx", "transposed-scales", "rank+1-scales", "rank-1-scales", "rank+1-g_idx"],
)
def test_wrong_dtype_shape_rank(gptq, tensor, change, needle):
    merged, single, tensors, tmp = gptq
    name = f"{PARENT}.{tensor}"
    tensors[name] = change(tensors[name]).contiguous()
    path = write(tensors, tmp / "ckpt")
    err = refused(Model(merged, single), path, f"tensor '{name}'", needle)
    assert len(err.problems) == 1 and err.problems[0].startswith("model-000"), err.problems  # names the file


# ---------------------------------------------------------------------------------------------------
# scales: NaN / inf / zero / negative
# ---------------------------------------------------------------------------------------------------

# format -> [(scale parameter, kind: "weight" | "input", what the checks do today)]
SCALE_TENSORS = {
    "fp8-block": [("weight_scale_inv", "weight")],
    "fp8-tensor": [("weight_scale", "weight"), ("input_scale", "input")],
    "gptq": [("scales", "weight")],
    "awq": [("scales", "weight")],
    "ct-int": [("weight_scale", "weight")],
}
BAD_VALUES = {"nan": float("nan"), "inf": float("inf"), "-inf": float("-inf"), "zero": 0.0, "negative": None}
# the policy: error or warning for each (kind, value)
SCALE_POLICY = {("weight", v): ("error" if v in ("nan", "inf", "-inf") else "warning") for v in BAD_VALUES}
SCALE_POLICY.update({("input", v): "error" for v in BAD_VALUES})

def _scale_cases():
    out = []
    for fmt, entries in SCALE_TENSORS.items():
        for pname, kind in entries:
            for value in BAD_VALUES:
                policy = SCALE_POLICY[(kind, value)]
                out.append(pytest.param(fmt, pname, value, policy, id=f"{fmt}-{pname}-{value}-{policy}"))
    return out


@pytest.mark.parametrize("fmt, pname, value, policy", _scale_cases())
def test_bad_scale(tmp_path, fmt, pname, value, policy):
    merged, single = cases(fmt, 11, **({"scale_fmt": None} if fmt == "fp8-block" else {}))
    tensors = checkpoint_tensors(merged, single)
    name = f"{PARENT}.{merged.shard_names[1]}.{pname}"
    t = tensors[name].clone()
    flat = t.reshape(-1)
    flat[flat.numel() // 2] = -flat[flat.numel() // 2].abs() if value == "negative" else BAD_VALUES[value]
    tensors[name] = t
    path = write(tensors, tmp_path / "ckpt", shards=2)
    model = Model(merged, single)
    if policy == "error":
        refused(model, path, FUSED, pname)
        return
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        report = load_checkpoint(model, path)
    assert report.ok
    assert any(pname in str(w.message) and FUSED in str(w.message) for w in caught), (
        f"no warning naming {FUSED}.{pname}: {[str(w.message) for w in caught]}")


# ---------------------------------------------------------------------------------------------------
# format-specific consistency: weight_shape, zero points, g_idx
# ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [[16, 65], [17, 64], [8, 64], [0, 0]], ids=["K+1", "N+1", "other shard", "zeros"])
def test_weight_shape_disagrees_with_packed_tensor(tmp_path, bad):
    merged, single = cases("ct-int", 13, bits=4, sym=True, group=16, sizes=[16, 8], k=64)
    tensors = checkpoint_tensors(merged, single)
    tensors[f"{PARENT}.q_a_proj.weight_shape"] = torch.tensor(bad, dtype=torch.int64)
    path = write(tensors, tmp_path / "ckpt", shards=2)
    refused(Model(merged, single), path, f"{FUSED}.weight_shape", "weight_shape disagrees", str(bad))


def test_weight_shape_wrong_rank(tmp_path):
    merged, single = cases("ct-int", 13, bits=4, sym=True, group=16, sizes=[16, 8], k=64)
    tensors = checkpoint_tensors(merged, single)
    tensors[f"{PARENT}.q_a_proj.weight_shape"] = torch.tensor([16, 64, 1], dtype=torch.int64)
    refused(Model(merged, single), write(tensors, tmp_path / "ckpt", shards=2), f"{PARENT}.q_a_proj.weight_shape",
            "expected shape (2,), got (3,)")


@pytest.mark.parametrize("value", [8, -9, 127], ids=["8", "-9", "127"])
def test_zero_points_out_of_range(tmp_path, value):
    """compressed-tensors <= 0.9 stored asymmetric int4 zero points unpacked (int8, signed -8..7)."""
    merged, single = cases("ct-int", 17, bits=4, sym=False, group=16, sizes=[16, 8], k=64, version="0.9.2")
    tensors = checkpoint_tensors(merged, single)
    gen = rc.gen(17)
    for key in [k for k in tensors if k.endswith("weight_zero_point")]:
        rows = int(tensors[key.replace("weight_zero_point", "weight_shape")][0])
        tensors[key] = torch.randint(-8, 8, (rows, 4), generator=gen, dtype=torch.int8)
    control = write(tensors, tmp_path / "good", shards=2)
    load_checkpoint(Model(merged, single), control)  # in range: loads
    tensors[f"{PARENT}.kv_a_proj_with_mqa.weight_zero_point"][3, 1] = value
    refused(Model(merged, single), write(tensors, tmp_path / "bad", shards=2), f"{FUSED}.weight_zero_point",
            "must lie in [-8, 7]", str(value))


@pytest.mark.parametrize("bad", ["too_big", "negative", "uneven_groups", "all_one_group"])
def test_g_idx_not_a_group_assignment(gptq, bad):
    merged, single, tensors, tmp = gptq
    name = f"{PARENT}.kv_a_proj_with_mqa.g_idx"
    g = tensors[name].clone()  # 64 columns, 4 groups of 16
    if bad == "too_big":
        g[5] = 4
    elif bad == "negative":
        g[0] = -1
    elif bad == "uneven_groups":
        g[g == 0] = 1  # group 0 empty, group 1 holds 32 columns
    else:
        g[:] = 2
    tensors[name] = g
    path = write(tensors, tmp / "ckpt")
    # the error must name the parameter and the checkpoint matrix (shard) whose g_idx is wrong
    needles = [f"{FUSED}.g_idx", "kv_a_proj_with_mqa"] + (["[0, 4)"] if bad in ("too_big", "negative") else ["16"])
    refused(Model(merged, single), path, *needles)


# ---------------------------------------------------------------------------------------------------
# config.json
# ---------------------------------------------------------------------------------------------------


def test_config_without_quantization_config(gptq):
    """A GPTQ checkpoint whose config.json lost its quantization_config builds unquantized layers;
    the load must then refuse (naming the file and the packed tensors), never produce garbage."""
    merged, single, tensors, tmp = gptq
    path = write(tensors, tmp / "ckpt", config={"model_type": "deepseek_v3"})
    assert read_quantization_config(path) is None
    unquantized = build_case("dense", 1, n_shards=2, sizes=merged.sizes, k=merged.k)
    single_dense = build_case("dense", 2, n_shards=1, sizes=single.sizes, k=single.k)
    single_dense.names = ["down_proj"]
    model = Model(unquantized, single_dense)
    err = refused(model, path, f"tensor '{PARENT}.q_a_proj.qweight': unexpected", "missing")
    assert any(p.startswith("model-000") for p in err.problems)


@pytest.mark.parametrize("key", ["quantisation_config", "quantization_configs", "quantizationconfig"])
def test_config_key_misspelled(tmp_path, key):
    (tmp_path / "config.json").write_text(json.dumps({key: {"quant_method": "gptq", "bits": 4}}))
    with pytest.raises(ValueError, match="misspelled") as info:
        read_quantization_config(tmp_path)
    assert str(tmp_path / "config.json") in str(info.value) and key in str(info.value)


@pytest.mark.parametrize(
    "config, needles",
    [
        ({"quant_method": "gtpq", "bits": 4}, ["'gtpq'", "gptq"]),
        ({"quant_method": "FP8", "weight_block_size": [128, 128]}, ["'FP8'", "fp8"]),
        ({"bits": 4, "group_size": 128}, ["no 'quant_method'"]),
        ({"quant_method": "fp8", "weight_block_size": [128]}, ["weight_block_size", "[128]"]),
        ({"quant_method": "fp8", "weight_block_size": [128, 0]}, ["weight_block_size"]),
        ({"quant_method": "fp8", "weight_block_size": [128, 128], "activation_scheme": "static"}, ["activation_scheme", "static"]),
        ({"quant_method": "fp8", "scale_fmt": "ue8m0"}, ["scale_fmt", "ue8m0"]),
        ({"quant_method": "fp8", "fmt": "e5m2", "weight_block_size": [128, 128]}, ["fmt", "e5m2"]),
        ({"quant_method": "gptq", "bits": 3, "group_size": 128}, ["bits=3", "[4, 8]"]),
        ({"quant_method": "gptq", "bits": 4, "group_size": 0}, ["group_size=0"]),
        ({"quant_method": "gptq", "bits": 4, "checkpoint_format": "gptq_v2", "format": "gptq"}, ["checkpoint_format", "format", "disagree"]),
        ({"quant_method": "gptq", "bits": 4, "desc_act": "yes"}, ["desc_act"]),
        ({"quant_method": "gptq", "bits": 4, "is_marlin_format": True}, ["is_marlin_format"]),
        ({"quant_method": "gptq", "bits": 4, "bitz": 4}, ["bitz"]),
        ({"quant_method": "awq", "bits": 8, "version": "gemm"}, ["bits=8"]),
        ({"quant_method": "awq", "bits": 4, "version": "gemv"}, ["version", "gemv"]),
        ({"quant_method": "awq", "bits": 4, "w_bit": 8}, ["bits", "w_bit", "disagree"]),
        ({"quant_method": "awq", "bits": 4, "zero_point": False}, ["zero_point"]),
        (dict(ct_int_config(4, True, 16), format="marlin-24"), ["format", "marlin-24"]),
        (dict(ct_int_config(4, True, 16), quantization_status="frozen"), ["quantization_status", "frozen"]),
    ],
    ids=["gtpq", "FP8-case", "no-method", "fp8-block-1d", "fp8-block-0", "fp8-static-block", "fp8-ue8m0-no-block",
         "fp8-e5m2", "gptq-bits3", "gptq-group0", "gptq-format-vs-checkpoint_format", "gptq-desc_act-str",
         "gptq-marlin", "gptq-typo-key", "awq-bits8", "awq-gemv", "awq-w_bit-contradicts", "awq-no-zero-point",
         "ct-format", "ct-status"],
)
def test_config_contradictory_or_unsupported(tmp_path, config, needles):
    (tmp_path / "config.json").write_text(json.dumps({"quantization_config": config}))
    parsed = read_quantization_config(tmp_path)
    with pytest.raises(ValueError) as info:
        get_quantization_config(parsed)
    for needle in needles:
        assert needle in str(info.value), f"{needle!r} not in: {info.value}"


def test_config_ct_invalid_num_bits(tmp_path):
    cfg = ct_int_config(4, True, 16)
    cfg["config_groups"]["group_0"]["weights"]["num_bits"] = 3
    with pytest.raises(ValueError, match="num_bits"):
        get_quantization_config(cfg)


# ---------------------------------------------------------------------------------------------------
# no pickle, ever
# ---------------------------------------------------------------------------------------------------


class Trap:
    """Unpickling this object opens (creates) ``marker``: proof that something was unpickled."""

    def __init__(self, marker: Path):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def _trap_bytes(marker: Path, protocol: int) -> bytes:
    return pickle.dumps({"model.layers.0.mlp.down_proj.weight": Trap(marker)}, protocol=protocol)


def test_trap_works(tmp_path):
    """Control: the trap does fire when unpickled (so the tests below would see an unpickle)."""
    marker = tmp_path / "fired"
    pickle.loads(_trap_bytes(marker, 2)).popitem()[1].close()
    assert marker.exists()
    marker2 = tmp_path / "fired2"
    torch.save({"w": Trap(marker2)}, tmp_path / "t.pt")
    torch.load(tmp_path / "t.pt", weights_only=False)["w"].close()
    assert marker2.exists()


def _dense_model():
    merged, single = cases("dense", 5, sizes=[3, 2], k=4)
    return Model(merged, single)


@pytest.mark.parametrize("name", ["pytorch_model.bin", "model.pt", "model.pth", "last.ckpt", "weights.pkl", "w.pickle"])
def test_pickle_refused_by_name(tmp_path, name):
    marker = tmp_path / "unpickled"
    path = tmp_path / name
    if name.endswith((".pt", ".pth", ".bin")):
        torch.save({"w": Trap(marker)}, path)
    else:
        path.write_bytes(_trap_bytes(marker, 4))
    model = _dense_model()
    before = rc.snapshot(model)
    for target in (path, tmp_path):  # the file itself, and a directory holding only it
        with pytest.raises(ValueError, match=r"refused.*never unpickles") as info:
            load_checkpoint(model, target)
        assert name in str(info.value)
    assert read_quantization_config(tmp_path) is None
    assert not marker.exists(), "something was unpickled"
    rc.assert_same(model, before)


@pytest.mark.parametrize("kind", ["protocol0", "protocol2", "protocol4", "protocol5", "torch.save"])
def test_pickle_disguised_as_safetensors(tmp_path, kind):
    marker = tmp_path / "unpickled"
    path = tmp_path / "model.safetensors"
    if kind == "torch.save":
        torch.save({"w": Trap(marker)}, path)
    else:
        path.write_bytes(_trap_bytes(marker, int(kind[-1])))
    refused(_dense_model(), path, "model.safetensors")
    assert not marker.exists(), "something was unpickled"


def test_index_naming_a_pickle(tmp_path):
    merged, single = cases("dense", 5, sizes=[3, 2], k=4)
    tensors = checkpoint_tensors(merged, single)
    write(tensors, tmp_path / "ckpt", shards=2)
    marker = tmp_path / "unpickled"
    index_path = tmp_path / "ckpt" / "model.safetensors.index.json"
    index = json.loads(index_path.read_text())
    victim = sorted(index["weight_map"])[0]
    torch.save({victim: Trap(marker)}, tmp_path / "ckpt" / "extra.bin")
    index["weight_map"][victim] = "extra.bin"
    index_path.write_text(json.dumps(index))
    refused(Model(merged, single), tmp_path / "ckpt", "extra.bin", "never unpickles")
    assert not marker.exists()


def test_pickle_beside_safetensors_is_never_read(tmp_path):
    merged, single = cases("dense", 5, sizes=[3, 2], k=4)
    write(checkpoint_tensors(merged, single), tmp_path / "model.safetensors")
    marker = tmp_path / "unpickled"
    torch.save({"w": Trap(marker)}, tmp_path / "pytorch_model.bin")
    (tmp_path / "optimizer.pt").write_bytes(_trap_bytes(marker, 2))
    assert load_checkpoint(Model(merged, single), tmp_path).ok
    assert not marker.exists()
