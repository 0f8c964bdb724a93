"""Property-based tests of the weight loaders and of ``load_checkpoint``, for every format.

* Shard order (one property per format): loading the shards of a merged layer in any order, with
  repeated loads and with a wrong-valued tensor loaded first and overwritten later, gives the
  same parameter bytes as loading them once in order, and the same as loading the tensors fused
  on disk (``loaded_shard_id=None``); after ``process_weights_after_loading`` every parameter /
  buffer and the forward output agree bit for bit.
* Bad input (one property per format): a wrong shape / rank / dtype / shard id or a non-tensor
  sent to any parameter of a partly loaded layer raises ``LoadError`` (a ``ValueError``) naming
  the parameter, and leaves every byte and the shard bookkeeping of the layer unchanged.
* ``load_checkpoint``: random file layouts (one file, sharded at random sizes so one module's
  tensors straddle files, some tensors fused on disk), random tensor order inside the files,
  give the same model as the in-memory loads.
* Corruption fuzzing: random truncations, header bit flips, header length rewrites, inserted
  or appended bytes of a good file either raise ``CheckpointError`` naming the file with the
  model unchanged, or load exactly what the good file loads.
"""

from __future__ import annotations

import itertools
import struct
import tempfile
from pathlib import Path

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from torch import nn

import _robust_common as rc
from _robust_formats import FORMATS, PARENT, build_case, format_cases
from qlinear.loading import CheckpointError, dtype_accepted, load_checkpoint, save_checkpoint
from qlinear.parameter import LoadError, QParameter, StackedParameter

pytest.importorskip("compressed_tensors")


def _forward_equal(a, b, k, dtype, seed):
    x = torch.randn(3, k, generator=rc.gen(seed)).to(dtype)
    assert torch.equal(rc.bits_of(a(x)), rc.bits_of(b(x))), "forward outputs differ"


@pytest.mark.parametrize("fmt", FORMATS)
def test_shard_order_fused_and_reloads(fmt):
    name = f"weight_loader [{fmt}]: any shard order / repeats / overwrites == in order == fused on disk"

    @rc.property_of(name)
    @given(case=format_cases(fmt), data=st.data())
    def prop(case, data):
        rc.tally(name)
        reference = case.make_layer()
        for i, tensors in enumerate(case.shards):
            for pname, t in tensors.items():
                getattr(reference, pname).weight_loader(getattr(reference, pname), t, i)

        layer = case.make_layer()
        s = len(case.sizes)
        order = data.draw(st.lists(st.integers(0, s - 1), min_size=0, max_size=2 * s)) + data.draw(st.permutations(range(s)))
        decoy_first = data.draw(st.lists(st.booleans(), min_size=s, max_size=s))
        seen = set()
        for step, i in enumerate(order):
            for pname, t in case.shards[i].items():
                param = getattr(layer, pname)
                if decoy_first[i] and i not in seen:
                    param.weight_loader(param, case.decoy(layer, pname, t, step), i)
                param.weight_loader(param, t, i)
            seen.add(i)
        rc.assert_models_equal(layer, reference)

        fused = case.make_layer()
        for pname, t in case.fused(fused).items():
            param = getattr(fused, pname)
            if t is not None:
                param.weight_loader(param, t)  # loaded_shard_id=None: all shards at once
            else:
                for i, tensors in enumerate(case.shards):
                    param.weight_loader(param, tensors[pname], i)
        rc.assert_models_equal(fused, reference)

        for m in (reference, layer, fused):
            m.process_weights_after_loading()
        rc.assert_models_equal(layer, reference)
        rc.assert_models_equal(fused, reference)
        _forward_equal(layer, reference, case.k, case.dtype, 1)
        _forward_equal(fused, reference, case.k, case.dtype, 2)

    prop()


ALL_DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.int8, torch.int16, torch.int32,
              torch.int64, torch.uint8, torch.bool, torch.float8_e4m3fn, torch.float8_e5m2, torch.complex64]
BAD_KINDS = ["shape", "rank+1", "rank-1", "dtype", "shard_id", "not_a_tensor", "range"]


def _bad_tensor(param: QParameter, shard, kind: str, data) -> object:
    expected = tuple(param.checkpoint_shape(shard))
    good = expected if expected else (1,)
    if kind == "rank+1":
        return torch.zeros(*good, 1, dtype=param.dtype) if expected else torch.zeros(1, 1, dtype=param.dtype)
    if kind == "rank-1":
        return torch.zeros(good[1:] if len(good) > 1 else (2, 2), dtype=param.dtype)
    if kind == "shape":
        dim = data.draw(st.integers(0, len(good) - 1))
        delta = data.draw(st.sampled_from([-3, -1, 1, 2, 7]))
        shape = list(good)
        shape[dim] = max(0, shape[dim] + delta)
        if tuple(shape) == good or (not expected and tuple(shape) in ((), (1,))):
            shape[dim] += 1
        return torch.zeros(shape, dtype=param.dtype)
    if kind == "dtype":
        bad = [d for d in ALL_DTYPES if not dtype_accepted(param, d)]
        return torch.zeros(expected, dtype=data.draw(st.sampled_from(bad)))
    if kind == "not_a_tensor":
        return data.draw(st.sampled_from([[0] * (good[0] if good else 1), 1.0, None, "weight"]))
    raise AssertionError(kind)


@pytest.mark.parametrize("fmt", FORMATS)
def test_bad_input_refused_and_nothing_changes(fmt):
    name = f"weight_loader [{fmt}]: bad shape / rank / dtype / shard id raise LoadError, bytes unchanged"

    @rc.property_of(name)
    @given(case=format_cases(fmt), data=st.data())
    def prop(case, data):
        rc.tally(name)
        layer = case.make_layer()
        s = len(case.sizes)
        preloaded = data.draw(st.lists(st.integers(0, s - 1), max_size=s))
        for i in preloaded:
            for pname, t in case.shards[i].items():
                getattr(layer, pname).weight_loader(getattr(layer, pname), t, i)
        before = rc.snapshot(layer)
        pname = data.draw(st.sampled_from(sorted(case.shards[0])))
        param = getattr(layer, pname)
        kind = data.draw(st.sampled_from(BAD_KINDS))
        shard = data.draw(st.sampled_from(list(range(s)) + [None]))
        if kind == "dtype" and not [d for d in ALL_DTYPES if not dtype_accepted(param, d)]:
            kind = "shape"
        if kind == "range" and pname != "g_idx":
            kind = "shard_id"
        if kind == "shard_id":
            shard = data.draw(st.sampled_from([-1, s, s + 5, True, 1.0, "0"]))
            tensor = case.shards[0][pname]
        elif kind == "range":  # group indices outside [0, num_groups)
            tensor = case.shards[0][pname].clone()
            tensor[data.draw(st.integers(0, tensor.numel() - 1))] = data.draw(st.sampled_from([-1, param.num_groups, 2**30]))
        else:
            tensor = _bad_tensor(param, shard, kind, data)
        with pytest.raises(LoadError) as info:
            param.weight_loader(param, tensor, shard)
        assert param.qualname in str(info.value), f"error does not name the parameter: {info.value}"
        rc.assert_same(layer, before)

    prop()


# ---------------------------------------------------------------------------------------------------
# load_checkpoint: files
# ---------------------------------------------------------------------------------------------------


class Model(nn.Module):
    """Two layers of one format: a merged one (``fused_qkv_a_proj``) and a single-shard one."""

    def __init__(self, merged_case, single_case):
        super().__init__()
        self.attn = merged_case.make_layer(f"{PARENT}.fused_qkv_a_proj")
        self.mlp = single_case.make_layer("model.layers.0.mlp.down_proj")


def _single(fmt, seed, merged, **choices):
    """A one-shard case of the same format and settings as ``merged`` (the ``down_proj`` layer)."""
    case = build_case(fmt, seed, n_shards=1, **{k: v for k, v in {**merged.choices, **choices}.items() if k != "sizes"})
    case.names = ["down_proj"]
    return case


def _in_memory(model, merged_case, single_case):
    for layer, case in ((model.attn, merged_case), (model.mlp, single_case)):
        for i, tensors in enumerate(case.shards):
            for pname, t in tensors.items():
                getattr(layer, pname).weight_loader(getattr(layer, pname), t, i)
        layer.process_weights_after_loading()


def _checkpoint(merged_case, single_case, fuse: set[str]) -> dict[str, torch.Tensor]:
    out = {}
    probe = merged_case.make_layer()
    fused = merged_case.fused(probe)
    for pname in merged_case.shards[0]:
        if pname in fuse and fused[pname] is not None:
            out[f"{PARENT}.fused_qkv_a_proj.{pname}"] = fused[pname]
        else:
            for i, tensors in enumerate(merged_case.shards):
                out[f"{PARENT}.{merged_case.shard_names[i]}.{pname}"] = tensors[pname]
    for pname, t in single_case.shards[0].items():
        out[f"model.layers.0.mlp.{single_case.shard_names[0]}.{pname}"] = t
    return out


@rc.property_of("load_checkpoint: random file splits / tensor order / fused entries == in-memory loads")
@given(fmt=st.sampled_from(FORMATS), seed=st.integers(0, 2**31 - 1), data=st.data())
def test_load_checkpoint_layouts(fmt, seed, data):
    rc.tally("load_checkpoint: random file splits / tensor order / fused entries == in-memory loads")
    merged = build_case(fmt, seed, n_shards=data.draw(st.integers(1, 3)))
    single = _single(fmt, seed + 1, merged)
    fuse = set(data.draw(st.lists(st.sampled_from(sorted(merged.shards[0])), unique=True)))
    tensors = _checkpoint(merged, single, fuse)
    names = data.draw(st.permutations(sorted(tensors)))
    tensors = {n: tensors[n] for n in names}
    total = sum(t.numel() * t.element_size() for t in tensors.values())
    max_bytes = data.draw(st.one_of(st.none(), st.integers(1, max(1, total))))
    expected = Model(merged, single)
    _in_memory(expected, merged, single)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / ("model.safetensors" if max_bytes is None and data.draw(st.booleans()) else "ckpt")
        save_checkpoint(tensors, path, max_shard_bytes=None if path.suffix else max_bytes)
        model = Model(merged, single)
        report = load_checkpoint(model, path)
    assert report.ok and len(report.loaded) == len(tensors) and sorted(report.finished) == ["attn", "mlp"]
    rc.assert_models_equal(model, expected)
    _forward_equal(model.attn, expected.attn, merged.k, merged.dtype, seed)


# ---------------------------------------------------------------------------------------------------
# corruption fuzzing
# ---------------------------------------------------------------------------------------------------


_GOOD: dict[str, object] = {}
_CASE_IDS = itertools.count()


def _good_file():
    """One good single-file GPTQ + dense-bias checkpoint (built once), its bytes and the model it loads."""
    if not _GOOD:
        merged = build_case("gptq", 7, n_shards=2, bits=4, group=16, sym=False, desc_act=True)
        single = _single("gptq", 8, merged)
        tmp = Path(tempfile.mkdtemp(prefix="qlinear-robust-"))
        path = tmp / "good.safetensors"
        save_checkpoint(_checkpoint(merged, single, set()), path)
        expected = Model(merged, single)
        load_checkpoint(expected, path)
        _GOOD.update(merged=merged, single=single, raw=path.read_bytes(), expected=expected, dir=tmp)
    return _GOOD


MUTATIONS = ["truncate", "flip_header_bit", "header_length", "insert_header_byte", "delete_header_byte", "append", "empty",
             "flip_data_bit"]


@rc.property_of("corrupt safetensors (fuzzed): CheckpointError naming the file and nothing changed, or an identical load")
@given(kind=st.sampled_from(MUTATIONS), data=st.data())
def test_corrupted_file_fuzz(kind, data):
    rc.tally("corrupt safetensors (fuzzed): CheckpointError naming the file and nothing changed, or an identical load")
    good = _good_file()
    raw = bytearray(good["raw"])
    (n,) = struct.unpack("<Q", raw[:8])
    if kind == "truncate":
        raw = raw[: data.draw(st.integers(0, len(raw) - 1))]
    elif kind == "flip_header_bit":
        pos = data.draw(st.integers(0, 8 + n - 1))
        raw[pos] ^= 1 << data.draw(st.integers(0, 7))
    elif kind == "header_length":
        raw[:8] = struct.pack("<Q", data.draw(st.one_of(st.integers(0, 2 * n), st.integers(0, 2**64 - 1))))
    elif kind == "insert_header_byte":
        raw.insert(data.draw(st.integers(8, 8 + n)), data.draw(st.integers(0, 255)))
    elif kind == "delete_header_byte":
        del raw[data.draw(st.integers(8, 8 + n - 1))]
    elif kind == "append":
        raw += bytes(data.draw(st.lists(st.integers(0, 255), min_size=1, max_size=16)))
    elif kind == "empty":
        raw = bytearray()
    else:  # a data byte: safetensors has no checksum, so this may load (other values) but never crash
        pos = data.draw(st.integers(8 + n, len(raw) - 1))
        raw[pos] ^= 1 << data.draw(st.integers(0, 7))
    path = good["dir"] / f"case-{next(_CASE_IDS)}.safetensors"
    path.write_bytes(bytes(raw))
    model = Model(good["merged"], good["single"])
    before = rc.snapshot(model)
    try:
        load_checkpoint(model, path)
    except CheckpointError as e:
        assert path.name in str(e), f"error does not name the file: {e}"
        rc.assert_same(model, before)
        return
    finally:
        path.unlink()
    if kind != "flip_data_bit":
        rc.assert_models_equal(model, good["expected"])
