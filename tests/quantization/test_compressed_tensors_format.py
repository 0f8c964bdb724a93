"""compressed-tensors checkpoints written by compressed-tensors' own producer, loaded into fused layers.

Every fixture comes from ``qlinear.testing.compressed_tensors.make_ct_checkpoint`` (compressed-
tensors' ``apply_quantization_config`` + ``ModelCompressor``), and every reference weight from
compressed-tensors' own decompressor, so these tests check qlinear's decoding against the
producer, not against itself. FP8 activations are quantized the way the ops document it
(``qlinear.reference.fp8``); the weights in the reference are the producer's.
"""

from __future__ import annotations

import copy
import importlib.util
import os
import subprocess
import sys

import pytest
import torch

from qlinear.layers import MergedReplicatedLinear, ReplicatedLinear
from qlinear.parameter import LoadError
from qlinear.quantization import QuantizationConfig, UnquantizedLinearMethod, get_quantization_config
from qlinear.quantization.compressed_tensors import Fp8Scheme, IntWeightScheme, method_for_scheme
from qlinear.reference.fp8 import per_token_group_quant_fp8_ref, per_token_quant_fp8_ref, static_quant_fp8_ref
from qlinear.testing.compressed_tensors import CT_SCHEMES, legacy_zero_point_layout, make_ct_checkpoint
from qlinear.testing.layers import changed, snapshot

# CPU tests need the producer; the GPU test reads fixtures it wrote elsewhere (the GPU image has
# no compressed-tensors).
needs_ct = pytest.mark.skipif(importlib.util.find_spec("compressed_tensors") is None,
                              reason="needs compressed-tensors (pip install compressed-tensors)")

ATTN = "model.layers.0.self_attn."
NAMES = ["q_a_proj", "kv_a_proj_with_mqa"]
FUSED = ATTN + "fused_qkv_a_proj"
DTYPES = [torch.float32, torch.bfloat16]
TOL = {torch.float32: 1e-5, torch.bfloat16: 1e-2}
# K and shard rows per scheme: DeepSeek-like, the last shard unaligned; FP8_BLOCK also ragged in K.
SHAPES = {"FP8_BLOCK": (200, [128, 72])}
DEFAULT_SHAPE = (256, [128, 72])
# extra pack-quantized variants: (scheme, weight_args, K, shard rows)
INT_VARIANTS = [
    ("W4A16", {"group_size": 64}, 192, [64, 40]),
    ("W4A16_ASYM", {"strategy": "channel", "group_size": None}, 200, [128, 72]),
    ("W8A16", {"symmetric": False, "group_size": 32}, 96, [32, 20]),
]


def _rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return ((a.double() - b.double()).norm() / b.double().norm()).item()


def _weights(k: int, sizes: list[int], seed: int) -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    return {ATTN + n: torch.randn(s, k, generator=gen) * 0.05 for n, s in zip(NAMES, sizes)}


def _module_tensors(state_dict: dict[str, torch.Tensor], module: str) -> dict[str, torch.Tensor]:
    return {key[len(module) + 1:]: t for key, t in state_dict.items() if key.startswith(module + ".")}


def _layer(config: dict, k: int, sizes: list[int], dtype=torch.float32, bias=False) -> MergedReplicatedLinear:
    return MergedReplicatedLinear(k, sizes, bias=bias, params_dtype=dtype, quant_config=get_quantization_config(config),
                                  prefix=FUSED, shard_names=NAMES)


def _load(layer, tensors: dict[str, torch.Tensor], shard_id: int | None) -> None:
    for name, tensor in tensors.items():
        param = getattr(layer, name)
        param.weight_loader(param, tensor, shard_id)


def _reference(scheme: str, x: torch.Tensor, w: torch.Tensor, input_scale: torch.Tensor | None) -> torch.Tensor:
    """fp32 ``act(x) @ w.T``: x quantized as the FP8 schemes quantize activations, w from the producer."""
    k = x.shape[-1]
    x2 = x.reshape(-1, k).float()
    if scheme == "FP8_BLOCK":
        q, s = per_token_group_quant_fp8_ref(x2, 128)
        x2 = (q.float() * s.repeat_interleave(128, dim=1)[:, :k])
    elif scheme == "FP8_DYNAMIC":
        q, s = per_token_quant_fp8_ref(x2)
        x2 = q.float() * s
    elif scheme == "FP8":
        x2 = static_quant_fp8_ref(x2, input_scale).float() * input_scale
    return (x2 @ w.t()).reshape(*x.shape[:-1], w.shape[0])


def _check_forward(layer, scheme, dequantized: list[torch.Tensor], dtype, input_scale=None, bias=None, seed=1):
    k = layer.input_size
    x = torch.randn(3, 5, k, generator=torch.Generator().manual_seed(seed)).to(dtype)
    w = torch.cat(dequantized)
    ref = _reference(scheme, x, w, input_scale)
    if bias is not None:
        ref = ref + bias.to(dtype).float()
    out = layer(x)
    assert out.shape == (3, 5, w.shape[0]) and out.dtype == dtype
    assert _rel(out, ref) <= TOL[dtype], (scheme, _rel(out, ref))


# ---------------------------------------------------------------------------------------------
# loading + forward against the producer's own dequantized weights
# ---------------------------------------------------------------------------------------------


@needs_ct
@pytest.mark.parametrize("scheme", CT_SCHEMES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("fused_on_disk", [False, True])
def test_forward_matches_producer(scheme, dtype, fused_on_disk):
    k, sizes = SHAPES.get(scheme, DEFAULT_SHAPE)
    weights = _weights(k, sizes, seed=len(scheme))
    bias = torch.randn(sum(sizes), generator=torch.Generator().manual_seed(2))
    if fused_on_disk:
        # a checkpoint whose module is already fused: the producer quantized one [sum(sizes), K] matrix
        state_dict, config, deq = make_ct_checkpoint({FUSED: torch.cat(list(weights.values()))}, scheme)
        layer = _layer(config, k, sizes, dtype, bias=True)
        _load(layer, _module_tensors(state_dict, FUSED), None)
        layer.bias.weight_loader(layer.bias, bias, None)
        dequantized = [deq[FUSED]]
        input_scale = state_dict.get(FUSED + ".input_scale")
    else:
        state_dict, config, deq = make_ct_checkpoint(weights, scheme)
        layer = _layer(config, k, sizes, dtype, bias=True)
        for i in reversed(range(len(NAMES))):  # order must not matter
            _load(layer, _module_tensors(state_dict, ATTN + NAMES[i]), i)
            layer.bias.weight_loader(layer.bias, bias[sum(sizes[:i]):sum(sizes[:i + 1])], i)
        dequantized = [deq[ATTN + n] for n in NAMES]
        scales = [state_dict[ATTN + n + ".input_scale"] for n in NAMES if ATTN + n + ".input_scale" in state_dict]
        input_scale = torch.stack([s.float() for s in scales]).max() if scales else None
    assert config["quant_method"] == "compressed-tensors" and config["format"] in ("pack-quantized", "float-quantized")
    layer.process_weights_after_loading()
    if input_scale is not None:
        input_scale = input_scale.float().reshape(())
    _check_forward(layer, scheme, dequantized, dtype, input_scale, bias)
    assert layer.backend() in ("reference", "torch.linear")


@needs_ct
@pytest.mark.parametrize("scheme,weight_args,k,sizes", INT_VARIANTS)
def test_pack_quantized_variants(scheme, weight_args, k, sizes):
    weights = _weights(k, sizes, seed=k)
    state_dict, config, deq = make_ct_checkpoint(weights, scheme, weight_args=weight_args)
    layer = _layer(config, k, sizes)
    for i, name in enumerate(NAMES):
        _load(layer, _module_tensors(state_dict, ATTN + name), i)
    layer.process_weights_after_loading()
    _check_forward(layer, scheme, [deq[ATTN + n] for n in NAMES], torch.float32)


@needs_ct
@pytest.mark.parametrize("bits_scheme", ["W4A16_ASYM", "W8A16"])
def test_legacy_unpacked_zero_points(bits_scheme):
    """compressed-tensors <= 0.9 stored asymmetric zero points unpacked (int8 [N, G])."""
    k, sizes = 256, [100, 72]  # unpacked zero points need no row alignment
    args = {"symmetric": False} if bits_scheme == "W8A16" else None
    ckpt = legacy_zero_point_layout(make_ct_checkpoint(_weights(k, sizes, seed=3), bits_scheme, weight_args=args))
    zp = ckpt.state_dict[ATTN + NAMES[1] + ".weight_zero_point"]
    assert zp.dtype == torch.int8 and zp.shape == (72, 2) and ckpt.config["version"].startswith("0.9")
    layer = _layer(ckpt.config, k, sizes)
    for i, name in enumerate(NAMES):
        _load(layer, _module_tensors(ckpt.state_dict, ATTN + name), i)
    layer.process_weights_after_loading()
    _check_forward(layer, bits_scheme, [ckpt.dequantized[ATTN + n] for n in NAMES], torch.float32)


@needs_ct
@pytest.mark.parametrize("scheme", CT_SCHEMES)
@pytest.mark.parametrize("shard", [0, 1])
def test_each_shard_alone_is_missing_at_finishing(scheme, shard):
    k, sizes = SHAPES.get(scheme, DEFAULT_SHAPE)
    state_dict, config, _ = make_ct_checkpoint({ATTN + NAMES[shard]: torch.randn(sizes[shard], k)}, scheme)
    layer = _layer(config, k, sizes)
    _load(layer, _module_tensors(state_dict, ATTN + NAMES[shard]), shard)
    with pytest.raises(ValueError, match=f"never loaded.*{NAMES[1 - shard]}"):
        layer.process_weights_after_loading()
    assert not layer.weights_finished


# ---------------------------------------------------------------------------------------------
# config parsing
# ---------------------------------------------------------------------------------------------

# A W4A16 config.json["quantization_config"] as llm-compressor writes it, every field spelled out.
FULL_CONFIG = {
    "config_groups": {
        "group_0": {
            "format": "pack-quantized",
            "input_activations": None,
            "output_activations": None,
            "targets": ["Linear"],
            "weights": {
                "actorder": None,
                "block_structure": None,
                "dynamic": False,
                "group_size": 128,
                "num_bits": 4,
                "observer": "minmax",
                "observer_kwargs": {},
                "scale_dtype": None,
                "strategy": "group",
                "symmetric": True,
                "type": "int",
                "zp_dtype": None,
            },
        }
    },
    "format": "pack-quantized",
    "global_compression_ratio": None,
    "ignore": ["lm_head", "re:.*mlp.gate$"],
    "kv_cache_scheme": None,
    "quant_method": "compressed-tensors",
    "quantization_status": "compressed",
    "sparsity_config": {},
    "transform_config": {},
    "version": "0.12.3.a20251014",
}


def _with(path: str, value, config=None) -> dict:
    """A copy of ``config`` (FULL_CONFIG) with the dotted ``path`` set to ``value``."""
    out = copy.deepcopy(config or FULL_CONFIG)
    node = out
    parts = path.split(".")
    for part in parts[:-1]:
        node = node[part]
    node[parts[-1]] = value
    return out


@needs_ct
def test_full_real_config():
    qc = get_quantization_config(FULL_CONFIG)
    assert qc.zero_points_packed and qc.version == (0, 12, 3)
    layer = _layer(FULL_CONFIG, 256, [128, 72])
    assert layer.quant_method.name == "ct-w4a16"
    assert {"weight_packed", "weight_scale", "weight_shape"} <= {n for n, _ in layer.named_parameters()}
    assert "weight_zero_point" not in dict(layer.named_parameters())
    head = ReplicatedLinear(256, 64, quant_config=qc, prefix="lm_head")
    gate = ReplicatedLinear(256, 8, quant_config=qc, prefix="model.layers.3.mlp.gate")
    assert isinstance(head.quant_method, UnquantizedLinearMethod) and isinstance(gate.quant_method, UnquantizedLinearMethod)


@needs_ct
def test_preset_group_names_and_old_version():
    config = {"quant_method": "compressed-tensors", "format": "pack-quantized", "quantization_status": "compressed",
              "config_groups": {"W4A16_ASYM": ["Linear"]}, "version": "0.9.1"}
    qc = get_quantization_config(config)
    assert not qc.zero_points_packed
    layer = _layer(config, 256, [100, 72])  # unpacked zero points: no alignment needed
    assert layer.weight_zero_point.dtype == torch.int8 and layer.weight_zero_point.shape == (172, 2)


@needs_ct
def test_target_precedence_and_regex():
    """Exact name beats "re:" beats class name, as in compressed-tensors' apply_quantization_config."""
    fp8 = {"targets": ["re:.*kv_a_proj_with_mqa$"], "format": "float-quantized",
           "weights": {"num_bits": 8, "type": "float", "strategy": "channel", "symmetric": True, "dynamic": False},
           "input_activations": {"num_bits": 8, "type": "float", "strategy": "token", "symmetric": True, "dynamic": True}}
    w8 = copy.deepcopy(FULL_CONFIG["config_groups"]["group_0"])
    w8["targets"] = [ATTN + "q_a_proj"]
    w8["weights"]["num_bits"] = 8
    config = _with("config_groups", {"group_0": FULL_CONFIG["config_groups"]["group_0"], "group_1": fp8, "group_2": w8})
    config["format"] = "mixed-precision"
    qc = get_quantization_config(config)
    assert ReplicatedLinear(256, 72, quant_config=qc, prefix=ATTN + "kv_a_proj_with_mqa").quant_method.name == "fp8-channel"
    assert ReplicatedLinear(256, 128, quant_config=qc, prefix=ATTN + "q_a_proj").quant_method.name == "ct-w8a16"
    assert ReplicatedLinear(256, 128, quant_config=qc, prefix=ATTN + "o_proj").quant_method.name == "ct-w4a16"
    with pytest.raises(ValueError, match=r"different compressed-tensors schemes.*q_a_proj: group_2.*kv_a_proj_with_mqa: group_1"):
        _layer(config, 256, [128, 72])


@needs_ct
def test_mixed_precision_from_producer():
    k, sizes = 256, [128, 72]
    weights = _weights(k, sizes, seed=11)
    weights["model.layers.0.mlp.down_proj"] = torch.randn(64, k) * 0.05
    mapping = {ATTN + "q_a_proj": "W4A16", ATTN + "kv_a_proj_with_mqa": "FP8_DYNAMIC", "model.layers.0.mlp.down_proj": "W4A16"}
    state_dict, config, deq = make_ct_checkpoint(weights, mapping)
    assert config["format"] == "mixed-precision"
    qc = get_quantization_config(config)
    for name, scheme in mapping.items():
        layer = ReplicatedLinear(k, weights[name].shape[0], params_dtype=torch.float32, quant_config=qc, prefix=name)
        _load(layer, _module_tensors(state_dict, name), None)
        layer.process_weights_after_loading()
        _check_forward(layer, scheme, [deq[name]], torch.float32)
    with pytest.raises(ValueError, match="different compressed-tensors schemes"):
        _layer(config, k, sizes)


@needs_ct
@pytest.mark.parametrize("ignore", [None, ["re:.*kv_a_proj_with_mqa$"], ["re:.*self_attn.kv_a.*", "lm_head"]])
def test_ignore_from_producer(ignore):
    k, sizes = 256, [128, 72]
    weights = _weights(k, sizes, seed=5)
    state_dict, config, deq = make_ct_checkpoint(weights, "W4A16", ignore=["re:.*kv_a_proj_with_mqa$"])
    # the producer writes the names it matched; hand-edited configs keep regexes
    assert config["ignore"] == [ATTN + "kv_a_proj_with_mqa"]
    if ignore is not None:
        config["ignore"] = ignore
    qc = get_quantization_config(config)
    kv = ReplicatedLinear(k, 72, params_dtype=torch.float32, quant_config=qc, prefix=ATTN + "kv_a_proj_with_mqa")
    assert isinstance(kv.quant_method, UnquantizedLinearMethod)
    _load(kv, _module_tensors(state_dict, ATTN + "kv_a_proj_with_mqa"), None)
    kv.process_weights_after_loading()
    _check_forward(kv, "W4A16", [deq[ATTN + "kv_a_proj_with_mqa"]], torch.float32)
    with pytest.raises(ValueError, match=r"q_a_proj: group_0 .*kv_a_proj_with_mqa: unquantized"):
        _layer(config, k, sizes)


def _fp8_config(**inputs):
    group = {"targets": ["Linear"], "format": "float-quantized",
             "weights": {"num_bits": 8, "type": "float", "strategy": "block", "block_structure": [128, 128],
                         "symmetric": True, "dynamic": False},
             "input_activations": {"num_bits": 8, "type": "float", "strategy": "group", "group_size": 128,
                                   "symmetric": True, "dynamic": True, **inputs}}
    return {"quant_method": "compressed-tensors", "format": "float-quantized", "quantization_status": "compressed",
            "config_groups": {"group_0": group}}


UNSUPPORTED = [
    (_with("config_groups.group_0.weights.num_bits", 2), "weights.num_bits=2"),
    (_with("config_groups.group_0.weights.num_bits", 3), "weights.num_bits=3"),
    (_with("config_groups.group_0.weights.type", "float"), "weights.type='float'"),
    (_with("config_groups.group_0.weights.actorder", "group"), "actorder='group'"),
    (_with("config_groups.group_0.weights", {"num_bits": 4, "type": "int", "strategy": "tensor", "symmetric": True}),
     "weights.strategy='tensor'"),
    (_with("config_groups.group_0.input_activations",
           {"num_bits": 8, "type": "int", "strategy": "token", "symmetric": True, "dynamic": True}), "input_activations"),
    (_with("config_groups.group_0.format", "int-quantized"), "format='int-quantized'"),
    (_with("config_groups.group_0.format", "nvfp4-pack-quantized"), "format='nvfp4-pack-quantized'"),
    (_with("config_groups.group_0.format", None, _with("format", "mixed-precision")), "mixed-precision"),
    (_with("sparsity_config", {"format": "sparse-24-bitmask", "sparsity_structure": "2:4"}), "sparsity_config"),
    (_with("transform_config", {"config_groups": {"u": {"type": "hadamard"}}}), "transform_config"),
    (_with("quantization_status", "frozen"), "quantization_status='frozen'"),
    (_with("config_groups.group_0.weights.strategy", "bogus"), "compressed-tensors rejects it"),
    (_with("quant_method", "gptq"), None),  # dispatched elsewhere; checked separately below
    (_fp8_config(group_size=64), "input_activations"),
    (_fp8_config(strategy="token", group_size=None), "input_activations"),
    (_with("config_groups.group_0.input_activations", None, _fp8_config()), "weight-only fp8"),
    (_with("config_groups.group_0.weights.symmetric", False, _fp8_config()), "weights.symmetric=False"),
]


@needs_ct
@pytest.mark.parametrize("config,needle", [u for u in UNSUPPORTED if u[1] is not None])
def test_unsupported_settings_are_named(config, needle):
    with pytest.raises(ValueError, match="compressed-tensors") as info:
        get_quantization_config(config)
    assert needle in str(info.value)
    if "rejects" not in needle:
        assert "supported" in str(info.value)


@needs_ct
def test_wrong_quant_method_to_the_class():
    from qlinear.quantization.compressed_tensors import CompressedTensorsConfig

    with pytest.raises(ValueError, match="quant_method='gptq'"):
        CompressedTensorsConfig.from_config(_with("quant_method", "gptq"))


def test_missing_package_names_the_install(monkeypatch):
    from qlinear.quantization.compressed_tensors import CompressedTensorsConfig

    monkeypatch.setitem(sys.modules, "compressed_tensors.quantization", None)
    with pytest.raises(ImportError, match="pip install compressed-tensors"):
        CompressedTensorsConfig.from_config(FULL_CONFIG)


def test_import_stays_light():
    code = ("import sys, qlinear.quantization.compressed_tensors, qlinear.testing.compressed_tensors; "
            "assert 'compressed_tensors' not in sys.modules and 'transformers' not in sys.modules, "
            "sorted(m for m in sys.modules if 'compressed' in m or 'transformers' in m)")
    subprocess.run([sys.executable, "-c", code], check=True)


# ---------------------------------------------------------------------------------------------
# error paths: nothing is half-loaded
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def asym_checkpoint():
    return make_ct_checkpoint(_weights(256, [128, 72], seed=7), "W4A16_ASYM")


@needs_ct
def test_weight_shape_disagreeing_with_packed_tensor(asym_checkpoint):
    state_dict, config, _ = asym_checkpoint
    layer = _layer(config, 256, [128, 72])
    for i, name in enumerate(NAMES):
        tensors = _module_tensors(state_dict, ATTN + name)
        if i == 1:
            tensors["weight_shape"] = torch.tensor([64, 256])
        _load(layer, tensors, i)
    before = snapshot(layer)
    expected = r"weight_shape.*expected.*kv_a_proj_with_mqa=\[72, 256\].*got.*kv_a_proj_with_mqa=\[64, 256\]"
    with pytest.raises(ValueError, match=expected):
        layer.process_weights_after_loading()
    assert not layer.weights_finished and not changed(layer, before)
    assert not any(n.startswith("w4a16_") for n, _ in layer.named_buffers())


@pytest.mark.parametrize(
    "name,bad,needle",
    [
        # packed along N instead of K: [ceil(72 / 8), 256]
        ("weight_packed", lambda t: torch.zeros(9, t.shape[1] * 8, dtype=torch.int32), "expected shape"),
        ("weight_packed", lambda t: t.t().contiguous(), "expected shape"),
        ("weight_packed", lambda t: t.to(torch.int64), "expected dtype torch.int32"),
        ("weight_scale", lambda t: t.double(), "expected dtype torch.float32"),
        ("weight_scale", lambda t: t[:, :1].contiguous(), "expected shape"),
        ("weight_zero_point", lambda t: torch.zeros(72, 2, dtype=torch.int8), "expected dtype torch.int32"),
        ("weight_zero_point", lambda t: torch.zeros(72, 2, dtype=torch.int32), "expected shape"),
        ("weight_shape", lambda t: t.to(torch.int32), "expected dtype torch.int64"),
        ("weight_shape", lambda t: t[:1], "expected shape"),
    ],
)
@needs_ct
def test_bad_tensors_are_rejected_before_any_write(asym_checkpoint, name, bad, needle):
    state_dict, config, _ = asym_checkpoint
    layer = _layer(config, 256, [128, 72])
    _load(layer, _module_tensors(state_dict, ATTN + NAMES[0]), 0)
    before = snapshot(layer)
    tensor = bad(state_dict[ATTN + NAMES[1] + "." + name])
    param = getattr(layer, name)
    with pytest.raises(LoadError, match=needle) as info:
        param.weight_loader(param, tensor, 1)
    assert f"{FUSED}.{name}" in str(info.value)
    assert not changed(layer, before) and param.loaded_shards == {0}


@needs_ct
def test_fp8_weight_in_the_wrong_dtype():
    state_dict, config, _ = make_ct_checkpoint(_weights(200, [128, 72], seed=9), "FP8_BLOCK")
    layer = _layer(config, 200, [128, 72])
    before = snapshot(layer)
    with pytest.raises(LoadError, match=r"fused_qkv_a_proj.weight: expected dtype torch.float8_e4m3fn.*got torch.bfloat16"):
        layer.weight.weight_loader(layer.weight, torch.randn(72, 200, dtype=torch.bfloat16), 1)
    with pytest.raises(LoadError, match=r"weight_scale: shard 1 .*expected shape \(1, 2\), got \(2, 2\)"):
        layer.weight_scale.weight_loader(layer.weight_scale, torch.ones(2, 2, dtype=torch.bfloat16), 1)
    assert not changed(layer, before)


@needs_ct
def test_layer_refuses_unaligned_shards_and_k():
    # packed zero points: every shard but the last must start a fresh int32 word (8 rows)
    with pytest.raises(ValueError, match=r"multiple of 8 rows.*\[100, 72\]"):
        _layer(_with("config_groups.group_0.weights.symmetric", False), 256, [100, 72])
    with pytest.raises(ValueError, match="input_size to be a multiple of 128, got 200"):
        _layer(FULL_CONFIG, 200, [128, 72])
    with pytest.raises(ValueError, match=r"block_n=128.*\[72, 128\]"):
        _layer(_fp8_config(), 256, [72, 128])


@needs_ct
def test_legacy_zero_points_out_of_range():
    ckpt = legacy_zero_point_layout(make_ct_checkpoint(_weights(256, [128, 72], seed=4), "W4A16_ASYM"))
    layer = _layer(ckpt.config, 256, [128, 72])
    for i, name in enumerate(NAMES):
        tensors = _module_tensors(ckpt.state_dict, ATTN + name)
        if i == 1:
            tensors["weight_zero_point"] = tensors["weight_zero_point"].clone()
            tensors["weight_zero_point"][3, 1] = 9
        _load(layer, tensors, i)
    with pytest.raises(ValueError, match=r"weight_zero_point: int4 zero points must lie in \[-8, 7\], got \[.*, 9\]"):
        layer.process_weights_after_loading()
    assert not layer.weights_finished


# ---------------------------------------------------------------------------------------------
# GPU: the kernels behind the layers, on checkpoints the producer wrote on a CPU machine
#   python -m qlinear.testing.compressed_tensors build/ct_fixtures      (here, with compressed-tensors)
#   QLINEAR_CT_FIXTURES=build/ct_fixtures QLINEAR_GPU_RESULTS=$OUT/ct_gpu.json \
#       python -m pytest -q -m gpu tests/quantization/test_compressed_tensors_format.py   (GPU)
# ---------------------------------------------------------------------------------------------

# The schemes the presets parse to (the GPU image cannot run compressed-tensors' parser; the
# CPU test below checks this table against it).
PRESET_SCHEMES = {
    "W4A16": IntWeightScheme(bits=4, symmetric=True, group_size=128),
    "W4A16_ASYM": IntWeightScheme(bits=4, symmetric=False, group_size=128),
    "W8A16": IntWeightScheme(bits=8, symmetric=True, group_size=128),
    "FP8": Fp8Scheme("tensor", None, static_input=True),
    "FP8_DYNAMIC": Fp8Scheme("channel", None, static_input=False),
    "FP8_BLOCK": Fp8Scheme("block", (128, 128), static_input=False),
}
GPU_M = [1, 16, 300]


class _FixedScheme(QuantizationConfig):
    """Every layer gets the method of one scheme (what CompressedTensorsConfig would pick)."""

    quant_method = "compressed-tensors"

    def __init__(self, scheme):
        super().__init__()
        self.scheme = scheme

    @classmethod
    def from_config(cls, config):
        raise NotImplementedError

    def get_quant_method(self, layer, prefix):
        return method_for_scheme(self.scheme)


@needs_ct
@pytest.mark.parametrize("scheme", CT_SCHEMES)
def test_preset_table_matches_the_parser(scheme):
    _, config, _ = make_ct_checkpoint({ATTN + NAMES[0]: torch.randn(128, 256)}, scheme)
    assert get_quantization_config(config).schemes == {"group_0": PRESET_SCHEMES[scheme]}


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("scheme", CT_SCHEMES)
def test_gpu_backends_match_producer(scheme, gpu_results):
    path = os.path.join(os.environ.get("QLINEAR_CT_FIXTURES", "build/ct_fixtures"), f"{scheme}.pt")
    if not os.path.exists(path):
        pytest.skip(f"no fixture {path}: run `python -m qlinear.testing.compressed_tensors build/ct_fixtures` "
                    "where compressed-tensors is installed")
    fx = torch.load(path, weights_only=True)
    names, sizes, k = fx["names"], fx["sizes"], fx["k"]
    layer = MergedReplicatedLinear(k, sizes, params_dtype=torch.bfloat16, quant_config=_FixedScheme(PRESET_SCHEMES[scheme]),
                                   prefix=FUSED, shard_names=[n.rpartition(".")[2] for n in names]).to("cuda")
    for i, name in enumerate(names):  # CPU checkpoint tensors into CUDA parameters
        _load(layer, _module_tensors(fx["state_dict"], name), i)
    layer.process_weights_after_loading()
    w = torch.cat([fx["dequantized"][n] for n in names]).cuda()
    scales = [fx["state_dict"][n + ".input_scale"] for n in names if n + ".input_scale" in fx["state_dict"]]
    input_scale = torch.stack([s.float() for s in scales]).max().cuda() if scales else None
    gen = torch.Generator(device="cuda").manual_seed(0)
    for m in GPU_M:
        x = torch.randn(m, k, device="cuda", generator=gen).to(torch.bfloat16)
        out = layer(x)
        torch.cuda.synchronize()
        err = _rel(out, _reference(scheme, x, w, input_scale))
        gpu_results.append({"scheme": scheme, "k": k, "sizes": sizes, "m": m, "backend": layer.backend(x),
                            "method": layer.quant_method.name, "rel_err": err})
        assert err <= TOL[torch.bfloat16], (scheme, m, layer.backend(x), err)
