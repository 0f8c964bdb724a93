"""fp32 references for RMSNorm and fused-add RMSNorm.

Shared by the tests, the benchmarks and the CPU path of :mod:`qlinear.ops.norm`.
"""

from __future__ import annotations

import torch

__all__ = ["rms_norm_ref", "fused_add_rms_norm_ref"]


def rms_norm_ref(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """y = x / sqrt(mean(x^2, -1) + eps) * weight, computed in fp32 and returned in ``x.dtype``.

    Shapes: ``x`` is ``[..., H]`` (any strides), ``weight`` is ``[H]`` (any float dtype: it is
    widened to fp32 like ``x``). Returns a new contiguous tensor of ``x``'s shape and dtype.
    fp64 inputs are computed in fp64. An inf in a row makes ``mean(x^2)`` inf, so that row
    becomes 0 where x is finite and NaN where x is inf (inf * 0); NaN propagates to its row.
    """
    compute = torch.float64 if x.dtype == torch.float64 else torch.float32
    xf = x.to(compute)
    inv = torch.rsqrt(xf.square().mean(dim=-1, keepdim=True) + eps)
    return (xf * inv * weight.to(compute)).to(x.dtype)


def fused_add_rms_norm_ref(
    x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6
) -> tuple[torch.Tensor, torch.Tensor]:
    """Out-of-place fused add + RMSNorm: returns ``(out, new_residual)``.

    new_residual = (x + residual) computed in fp32 and rounded to ``residual.dtype``;
    out = rms_norm_ref(new_residual, weight, eps) in ``x.dtype``. The norm is taken of the rounded
    sum, i.e. of exactly the values the in-place op stores into ``residual``. ``x`` and
    ``residual`` are ``[..., H]`` of one shape; neither is modified.
    """
    compute = torch.float64 if x.dtype == torch.float64 else torch.float32
    new_residual = (x.to(compute) + residual.to(compute)).to(residual.dtype)
    return rms_norm_ref(new_residual, weight, eps).to(x.dtype), new_residual
