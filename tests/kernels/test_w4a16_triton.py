"""The W4A16 / W8A16 Triton kernels under ``TRITON_INTERPRET=1`` on small shapes, against the
fp32 reference (``dequantize_canonical`` of the canonical data, in float64).

The interpreter must be switched on before triton is imported, and must not leak into other test
modules, so the normal run executes one driver test that re-runs this file in a subprocess with
the variable set; the kernel tests themselves only run inside that subprocess.
"""

import os

import pytest
from _interpreter import rerun_interpreted

INTERPRETED = os.environ.get("TRITON_INTERPRET") == "1"


@pytest.mark.skipif(INTERPRETED, reason="this is the driver; the subprocess runs the kernel tests")
def test_interpreted_kernels():
    rerun_interpreted(__file__)


if INTERPRETED:
    import torch

    from qlinear.kernels import w4a16_triton as wt
    from qlinear.ops import w4a16 as ops
    from qlinear.reference import w4a16 as ref

    from _w4a16_data import activations as _x
    from _w4a16_data import layer as _data
    from _w4a16_data import rel as _rel

    # (kernel, block_m): the CUDA-core GEMV and the tensor-core kernel.
    KERNELS = [("gemv", 1), ("mma", 16)]
    BITS = [4, 8]
    SYM = [True, False]
    GROUPS = [32, -1]
    SPLITS = [1, 3]

    @pytest.mark.parametrize("split", SPLITS)
    @pytest.mark.parametrize("group", GROUPS)
    @pytest.mark.parametrize("sym", SYM)
    @pytest.mark.parametrize("bits", BITS)
    @pytest.mark.parametrize("kernel", KERNELS)
    def test_gemm_matches_reference(kernel, bits, sym, group, split):
        n, k, m = 40, 256, 2  # N not a multiple of BLOCK_N; 2 superblocks (4-bit) / 4 (8-bit)
        packed, w = _data(n, k, group, bits, sym, seed=bits * 100 + group + split)
        x = _x(m, k, torch.float16, seed=split)
        bias = torch.randn(n, dtype=torch.float16)
        cfg = wt.W4A16Config(kernel[0], block_n=16 if kernel[0] == "gemv" else 32, block_m=kernel[1], split_k=split)
        y = wt.w4a16_gemm(x, packed, bias, cfg)
        want = x.double() @ w.T + bias.double()
        assert y.shape == (m, n) and y.dtype == x.dtype
        assert _rel(y, want) < 2e-3
        assert int(wt._locks(x.device).abs().sum()) == 0  # the last split reset its counters

    # bf16 only through the GEMV: the interpreter's tl.dot multiplies bf16 operands' raw bits.
    @pytest.mark.parametrize("kernel, dtype", [(KERNELS[0], torch.bfloat16), (KERNELS[0], torch.float16),
                                               (KERNELS[1], torch.float16)])
    def test_gemm_act_order_two_shards_padded_k(kernel, dtype):
        n, k = 40 + 56, 320  # K pads to 384; shard rows not multiples of BLOCK_N
        packed, w = _data(n, k, 64, 4, False, seed=5, bounds=[0, 40, n])
        assert packed.num_shards == 2
        x = _x(5 if kernel[0] == "gemv" else 17, k, dtype, seed=6, strided=True)
        cfg = wt.W4A16Config(kernel[0], block_n=16, block_m=kernel[1], sb_per_iter=2, split_k=2)
        y = wt.w4a16_gemm(x, packed, None, cfg)
        assert _rel(y, x.double() @ w.T) < (2e-3 if dtype == torch.float16 else 1e-2)

    # The superblock-K kernel: per-element scale (g < superblock), scale after the dot (g a
    # multiple of the superblock: 128 / 256 at 4 bits), per-channel (scale once at the end).
    @pytest.mark.parametrize("scale_after", [True, False])
    @pytest.mark.parametrize("group", [32, 128, 256, -1])
    @pytest.mark.parametrize("sym", SYM)
    @pytest.mark.parametrize("bits", BITS)
    def test_mma_sb_matches_reference(bits, sym, group, scale_after):
        n, k, m = 40, 512, 3
        packed, w = _data(n, k, group, bits, sym, seed=bits + group + sym)
        x = _x(m, k, torch.float16, seed=4)
        bias = torch.randn(n, dtype=torch.float16)
        cfg = wt.W4A16Config("mma_sb", block_n=32, block_m=16, split_k=2, scale_after=scale_after)
        y = wt.w4a16_gemm(x, packed, bias, cfg)
        assert _rel(y, x.double() @ w.T + bias.double()) < 2e-3
        assert int(wt._locks(x.device).abs().sum()) == 0

    def test_mma_sb_act_order_padded_k_m_tiles():
        n, k = 40 + 56, 320  # K pads to 384; shard rows not multiples of BLOCK_N
        packed, w = _data(n, k, 64, 4, False, seed=15, bounds=[0, 40, n])
        x = _x(37, k, torch.float16, seed=16, strided=True)
        cfg = wt.W4A16Config("mma_sb", block_n=16, block_m=16, sb_per_iter=2, split_k=0, group_m=2)
        y = wt.w4a16_gemm(x, packed, None, cfg)
        assert _rel(y, x.double() @ w.T) < 2e-3

    @pytest.mark.parametrize("bits", BITS)
    def test_mma_multiple_m_tiles_and_auto_split(bits):
        n, k, m = 48, 256, 40
        packed, w = _data(n, k, 32, bits, False, seed=9)
        x = _x(m, k, torch.float16, seed=10)
        cfg = wt.W4A16Config("mma", block_n=16, block_m=16, split_k=0, group_m=2)
        y = wt.w4a16_gemm(x, packed, None, cfg)
        assert _rel(y, x.double() @ w.T) < 2e-3

    def test_decode_default_and_auto_split():
        packed, w = _data(48, 2048, 128, 4, False, seed=11)  # 8 iterations of 2 superblocks
        x = _x(1, 2048, torch.bfloat16, seed=12)
        # the measured default for M = 1 is the gemv kernel (H200 run 2)
        cfg = wt.resolve_config(1, packed, None, x.device)
        assert cfg.kernel == "gemv" and cfg.split_k > 1  # one N tile, 4 fake SMs on CPU: split-K engaged
        assert _rel(wt.w4a16_gemm(x, packed), x.double() @ w.T) < 1e-2
        assert int(wt._locks(x.device).abs().sum()) == 0

    @pytest.mark.parametrize("version", [1, 2])
    @pytest.mark.parametrize("act_order", [False, True])
    @pytest.mark.parametrize("bits", BITS)
    def test_dequantize_and_dequant_gemm(bits, act_order, version):
        n, k = 56, 256
        bounds = [0, 24, n] if act_order else None
        packed, w = _data(n, k, 64, bits, False, seed=bits, bounds=bounds)
        wd = wt.w4a16_dequantize(packed, torch.float32, block_n=16, sb_per_prog=1 + version % 2, version=version)
        if not act_order:
            assert torch.equal(wd, ref.dequantize_w4a16(packed))
        x = _x(5, k, torch.float16, seed=1)
        bias = torch.randn(n, dtype=torch.float16)
        y = wt.w4a16_dequant_gemm(x, packed, bias)
        assert _rel(y, x.double() @ w.T + bias.double()) < 2e-3

    @pytest.mark.parametrize("version", [1, 2])
    @pytest.mark.parametrize("group", [64, -1])
    @pytest.mark.parametrize("sym", SYM)
    @pytest.mark.parametrize("bits", BITS)
    def test_dequantize_window_into_out(bits, sym, group, version):
        # a row / column window written into a slice of a wider buffer: exactly the reference's
        # window, and nothing outside it touched
        n, k = 56, 384
        packed, _ = _data(n, k, group, bits, sym, seed=7 + bits)
        full = ref.dequantize_w4a16(packed)
        sbc = 16 * 32 // bits
        for rows, cols in (((5, 43), (sbc, 320)), ((0, n), (2 * sbc, k)), ((17, 18), (0, 1))):
            h, w = rows[1] - rows[0], cols[1] - cols[0]
            buf = torch.full((h + 2, w + 9), float("nan"))
            out = buf[1:h + 1, 3:w + 3]
            got = wt.w4a16_dequantize(packed, torch.float32, rows=rows, cols=cols, out=out, block_n=16,
                                      version=version)
            assert got.data_ptr() == out.data_ptr()
            assert torch.equal(out, full[rows[0]:rows[1], cols[0]:cols[1]])
            outside = torch.ones_like(buf, dtype=torch.bool)
            outside[1:h + 1, 3:w + 3] = False
            assert bool(buf[outside].isnan().all())

    def test_dequantize_window_errors():
        packed, _ = _data(24, 256, 64, 4, True, seed=3)
        with pytest.raises(ValueError, match=r"cols: .*multiple of 128"):
            wt.w4a16_dequantize(packed, torch.float32, cols=(64, 256))
        with pytest.raises(ValueError, match=r"rows: .*N=24"):
            wt.w4a16_dequantize(packed, torch.float32, rows=(8, 25))
        with pytest.raises(ValueError, match=r"out: expected \[24, 256\] torch.float32"):
            wt.w4a16_dequantize(packed, torch.float32, out=torch.empty(24, 256, dtype=torch.float16))
        with pytest.raises(ValueError, match=r"out: .*stride\(-1\) == 1"):
            wt.w4a16_dequantize(packed, torch.float32, out=torch.empty(256, 24).t())

    def test_public_op_triton_backend():
        packed, w = _data(40, 128, 32, 4, True, seed=2)
        x = _x(2, 128, torch.float16, seed=3).view(1, 2, 128)
        y = ops.w4a16_linear(x, packed, backend="triton")
        assert y.shape == (1, 2, 40)
        assert _rel(y[0], x[0].double() @ w.T) < 2e-3
