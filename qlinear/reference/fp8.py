"""fp32 references for FP8 (e4m3) activation quantization, weight dequantization and FP8 GEMMs.

Every function here runs on any device (CPU included) with plain PyTorch ops. The Triton kernels in
``qlinear.kernels.fp8_triton`` follow the same formulas, so their outputs can be checked against
these element by element; the CPU path of ``qlinear.ops.fp8`` calls these directly.

Quantization formula (one group = ``group_size`` consecutive elements of one row; the last group
of a row may be shorter when ``K % group_size != 0`` and then only covers the valid elements)::

    amax  = max(|x_g|)                                  # in fp32
    scale = max(amax, FP8_SCALE_EPS) / 448              # fp32, IEEE division (round to nearest)
    q     = e4m3(clamp(x_g / scale, -448, 448))         # fp32 IEEE division, RNE cast to e4m3

``scale`` is a multiplier: ``x_g ~= q * scale``. The ``FP8_SCALE_EPS`` floor keeps an all-zero
group finite (its scale is tiny, its codes are 0).
"""

from __future__ import annotations

import torch

from qlinear._utils import FP8_E4M3, FP8_E4M3_MAX, cdiv, describe

__all__ = [
    "FP8_SCALE_EPS",
    "per_token_group_quant_fp8_ref",
    "per_token_quant_fp8_ref",
    "static_quant_fp8_ref",
    "dequant_fp8_block_ref",
    "dequant_fp8_group_ref",
    "fp8_block_gemm_ref",
    "fp8_block_linear_ref",
    "fp8_scaled_linear_ref",
    "rms_norm_quant_fp8_ref",
]

# Floor of a group's absolute maximum, so that an all-zero group gets a finite, non-zero scale.
FP8_SCALE_EPS = 1e-10


def _check_2d_float(name: str, t: torch.Tensor) -> None:
    if t.dim() != 2:
        raise ValueError(f"{name}: expected a 2-D tensor [M, K], got {describe(t)}")
    if not t.is_floating_point():
        raise TypeError(f"{name}: expected a floating-point tensor, got {describe(t)}")


def per_token_group_quant_fp8_ref(
    x: torch.Tensor, group_size: int = 128
) -> tuple[torch.Tensor, torch.Tensor]:
    """Quantize each row of ``x`` [M, K] per group of ``group_size`` columns to e4m3.

    Returns ``(q, scales)``: ``q`` float8_e4m3fn [M, K], ``scales`` fp32 [M, cdiv(K, group_size)]
    (row-major), with the formula of the module docstring. Any strides are accepted.
    """
    _check_2d_float("x", x)
    if group_size <= 0:
        raise ValueError(f"group_size: expected a positive integer, got {group_size}")
    M, K = x.shape
    G = cdiv(K, group_size)
    pad = G * group_size - K
    xf = x.float()
    if pad:
        # Zero padding does not change a group's absolute maximum.
        xf = torch.nn.functional.pad(xf, (0, pad))
    xg = xf.reshape(M, G, group_size)
    amax = xg.abs().amax(dim=-1)
    scales = torch.clamp(amax, min=FP8_SCALE_EPS) / FP8_E4M3_MAX
    q = torch.clamp(xg / scales.unsqueeze(-1), -FP8_E4M3_MAX, FP8_E4M3_MAX).to(FP8_E4M3)
    q = q.reshape(M, G * group_size)[:, :K].contiguous()
    return q, scales


def per_token_quant_fp8_ref(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-row (per-token) e4m3 quantization of ``x`` [M, K]: one group spanning the whole row.

    Returns ``(q [M, K] e4m3, scales [M, 1] fp32)``.
    """
    _check_2d_float("x", x)
    return per_token_group_quant_fp8_ref(x, max(int(x.shape[1]), 1))


def static_quant_fp8_ref(x: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """Quantize ``x`` with a given per-tensor fp32 ``scale`` (one element):
    ``q = e4m3(clamp(x / scale, -448, 448))`` computed in fp32."""
    if scale.numel() != 1:
        raise ValueError(f"scale: expected one element (per-tensor), got {describe(scale)}")
    return torch.clamp(x.float() / scale.float().reshape(()), -FP8_E4M3_MAX, FP8_E4M3_MAX).to(FP8_E4M3)


def dequant_fp8_group_ref(q: torch.Tensor, scales: torch.Tensor, group_size: int) -> torch.Tensor:
    """Inverse of :func:`per_token_group_quant_fp8_ref`: ``q[m, k] * scales[m, k // group_size]``
    in fp32. ``scales`` may be row- or column-major."""
    M, K = q.shape
    G = cdiv(K, group_size)
    if tuple(scales.shape) != (M, G):
        raise ValueError(f"scales: expected shape ({M}, {G}), got {describe(scales)}")
    s = scales.float().repeat_interleave(group_size, dim=1)[:, :K]
    return q.float() * s


def dequant_fp8_block_ref(
    w_fp8: torch.Tensor, scale: torch.Tensor, block: tuple[int, int] = (128, 128)
) -> torch.Tensor:
    """Dequantize a block-scaled e4m3 weight: ``W[n, k] = w[n, k] * scale[n // bn, k // bk]`` (fp32).

    ``w_fp8`` [N, K] float8_e4m3fn, ``scale`` [cdiv(N, bn), cdiv(K, bk)] (any float dtype; DeepSeek's
    ``weight_scale_inv`` is such a multiplier despite its name), ``block = (bn, bk)``.
    """
    if w_fp8.dim() != 2:
        raise ValueError(f"w_fp8: expected [N, K], got {describe(w_fp8)}")
    bn, bk = block
    N, K = w_fp8.shape
    expected = (cdiv(N, bn), cdiv(K, bk))
    if tuple(scale.shape) != expected:
        raise ValueError(f"scale: expected shape {expected} for weight [{N}, {K}] and block {block}, got {describe(scale)}")
    s = scale.float().repeat_interleave(bn, dim=0)[:N].repeat_interleave(bk, dim=1)[:, :K]
    return w_fp8.float() * s


def fp8_block_gemm_ref(
    a_fp8: torch.Tensor,
    a_scale: torch.Tensor,
    w_fp8: torch.Tensor,
    w_scale: torch.Tensor,
    block: tuple[int, int] = (128, 128),
    out_dtype: torch.dtype = torch.bfloat16,
    bias: torch.Tensor | None = None,
) -> torch.Tensor:
    """GEMM of already-quantized operands in fp32: ``out = deq(a) @ deq(w).T (+ bias)``, cast to
    ``out_dtype``. ``a_fp8`` [M, K] e4m3 with ``a_scale`` [M, cdiv(K, bk)] (group size ``bk``),
    ``w_fp8`` [N, K] e4m3 with ``w_scale`` [cdiv(N, bn), cdiv(K, bk)]."""
    a = dequant_fp8_group_ref(a_fp8, a_scale, block[1])
    w = dequant_fp8_block_ref(w_fp8, w_scale, block)
    out = a @ w.t()
    if bias is not None:
        out = out + bias.float()
    return out.to(out_dtype)


def fp8_block_linear_ref(
    x: torch.Tensor,
    w_fp8: torch.Tensor,
    w_scale: torch.Tensor,
    block: tuple[int, int] = (128, 128),
    bias: torch.Tensor | None = None,
) -> torch.Tensor:
    """Linear layer with a block-scaled e4m3 weight and dynamic per-token-group activations.

    ``x`` [..., K] is quantized per row in groups of ``bk = block[1]`` exactly as the kernels do
    (:func:`per_token_group_quant_fp8_ref`), then ``deq(x_q) @ deq(w).T + bias`` is computed in
    fp32 and returned as ``x.dtype`` with shape [..., N].
    """
    K = x.shape[-1]
    N = w_fp8.shape[0]
    x2 = x.reshape(-1, K)
    q, s = per_token_group_quant_fp8_ref(x2, block[1])
    out = fp8_block_gemm_ref(q, s, w_fp8, w_scale, block, x.dtype, bias)
    return out.reshape(*x.shape[:-1], N)


def fp8_scaled_linear_ref(
    x: torch.Tensor,
    weight: torch.Tensor,
    weight_scale: torch.Tensor,
    input_scale: torch.Tensor | None = None,
    bias: torch.Tensor | None = None,
) -> torch.Tensor:
    """Linear layer with a per-tensor (``weight_scale`` one element) or per-channel (``[N]`` or
    ``[N, 1]``) scaled e4m3 ``weight`` [N, K].

    Activations: static per-tensor (``input_scale`` given: :func:`static_quant_fp8_ref`) or dynamic
    per-token (:func:`per_token_quant_fp8_ref`). Computes ``(q_x * s_x) @ (w * s_w).T + bias`` in
    fp32; returns ``x.dtype`` [..., N].
    """
    K = x.shape[-1]
    N = weight.shape[0]
    x2 = x.reshape(-1, K)
    if input_scale is None:
        q, s = per_token_quant_fp8_ref(x2)
        a = q.float() * s
    else:
        a = static_quant_fp8_ref(x2, input_scale).float() * input_scale.float().reshape(())
    ws = weight_scale.float().reshape(-1)
    if ws.numel() not in (1, N):
        raise ValueError(f"weight_scale: expected 1 or {N} elements, got {describe(weight_scale)}")
    w = weight.float() * ws.reshape(-1, 1)
    out = a @ w.t()
    if bias is not None:
        out = out + bias.float()
    return out.to(x.dtype).reshape(*x.shape[:-1], N)


def rms_norm_quant_fp8_ref(
    x: torch.Tensor,
    weight: torch.Tensor,
    eps: float = 1e-6,
    group_size: int = 128,
    residual: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """RMSNorm of each row of ``x`` [M, K] followed by per-token-group e4m3 quantization.

    Without ``residual``: ``h = x``. With ``residual`` (same shape and dtype as ``x``): ``h =
    dtype(fp32(x) + fp32(residual))`` is written back into ``residual`` in place (the rounded
    value is what the next layer sees, and also what is normalized). Then, all in fp32::

        y = h * rsqrt(mean(h^2) + eps) * weight
        (q, scales) = per_token_group_quant_fp8_ref(y, group_size)

    ``y`` is quantized straight from fp32 (no rounding to ``x.dtype`` in between). Strided rows are
    accepted. Returns ``q`` e4m3 [M, K] and row-major fp32 ``scales`` [M, cdiv(K, group_size)].
    """
    _check_2d_float("x", x)
    if residual is not None:
        if residual.shape != x.shape or residual.dtype != x.dtype:
            raise ValueError(f"residual: expected shape {tuple(x.shape)} dtype {x.dtype}, got {describe(residual)}")
        h = (x.float() + residual.float()).to(x.dtype)
        residual.copy_(h)
        hf = h.float()
    else:
        hf = x.float()
    rstd = torch.rsqrt(hf.pow(2).mean(dim=-1, keepdim=True) + eps)
    y = hf * rstd * weight.float()
    return per_token_group_quant_fp8_ref(y, group_size)
