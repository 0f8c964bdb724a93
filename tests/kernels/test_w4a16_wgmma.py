"""The W4A16 "wg" Triton kernel (register-A wgmma chain, backend ``"triton_wg"``) under
``TRITON_INTERPRET=1`` on small shapes, against the fp32 reference (``dequantize_canonical`` of
the canonical data, in float64), plus a bit-exact check of its in-register dequantization.

fp16 activations only: the interpreter's ``tl.dot`` multiplies bf16 operands' raw bits (bf16 is
covered by tests/gpu/test_w4a16_wgmma_gpu.py). The driver test re-runs this file in a subprocess
with the interpreter switched on (it must be set before triton is imported).
"""

import os

import pytest
from _interpreter import rerun_interpreted

INTERPRETED = os.environ.get("TRITON_INTERPRET") == "1"


@pytest.mark.skipif(INTERPRETED, reason="this is the driver; the subprocess runs the kernel tests")
def test_interpreted_wg_kernel():
    rerun_interpreted(__file__)


def test_backend_name_listed_and_import_light():
    from qlinear.ops import w4a16 as ops

    assert "triton_wg" in ops.W4A16_BACKENDS
    # the measured table picks it at M = 65..128 (every shape) and up to 256 on tall-skinny layers
    table = {bound: (name, tall) for bound, name, tall in ops._M_THRESHOLDS}
    assert table[128][0] == "triton_wg" and table[256][1] == "triton_wg"


if INTERPRETED:
    import torch

    from qlinear.kernels import w4a16_triton as wt
    from qlinear.ops import w4a16 as ops

    from _w4a16_data import activations as _x
    from _w4a16_data import layer as _data
    from _w4a16_data import rel as _rel

    def _cfg(block_n=32, block_m=16, split=1, sb=1, group_m=8):
        return wt.W4A16Config("wg", block_n=block_n, block_m=block_m, sb_per_iter=sb, split_k=split, group_m=group_m)

    @pytest.mark.parametrize("half_scales", [True, False])
    @pytest.mark.parametrize("group", [32, 64, 128, -1])
    @pytest.mark.parametrize("sym", [True, False])
    @pytest.mark.parametrize("bits", [4, 8])
    def test_wg_matches_reference(bits, sym, group, half_scales):
        n, k, m = 40, 512, 3  # N not a multiple of BLOCK_N
        packed, w = _data(n, k, group, bits, sym, seed=bits * 7 + group + sym, half_scales=half_scales)
        assert wt._wg_half_dequant(torch.float16, packed) == half_scales
        x = _x(m, k, torch.float16, seed=4)
        bias = torch.randn(n, dtype=torch.float16)
        y = wt.w4a16_gemm(x, packed, bias, _cfg(split=2))
        assert y.shape == (m, n) and y.dtype == x.dtype
        assert _rel(y, x.double() @ w.T + bias.double()) < 2e-3
        assert int(wt._locks(x.device).abs().sum()) == 0  # the last split reset its counters

    @pytest.mark.parametrize("half_scales", [True, False])
    @pytest.mark.parametrize("group", [32, 128])
    @pytest.mark.parametrize("bits", [4, 8])
    def test_wg_dequantization_bit_exact(bits, group, half_scales):
        # x = identity: each output is one weight times 1.0, so y^T is the kernel's dequantized
        # tile, which must equal the dequantize kernel's output (the dequant + cuBLAS weights).
        n, k = 48, 256
        packed, _ = _data(n, k, group, bits, False, seed=3 + bits + group, half_scales=half_scales)
        eye = torch.eye(k, dtype=torch.float16)
        y = wt.w4a16_gemm(eye, packed, None, _cfg(block_n=16, block_m=64))
        want = wt.w4a16_dequantize(packed, torch.float16, block_n=16)
        assert torch.equal(y.t(), want)

    @pytest.mark.parametrize("sb", [1, 2])
    def test_wg_act_order_two_shards_padded_k_m_tiles(sb):
        n, k = 40 + 56, 320  # K pads to 384; shard rows not multiples of BLOCK_N
        packed, w = _data(n, k, 64, 4, False, seed=15, bounds=[0, 40, n])
        assert packed.num_shards == 2
        x = _x(37, k, torch.float16, seed=16, strided=True)
        y = wt.w4a16_gemm(x, packed, None, _cfg(block_n=16, block_m=16, split=0, sb=sb, group_m=2))
        assert _rel(y, x.double() @ w.T) < 2e-3
        assert int(wt._locks(x.device).abs().sum()) == 0

    def test_wg_defaults_and_public_op():
        assert wt.wg_config(64).kernel == "wg" and wt.wg_config(1024).kernel == "wg"
        packed, w = _data(40, 256, 128, 4, False, seed=2)
        x = _x(5, 256, torch.float16, seed=3).view(1, 5, 256)
        y = ops.w4a16_linear(x, packed, backend="triton_wg")
        assert y.shape == (1, 5, 40)
        assert _rel(y[0], x[0].double() @ w.T) < 2e-3
