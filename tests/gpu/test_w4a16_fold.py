"""The W4A16 register decode kernel's zero-point fold (csrc/w4a16_gemv.cuh FOLD 1, reached as the
5th element of ``cuda_gemv(config=...)``) on a GPU.

Against ``x @ W.T + bias`` in fp32 with W from ``dequantize_canonical`` (the canonical formula, not
the packed layout) on fresh random data: every fold-compiled code (``w4a16_reg_fold_configs``) x
fold 1 x bf16 / fp16 x symmetric / asymmetric zeros x group 128 / 256 / per channel (with a
partial last superblock, K % 128 != 0: the tail step) x M in {1, 4, 9, 16}; x with a large common
offset (the fold's cancellation: sum_k x is large there); fold vs fold 0 of the same config; the
refusals (fold 2 / 3, sub-128 groups, a code compiled without the fold, fold with a ring code).
"""

import pytest
import torch

from _w4a16_gpu_data import assert_matches
from _w4a16_gpu_data import layer as _layer
from qlinear.ops import w4a16 as ops

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]

DEV = "cuda"
TOL = 1e-2
# (row tiles, superblocks per chunk, warps, pipe) per token-tile count; codes of w4a16.cuh kRegFoldCodes
CONFIGS = {1: [(1, 2, 4, 0), (1, 2, 16, 0), (4, 1, 4, 0), (4, 1, 3, 0)],
           2: [(2, 1, 4, 0), (2, 1, 2, 0), (2, 1, 4, 1), (2, 1, 3, 1), (1, 1, 8, 1)]}
MS = (1, 4, 9, 16)


def _lib():
    from qlinear.kernels import cuda_ext

    return cuda_ext.load()


def _x(m, k, dtype, seed, offset=0.0):
    gen = torch.Generator(device=DEV).manual_seed(1000 + seed)
    return (torch.randn(m, k, device=DEV, generator=gen) + offset).to(dtype)


def _err(y, want):
    return ((y.float() - want).norm() / want.norm()).item()


def _check(packed, w, x, b, cfg, fold=1):
    y = ops.cuda_gemv(x, packed, b, tuple(cfg) + (fold,))
    assert_matches(y, x, w, b, f"M={x.shape[0]} N={packed.n} K={packed.k} config={cfg} fold={fold} {x.dtype}", TOL)
    return y


def test_fold_configs_listed():
    lib = _lib()
    fold = list(lib.w4a16_reg_fold_configs())
    assert fold and set(fold) <= set(lib.w4a16_reg_configs())
    for nt, cfgs in CONFIGS.items():
        for r, u, _, p in cfgs:
            assert r * 1000 + u * 100 + 10 * nt + p in fold


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("asym", [True, False])
@pytest.mark.parametrize("group,n,k", [(128, 300, 1024), (128, 77, 1152), (256, 64, 1536), (-1, 300, 1000),
                                       (-1, 77, 1156)])
def test_fold_vs_reference(group, n, k, asym, dtype):
    packed, w = _layer(n, k, group, asym, seed=n + k)
    for m in MS:
        nt = 1 if m <= 8 else 2
        x = _x(m, k, dtype, seed=m)
        b = torch.randn(n, device=DEV).to(dtype) if m % 2 else None
        # pipe 2: the pipe 0 codes with chunks dealt round-robin over the warps
        for cfg in CONFIGS[nt] + [c[:3] + (2,) for c in CONFIGS[nt] if c[3] == 0]:
            y0 = ops.cuda_gemv(x, packed, b, tuple(cfg) + (0,))
            y = _check(packed, w, x, b, cfg)
            # fold vs no fold, same config: both within the output's rounding of each other
            assert _err(y, y0.float()) <= 8e-3, f"fold 1 vs 0: M={m} config={cfg}"


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_fold_large_offset(dtype):
    """x = N(0, 1) + 4: sum_k x is ~4 x 128 per superblock, so the fold subtracts (C + z) xs of
    ~1e5 (fp16: ~5e5) per superblock from sums of the same size; still within TOL."""
    packed, w = _layer(128, 4096, 128, True, seed=7)
    for m in (1, 16):
        x = _x(m, 4096, dtype, seed=m, offset=4.0)
        for cfg in CONFIGS[1 if m <= 8 else 2][:2]:
            _check(packed, w, x, None, cfg)


@pytest.mark.parametrize("shape", [(2112, 7168), (7168, 2048)])
def test_fold_big_shapes(shape):
    packed, w = _layer(*shape, 128, True, seed=shape[0])
    for m in (1, 16):
        x = _x(m, shape[1], torch.bfloat16, seed=m)
        # (0, 0, 0): the launcher's default config (fold-compiled: R1U2 / R4U1 / R2U1)
        _check(packed, w, x, None, (0, 0, 0, 0))
        _check(packed, w, x, None, CONFIGS[1 if m <= 8 else 2][0])


def test_fold_fp32_scales():
    packed, w = _layer(96, 1024, 128, True, scale_dtype=torch.float32, seed=3)
    for m in (1, 9):
        for dtype in (torch.bfloat16, torch.float16):
            _check(packed, w, _x(m, 1024, dtype, seed=m), None, CONFIGS[1 if m <= 8 else 2][0])


def test_fold_refusals():
    lib = _lib()
    packed, _ = _layer(64, 1024, 128, True)
    x = _x(1, 1024, torch.bfloat16, seed=0)
    with pytest.raises(RuntimeError, match="not supported"):
        ops.cuda_gemv(x, packed, None, (1, 2, 4, 0, 2))  # fold 2 (the second-mma variant) was removed
    with pytest.raises(RuntimeError, match="not supported"):
        ops.cuda_gemv(x, packed, None, (1, 2, 4, 0, 3))  # fold must be 0 / 1
    with pytest.raises(RuntimeError, match="not supported"):
        ops.cuda_gemv(x, packed, None, (1, 4, 4, 0, 1))  # R1 U4: compiled without the fold
    with pytest.raises(RuntimeError, match="not supported"):
        ops.cuda_gemv(x, packed, None, (1, 2, 4, 0, 1), ring=4124)  # the ring kernel has no fold
    sub, _ = _layer(64, 1024, 64, True)
    with pytest.raises(RuntimeError, match="not supported"):
        ops.cuda_gemv(x, sub, None, (1, 2, 4, 0, 1))  # groups < 128: the sub-group kernel
    assert lib.w4a16_gemv_supported(x, packed.qweight, packed.scales, packed.zeros, 128, 1, 2, 4, -1, 0, 1) == 0
    assert lib.w4a16_gemv_supported(x, packed.qweight, packed.scales, packed.zeros, 128, 1, 2, 4, -1, 0, 2) == 6
    assert lib.w4a16_gemv_supported(x, packed.qweight, packed.scales, packed.zeros, 128, 1, 2, 4, -1, 0, 5) == 6
    # fold with ring = 0 (automatic) selects the register kernel: the launch returns -warps
    out = torch.empty(1, 64, device=DEV, dtype=torch.bfloat16)
    used = lib.w4a16_gemv(out, x, packed.qweight, packed.scales, packed.zeros, None, 128, 0, 0, 0, 0, 0, 0, 1)
    assert used < 0
    # default behaviour unchanged: 4-tuples and 3-tuples still mean fold 0
    y3 = ops.cuda_gemv(x, packed, None, (1, 2, 4))
    y5 = ops.cuda_gemv(x, packed, None, (1, 2, 4, 0, 0))
    assert torch.equal(y3, y5)
