"""Random FP8 block-scaled weights for the GPU tests of the CUDA decode kernels (test_fp8_cuda_gemv.py,
test_fp8_tma_gpu.py) and the comparison of a kernel's output with ``fp8_block_linear_ref``."""

from __future__ import annotations

import functools

import torch

from qlinear.reference import fp8 as ref

TOL = 1e-2


@functools.lru_cache(maxsize=4)
def weight(n, k, seed=0, device="cuda"):
    """(e4m3 weight [n, k], fp32 weight_scale_inv [cdiv(n, 128), k / 128]), drawn on the device."""
    gen = torch.Generator(device=device).manual_seed(seed)
    w = (torch.randn(n, k, device=device, generator=gen) * 64).clamp(-448, 448).to(torch.float8_e4m3fn)
    wsi = torch.rand((n + 127) // 128, k // 128, device=device, generator=gen) * 1e-3 + 1e-4
    return w, wsi


def check(y, x, w, wsi, b, what):
    """y against the reference on the same operands: rel. err. <= TOL, and every element within 3 % of
    the output's largest magnitude."""
    # The reference runs on the CPU: evaluated with torch's CUDA ops its quantization gives other codes
    # for a few elements in most draws (session 9 run 6, benchmarks/probe_fp8_ragged.py), while the
    # kernels' quantizer matches the CPU evaluation bit for bit; with K = 192 one such code moves the
    # result by ~1 % (run 4: a K = 192 draw at 1.18e-2).
    want = ref.fp8_block_linear_ref(x.cpu(), w.cpu(), wsi.cpu(), (128, 128), None if b is None else b.cpu())
    want = want.float().to(y.device)
    assert y.shape == want.shape and y.dtype == x.dtype, what
    err = ((y.float() - want).norm() / want.norm()).item()
    assert err <= TOL, f"rel err {err:.3e} ({what})"
    close = torch.isclose(y.float(), want, rtol=3e-2, atol=3e-2 * want.abs().max().item())
    assert bool(close.all()), f"{int((~close).sum())} wrong elements ({what})"
