"""The x-staged W4A16 decode kernel (pipe 3 of the register kernel, csrc/w4a16_xs.cuh: the warps split
the rows, x copied once per CTA into shared memory) on an sm_90 GPU.

Against ``x @ W.T + bias`` in fp32 with W from ``dequantize_canonical`` (independent of the packed
layout) on fresh random data: every compiled code x fold 0 / 1 x bf16 / fp16 x warps 1 / 3 / 8 / 12 (where
the code takes them) x M 9 .. 16;
ragged N (partial CTAs, warps with no rows), K with a partial last superblock and a partial last copy
chunk, groups 128 / 384 / per channel, fp32 scales, symmetric layers, strided x rows, the three issue
shapes; a PDL chain captured in a CUDA graph (each link's x is the previous link's output); the
refusals (kNoXs for K % 8 != 0 or misaligned x, kTooMuchSmem for x rows past the shared memory, kBadConfig
for an uncompiled code); and the dispatch table's fallback to the register kernel where the x-staged
kernel does not apply.
"""

import pytest
import torch

from _w4a16_gpu_data import assert_matches, check_pdl_chain
from _w4a16_gpu_data import layer as _layer
from qlinear.ops import w4a16 as ops

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.get_device_capability()[0] < 9,
                       reason="needs an sm_90 GPU"),
]

DEV = "cuda"
K_BAD_CONFIG, K_TOO_MUCH_SMEM, K_NO_XS = 6, 10, 12


def _lib():
    from qlinear.kernels import cuda_ext

    return cuda_ext.load()


def _codes():
    codes = list(_lib().w4a16_xs_configs())
    assert codes and all(c % 10 == 3 for c in codes)
    return codes


def _cfg(code, warps, fold):
    return (code // 1000, code // 100 % 10, warps, code % 10, fold)


def _max_warps(code):
    return 12 if code // 1000 == 1 and code // 100 % 10 <= 2 else 8  # w4a16_xs.cuh xs_threads


def _x(m, k, dtype, seed, stride=None):
    gen = torch.Generator(device=DEV).manual_seed(500 + seed)
    if stride is None:
        return torch.randn(m, k, device=DEV, generator=gen).to(dtype)
    return torch.randn(m, stride, device=DEV, generator=gen).to(dtype)[:, :k]


def _check(packed, w, x, cfg, bias=None):
    y = ops.cuda_gemv(x, packed, bias, cfg)
    assert_matches(y, x, w, bias, f"M={x.shape[0]} N={packed.n} K={packed.k} config={cfg} {x.dtype}")
    return y


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("fold", [0, 1])
def test_every_code(fold, dtype):
    # (n, k, group, asym, scale dtype): ragged N, K with partial last superblock / copy chunk, wide
    # groups, per channel, fp32 scales, symmetric
    cases = [(1000, 384, 128, True, None), (300, 1544, -1, True, torch.float32), (130, 1536, 384, False, None),
             (64, 2304, 256, True, torch.float32), (520, 1160, -1, False, None)]
    for n, k, group, asym, sdt in cases:
        sdt = sdt or (torch.float16 if dtype == torch.float16 else torch.bfloat16)
        packed, w = _layer(n, k, group, asym, sdt, seed=n + k)
        for code in _codes():
            for warps in (1, 3, 8, 12):
                if warps > _max_warps(code):
                    continue
                for m in (9, 13, 16):
                    x = _x(m, k, dtype, seed=m + code + warps)
                    b = torch.randn(n, device=DEV).to(dtype) if m % 2 else None
                    _check(packed, w, x, _cfg(code, warps, fold), b)


@pytest.mark.parametrize("shape", [(2112, 7168), (24576, 1536), (7168, 16384)])
def test_issue_shapes(shape):
    n, k = shape
    packed, w = _layer(n, k, seed=n + 7)
    lib = _lib()
    for code in _codes():
        for m in (9, 16):
            x = _x(m, k, torch.bfloat16, seed=m)
            cfg = _cfg(code, 6, 0)
            why = lib.w4a16_gemv_supported(x, packed.qweight, packed.scales, packed.zeros, packed.group_size,
                                           *cfg[:3], -1, cfg[3], 0)
            # 16 rows of 7168 / 16384 columns do not fit the 227 KB of shared memory
            if 16 * ((2 * k + 127) // 128 * 128 + 32) + 256 > 227 * 1024 or k > 8192:
                assert why in (K_TOO_MUCH_SMEM, K_NO_XS), (shape, m, why)
                continue
            assert why == 0, (shape, m, why)
            _check(packed, w, x, cfg)


def test_strided_x_and_equal_bits_across_warps():
    """x rows 1032 elements apart (16-byte aligned); the same layer at 1, 3 and 12 warps per CTA gives the
    same bits (each output is one warp's fixed-order sum whatever the CTA's size)."""
    packed, w = _layer(777, 1024, seed=5)
    x = _x(12, 1024, torch.bfloat16, seed=3, stride=1032)
    assert x.stride(0) == 1032
    ys = [_check(packed, w, x, _cfg(1123, warps, 0)) for warps in (1, 3, 12)]
    assert all(torch.equal(ys[0], y) for y in ys[1:])


def test_pdl_chain_in_a_graph():
    """The first chunk's weights are requested before griddepcontrol.wait, x's copies after it: a chain
    whose links read the previous link's output (K = N) sees every input complete, with PDL on and off
    alike; the chain captured in a graph and replayed on fresh x matches the fp32 reference per link."""
    packed, w = _layer(2048, 2048, seed=11)
    x = _x(16, 2048, torch.bfloat16, seed=1)
    cfg = _cfg(1223, 12, 1)
    check_pdl_chain(packed, w, x, lambda xi, pdl: ops.cuda_gemv(xi, packed, config=cfg, pdl=pdl))


def test_refusals():
    lib = _lib()
    packed, _ = _layer(256, 1024, seed=2)

    def why(x, p=packed, r=1, u=2, warps=4, fold=0, pipe=3):
        return lib.w4a16_gemv_supported(x, p.qweight, p.scales, p.zeros, p.group_size, r, u, warps, -1, pipe, fold)

    x = _x(16, 1024, torch.bfloat16, seed=0)
    assert why(x) == 0 and why(x, fold=1) == 0
    assert why(x, r=2, u=2) == K_BAD_CONFIG  # 2223: not compiled
    assert why(x, warps=13) == K_BAD_CONFIG  # past the code's 384 threads
    assert why(x, r=2, u=1, warps=9) == K_BAD_CONFIG  # past 2123's 256 threads
    assert why(x, pipe=4) == K_BAD_CONFIG
    assert why(_x(16, 1024, torch.bfloat16, seed=0, stride=1028)) == K_NO_XS  # row stride % 8 != 0
    buf = torch.randn(16 * 1024 + 4, device=DEV).to(torch.bfloat16)
    assert why(buf[4:].view(16, 1024)) == K_NO_XS  # 8-byte, not 16-byte, aligned
    p12, _ = _layer(64, 1156, -1, True, seed=4)  # K % 8 == 4
    assert why(_x(16, 1156, torch.bfloat16, seed=0), p=p12) == K_NO_XS
    wide, _ = _layer(64, 8192, seed=6)  # 16 rows x 16416 bytes > 227 KB
    assert why(_x(16, 8192, torch.bfloat16, seed=0), p=wide) == K_TOO_MUCH_SMEM
    with pytest.raises(RuntimeError, match="x-staged"):
        ops.cuda_gemv(_x(16, 1156, torch.bfloat16, seed=0), p12, None, (1, 2, 4, 3, 0))


def test_auto_table_falls_back_where_it_does_not_apply(monkeypatch):
    """An _CUDA_XS_AUTO entry is used where the x-staged kernel applies, and the register kernel's
    _CUDA_REG_AUTO entry where it does not (x rows not 16-byte aligned): both match the reference."""
    monkeypatch.setitem(ops._CUDA_XS_AUTO, ("short", 2), (1, 2, 6, 3, 1))
    packed, w = _layer(24576, 1536, seed=9)
    x = _x(16, 1536, torch.bfloat16, seed=4)
    assert ops._cuda_auto_reg(x, packed) == (1, 2, 6, 3, 1)
    assert_matches(ops.w4a16_linear(x, packed, None, backend="cuda"), x, w, None, "xs auto")
    xm = _x(16, 1536, torch.bfloat16, seed=4, stride=1540)  # row stride % 8 == 4
    assert not ops._cuda_xs_ok(xm, packed)
    assert ops._cuda_auto_reg(xm, packed) == ops._CUDA_REG_AUTO[("short", 2)]
    assert_matches(ops.w4a16_linear(xm, packed, None, backend="cuda"), xm, w, None, "xs fallback")
