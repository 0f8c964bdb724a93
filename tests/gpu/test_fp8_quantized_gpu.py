"""Block-scaled FP8 linear on activations quantized before it (``fp8_block_linear_quantized``,
``Fp8GroupActivation`` into a layer) on an H200.

Every backend ("cuda" decode kernel on the given codes, "triton", "scaled_mm") and the auto dispatch, on
the issue shapes and a ragged one, M in {1, 5, 16, 64, 128}, row- and column-major scales, bf16 / fp16
output, bias: against the fp32 GEMM of the same codes (``fp8_block_gemm_ref``: dequantization and an fp32
matmul, TF32 off), and against
``fp8_block_linear`` on the float x those codes came from. Also the auto backend's choice, the "cuda"
backend's fall back to Triton (fp32 output), and a CUDA-graph replay of the decode path.
"""

import pytest
import torch

from _fp8_gpu_data import weight as _weight
from qlinear.ops import Fp8GroupActivation
from qlinear.ops import fp8 as ops
from qlinear.reference import fp8 as ref
from qlinear.testing.fp8 import relative_error as _rel

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]

DEV = "cuda"
SHAPES = [(2112, 7168), (24576, 1536), (7168, 16384), (200, 1024)]


def _x(m, k, dtype, seed):
    gen = torch.Generator(device=DEV).manual_seed(5000 + seed)
    x = torch.randn(m, k, device=DEV, generator=gen) * 3
    x[:, ::37] *= 50
    return x.to(dtype)



@pytest.mark.parametrize("n,k", SHAPES)
@pytest.mark.parametrize("column_major", [False, True])
def test_auto_against_reference(n, k, column_major):
    w, wsi = _weight(n, k)
    for m in (1, 5, 16, 64, 128):
        dtype = torch.bfloat16 if m % 2 == 0 else torch.float16
        x = _x(m, k, dtype, m + n)
        b = torch.randn(n, device=DEV).to(dtype) if m % 3 else None
        q, s = ops.per_token_group_quant_fp8(x, 128, column_major_scales=column_major)
        what = f"M={m} {n}x{k} {dtype} cm={column_major} backend={ops.fp8_block_quantized_backend(q, s, w, (128, 128), wsi)}"
        y = ops.fp8_block_linear_quantized(q, s, w, wsi, (128, 128), b, out_dtype=dtype)
        want = ref.fp8_block_gemm_ref(q, s, w, wsi, (128, 128), torch.float32, b)
        assert y.dtype == dtype and y.shape == (m, n), what
        assert _rel(y, want) <= 1e-2, what
        # the float path quantizes the same x to the same codes: only the GEMM (another backend where the
        # scale layout differs: cuBLAS vs Triton at M = 128) and the output rounding may differ
        assert _rel(y, ops.fp8_block_linear(x, w, wsi, (128, 128), b)) <= 1e-2, what


def test_backend_choice_and_explicit_backends():
    n, k = 2112, 7168
    w, wsi = _weight(n, k)
    x16 = _x(16, k, torch.bfloat16, 1)
    q, s = ops.per_token_group_quant_fp8(x16, 128)
    want = ref.fp8_block_gemm_ref(q, s, w, wsi, (128, 128), torch.float32)
    assert ops.fp8_block_quantized_backend(q, s, w, (128, 128), wsi) == "cuda"
    for be in ("cuda", "triton", "reference"):
        y = ops.fp8_block_linear_quantized(q, s, w, wsi, backend=be)
        assert _rel(y, want) <= 1e-2, be
    # fp32 output: the decode kernel writes fp16 / bf16 only, so "cuda" runs the Triton GEMM
    y32 = ops.fp8_block_linear_quantized(q, s, w, wsi, out_dtype=torch.float32, backend="cuda")
    assert y32.dtype == torch.float32 and _rel(y32, want) <= 1e-2
    x128 = _x(128, k, torch.bfloat16, 2)
    q128, s128 = ops.per_token_group_quant_fp8(x128, 128, column_major_scales=True)
    want128 = ref.fp8_block_gemm_ref(q128, s128, w, wsi, (128, 128), torch.float32)
    if ops._scaled_mm_block_ok(q128, w, (128, 128), wsi):
        assert ops.fp8_block_quantized_backend(q128, s128, w, (128, 128), wsi) == "scaled_mm"
        assert _rel(ops.fp8_block_linear_quantized(q128, s128, w, wsi, backend="scaled_mm"), want128) <= 1e-2
        # row-major scales: cuBLAS would need them transposed (a copy), so auto takes Triton and an
        # explicit "scaled_mm" is refused
        q_r, s_r = ops.per_token_group_quant_fp8(x128, 128)
        assert ops.fp8_block_quantized_backend(q_r, s_r, w, (128, 128), wsi) == "triton"
        with pytest.raises(ValueError, match="column-major x_scales"):
            ops.fp8_block_linear_quantized(q_r, s_r, w, wsi, backend="scaled_mm")
    assert _rel(ops.fp8_block_linear_quantized(q128, s128, w, wsi, backend="triton"), want128) <= 1e-2


@pytest.mark.parametrize("m", [16, 2, 1])
def test_layer_and_graph_replay(m):
    """A merged FP8 layer fed an Fp8GroupActivation inside a CUDA graph: new codes, new output. M <= 2
    takes the norm-quant's Triton kernel with PDL and an early trigger (NORM_QUANT_TRITON_EARLY), M = 16
    the CUDA block-per-row kernel."""
    from qlinear.layers.linear import MergedReplicatedLinear
    from qlinear.quantization import get_quantization_config
    from qlinear.testing.fp8 import fp8_block_config, quantize_fp8_block

    k, sizes = 7168, [1536, 576]
    layer = MergedReplicatedLinear(k, sizes, params_dtype=torch.bfloat16,
                                   quant_config=get_quantization_config(fp8_block_config()), prefix="fused_qkv_a_proj")
    gen = torch.Generator().manual_seed(9)
    for i, n in enumerate(sizes):
        for name, t in quantize_fp8_block(torch.randn(n, k, generator=gen) * 0.05).items():
            p = getattr(layer, name)
            p.weight_loader(p, t, i)
    layer.process_weights_after_loading()
    layer.to(DEV)
    gamma = (1 + 0.1 * torch.randn(k, device=DEV)).to(torch.bfloat16)
    h = _x(m, k, torch.bfloat16, 3)
    assert ops._norm_quant_gpu_default(gamma, m, h, None, 128) == ("triton-early" if m <= 2 else "cuda")
    q, s = ops.rms_norm_quant_fp8(h, gamma, 1e-6, 128)
    q_ref, s_ref = ops.rms_norm_quant_fp8(h, gamma, 1e-6, 128, backend="reference")
    assert torch.allclose(s, s_ref, rtol=1e-5, atol=0)
    assert (q.view(torch.uint8).int() - q_ref.view(torch.uint8).int()).abs().max() <= 1  # one e4m3 step at most
    act = Fp8GroupActivation(q, s, 128, torch.bfloat16)
    assert layer.backend(act) == "cuda"
    eager = layer(act)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        layer(act)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, stream=stream):
            qq, ss = ops.rms_norm_quant_fp8(h, gamma, 1e-6, 128)
            y = layer(Fp8GroupActivation(qq, ss, 128, torch.bfloat16))
    torch.cuda.current_stream().wait_stream(stream)
    g.replay()
    torch.cuda.synchronize()
    assert torch.equal(y, eager)
    h.copy_(_x(m, k, torch.bfloat16, 4))
    g.replay()
    q2, s2 = ops.rms_norm_quant_fp8(h, gamma, 1e-6, 128)
    want = ref.fp8_block_gemm_ref(q2, s2, layer.weight, layer.weight_scale_inv, (128, 128), torch.float32)
    assert _rel(y, want) <= 1e-2
