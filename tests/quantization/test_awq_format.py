"""AWQ (GEMM version): config parsing, shard-by-shard loading into merged layers, forward against
the fp32 dequantized reference, and the error paths.

The tensors come from ``qlinear.testing.awq.quantize_awq`` (a packer written from FORMATS.md) and
are decoded three ways: ``dequantize_awq`` (the formula), compressed-tensors' own
``AutoAWQConverter`` (an independent decoder written by others), and the layer itself.
"""

from __future__ import annotations

import pytest
import torch

from qlinear.layers import MergedReplicatedLinear, ReplicatedLinear
from qlinear.parameter import LoadError
from qlinear.quantization import UnquantizedLinearMethod, get_quantization_config
from qlinear.quantization.awq import AWQConfig, AWQLinearMethod
from qlinear.testing.awq import AWQ_ORDER, awq_config, dequantize_awq, quantize_awq

K = 256
SIZES = [[128, 72], [64, 40, 24], [128, 76]]  # 76: the last shard may end mid-word
GROUPS = [32, 64, 128, -1]
DTYPES = [torch.float32, torch.bfloat16]
TOL = {torch.float32: 1e-5, torch.bfloat16: 1e-2}


def _rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return ((a.double() - b.double()).norm() / b.double().norm()).item()


def _layer(sizes, group=128, dtype=torch.float32, bias=False, **extra):
    cfg = get_quantization_config(awq_config(group, **extra))
    return MergedReplicatedLinear(K, sizes, bias=bias, params_dtype=dtype, quant_config=cfg, prefix="m.fused")


def _load(layer, tensors: dict, shard_id):
    for name, t in tensors.items():
        param = getattr(layer, name)
        param.weight_loader(param, t, shard_id)


def _shards(sizes, group, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [quantize_awq(torch.randn(n, K, generator=gen) * (1 + i), group) for i, n in enumerate(sizes)]


# ---------------------------------------------------------------------------------------------
# the testing packer, the formula and compressed-tensors' converter agree
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [72, 136, 76])
@pytest.mark.parametrize("group", GROUPS)
def test_decoder_matches_packer(n, group):
    w = torch.randn(n, K) + 0.3
    tensors, deq = quantize_awq(w, group)
    g = K if group == -1 else group
    assert tensors["qweight"].shape == (K, -(-n // 8)) and tensors["qweight"].dtype == torch.int32
    assert tensors["qzeros"].shape == (K // g, -(-n // 8)) and tensors["qzeros"].dtype == torch.int32
    assert tensors["scales"].shape == (K // g, n) and tensors["scales"].dtype == torch.float16
    assert torch.equal(dequantize_awq(tensors), deq)
    step = tensors["scales"].float()[torch.arange(K) // g].T
    assert bool(((w - deq).abs() <= step * (0.5 + 2.0**-7) + 1e-6).all())


@pytest.mark.parametrize("n", [72, 136])
@pytest.mark.parametrize("group", GROUPS)
def test_compressed_tensors_converter_agrees_bit_exactly(n, group):
    converters = pytest.importorskip("compressed_tensors.entrypoints.convert.converters.autoawq")
    helpers = pytest.importorskip("compressed_tensors.compressors.pack_quantized.helpers")
    tensors, deq = quantize_awq(torch.randn(n, K), group)
    g = K if group == -1 else group
    conv = converters.AutoAWQConverter.from_autoawq_config(awq_config(g))
    out = conv.process({f"layer.{k}": v.clone() for k, v in tensors.items()})
    assert torch.equal(out["layer.weight_shape"], torch.tensor([n, K]))
    q = helpers.unpack_from_int32(out["layer.weight_packed"], 4, torch.Size([n, K])).float()  # signed
    zp = helpers.unpack_from_int32(out["layer.weight_zero_point"], 4, torch.Size([n, K // g]), packed_dim=0).float()
    scale = out["layer.weight_scale"].float()  # [N, G]
    theirs = (q - zp.repeat_interleave(g, dim=1)) * scale.repeat_interleave(g, dim=1)
    assert torch.equal(theirs, deq)
    assert torch.equal(theirs, dequantize_awq(tensors))


def test_known_answer_nibble_order():
    """Word 0x76543210: nibble i holds value i, so column 8c + ORDER[i] gets i."""
    tensors = {
        "qweight": torch.full((8, 1), 0x76543210, dtype=torch.int32),  # K = 8, N = 8
        "qzeros": torch.tensor([[0x11111111]], dtype=torch.int32),  # zero 1 everywhere
        "scales": torch.full((1, 8), 0.5, dtype=torch.float16),
    }
    q = torch.empty(8)
    q[list(AWQ_ORDER)] = torch.arange(8.0)
    assert q.tolist() == [0, 4, 1, 5, 2, 6, 3, 7]
    expected = ((q - 1) * 0.5)[:, None].expand(8, 8)  # W[n, k]: the same for every k
    assert torch.equal(dequantize_awq(tensors), expected)
    layer = ReplicatedLinear(8, 8, params_dtype=torch.float32, prefix="kat",
                             quant_config=get_quantization_config(awq_config(8)))
    _load(layer, tensors, None)
    layer.process_weights_after_loading()
    x = torch.randn(3, 8)
    assert _rel(layer(x), x @ expected.T) <= 1e-6


# ---------------------------------------------------------------------------------------------
# merged layers
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("sizes", SIZES)
@pytest.mark.parametrize("group", GROUPS)
def test_merged_shard_by_shard(sizes, group):
    shards = _shards(sizes, group, seed=sum(sizes) + group)
    biases = [torch.randn(n) for n in sizes]
    w = torch.cat([d for _, d in shards])
    for dtype in DTYPES:
        layer = _layer(sizes, group, dtype, bias=True)
        assert isinstance(layer.quant_method, AWQLinearMethod) and layer.quant_method.name == "awq-w4a16"
        for i in torch.randperm(len(sizes)).tolist():
            _load(layer, shards[i][0], i)
            layer.bias.weight_loader(layer.bias, biases[i], i)
        layer.process_weights_after_loading()
        assert not hasattr(layer, "qweight") and layer.w4a16_zeros.dtype == torch.uint8
        x = torch.randn(2, 7, K)
        out = layer(x.to(dtype))
        assert out.shape == (2, 7, sum(sizes)) and out.dtype == dtype
        ref = x.to(dtype).double() @ w.double().T + torch.cat(biases).to(dtype).double()
        assert _rel(out, ref) <= TOL[dtype]
        assert layer.backend(x) == "reference"


@pytest.mark.parametrize("group", [64, -1])
def test_fused_on_disk(group):
    sizes = [128, 72]
    tensors, deq = quantize_awq(torch.randn(sum(sizes), K), group)
    layer = _layer(sizes, group)
    _load(layer, tensors, None)
    layer.process_weights_after_loading()
    x = torch.randn(5, K)
    assert _rel(layer(x), x @ deq.T) <= 1e-5


def test_each_shard_alone_and_missing_shard():
    sizes = [128, 72]
    shards = _shards(sizes, 64, seed=4)
    for i, n in enumerate(sizes):
        single = ReplicatedLinear(K, n, params_dtype=torch.float32, prefix=f"single{i}",
                                  quant_config=get_quantization_config(awq_config(64)))
        _load(single, shards[i][0], None)
        single.process_weights_after_loading()
        x = torch.randn(3, K)
        assert _rel(single(x), x @ shards[i][1].T) <= 1e-5
    layer = MergedReplicatedLinear(K, sizes, params_dtype=torch.float32, prefix="a.fused",
                                   shard_names=["q_a_proj", "kv_a_proj_with_mqa"],
                                   quant_config=get_quantization_config(awq_config(64)))
    _load(layer, shards[1][0], 1)
    with pytest.raises(ValueError, match=r"a.fused: never loaded: a.fused.qweight: \['q_a_proj'\]"):
        layer.process_weights_after_loading()
    assert hasattr(layer, "qweight") and not layer.weights_finished


# ---------------------------------------------------------------------------------------------
# config
# ---------------------------------------------------------------------------------------------


def test_config_parsing():
    cfg = get_quantization_config(awq_config(64))
    assert isinstance(cfg, AWQConfig) and (cfg.bits, cfg.group_size) == (4, 64)
    # AutoAWQ's quant_config.json spelling and transformers' extra keys
    cfg = get_quantization_config({"quant_method": "awq", "w_bit": 4, "q_group_size": 32, "zero_point": True,
                                   "version": "GEMM", "backend": "autoawq", "do_fuse": False})
    assert cfg.group_size == 32


@pytest.mark.parametrize(
    "override, pattern",
    [
        ({"version": "gemv"}, r"\(awq\): unsupported version='gemv'; supported: \['gemm'\]"),
        ({"version": "gemv_fast"}, r"unsupported version='gemv_fast'"),
        ({"bits": 8}, r"unsupported bits=8; supported: \[4\]"),
        ({"zero_point": False}, r"unsupported zero_point=False; supported: \[True\]"),
        ({"group_size": 0}, r"unsupported group_size=0"),
        ({"bits": 4, "w_bit": 8}, r"bits=4 and w_bit=8 disagree"),
        ({"mystery": True}, r"unknown setting\(s\) \['mystery'\]"),
    ],
)
def test_config_errors(override, pattern):
    with pytest.raises(ValueError, match=pattern):
        get_quantization_config(awq_config(**override))


def test_modules_to_not_convert():
    cfg = get_quantization_config(awq_config(modules_to_not_convert=["visual", "mlp.gate"]))
    assert isinstance(ReplicatedLinear(K, 64, quant_config=cfg, prefix="model.visual.blocks.0.attn.qkv").quant_method,
                      UnquantizedLinearMethod)
    assert isinstance(ReplicatedLinear(K, 64, quant_config=cfg, prefix="model.layers.1.mlp.gate").quant_method,
                      UnquantizedLinearMethod)
    assert isinstance(ReplicatedLinear(K, 64, quant_config=cfg, prefix="model.layers.1.self_attn.q_a_proj").quant_method,
                      AWQLinearMethod)
    mixed = get_quantization_config(awq_config(modules_to_not_convert=["q_a_proj"]))
    with pytest.raises(ValueError, match=r"disagree on modules_to_not_convert"):
        MergedReplicatedLinear(K, [128, 72], quant_config=mixed, prefix="model.layers.0.self_attn.fused",
                               shard_names=["q_a_proj", "kv_a_proj_with_mqa"])


def test_alignment_errors_at_construction():
    with pytest.raises(ValueError, match=r"awq-w4a16 needs every output shard but the last to be a multiple of 8 rows; shard sizes \[100, 96\]"):
        _layer([100, 96])
    with pytest.raises(ValueError, match=r"needs input_size to be a multiple of 96, got 256"):
        _layer([64], group=96)


# ---------------------------------------------------------------------------------------------
# error paths
# ---------------------------------------------------------------------------------------------


def test_wrong_shapes_and_dtypes_leave_the_layer_untouched():
    sizes = [128, 72]
    shards = _shards(sizes, 64, seed=13)
    layer = _layer(sizes, 64)
    _load(layer, shards[0][0], 0)
    snap = {n: (p.data.clone(), set(p.loaded_shards)) for n, p in layer.named_parameters(recurse=False)}
    t1 = shards[1][0]
    cases = [
        ("qweight", t1["qweight"].T.contiguous(), 1,
         r"m.fused.qweight: shard 1 \(72 rows of \[128, 72\]\): expected shape \(256, 9\), got \(9, 256\)"),
        # a GPTQ-style qweight (packed along K) sent to an AWQ layer
        ("qweight", torch.zeros(K // 8, 72, dtype=torch.int32), 1, r"expected shape \(256, 9\), got \(32, 72\)"),
        ("qzeros", t1["qzeros"].T.contiguous(), 1, r"m.fused.qzeros: shard 1 .*expected shape \(4, 9\), got \(9, 4\)"),
        ("scales", t1["scales"][:, :64], 1, r"m.fused.scales: shard 1 .*expected shape \(4, 72\), got \(4, 64\)"),
        ("qweight", t1["qweight"].to(torch.int16), 1, r"m.fused.qweight: expected dtype torch.int32, got torch.int16"),
        ("qzeros", t1["qzeros"].to(torch.uint8), 1, r"m.fused.qzeros: expected dtype torch.int32, got torch.uint8"),
        ("scales", t1["scales"].double(), 1, r"m.fused.scales: expected dtype torch.float32 .*got torch.float64"),
    ]
    for name, tensor, shard, pattern in cases:
        param = getattr(layer, name)
        with pytest.raises(LoadError, match=pattern):
            param.weight_loader(param, tensor, shard)
        for n, p in layer.named_parameters(recurse=False):
            # bytes, not values: rows of a shard never loaded are uninitialized and may hold NaN
            same = torch.equal(p.data.view(torch.uint8), snap[n][0].view(torch.uint8))
            assert same and p.loaded_shards == snap[n][1], f"{n} changed"
    _load(layer, t1, 1)
    layer.process_weights_after_loading()
    x = torch.randn(2, K)
    assert _rel(layer(x), x @ torch.cat([shards[0][1], shards[1][1]]).T) <= 1e-5


def test_layer_moves_with_to():
    """Packed tensors are buffers: ``layer.to`` moves them and forward rebuilds its view."""
    shards = _shards([128, 72], 64, seed=21)
    layer = _layer([128, 72], 64)
    for i, (t, _) in enumerate(shards):
        _load(layer, t, i)
    layer.process_weights_after_loading()
    x = torch.randn(2, K)
    before = layer(x)
    layer.to(torch.device("cpu"))  # same device: new tensors only if needed; forward still right
    layer._buffers["w4a16_qweight"] = layer.w4a16_qweight.clone()  # what a device move does
    assert torch.equal(layer(x), before)
    assert layer.quant_method.packed(layer).qweight is layer.w4a16_qweight


# ---------------------------------------------------------------------------------------------
# GPU: the same layers on CUDA through the real W4A16 kernels (run by the lead on an H200).
# QLINEAR_GPU_RESULTS=<file.json> makes the module write one row per case (backend, error) there.
# ---------------------------------------------------------------------------------------------

GPU_CASES = [(128, 7168, [1536, 576]), (64, 7168, [1536, 576]), (-1, 7168, [1536, 576]), (32, 1024, [256, 72])]
GPU_MS = [1, 16, 128, 1024]
GPU_DTYPES = [torch.bfloat16, torch.float16]


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("group, k, sizes", GPU_CASES)
def test_gpu_layer_forward(group, k, sizes, gpu_results):
    gen = torch.Generator().manual_seed(group + 7)
    shards = [quantize_awq(torch.randn(n, k, generator=gen), group) for n in sizes]
    w = torch.cat([d for _, d in shards]).cuda().double()
    for dtype in GPU_DTYPES:
        with torch.device("cuda"):
            layer = MergedReplicatedLinear(k, sizes, params_dtype=dtype, prefix="gpu.fused",
                                           quant_config=get_quantization_config(awq_config(group)))
        for i, (t, _) in enumerate(shards):
            _load(layer, t, i)
        layer.process_weights_after_loading()
        assert layer.w4a16_qweight.is_cuda
        for m in GPU_MS:
            x = torch.randn(m, k, device="cuda").to(dtype)
            y = layer(x)
            err = _rel(y, x.double() @ w.T)
            backend = layer.backend(x)
            gpu_results.append({"format": "awq", "group": group, "K": k, "shards": sizes, "M": m,
                                "dtype": str(dtype), "backend": backend, "rel_err": err})
            assert y.dtype == dtype and y.is_cuda
            assert err <= 1e-2, f"M={m} {dtype} backend={backend}: relative error {err}"
