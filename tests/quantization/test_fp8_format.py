"""FP8 formats (``quant_method: "fp8"`` and the methods compressed-tensors reuses) on the CPU.

Fixtures: DeepSeek-style tensors written by ``qlinear.testing.fp8`` (checked bit-exactly against
compressed-tensors' ``FP8BlockDequantizer``, an independent decoder) and by transformers'
fine-grained FP8 quantizer (its own producer; sides multiples of 128, since it leaves other
weights unquantized). Every forward is compared with an fp32 reference built from the
*producer's* dequantized weights: ``fq(x) @ W^T``, where ``fq`` quantizes activations as the op
defines (per token and group of ``bk`` for block weights, per token or static otherwise).
"""

from __future__ import annotations

import json
import types

import pytest
import torch

from qlinear.layers.linear import LinearBase, MergedReplicatedLinear, ReplicatedLinear
from qlinear.parameter import LoadError, ShardPlan
from qlinear.quantization import UnquantizedLinearMethod, get_quantization_config
from qlinear.quantization.base import QuantizationConfig
from qlinear.quantization.fp8 import (
    Fp8BlockLinearMethod,
    Fp8ChannelLinearMethod,
    Fp8Config,
    Fp8LinearMethod,
    Fp8TensorLinearMethod,
)
from qlinear.testing.fp8 import (
    dequantize_fp8_block,
    dequantize_fp8_channel,
    dequantize_fp8_tensor,
    fp8_block_config,
    fp8_linear_expected,
    fp8_tensor_config,
    input_scale_for,
    quantize_fp8_block,
    quantize_fp8_channel,
    quantize_fp8_tensor,
    relative_error,
)

PREFIX = "model.layers.0.self_attn.fused_qkv_a_proj"
SHARD_NAMES = ["q_a_proj", "kv_a_proj_with_mqa"]

# (K, output shards, block): DeepSeek MLA in miniature -- ragged K and a ragged last shard.
BLOCK_CASES = [(320, [256, 72], (128, 128)), (200, [128, 64, 40], (64, 32))]
TENSOR_CASES = [(200, [96, 40]), (72, [8, 24, 16])]
DTYPE_TOL = [(torch.float32, 1e-5), (torch.bfloat16, 1e-2)]
LOAD_MODES = ["shards", "shards_reversed", "fused"]
M_SHAPES = [(1,), (7,), (2, 3)]
SCALE_FMTS = [None, "ue8m0"]


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _weights(sizes, K, seed=0):
    """Fresh random shard weights with different magnitudes (so shard scales differ)."""
    g = _gen(seed)
    return [torch.randn(n, K, generator=g) * (0.02 * (3 ** i)) for i, n in enumerate(sizes)]


def _x(m_shape, K, dtype, seed=1):
    return torch.randn(*m_shape, K, generator=_gen(seed)).to(dtype)


def _merged(K, sizes, cfg, dtype=torch.float32, **kw):
    names = kw.pop("shard_names", None)
    if names is None and len(sizes) == 2:
        names = SHARD_NAMES
    return MergedReplicatedLinear(K, sizes, params_dtype=dtype, quant_config=cfg, prefix=PREFIX, shard_names=names, **kw)


def _load(layer, name, tensor, shard):
    param = getattr(layer, name)
    param.weight_loader(param, tensor, shard)


def _load_all(layer, per_shard: list[dict], mode: str, fused: dict | None = None):
    if mode == "fused":
        for name, tensor in fused.items():
            _load(layer, name, tensor, None)
        return
    order = range(len(per_shard)) if mode == "shards" else reversed(range(len(per_shard)))
    for i in order:
        for name, tensor in per_shard[i].items():
            _load(layer, name, tensor, i)


def _bytes(layer):
    return {n: p.detach().view(torch.uint8).clone() for n, p in layer.named_parameters()}


class _Fixed(QuantizationConfig):
    """Hands every layer one given method (how compressed-tensors will use Fp8LinearMethod)."""

    quant_method = "test-fixed"

    def __init__(self, make):
        super().__init__()
        self.make = make

    @classmethod
    def from_config(cls, config):
        raise NotImplementedError

    def get_quant_method(self, layer, prefix):
        return self.make()


@pytest.fixture(scope="module")
def ct_block_decoder():
    """compressed-tensors' FP8BlockDequantizer as an fp32 decoder of DeepSeek tensors."""
    mod = pytest.importorskip("compressed_tensors.entrypoints.convert.converters.fp8block_dequantizer")

    def decode(weight, scale_inv, block):
        conv = mod.FP8BlockDequantizer(weight_block_size=tuple(block), dtype=torch.float32)
        return conv.process({"m.weight": weight.clone(), "m.weight_scale_inv": scale_inv.clone()})["m.weight"]

    return decode


# -- config parsing --------------------------------------------------------------------------


def test_block_config_parses():
    cfg = get_quantization_config(fp8_block_config())
    assert isinstance(cfg, Fp8Config)
    assert cfg.weight_block_size == (128, 128) and cfg.activation_scheme == "dynamic" and cfg.scale_fmt is None
    layer = _merged(320, [256, 72], cfg)
    assert isinstance(layer.quant_method, Fp8BlockLinearMethod)
    assert layer.quant_method.weight_block_size == (128, 128)
    assert layer.weight.dtype == torch.float8_e4m3fn and tuple(layer.weight.shape) == (328, 320)
    assert layer.weight_scale_inv.dtype == torch.float32 and tuple(layer.weight_scale_inv.shape) == (3, 3)


@pytest.mark.parametrize("scale_fmt", ["ue8m0", "float"])
def test_scale_fmt_parses(scale_fmt):
    cfg = get_quantization_config(fp8_block_config(scale_fmt=scale_fmt))
    assert cfg.scale_fmt == (None if scale_fmt == "float" else "ue8m0")


@pytest.mark.parametrize("scheme", ["dynamic", "static"])
def test_per_tensor_config_parses(scheme):
    cfg = get_quantization_config(fp8_tensor_config(scheme))
    assert cfg.weight_block_size is None
    layer = _merged(200, [96, 40], cfg)
    assert isinstance(layer.quant_method, Fp8TensorLinearMethod)
    assert tuple(layer.weight_scale.shape) == (2,)
    assert hasattr(layer, "input_scale") == (scheme == "static")


def test_transformers_written_config_parses():
    qc = pytest.importorskip("transformers.utils.quantization_config")
    for fmt in ("float", "ue8m0"):
        written = json.loads(qc.FineGrainedFP8Config(weight_block_size=(128, 128), scale_fmt=fmt).to_json_string())
        cfg = get_quantization_config(written)
        assert cfg.weight_block_size == (128, 128)


IGNORE_CASES = [
    ({"ignored_layers": ["re:.*self_attn\\.(q_a_proj|kv_a_proj_with_mqa)"]}, True),
    ({"modules_to_not_convert": ["q_a_proj", "kv_a_proj_with_mqa"]}, True),
    ({"ignored_layers": ["lm_head"], "modules_to_not_convert": ["re:model\\.layers\\.1\\..*"]}, False),
]


@pytest.mark.parametrize("ignore,ignored", IGNORE_CASES)
@pytest.mark.parametrize("base", [fp8_block_config, fp8_tensor_config])
def test_ignore_lists(base, ignore, ignored):
    cfg = get_quantization_config(base(**ignore))
    layer = _merged(320, [256, 72], cfg)
    assert isinstance(layer.quant_method, UnquantizedLinearMethod) == ignored
    head = ReplicatedLinear(64, 40, quant_config=get_quantization_config(base(ignored_layers=["lm_head"])), prefix="lm_head")
    assert isinstance(head.quant_method, UnquantizedLinearMethod)


def test_ignore_list_half_of_a_fused_layer_is_an_error():
    cfg = get_quantization_config(fp8_block_config(ignored_layers=["model.layers.0.self_attn.q_a_proj"]))
    with pytest.raises(ValueError, match="disagree.*q_a_proj=yes.*kv_a_proj_with_mqa=no"):
        _merged(320, [256, 72], cfg)


BAD_CONFIGS = [
    ({"quant_method": "fp8", "weight_block_size": [128, 128], "activation_sheme": "dynamic"}, "activation_sheme"),
    (fp8_block_config(fmt="e5m2"), "fmt='e5m2'"),
    (fp8_block_config(activation_scheme="static"), "activation_scheme='static'"),
    (fp8_tensor_config("per_token"), "activation_scheme='per_token'"),
    (fp8_block_config(block=(128,)), "weight_block_size"),
    ({"quant_method": "fp8", "weight_block_size": [0, 128]}, "weight_block_size"),
    ({"quant_method": "fp8", "weight_block_size": "128x128"}, "weight_block_size"),
    (fp8_block_config(scale_fmt="ue4m3"), "scale_fmt='ue4m3'"),
    (fp8_tensor_config(scale_fmt="ue8m0"), "scale_fmt='ue8m0'"),
    (fp8_block_config(dequantize=True), "dequantize=True"),
    (fp8_block_config(expert_dtype="fp4"), "expert_dtype='fp4'"),
    ({**fp8_block_config(), "ignored_layers": "lm_head"}, "ignored_layers='lm_head'"),
]


@pytest.mark.parametrize("config,named", BAD_CONFIGS)
def test_bad_config_names_the_key(config, named):
    with pytest.raises(ValueError, match="supported") as info:
        get_quantization_config(config)
    assert named in str(info.value)


def test_informational_keys_accepted():
    cfg = get_quantization_config(fp8_block_config(dequantize=False, modules_to_convert=["embed_tokens"], expert_dtype="fp8"))
    assert cfg.weight_block_size == (128, 128)


# -- block format: load shard by shard, fused, forward ---------------------------------------


def _block_fixture(K, sizes, block, scale_fmt=None, seed=0):
    ws = _weights(sizes, K, seed)
    per_shard = [quantize_fp8_block(w, block, scale_fmt) for w in ws]
    fused = {
        "weight": torch.cat([t["weight"] for t in per_shard]),
        "weight_scale_inv": torch.cat([t["weight_scale_inv"] for t in per_shard]),
    }
    return per_shard, fused


@pytest.mark.parametrize("scale_fmt", SCALE_FMTS)
@pytest.mark.parametrize("K,sizes,block", BLOCK_CASES)
def test_block_producer_matches_independent_decoder(K, sizes, block, scale_fmt, ct_block_decoder):
    per_shard, _ = _block_fixture(K, sizes, block, scale_fmt)
    for t, w in zip(per_shard, _weights(sizes, K)):
        ours = dequantize_fp8_block(t["weight"], t["weight_scale_inv"], block)
        theirs = ct_block_decoder(t["weight"], t["weight_scale_inv"], block)
        assert torch.equal(ours, theirs)
        assert relative_error(ours, w) < 0.05  # e4m3 keeps ~3 mantissa bits
        if scale_fmt == "ue8m0":
            assert t["weight_scale_inv"].dtype == torch.float8_e8m0fnu
            s = t["weight_scale_inv"].float()
            assert torch.equal(s, torch.exp2(torch.log2(s).round()))


@pytest.mark.parametrize("dtype,tol", DTYPE_TOL)
@pytest.mark.parametrize("mode", LOAD_MODES)
@pytest.mark.parametrize("scale_fmt", SCALE_FMTS)
@pytest.mark.parametrize("K,sizes,block", BLOCK_CASES)
def test_block_load_and_forward(K, sizes, block, scale_fmt, mode, dtype, tol, ct_block_decoder):
    cfg = get_quantization_config(fp8_block_config(block, scale_fmt))
    per_shard, fused = _block_fixture(K, sizes, block, scale_fmt)
    layer = _merged(K, sizes, cfg, dtype)
    _load_all(layer, per_shard, mode, fused)
    layer.process_weights_after_loading()
    # ue8m0 scales widened into the fp32 parameter exactly
    assert torch.equal(layer.weight_scale_inv, fused["weight_scale_inv"].float())
    w_ref = torch.cat([ct_block_decoder(t["weight"], t["weight_scale_inv"], block) for t in per_shard])
    for m_shape in M_SHAPES:
        x = _x(m_shape, K, dtype)
        y = layer(x)
        assert y.dtype == dtype and tuple(y.shape) == (*m_shape, sum(sizes))
        assert relative_error(y, fp8_linear_expected(x, w_ref, "group", group_size=block[1])) <= tol, m_shape
    assert layer.backend(x) == "reference" and layer.backend() == "reference"


@pytest.mark.parametrize("scale_fmt", ["float", "ue8m0"])
def test_block_transformers_producer(scale_fmt):
    """transformers' fine-grained FP8 quantizer writes the shards; its own decoder is the reference."""
    fp8 = pytest.importorskip("transformers.integrations.finegrained_fp8")
    qc = pytest.importorskip("transformers.utils.quantization_config")
    config = qc.FineGrainedFP8Config(weight_block_size=(128, 128), scale_fmt=scale_fmt)
    hf_quantizer = types.SimpleNamespace(quantization_config=config)
    K, sizes = 384, [256, 128]
    per_shard = []
    for name, w in zip(SHARD_NAMES, _weights(sizes, K, seed=5)):
        out = fp8.Fp8Quantize(hf_quantizer)._quantize_one(f"{name}.weight", w)
        assert out[f"{name}.weight"].dtype == torch.float8_e4m3fn  # quantized, not passed through
        per_shard.append({"weight": out[f"{name}.weight"], "weight_scale_inv": out[f"{name}.weight_scale_inv"]})
    layer = _merged(K, sizes, get_quantization_config(json.loads(config.to_json_string())))
    _load_all(layer, per_shard, "shards")
    layer.process_weights_after_loading()
    decode = fp8.Fp8Dequantize(hf_quantizer)._dequantize_one
    w_ref = torch.cat([decode(t["weight"], t["weight_scale_inv"], torch.float32) for t in per_shard])
    x = _x((5,), K, torch.float32)
    assert relative_error(layer(x), fp8_linear_expected(x, w_ref, "group")) <= 1e-5


@pytest.mark.parametrize("K,sizes,block", BLOCK_CASES)
def test_block_each_shard_alone_then_missing_is_an_error(K, sizes, block):
    per_shard, _ = _block_fixture(K, sizes, block)
    cfg = get_quantization_config(fp8_block_config(block))
    for only in range(len(sizes)):
        layer = _merged(K, sizes, cfg)
        for name, tensor in per_shard[only].items():
            _load(layer, name, tensor, only)
        rows = slice(sum(sizes[:only]), sum(sizes[: only + 1]))
        assert torch.equal(layer.weight.detach()[rows].view(torch.uint8), per_shard[only]["weight"].view(torch.uint8))
        with pytest.raises(ValueError, match="never loaded") as info:
            layer.process_weights_after_loading()
        missing = [n for i, n in enumerate(SHARD_NAMES if len(sizes) == 2 else [f"shard {j}" for j in range(len(sizes))]) if i != only]
        for name in missing:
            assert name in str(info.value)
        assert not layer.weights_finished


def test_block_misaligned_shard_refused_at_construction():
    cfg = get_quantization_config(fp8_block_config())
    with pytest.raises(ValueError) as info:
        _merged(320, [200, 72], cfg)
    msg = str(info.value)
    assert "[200, 72]" in msg and "128" in msg
    _merged(448, [768, 576], cfg)  # a DeepSeek-like ragged last shard (576 = 4.5 blocks) is legal


def test_block_bad_loads_change_nothing():
    K, sizes, block = 320, [256, 72], (128, 128)
    per_shard, fused = _block_fixture(K, sizes, block)
    layer = _merged(K, sizes, get_quantization_config(fp8_block_config(block)))
    for name, tensor in per_shard[0].items():
        _load(layer, name, tensor, 0)
    before = _bytes(layer)
    w1, s1 = per_shard[1]["weight"], per_shard[1]["weight_scale_inv"]
    bad = [
        ("weight", w1.float().to(torch.bfloat16), 1, "float8_e4m3fn.*bfloat16"),  # wrong dtype
        ("weight", w1.view(torch.int8), 1, "float8_e4m3fn.*int8"),
        ("weight", w1[:, :-1], 1, r"expected shape \(72, 320\), got \(72, 319\)"),
        ("weight_scale_inv", torch.ones(2, 3), 1, r"expected shape \(1, 3\), got \(2, 3\)"),  # wrong scale shape
        ("weight_scale_inv", s1.to(torch.float64), 1, "float32.*float64"),  # a narrowing cast
        ("weight_scale_inv", fused["weight_scale_inv"][:, :2], None, r"expected shape \(3, 3\), got \(3, 2\)"),
        ("weight", w1, 2, "loaded_shard_id"),
    ]
    for name, tensor, shard, match in bad:
        with pytest.raises(LoadError, match=match) as info:
            _load(layer, name, tensor, shard)
        assert f"{PREFIX}.{name}" in str(info.value)
        after = _bytes(layer)
        assert all(torch.equal(before[n], after[n]) for n in before), f"{name} half-loaded"
    assert layer.weight.loaded_shards == {0} and layer.weight_scale_inv.loaded_shards == {0}


def test_block_nan_scale_refused_at_finishing():
    K, sizes, block = 320, [256, 72], (128, 128)
    per_shard, _ = _block_fixture(K, sizes, block, "ue8m0")
    scale = per_shard[1]["weight_scale_inv"].clone()
    scale.view(torch.uint8)[0, 1] = 0xFF  # e8m0 NaN
    per_shard[1]["weight_scale_inv"] = scale
    layer = _merged(K, sizes, get_quantization_config(fp8_block_config(block, "ue8m0")))
    _load_all(layer, per_shard, "shards")
    with pytest.raises(ValueError, match=r"weight_scale_inv: expected finite.*nan at index \(2, 1\)"):
        layer.process_weights_after_loading()


# -- per-tensor format -----------------------------------------------------------------------


def _tensor_fixture(K, sizes, scale_shape=(), seed=0):
    ws = _weights(sizes, K, seed)
    return [quantize_fp8_tensor(w, scale_shape) for w in ws]


@pytest.mark.parametrize("dtype,tol", DTYPE_TOL)
@pytest.mark.parametrize("scale_shape", [(), (1,)])
@pytest.mark.parametrize("scheme", ["dynamic", "static"])
@pytest.mark.parametrize("K,sizes", TENSOR_CASES)
def test_tensor_load_and_forward(K, sizes, scheme, scale_shape, dtype, tol):
    per_shard = _tensor_fixture(K, sizes, scale_shape)
    calib = _x((16,), K, dtype, seed=9)
    if scheme == "static":  # each matrix calibrated on its own, so the input scales differ
        for i, t in enumerate(per_shard):
            t["input_scale"] = input_scale_for(calib, scale_shape) * (1 + 0.25 * i)
    layer = _merged(K, sizes, get_quantization_config(fp8_tensor_config(scheme)), dtype)
    _load_all(layer, per_shard, "shards_reversed")
    for i, t in enumerate(per_shard):  # shard i's scale in slot i
        assert layer.weight_scale[i].item() == t["weight_scale"].item()
    layer.process_weights_after_loading()
    # every row carries its own shard's scale: exact per-channel scales, no requantization
    expected_rows = torch.cat([t["weight_scale"].reshape(1).expand(n) for t, n in zip(per_shard, sizes)])
    assert torch.equal(layer.fp8_weight_scale, expected_rows)
    w_ref = torch.cat([dequantize_fp8_tensor(t["weight"], t["weight_scale"]) for t in per_shard])
    s_in = None
    if scheme == "static":
        s_in = torch.stack([t["input_scale"].reshape(()) for t in per_shard]).max()
        assert torch.equal(layer.fp8_input_scale, s_in.reshape(1))
    for m_shape in M_SHAPES:
        x = _x(m_shape, K, dtype)
        ref = fp8_linear_expected(x, w_ref, "static" if s_in is not None else "token", input_scale=s_in)
        y = layer(x)
        assert y.dtype == dtype and tuple(y.shape) == (*m_shape, sum(sizes))
        assert relative_error(y, ref) <= tol, m_shape
    assert layer.backend(x) == "reference"


@pytest.mark.parametrize("dtype,tol", DTYPE_TOL)
@pytest.mark.parametrize("K,sizes", TENSOR_CASES)
def test_tensor_fused_on_disk(K, sizes, dtype, tol):
    """One matrix quantized as a whole on disk: its one scale fills every slot."""
    w = torch.cat(_weights(sizes, K))
    t = quantize_fp8_tensor(w, (1,))
    layer = _merged(K, sizes, get_quantization_config(fp8_tensor_config()), dtype)
    _load_all(layer, [], "fused", t)
    layer.process_weights_after_loading()
    assert tuple(layer.fp8_weight_scale.shape) == (1,)  # all shards agree: stays per-tensor
    x = _x((4,), K, dtype)
    ref = fp8_linear_expected(x, dequantize_fp8_tensor(t["weight"], t["weight_scale"]), "token")
    assert relative_error(layer(x), ref) <= tol


def test_tensor_scale_lands_in_its_own_slot():
    K, sizes = 200, [96, 40]
    per_shard = _tensor_fixture(K, sizes)
    layer = _merged(K, sizes, get_quantization_config(fp8_tensor_config("static")))
    layer.weight_scale.data.fill_(-7.0)  # sentinels: a scale landing in the wrong slot shows
    layer.input_scale.data.fill_(-7.0)
    before = _bytes(layer)
    _load(layer, "weight_scale", per_shard[1]["weight_scale"], 1)
    _load(layer, "input_scale", torch.tensor([0.5]), 1)
    after = _bytes(layer)
    assert layer.weight_scale[1].item() == per_shard[1]["weight_scale"].item()
    assert layer.weight_scale[0].item() == -7.0 and layer.input_scale[0].item() == -7.0  # slot 0 untouched
    assert layer.input_scale[1].item() == 0.5
    assert torch.equal(after["weight"], before["weight"])
    assert layer.weight_scale.loaded_shards == {1}
    with pytest.raises(ValueError, match="never loaded.*q_a_proj"):
        layer.process_weights_after_loading()


def test_tensor_bad_loads_change_nothing():
    K, sizes = 200, [96, 40]
    per_shard = _tensor_fixture(K, sizes)
    layer = _merged(K, sizes, get_quantization_config(fp8_tensor_config("static")))
    _load(layer, "weight_scale", per_shard[0]["weight_scale"], 0)
    before = _bytes(layer)
    bad = [
        ("weight_scale", torch.ones(2), 1, r"expected shape \(\), got \(2,\)"),
        ("weight_scale", torch.ones(1, 1), 1, r"expected shape \(\), got \(1, 1\)"),
        ("weight_scale", torch.ones((), dtype=torch.float64), 1, "float32.*float64"),
        ("input_scale", torch.ones(40), 1, r"expected shape \(\), got \(40,\)"),
        ("weight", per_shard[1]["weight"].float(), 1, "float8_e4m3fn.*float32"),
    ]
    for name, tensor, shard, match in bad:
        with pytest.raises(LoadError, match=match):
            _load(layer, name, tensor, shard)
        after = _bytes(layer)
        assert all(torch.equal(before[n], after[n]) for n in before), f"{name} half-loaded"


def test_tensor_zero_input_scale_refused_and_forward_needs_finishing():
    K, sizes = 200, [96, 40]
    per_shard = _tensor_fixture(K, sizes)
    for t in per_shard:
        t["input_scale"] = torch.tensor(0.0)
    layer = _merged(K, sizes, get_quantization_config(fp8_tensor_config("static")))
    _load_all(layer, per_shard, "shards")
    with pytest.raises(RuntimeError, match="process_weights_after_loading"):
        layer(torch.randn(2, K))
    with pytest.raises(ValueError, match=r"input_scale: expected finite positive scales, got 0.0"):
        layer.process_weights_after_loading()
    assert not hasattr(layer, "fp8_weight_scale") and not layer.weights_finished  # nothing half-finished


# -- the constructor API compressed-tensors uses -----------------------------------------------


@pytest.mark.parametrize("dtype,tol", DTYPE_TOL)
@pytest.mark.parametrize("static", [False, True])
@pytest.mark.parametrize("scale_dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("K,sizes", TENSOR_CASES)
def test_channel_scheme(K, sizes, scale_dtype, static, dtype, tol):
    per_shard = [quantize_fp8_channel(w, scale_dtype) for w in _weights(sizes, K)]
    x = _x((3,), K, dtype)
    if static:
        for i, t in enumerate(per_shard):
            t["input_scale"] = input_scale_for(x, (1,)).to(scale_dtype) * (2 - 0.5 * i)
    cfg = _Fixed(lambda: Fp8LinearMethod.for_scheme("channel", static_input=static))
    layer = _merged(K, sizes, cfg, dtype)
    assert isinstance(layer.quant_method, Fp8ChannelLinearMethod)
    assert tuple(layer.weight_scale.shape) == (sum(sizes), 1) and layer.weight_scale.dtype == torch.float32
    _load_all(layer, per_shard, "shards")
    layer.process_weights_after_loading()
    w_ref = torch.cat([dequantize_fp8_channel(t["weight"], t["weight_scale"]) for t in per_shard])
    if static:
        s_in = torch.stack([t["input_scale"].float().reshape(()) for t in per_shard]).max()
        ref = fp8_linear_expected(x, w_ref, "static", input_scale=s_in)
    else:
        ref = fp8_linear_expected(x, w_ref, "token")
    assert relative_error(layer(x), ref) <= tol


@pytest.mark.parametrize("dtype,tol", DTYPE_TOL)
@pytest.mark.parametrize("K,sizes,block", BLOCK_CASES)
def test_block_scheme_with_compressed_tensors_names(K, sizes, block, dtype, tol):
    """``weight_scale`` in the model dtype (bf16), as compressed-tensors' FP8_BLOCK writes it."""
    g = _gen(3)
    per_shard = []
    for n in sizes:
        w = (torch.randn(n, K, generator=g) * 100).to(torch.float8_e4m3fn)
        scale = (torch.rand(-(-n // block[0]), -(-K // block[1]), generator=g) * 1e-3 + 1e-4).to(torch.bfloat16)
        per_shard.append({"weight": w, "weight_scale": scale})
    cfg = _Fixed(lambda: Fp8LinearMethod.for_scheme("block", block_size=block, scale_name="weight_scale"))
    layer = _merged(K, sizes, cfg, dtype)
    assert not hasattr(layer, "weight_scale_inv")
    _load_all(layer, per_shard, "shards")
    layer.process_weights_after_loading()
    w_ref = torch.cat([dequantize_fp8_block(t["weight"], t["weight_scale"], block) for t in per_shard])
    x = _x((2, 2), K, dtype)
    assert relative_error(layer(x), fp8_linear_expected(x, w_ref, "group", group_size=block[1])) <= tol


def test_tensor_scheme_with_bf16_scales():
    K, sizes = 200, [96, 40]
    per_shard = []
    for t in _tensor_fixture(K, sizes, (1,)):
        s = t["weight_scale"].to(torch.bfloat16)
        per_shard.append({"weight": t["weight"], "weight_scale": s, "input_scale": torch.tensor([0.01], dtype=torch.bfloat16)})
    cfg = _Fixed(lambda: Fp8LinearMethod.for_scheme("tensor", static_input=True))
    layer = _merged(K, sizes, cfg)
    _load_all(layer, per_shard, "shards")
    layer.process_weights_after_loading()
    assert torch.equal(layer.weight_scale, torch.cat([t["weight_scale"].float() for t in per_shard]))


FOR_SCHEME_ERRORS = [
    (("block",), {}, "block_size"),
    (("block",), {"block_size": (128, 0)}, "block_size"),
    (("block",), {"block_size": (128, 128), "static_input": True}, "dynamic activations only"),
    (("tensor",), {"block_size": (128, 128)}, "only applies to 'block'"),
    (("group",), {}, "strategy='group'"),
    (("channel",), {"channel_scale_ndim": 3}, "scale_ndim"),
    (("tensor",), {"scale_name": "input_scale", "static_input": True}, "two different identifiers"),
]


@pytest.mark.parametrize("args,kwargs,match", FOR_SCHEME_ERRORS)
def test_for_scheme_errors(args, kwargs, match):
    with pytest.raises(ValueError, match=match):
        Fp8LinearMethod.for_scheme(*args, **kwargs)


def test_channel_scale_ndim_1():
    K, sizes = 72, [8, 24, 16]
    per_shard = [{"weight": t["weight"], "weight_scale": t["weight_scale"].reshape(-1)}
                 for t in (quantize_fp8_channel(w) for w in _weights(sizes, K))]
    layer = _merged(K, sizes, _Fixed(lambda: Fp8LinearMethod.for_scheme("channel", channel_scale_ndim=1)))
    _load_all(layer, per_shard, "shards")
    layer.process_weights_after_loading()
    w_ref = torch.cat([dequantize_fp8_channel(t["weight"], t["weight_scale"]) for t in per_shard])
    x = _x((4,), K, torch.float32)
    assert relative_error(layer(x), fp8_linear_expected(x, w_ref, "token")) <= 1e-5


# -- bias and a tensor-parallel slice -----------------------------------------------------------

BIAS_SCHEMES = ["block", "tensor-static", "channel"]


def _scheme_fixture(scheme, K, sizes, x):
    """(config, per-shard checkpoint tensors, dequantized W, activation mode, static input scale)."""
    ws = _weights(sizes, K, seed=7)
    if scheme == "block":
        per_shard = [quantize_fp8_block(w) for w in ws]
        w_ref = torch.cat([dequantize_fp8_block(t["weight"], t["weight_scale_inv"]) for t in per_shard])
        return get_quantization_config(fp8_block_config()), per_shard, w_ref, "group", None
    if scheme == "tensor-static":
        per_shard = [quantize_fp8_tensor(w) for w in ws]
        for i, t in enumerate(per_shard):
            t["input_scale"] = input_scale_for(x) * (1 + i)
        w_ref = torch.cat([dequantize_fp8_tensor(t["weight"], t["weight_scale"]) for t in per_shard])
        s_in = torch.stack([t["input_scale"] for t in per_shard]).max()
        return get_quantization_config(fp8_tensor_config("static")), per_shard, w_ref, "static", s_in
    per_shard = [quantize_fp8_channel(w) for w in ws]
    w_ref = torch.cat([dequantize_fp8_channel(t["weight"], t["weight_scale"]) for t in per_shard])
    return _Fixed(lambda: Fp8LinearMethod.for_scheme("channel")), per_shard, w_ref, "token", None


@pytest.mark.parametrize("dtype,tol", DTYPE_TOL)
@pytest.mark.parametrize("scheme", BIAS_SCHEMES)
def test_bias_loaded_per_shard(scheme, dtype, tol):
    K, sizes = 320, [256, 72]
    x = _x((3,), K, dtype)
    cfg, per_shard, w_ref, mode, s_in = _scheme_fixture(scheme, K, sizes, x)
    biases = [torch.randn(n, generator=_gen(20 + i)) for i, n in enumerate(sizes)]
    for t, b in zip(per_shard, biases):
        t["bias"] = b.to(dtype)
    layer = _merged(K, sizes, cfg, dtype, bias=True)
    _load_all(layer, per_shard, "shards_reversed")
    layer.process_weights_after_loading()
    bias = torch.cat([b.to(dtype) for b in biases])
    ref = fp8_linear_expected(x, w_ref, mode, input_scale=s_in, bias=bias)
    assert relative_error(layer(x), ref) <= tol


@pytest.mark.parametrize("scheme", BIAS_SCHEMES)
def test_rank_slices_match_the_whole_layer(scheme):
    """Two processes each holding half of every shard's rows (block-aligned) compute the rows a
    replicated layer computes for them; per-tensor scales follow their shard into each slice."""
    K, sizes, world = 320, [256, 512], 2
    x = _x((4,), K, torch.float32)
    cfg, per_shard, w_ref, mode, s_in = _scheme_fixture(scheme, K, sizes, x)
    full = _merged(K, sizes, cfg)
    _load_all(full, per_shard, "shards")
    full.process_weights_after_loading()
    y_full = full(x)
    offsets = [0, sizes[0]]
    for rank in range(world):
        local = tuple(n // world for n in sizes)
        plan = ShardPlan(tuple(sizes), local, tuple(rank * n for n in local), K, K, rank=rank, world=world)
        layer = LinearBase(K, sizes, params_dtype=torch.float32, quant_config=cfg, prefix=PREFIX,
                           shard_names=SHARD_NAMES, plan=plan)
        _load_all(layer, per_shard, "shards")
        layer.process_weights_after_loading()
        rows = torch.cat([torch.arange(o + rank * n, o + (rank + 1) * n) for o, n in zip(offsets, local)])
        assert relative_error(layer(x), y_full[:, rows]) <= 1e-6
        assert relative_error(layer(x), fp8_linear_expected(x, w_ref[rows], mode, input_scale=s_in)) <= 1e-5


# -- GPU: the same layers on CUDA through the real kernels (run by the lead on an H200) --------
# QLINEAR_GPU_RESULTS=<file.json> makes the module write one row per case (backend, error) there.

GPU_CASES = [  # (name, K, shards, config builder)
    ("fp8-block", 7168, [1536, 576], lambda: fp8_block_config()),
    ("fp8-block-ue8m0", 7168, [1536, 576], lambda: fp8_block_config(scale_fmt="ue8m0")),
    ("fp8-block-ragged", 320, [256, 72], lambda: fp8_block_config()),
    ("fp8-tensor-dynamic", 7168, [1536, 576], lambda: fp8_tensor_config("dynamic")),
    ("fp8-tensor-static", 7168, [1536, 576], lambda: fp8_tensor_config("static")),
    ("fp8-channel-static", 7168, [1536, 576], None),
]
GPU_MS = [1, 16, 128, 1000]
GPU_DTYPES = [torch.bfloat16, torch.float16]


def _gpu_layer(name, K, sizes, make_cfg, dtype, x):
    """Build on the GPU (as a framework does), load CPU checkpoint tensors shard by shard."""
    ws = _weights(sizes, K, seed=11)
    if name.startswith("fp8-block"):
        fmt = "ue8m0" if name.endswith("ue8m0") else None
        per_shard = [quantize_fp8_block(w, (128, 128), fmt) for w in ws]
        w_ref = torch.cat([dequantize_fp8_block(t["weight"], t["weight_scale_inv"]) for t in per_shard])
        mode, s_in = "group", None
    elif name.startswith("fp8-tensor"):
        per_shard = [quantize_fp8_tensor(w) for w in ws]
        w_ref = torch.cat([dequantize_fp8_tensor(t["weight"], t["weight_scale"]) for t in per_shard])
        mode, s_in = "token", None
    else:
        per_shard = [quantize_fp8_channel(w, torch.bfloat16) for w in ws]
        w_ref = torch.cat([dequantize_fp8_channel(t["weight"], t["weight_scale"]) for t in per_shard])
        mode, s_in = "token", None
    if name.endswith("static"):
        for i, t in enumerate(per_shard):
            t["input_scale"] = input_scale_for(x.cpu(), (1,)) * (1 + 0.25 * i)
        s_in = torch.stack([t["input_scale"].reshape(()) for t in per_shard]).max()
        mode = "static"
    cfg = (get_quantization_config(make_cfg()) if make_cfg is not None
           else _Fixed(lambda: Fp8LinearMethod.for_scheme("channel", static_input=True)))
    with torch.device("cuda"):
        layer = _merged(K, sizes, cfg, dtype)
    _load_all(layer, per_shard, "shards")
    layer.process_weights_after_loading()
    return layer, w_ref, mode, s_in


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("dtype", GPU_DTYPES)
@pytest.mark.parametrize("name,K,sizes,make_cfg", GPU_CASES)
def test_gpu_layer_forward(name, K, sizes, make_cfg, dtype, gpu_results):
    xs = {M: torch.randn(M, K, generator=_gen(M)).to(dtype).cuda() for M in GPU_MS}
    layer, w_ref, mode, s_in = _gpu_layer(name, K, sizes, make_cfg, dtype, xs[GPU_MS[-1]])
    w_ref = w_ref.cuda()
    for M, x in xs.items():
        y = layer(x)
        ref = fp8_linear_expected(x, w_ref, mode, input_scale=None if s_in is None else s_in.cuda())
        err = relative_error(y, ref)
        backend = layer.backend(x)
        gpu_results.append({"case": name, "K": K, "shards": sizes, "M": M, "dtype": str(dtype),
                            "backend": backend, "rel_err": err})
        assert y.dtype == dtype and y.is_cuda
        assert err <= 1e-2, f"{name} M={M} {dtype} backend={backend}: relative error {err}"
