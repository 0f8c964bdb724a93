"""Block-scaled FP8 linear on activations quantized before the layer, on the CPU.

``qlinear.ops.fp8_block_linear_quantized`` and layers fed an ``Fp8GroupActivation`` (e4m3 codes + per
token-group fp32 scales, e.g. from ``rms_norm_quant_fp8``): against an fp32 GEMM written here from the
codes, scales and the producer's dequantized weights, and against the float path (``layer(x)``) on the
codes and scales ``per_token_group_quant_fp8`` gives for the same x, which must agree bit for bit. Fresh
random data with uneven group maxima; ragged K, N and last groups; strided rows, 3-D input, row- and
column-major scales; the refusals (methods that take float activations, a group size that is not the
method's, misshaped scales, a copy the leading dimensions would need).
"""

from __future__ import annotations

import pytest
import torch

from qlinear.layers.linear import MergedReplicatedLinear, ReplicatedLinear
from qlinear.layers.parallel import RowParallelLinear
from qlinear.ops import Fp8GroupActivation, fp8_block_linear, fp8_block_linear_quantized, per_token_group_quant_fp8
from qlinear.ops import fp8_block_quantized_backend, rms_norm_quant_fp8
from qlinear.quantization import get_quantization_config
from qlinear.testing.fp8 import dequantize_fp8_block, fp8_block_config, quantize_fp8_block
from qlinear.testing.fp8 import relative_error as _rel

FP8 = torch.float8_e4m3fn


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def _x(shape, dtype=torch.bfloat16, seed=0):
    x = torch.randn(*shape, generator=_gen(seed)) * 2
    x[..., ::19] *= 40  # uneven group maxima
    return x.to(dtype)


def _weight(N, K, block=(128, 128), seed=1):
    t = quantize_fp8_block(torch.randn(N, K, generator=_gen(seed)) * 0.05, block)
    return t["weight"], t["weight_scale_inv"]


def _expected(q, s, w, ws, block, bias=None):
    """fp32 ``deq(q) @ deq(w).T (+ bias)`` written out here: each code times its group's scale."""
    K = q.shape[-1]
    a = q.float() * s.float().repeat_interleave(block[1], dim=-1)[..., :K]
    out = a @ dequantize_fp8_block(w, ws, block).t()
    return out + bias.float() if bias is not None else out



@pytest.mark.parametrize("M,N,K,block", [(1, 200, 320, (128, 128)), (7, 130, 300, (128, 128)), (4, 96, 200, (64, 32))])
@pytest.mark.parametrize("column_major", [False, True])
def test_op_reference(M, N, K, block, column_major):
    x = _x((M, K), seed=M + K)
    w, ws = _weight(N, K, block, seed=N)
    bias = torch.randn(N, generator=_gen(3)).to(torch.bfloat16)
    q, s = per_token_group_quant_fp8(x, block[1], column_major_scales=column_major)
    y = fp8_block_linear_quantized(q, s, w, ws, block, bias, out_dtype=torch.bfloat16)
    assert y.dtype == torch.bfloat16 and y.shape == (M, N)
    assert _rel(y, _expected(q, s, w, ws, block, bias)) <= 1e-2
    # the same codes and scales as the float path's own quantization: the same output
    assert torch.equal(y, fp8_block_linear(x, w, ws, block, bias))
    assert fp8_block_quantized_backend(q, s, w, block, ws) == "reference"


def test_op_strided_rows_3d_and_out_dtype():
    K, N = 384, 72
    w, ws = _weight(N, K)
    base = torch.randn(6, K + 64, generator=_gen(4)).to(FP8)
    q = base[:, 16:16 + K]  # rows 448 bytes apart
    s = torch.rand(6, 3, generator=_gen(5)) * 0.1 + 1e-3
    for dtype in (torch.float32, torch.float16):
        y = fp8_block_linear_quantized(q, s, w, ws, out_dtype=dtype)
        assert y.dtype == dtype
        assert _rel(y, _expected(q, s, w, ws, (128, 128))) <= (1e-6 if dtype == torch.float32 else 1e-2)
    q3 = torch.randn(2, 3, K, generator=_gen(6)).to(FP8)
    s3 = torch.rand(2, 3, 3, generator=_gen(7)) + 0.01
    y3 = fp8_block_linear_quantized(q3, s3, w, ws, out_dtype=torch.float32)
    assert y3.shape == (2, 3, N)
    assert _rel(y3, _expected(q3, s3, w, ws, (128, 128))) <= 1e-6


def test_op_refusals():
    K, N = 256, 64
    w, ws = _weight(N, K)
    q = torch.randn(4, K, generator=_gen(8)).to(FP8)
    s = torch.rand(4, 2, generator=_gen(9)) + 0.01
    with pytest.raises(TypeError, match="xq: expected dtype"):
        fp8_block_linear_quantized(q.float(), s, w, ws)
    with pytest.raises(ValueError, match=r"x_scales: expected float32 \(4, 2\)"):
        fp8_block_linear_quantized(q, s[:, :1], w, ws)
    with pytest.raises(ValueError, match=r"x_scales: expected float32"):
        fp8_block_linear_quantized(q, s.double(), w, ws)
    with pytest.raises(ValueError, match=r"weight: expected \[N, 256\]"):
        fp8_block_linear_quantized(q, s, w[:, :128], ws)
    with pytest.raises(TypeError, match="out_dtype"):
        fp8_block_linear_quantized(q, s, w, ws, out_dtype=torch.int32)
    with pytest.raises(ValueError, match="bias: expected shape"):
        fp8_block_linear_quantized(q, s, w, ws, (128, 128), torch.zeros(N, dtype=torch.float16), out_dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="backend 'cuda' needs CUDA"):
        fp8_block_linear_quantized(q, s, w, ws, backend="cuda")
    # 3-D scales whose leading dimensions cannot merge without a copy
    q3 = torch.randn(2, 3, K, generator=_gen(10)).to(FP8)
    s3 = (torch.rand(3, 2, 2, generator=_gen(11)) + 0.01).transpose(0, 1)
    with pytest.raises(ValueError, match="x_scales: its leading dimensions must flatten without a copy"):
        fp8_block_linear_quantized(q3, s3, w, ws)


def test_activation_checks_and_narrow():
    q = torch.randn(3, 300, generator=_gen(12)).to(FP8)
    s = torch.rand(3, 3, generator=_gen(13)) + 0.01
    a = Fp8GroupActivation(q, s, 128, torch.float16)
    assert a.shape == q.shape and a.dim() == 2 and a.device == q.device
    part = a.narrow(-1, 128, 172)
    assert torch.equal(part.q.view(torch.uint8), q[:, 128:].view(torch.uint8))
    assert torch.equal(part.scales, s[:, 1:]) and part.dtype == torch.float16
    assert part.scales.data_ptr() == s[:, 1:].data_ptr()  # views, no copies
    with pytest.raises(ValueError, match="cut a group of 128"):
        a.narrow(-1, 64, 128)
    with pytest.raises(ValueError, match="only the last dimension"):
        a.narrow(0, 0, 1)
    with pytest.raises(TypeError, match="Fp8GroupActivation.q"):
        Fp8GroupActivation(q.float(), s)
    with pytest.raises(ValueError, match=r"Fp8GroupActivation.scales: expected float32 \(3, 3\)"):
        Fp8GroupActivation(q, s[:, :2])
    with pytest.raises(TypeError, match="Fp8GroupActivation.dtype"):
        Fp8GroupActivation(q, s, 128, torch.int8)


def _block_layer(K, sizes, dtype=torch.bfloat16, block=(128, 128), cls=MergedReplicatedLinear, **kw):
    cfg = get_quantization_config(fp8_block_config(block))
    if cls is MergedReplicatedLinear:
        layer = cls(K, sizes, params_dtype=dtype, quant_config=cfg, prefix="fused_qkv_a_proj", **kw)
    else:
        layer = cls(K, sum(sizes), params_dtype=dtype, quant_config=cfg, prefix="o_proj", **kw)
    tensors = [quantize_fp8_block(torch.randn(n, K, generator=_gen(20 + i)) * 0.05, block) for i, n in enumerate(sizes)]
    for i, t in enumerate(tensors):
        for name, value in t.items():
            p = getattr(layer, name)
            p.weight_loader(p, value, i if cls is MergedReplicatedLinear else None)
    layer.process_weights_after_loading()
    return layer


def test_merged_layer_takes_the_norm_quant_output():
    """DeepSeek MLA in miniature: rms_norm_quant_fp8 -> the fused q_a / kv_a layer, against the same layer
    on the normalized float x (which quantizes it itself: same codes, same output)."""
    K, sizes = 384, [256, 72]
    layer = _block_layer(K, sizes)
    h = _x((2, 5, K), seed=30)
    gamma = (torch.rand(K, generator=_gen(31)) + 0.5).to(torch.bfloat16)
    q, s = rms_norm_quant_fp8(h.reshape(-1, K), gamma, 1e-6, 128)
    act = Fp8GroupActivation(q.reshape(2, 5, K), s.reshape(2, 5, -1), 128, torch.bfloat16)
    y = layer(act)
    assert y.shape == (2, 5, sum(sizes)) and y.dtype == torch.bfloat16
    assert _rel(y, _expected(act.q, act.scales, layer.weight, layer.weight_scale_inv, (128, 128))) <= 1e-2
    normed = torch.nn.functional.rms_norm(h.float(), (K,), gamma.float(), 1e-6).to(torch.bfloat16)
    qf, sf = per_token_group_quant_fp8(normed.reshape(-1, K), 128)
    y_float_path = layer(normed)
    y_codes = layer(Fp8GroupActivation(qf.reshape(2, 5, K), sf.reshape(2, 5, -1), 128, torch.bfloat16))
    assert torch.equal(y_codes, y_float_path)
    assert layer.backend(act) == "reference"


def test_row_parallel_slices_whole_groups():
    """A row-parallel layer with input_is_parallel=False narrows x to its columns: on an activation that
    slice must keep whole groups (one process here: the whole row)."""
    K = 320
    layer = _block_layer(K, [96], cls=RowParallelLinear, input_is_parallel=False)
    x = _x((3, K), seed=40)
    q, s = per_token_group_quant_fp8(x, 128)
    assert torch.equal(layer(Fp8GroupActivation(q, s)), layer(x))


def test_layers_refuse_what_their_method_cannot_take():
    K = 256
    plain = ReplicatedLinear(K, 64, params_dtype=torch.bfloat16, prefix="plain")
    q = torch.randn(2, K, generator=_gen(50)).to(FP8)
    s = torch.rand(2, 2, generator=_gen(51)) + 0.01
    with pytest.raises(TypeError, match="plain: unquantized takes float activations"):
        plain(Fp8GroupActivation(q, s))
    with pytest.raises(TypeError, match="x must be a tensor or an Fp8GroupActivation"):
        plain((q, s))
    layer = _block_layer(K, [64, 64], block=(64, 64))
    with pytest.raises(ValueError, match="groups of 64, got an Fp8GroupActivation with group_size=128"):
        layer(Fp8GroupActivation(q, s, 128))
    bad_k = Fp8GroupActivation(q[:, :128], torch.rand(2, 2, generator=_gen(52)) + 0.01, 64)
    with pytest.raises(ValueError, match=r"x must be \[\.\.\., 256\]"):
        layer(bad_k)
