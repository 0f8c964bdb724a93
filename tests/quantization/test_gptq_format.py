"""GPTQ (checkpoint format v1 / gptq_v2): config parsing, shard-by-shard loading into merged
layers, forward against the fp32 dequantized reference, and every error path.

The tensors come from ``qlinear.testing.gptq.quantize_gptq`` (a packer written from FORMATS.md);
``dequantize_gptq`` decodes them straight from the formula, and the hand-packed known-answer
tests below pin both to the spec's bit order.
"""

from __future__ import annotations

import pytest
import torch

from qlinear.layers import MergedReplicatedLinear, ReplicatedLinear
from qlinear.parameter import LoadError
from qlinear.quantization import UnquantizedLinearMethod, get_quantization_config
from qlinear.quantization.gptq import GPTQConfig, GPTQLinearMethod
from qlinear.testing.gptq import dequantize_gptq, gptq_config, quantize_gptq
from qlinear.testing.layers import changed, snapshot

K = 256
SIZES = [[128, 72], [64, 40, 24]]  # 72: a multiple of 8 but not of 128
BITS = [4, 8]
GROUPS = [32, 64, 128, -1]
SYM = [True, False]
DESC_ACT = [False, True]
DTYPES = [torch.float32, torch.bfloat16]
TOL = {torch.float32: 1e-5, torch.bfloat16: 1e-2}


def _rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return ((a.double() - b.double()).norm() / b.double().norm()).item()


def _layer(sizes, bits=4, group=128, sym=True, desc_act=False, dtype=torch.float32, bias=False, **extra):
    cfg = get_quantization_config(gptq_config(bits=bits, group_size=group, desc_act=desc_act, sym=sym, **extra))
    return MergedReplicatedLinear(K, sizes, bias=bias, params_dtype=dtype, quant_config=cfg, prefix="m.fused")


def _load(layer, tensors: dict, shard_id):
    for name, t in tensors.items():
        param = getattr(layer, name)
        param.weight_loader(param, t, shard_id)


def _shards(sizes, bits, group, sym, desc_act, seed=0):
    gen = torch.Generator().manual_seed(seed)
    out = []
    for i, n in enumerate(sizes):
        w = torch.randn(n, K, generator=gen)
        out.append(quantize_gptq(w, bits, group, sym, desc_act, seed=seed * 100 + i))
    return out


# ---------------------------------------------------------------------------------------------
# the testing packer / decoder pair and the spec
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [76, 33])  # N not a multiple of the pack factor: padded qzeros
@pytest.mark.parametrize("bits", BITS)
@pytest.mark.parametrize("group", GROUPS)
@pytest.mark.parametrize("sym", SYM)
@pytest.mark.parametrize("desc_act", DESC_ACT)
def test_decoder_matches_packer(n, bits, group, sym, desc_act):
    w = torch.randn(n, K)
    tensors, deq = quantize_gptq(w, bits, group, sym, desc_act, seed=n)
    g = K if group == -1 else group
    assert tensors["qweight"].shape == (K * bits // 32, n) and tensors["qweight"].dtype == torch.int32
    assert tensors["qzeros"].shape == (K // g, -(-n * bits // 32)) and tensors["qzeros"].dtype == torch.int32
    assert tensors["scales"].shape == (K // g, n) and tensors["scales"].dtype == torch.float16
    assert torch.equal(dequantize_gptq(tensors, bits, group), deq)
    # round to nearest: within half a step (plus the fp16 rounding of the step; sym clamps +amax to 7 steps)
    step = tensors["scales"].float()[tensors["g_idx"].long()].T
    assert bool(((w - deq).abs() <= step * (0.5 + 2.0 ** (bits - 11)) + 1e-6).all())
    if desc_act and group != -1:
        assert not bool((tensors["g_idx"][1:] >= tensors["g_idx"][:-1]).all()), "act-order g_idx should not be monotone"
    if sym:
        per = 32 // bits
        assert int(tensors["qzeros"][0, 0]) == sum(((1 << (bits - 1)) - 1) << (bits * i) for i in range(per))  # 0x77777777 / 0x7f7f7f7f


def test_known_answer_v1_4bit():
    """One hand-packed word per tensor: bit order, the zero - 1 convention and its wrap-around."""
    n, g = 8, 8
    qweight = torch.tensor([[0x76543210] * n], dtype=torch.int32)  # K = 8: q[k, n] = k
    # columns 0..7 store zero-1 = 7, 0, 1, 14, 15 (-1: zero 0), 2, 3, 4
    stored = [7, 0, 1, 14, 15, 2, 3, 4]
    word = sum(v << (4 * i) for i, v in enumerate(stored))
    qzeros = torch.tensor([[word - (1 << 32) if word >= 1 << 31 else word]], dtype=torch.int32)
    scales = torch.arange(1, n + 1, dtype=torch.float16)[None] / 4
    tensors = {"qweight": qweight, "qzeros": qzeros, "scales": scales, "g_idx": torch.zeros(8, dtype=torch.int32)}
    zero = torch.tensor([8, 1, 2, 15, 0, 3, 4, 5], dtype=torch.float32)
    expected = (torch.arange(8.0)[None, :] - zero[:, None]) * scales.float().T  # [N, K]
    assert torch.equal(dequantize_gptq(tensors, 4, g), expected)

    layer = ReplicatedLinear(8, n, params_dtype=torch.float32, prefix="kat",
                             quant_config=get_quantization_config(gptq_config(group_size=g, sym=False)))
    _load(layer, tensors, None)
    layer.process_weights_after_loading()
    x = torch.randn(3, 8)
    assert _rel(layer(x), x @ expected.T) <= 1e-6


def test_autogptq_sign_extended_zero_word():
    """AutoGPTQ ORs a uint32 -1 << shift into the word, so a zero of 0 also forces every higher
    field of that word to 0xF (zero 0). Decoding field by field with wrap-around reads it the way
    AutoGPTQ's own dequantizer does."""
    w = torch.rand(16, K) + 0.1  # all positive: the asymmetric zero is 0 in every group
    tensors, deq = quantize_gptq(w, 4, 64, sym=False)
    assert bool((tensors["qzeros"] == -1).all()), "every field stores zero - 1 = -1 -> 0xF"
    # now a word whose field 3 stores -1 the AutoGPTQ way (sign-extended over fields 3..7)
    w2 = torch.randn(8, K)
    t2, _ = quantize_gptq(w2, 4, 64, sym=False)
    t2["qzeros"] = (t2["qzeros"].to(torch.int64) | (-1 << 12)).to(torch.int32)
    ref = dequantize_gptq(t2, 4, 64)
    layer = ReplicatedLinear(K, 8, params_dtype=torch.float32, prefix="ext",
                             quant_config=get_quantization_config(gptq_config(group_size=64, sym=False)))
    _load(layer, t2, None)
    layer.process_weights_after_loading()
    x = torch.randn(2, K)
    assert _rel(layer(x), x @ ref.T) <= 1e-6
    layer = ReplicatedLinear(K, 16, params_dtype=torch.float32, prefix="pos",
                             quant_config=get_quantization_config(gptq_config(group_size=64, sym=False)))
    _load(layer, tensors, None)
    layer.process_weights_after_loading()
    assert _rel(layer(x), x @ deq.T) <= 1e-6


@pytest.mark.parametrize("bits", BITS)
@pytest.mark.parametrize("sym", SYM)
def test_gptq_v2_true_zeros(bits, sym):
    w = torch.randn(72, K)
    tensors, deq = quantize_gptq(w, bits, 64, sym, checkpoint_format="gptq_v2")
    v1, _ = quantize_gptq(w, bits, 64, sym)
    assert not torch.equal(tensors["qzeros"], v1["qzeros"])
    assert torch.equal(dequantize_gptq(tensors, bits, 64, checkpoint_format="gptq_v2"), deq)
    cfg = get_quantization_config(gptq_config(bits=bits, group_size=64, sym=sym, checkpoint_format="gptq_v2"))
    layer = ReplicatedLinear(K, 72, params_dtype=torch.float32, quant_config=cfg, prefix="v2")
    _load(layer, tensors, None)
    layer.process_weights_after_loading()
    x = torch.randn(4, K)
    assert _rel(layer(x), x @ deq.T) <= 1e-5


# ---------------------------------------------------------------------------------------------
# merged layers: shard by shard, fused on disk, each shard alone
# ---------------------------------------------------------------------------------------------


# every setting on the DeepSeek-like pair; three shards on the act-order cases (one g_idx each)
MERGED = [(SIZES[0], b, g, s, d) for b in BITS for g in GROUPS for s in SYM for d in DESC_ACT] + [
    (SIZES[1], b, g, s, True) for b in BITS for g in (32, -1) for s in SYM
] + [([128, 76], b, 64, False, True) for b in BITS]  # last shard ends mid-word of qzeros


@pytest.mark.parametrize("sizes, bits, group, sym, desc_act", MERGED)
def test_merged_shard_by_shard(sizes, bits, group, sym, desc_act):
    shards = _shards(sizes, bits, group, sym, desc_act, seed=len(sizes) + bits + group)
    biases = [torch.randn(n) for n in sizes]
    w = torch.cat([d for _, d in shards])
    for dtype in DTYPES:  # the same checkpoint into an fp32 and a bf16 layer
        layer = _layer(sizes, bits, group, sym, desc_act, dtype, bias=True)
        assert isinstance(layer.quant_method, GPTQLinearMethod) and layer.quant_method.name == f"gptq-w{bits}a16"
        for i in torch.randperm(len(sizes)).tolist():  # shards arrive in any order
            _load(layer, shards[i][0], i)
            layer.bias.weight_loader(layer.bias, biases[i], i)
        layer.process_weights_after_loading()
        # checkpoint tensors are gone, the packed ones are buffers; act-order keeps one order per shard
        assert not hasattr(layer, "qweight") and layer.w4a16_qweight.dtype == torch.int32
        if desc_act and group != -1:
            assert layer.w4a16_perm.shape == (len(sizes), K)
        else:
            assert not hasattr(layer, "w4a16_perm")
        assert (not hasattr(layer, "w4a16_zeros")) if sym else layer.w4a16_zeros.dtype == torch.uint8

        x = torch.randn(3, 5, K)
        out = layer(x.to(dtype))
        assert out.shape == (3, 5, sum(sizes)) and out.dtype == dtype
        ref = x.to(dtype).double() @ w.double().T + torch.cat(biases).to(dtype).double()
        assert _rel(out, ref) <= TOL[dtype]
        assert layer.backend(x) == "reference"  # CPU


@pytest.mark.parametrize("bits", BITS)
@pytest.mark.parametrize("group", [64, -1])
@pytest.mark.parametrize("sym", SYM)
@pytest.mark.parametrize("desc_act", DESC_ACT)
def test_fused_on_disk(bits, group, sym, desc_act):
    sizes = [128, 72]
    w = torch.randn(sum(sizes), K)
    tensors, deq = quantize_gptq(w, bits, group, sym, desc_act, seed=7)  # one matrix: one g_idx
    layer = _layer(sizes, bits, group, sym, desc_act)
    _load(layer, tensors, None)
    layer.process_weights_after_loading()
    x = torch.randn(6, K)
    assert _rel(layer(x), x @ deq.T) <= 1e-5


@pytest.mark.parametrize("bits", BITS)
@pytest.mark.parametrize("desc_act", DESC_ACT)
def test_each_shard_alone_and_missing_shard(bits, desc_act):
    sizes = [128, 72]
    shards = _shards(sizes, bits, 64, False, desc_act, seed=3)
    for i, n in enumerate(sizes):
        cfg = get_quantization_config(gptq_config(bits=bits, group_size=64, desc_act=desc_act, sym=False))
        single = ReplicatedLinear(K, n, params_dtype=torch.float32, quant_config=cfg, prefix=f"single{i}")
        _load(single, shards[i][0], None)
        single.process_weights_after_loading()
        x = torch.randn(2, K)
        assert _rel(single(x), x @ shards[i][1].T) <= 1e-5

    layer = MergedReplicatedLinear(K, sizes, params_dtype=torch.float32, prefix="a.fused",
                                   shard_names=["q_a_proj", "kv_a_proj_with_mqa"],
                                   quant_config=get_quantization_config(gptq_config(bits=bits, group_size=64, desc_act=desc_act)))
    _load(layer, shards[0][0], 0)
    with pytest.raises(ValueError, match=r"a.fused: never loaded: .*a.fused.qweight: \['kv_a_proj_with_mqa'\]"):
        layer.process_weights_after_loading()
    assert hasattr(layer, "qweight") and not layer.weights_finished  # nothing was repacked


def test_desc_act_needs_g_idx_and_optional_without():
    sizes = [128, 72]
    shards = _shards(sizes, 4, 64, True, True, seed=5)
    layer = _layer(sizes, 4, 64, True, desc_act=True)
    for i, (t, _) in enumerate(shards):
        _load(layer, {k: v for k, v in t.items() if k != "g_idx"}, i)
    with pytest.raises(ValueError, match=r"never loaded: m.fused.g_idx: \['shard 0', 'shard 1'\]"):
        layer.process_weights_after_loading()

    # without act-order the checkpoint may leave g_idx out, or write the trivial k // g
    shards = _shards(sizes, 4, 64, True, False, seed=6)
    for keep_g_idx in (False, True):
        layer = _layer(sizes, 4, 64, True, desc_act=False)
        for i, (t, _) in enumerate(shards):
            _load(layer, {k: v for k, v in t.items() if keep_g_idx or k != "g_idx"}, i)
        layer.process_weights_after_loading()
        assert not hasattr(layer, "w4a16_perm")
        x = torch.randn(3, K)
        assert _rel(layer(x), x @ torch.cat([d for _, d in shards]).T) <= 1e-5


def test_act_order_g_idx_is_honoured_even_if_config_says_no_desc_act():
    """The tensors say what the groups are; a non-trivial g_idx is used whatever desc_act says."""
    sizes = [128, 72]
    shards = _shards(sizes, 4, 32, False, True, seed=9)
    layer = _layer(sizes, 4, 32, False, desc_act=False)
    for i, (t, _) in enumerate(shards):
        _load(layer, t, i)
    layer.process_weights_after_loading()
    x = torch.randn(3, K)
    assert _rel(layer(x), x @ torch.cat([d for _, d in shards]).T) <= 1e-5


# ---------------------------------------------------------------------------------------------
# config parsing
# ---------------------------------------------------------------------------------------------


def test_config_parsing():
    cfg = get_quantization_config(gptq_config(bits=8, group_size=-1, desc_act=True, sym=False))
    assert isinstance(cfg, GPTQConfig)
    assert (cfg.bits, cfg.group_size, cfg.desc_act, cfg.sym, cfg.checkpoint_format) == (8, -1, True, False, "gptq")
    assert get_quantization_config(gptq_config(checkpoint_format="gptq")).checkpoint_format == "gptq"
    assert get_quantization_config(gptq_config(format="gptq_v2")).checkpoint_format == "gptq_v2"
    # GPTQModel / transformers descriptive keys are accepted
    get_quantization_config(gptq_config(lm_head=False, dynamic=None, pack_dtype="int32", meta={"quantizer": ["x"]},
                                        damp_auto_increment=0.0025, use_exllama=True))


@pytest.mark.parametrize(
    "override, pattern",
    [
        ({"bits": 3}, r"\(gptq\): unsupported bits=3; supported: \[4, 8\]"),
        ({"bits": 2}, r"unsupported bits=2"),
        ({"group_size": 0}, r"unsupported group_size=0"),
        ({"group_size": -2}, r"unsupported group_size=-2"),
        ({"desc_act": "yes"}, r"unsupported desc_act='yes'"),
        ({"sym": None}, r"unsupported sym=None"),
        ({"checkpoint_format": "marlin"}, r"unsupported checkpoint_format='marlin'; supported: \['gptq', 'gptq_v2', None\]"),
        ({"is_marlin_format": True}, r"unsupported is_marlin_format=True"),
        ({"dynamic": {"-:.*mlp.*": {}}}, r"unsupported dynamic="),
        ({"pack_dtype": "int16"}, r"unsupported pack_dtype='int16'"),
        ({"checkpoint_format": "gptq", "format": "gptq_v2"}, r"disagree"),
        ({"frobnicate": 1}, r"unknown setting\(s\) \['frobnicate'\]"),
        ({"modules_to_not_convert": "lm_head"}, r"unsupported modules_to_not_convert='lm_head'"),
    ],
)
def test_config_errors(override, pattern):
    with pytest.raises(ValueError, match=pattern):
        get_quantization_config(gptq_config(**override))


def test_ignore_lists_give_unquantized_layers():
    cfg = get_quantization_config(gptq_config(modules_to_not_convert=["kv_a_proj", "re:.*\\.o_proj"]))
    q = ReplicatedLinear(K, 64, quant_config=cfg, prefix="model.layers.0.self_attn.q_a_proj")
    assert isinstance(q.quant_method, GPTQLinearMethod)
    kv = ReplicatedLinear(K, 64, quant_config=cfg, prefix="model.layers.0.self_attn.kv_a_proj_with_mqa")
    assert isinstance(kv.quant_method, UnquantizedLinearMethod)
    o = ReplicatedLinear(K, 64, quant_config=cfg, prefix="model.layers.0.self_attn.o_proj")
    assert isinstance(o.quant_method, UnquantizedLinearMethod)
    with pytest.raises(ValueError, match=r"disagree on being left unquantized: .*q_a_proj=no, .*kv_a_proj_with_mqa=yes"):
        MergedReplicatedLinear(K, [128, 72], quant_config=cfg, prefix="model.layers.0.self_attn.fused",
                               shard_names=["q_a_proj", "kv_a_proj_with_mqa"])
    both = get_quantization_config(gptq_config(modules_to_not_convert=["self_attn"]))
    fused = MergedReplicatedLinear(K, [128, 72], quant_config=both, prefix="model.layers.0.self_attn.fused",
                                   shard_names=["q_a_proj", "kv_a_proj_with_mqa"])
    assert isinstance(fused.quant_method, UnquantizedLinearMethod)
    # transformers' modules_in_block_to_quantize: only the listed modules are quantized
    only = get_quantization_config(gptq_config(modules_in_block_to_quantize=[["self_attn.q_a_proj"], ["mlp.up_proj"]]))
    assert isinstance(ReplicatedLinear(K, 64, quant_config=only, prefix="model.layers.3.self_attn.q_a_proj").quant_method,
                      GPTQLinearMethod)
    assert isinstance(ReplicatedLinear(K, 64, quant_config=only, prefix="model.layers.3.mlp.down_proj").quant_method,
                      UnquantizedLinearMethod)


def test_alignment_errors_at_construction():
    with pytest.raises(ValueError, match=r"gptq-w4a16 needs every output shard but the last to be a multiple of 8 rows; shard sizes \[100, 100\]"):
        _layer([100, 100], bits=4)
    _layer([96, 100], bits=8)  # 8-bit packs 4 per word: 100 is fine as the last shard, 96 % 4 == 0
    with pytest.raises(ValueError, match=r"needs every output shard but the last to be a multiple of 4 rows"):
        _layer([98, 100], bits=8)
    with pytest.raises(ValueError, match=r"needs input_size to be a multiple of 96, got 256"):
        _layer([64], group=96)


# ---------------------------------------------------------------------------------------------
# error paths: nothing is half-loaded
# ---------------------------------------------------------------------------------------------


def test_wrong_shapes_and_dtypes_leave_the_layer_untouched():
    sizes = [128, 72]
    shards = _shards(sizes, 4, 64, False, True, seed=11)
    layer = _layer(sizes, 4, 64, False, desc_act=True)
    _load(layer, shards[0][0], 0)
    snap = snapshot(layer)
    t1 = shards[1][0]
    cases = [
        ("qweight", t1["qweight"].T.contiguous(), 1,
         r"m.fused.qweight: shard 1 \(72 rows of \[128, 72\]\): expected shape \(32, 72\), got \(72, 32\)"),
        ("qweight", shards[0][0]["qweight"], 1, r"m.fused.qweight: shard 1 .*expected shape \(32, 72\), got \(32, 128\)"),
        ("qzeros", t1["qzeros"].T.contiguous(), 1, r"m.fused.qzeros: shard 1 .*expected shape \(4, 9\), got \(9, 4\)"),
        ("scales", t1["scales"].T.contiguous(), 1, r"m.fused.scales: shard 1 .*expected shape \(4, 72\), got \(72, 4\)"),
        ("qweight", t1["qweight"].to(torch.int64), 1, r"m.fused.qweight: expected dtype torch.int32, got torch.int64"),
        ("qweight", t1["qweight"].float(), 1, r"m.fused.qweight: expected dtype torch.int32, got torch.float32"),
        ("scales", t1["scales"].double(), 1, r"m.fused.scales: expected dtype torch.float32 .*got torch.float64"),
        ("g_idx", t1["g_idx"].long(), 1, r"m.fused.g_idx: expected dtype torch.int32, got torch.int64"),
        ("g_idx", t1["g_idx"][:-8], 1, r"m.fused.g_idx: shard 1: expected shape \(256,\), got \(248,\)"),
        ("g_idx", t1["g_idx"] + 2, 1, r"m.fused.g_idx: shard 1: group indices must lie in \[0, 4\) \(4 groups\), got values in \[2, 5\]"),
        ("g_idx", t1["g_idx"] - 1, None, r"m.fused.g_idx: all shards \(fused on disk\): group indices must lie in \[0, 4\).*\[-1, 2\]"),
        ("qweight", t1["qweight"], 2, r"m.fused.qweight: loaded_shard_id must be None or an int in \[0, 2\), got 2"),
        ("qzeros", torch.cat([shards[0][0]["qzeros"], t1["qzeros"][:, :-1]], 1), None,
         r"m.fused.qzeros: all 2 shards fused on disk \[128, 72\]: expected shape \(4, 25\), got \(4, 24\)"),
    ]
    for name, tensor, shard, pattern in cases:
        param = getattr(layer, name)
        with pytest.raises(LoadError, match=pattern):
            param.weight_loader(param, tensor, shard)
        assert not changed(layer, snap)
    # the good tensors still load afterwards, and the layer works
    _load(layer, t1, 1)
    layer.process_weights_after_loading()
    x = torch.randn(2, K)
    assert _rel(layer(x), x @ torch.cat([shards[0][1], shards[1][1]]).T) <= 1e-5


def test_bad_g_idx_written_directly_is_caught_at_finishing():
    sizes = [128, 72]
    shards = _shards(sizes, 4, 64, True, True, seed=12)
    layer = MergedReplicatedLinear(K, sizes, params_dtype=torch.float32, prefix="a.fused",
                                   shard_names=["q_a_proj", "kv_a_proj_with_mqa"],
                                   quant_config=get_quantization_config(gptq_config(group_size=64, desc_act=True)))
    for i, (t, _) in enumerate(shards):
        _load(layer, t, i)
    layer.g_idx.data[1, 5] = 4  # bypasses the loader
    with pytest.raises(ValueError, match=r"a.fused.g_idx: shard 1 \(kv_a_proj_with_mqa\): group indices must lie in \[0, 4\), got values in \[0, 4\]"):
        layer.process_weights_after_loading()
    assert hasattr(layer, "qweight") and not layer.weights_finished
    # a g_idx in range whose groups are not all of size g cannot be act-order
    layer.g_idx.data[1] = shards[1][0]["g_idx"]
    layer.g_idx.data[1, :10] = 0
    with pytest.raises(ValueError, match=r"a.fused.g_idx: shard 1 \(kv_a_proj_with_mqa\): not a group assignment: "
                                         r"group 0 has \d+ columns, expected 64 \(group_size=64\)"):
        layer.process_weights_after_loading()
    assert hasattr(layer, "qweight") and not layer.weights_finished


def test_forward_before_finishing_is_an_error():
    layer = _layer([128, 72])
    with pytest.raises(RuntimeError, match=r"m.fused: call layer.process_weights_after_loading\(\) before forward"):
        layer(torch.randn(1, K))


# ---------------------------------------------------------------------------------------------
# GPU: the same layers on CUDA through the real W4A16 kernels (run by the lead on an H200).
# QLINEAR_GPU_RESULTS=<file.json> makes the module write one row per case (backend, error) there.
# ---------------------------------------------------------------------------------------------

GPU_CASES = [  # (bits, group, sym, desc_act, K, shards): DeepSeek MLA q_a_proj + kv_a_proj_with_mqa
    (4, 128, True, False, 7168, [1536, 576]),
    (4, 128, False, True, 7168, [1536, 576]),
    (4, 32, False, False, 7168, [1536, 576]),
    (4, -1, True, False, 7168, [1536, 576]),
    (8, 128, True, True, 7168, [1536, 576]),
    (8, 64, False, False, 1024, [256, 72]),
]
GPU_MS = [1, 16, 128, 1024]
GPU_DTYPES = [torch.bfloat16, torch.float16]


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("bits, group, sym, desc_act, k, sizes", GPU_CASES)
def test_gpu_layer_forward(bits, group, sym, desc_act, k, sizes, gpu_results):
    gen = torch.Generator().manual_seed(bits * 1000 + group)
    shards = [quantize_gptq(torch.randn(n, k, generator=gen), bits, group, sym, desc_act, seed=i)
              for i, n in enumerate(sizes)]
    w = torch.cat([d for _, d in shards]).cuda().double()
    cfg = get_quantization_config(gptq_config(bits=bits, group_size=group, desc_act=desc_act, sym=sym))
    for dtype in GPU_DTYPES:
        with torch.device("cuda"):  # built on the GPU as a framework does; CPU tensors loaded into it
            layer = MergedReplicatedLinear(k, sizes, params_dtype=dtype, quant_config=cfg, prefix="gpu.fused")
        for i, (t, _) in enumerate(shards):
            _load(layer, t, i)
        layer.process_weights_after_loading()
        assert layer.w4a16_qweight.is_cuda
        for m in GPU_MS:
            x = torch.randn(m, k, device="cuda").to(dtype)
            y = layer(x)
            err = _rel(y, x.double() @ w.T)
            backend = layer.backend(x)
            gpu_results.append({"format": "gptq", "bits": bits, "group": group, "sym": sym, "desc_act": desc_act,
                                "K": k, "shards": sizes, "M": m, "dtype": str(dtype), "backend": backend,
                                "rel_err": err})
            assert y.dtype == dtype and y.is_cuda
            assert err <= 1e-2, f"M={m} {dtype} backend={backend}: relative error {err}"


def test_act_order_refuses_an_input_slice_at_construction():
    """Row parallelism would give a rank ragged pieces of every act-order group: refused up front."""
    from qlinear.layers import LinearBase
    from qlinear.parameter import ShardPlan

    plan = ShardPlan((64,), (64,), (0,), 256, 128, input_start=128, rank=1, world=2)
    cfg = get_quantization_config(gptq_config(group_size=32, desc_act=True))
    with pytest.raises(ValueError, match=r"down on rank 1/2: GPTQ act-order .*input columns \[128, 256\) of 256"):
        LinearBase(256, [64], quant_config=cfg, prefix="down", plan=plan, params_dtype=torch.float32)
    static = get_quantization_config(gptq_config(group_size=32, desc_act=False))
    LinearBase(256, [64], quant_config=static, prefix="down", plan=plan, params_dtype=torch.float32)
