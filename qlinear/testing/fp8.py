"""FP8 (e4m3) checkpoint producers, decoders and fp32 references, for tests and the selfcheck.

Producers turn an fp32 weight ``W [N, K]`` into the tensors a checkpoint stores, the way the
format's producers compute them (FORMATS.md):

* :func:`quantize_fp8_block` — DeepSeek-V3 ``weight`` + ``weight_scale_inv`` (fp32, or e8m0 with
  ``scale_fmt="ue8m0"``). Per ``bn x bk`` block (edge blocks zero-padded, which leaves the
  absolute maximum unchanged): ``s = amax / 448`` (ue8m0: rounded *up* to a power of two, so no
  code overflows), ``w = e4m3(clamp(W / s, -448, 448))``. An all-zero block gets ``s = 1``
  (as transformers writes it) so that no division by zero happens.
* :func:`quantize_fp8_tensor` — per-tensor ``weight`` + fp32 scalar ``weight_scale``.
* :func:`quantize_fp8_channel` — compressed-tensors style ``weight`` + ``weight_scale [N, 1]``
  in the model dtype (fp32 by default).
* :func:`input_scale_for` — a static per-tensor ``input_scale`` calibrated on sample inputs.

Decoders (:func:`dequantize_fp8_block`, :func:`dequantize_fp8_tensor`,
:func:`dequantize_fp8_channel`) apply FORMATS.md's formula ``W = w.float() * scale`` with
explicit index arithmetic, independent of ``qlinear.reference``.

References: :func:`fake_quant_activations` quantizes activations as the FP8 linear ops define
it (per token and group, per token, or static), and :func:`fp8_linear_expected` is the fp32
output ``fq(x) @ W^T + b`` to compare a layer with. :func:`relative_error` is the metric.

Config builders: :func:`fp8_block_config`, :func:`fp8_tensor_config`.
"""

from __future__ import annotations

from typing import Any, Sequence

import torch

from qlinear._utils import FP8_E4M3, FP8_E4M3_MAX, cdiv

__all__ = [
    "quantize_fp8_block",
    "quantize_fp8_tensor",
    "quantize_fp8_channel",
    "input_scale_for",
    "dequantize_fp8_block",
    "dequantize_fp8_tensor",
    "dequantize_fp8_channel",
    "fake_quant_activations",
    "fp8_linear_expected",
    "relative_error",
    "fp8_block_config",
    "fp8_tensor_config",
    "ACT_SCALE_EPS",
]

# Floor of an activation group's absolute maximum, as the ops use it (keeps zero rows finite).
ACT_SCALE_EPS = 1e-10


def _as_fp32_2d(w: torch.Tensor) -> torch.Tensor:
    if w.dim() != 2 or not w.is_floating_point():
        raise ValueError(f"w: expected a 2-D float tensor [N, K], got shape={tuple(w.shape)} dtype={w.dtype}")
    return w.float()


def _to_e4m3(scaled: torch.Tensor) -> torch.Tensor:
    return scaled.clamp(-FP8_E4M3_MAX, FP8_E4M3_MAX).to(FP8_E4M3)


def _pow2_ceil(s: torch.Tensor) -> torch.Tensor:
    """Smallest power of two >= s (s > 0), exact: frexp gives s = m * 2^e with m in [0.5, 1)."""
    mantissa, exponent = torch.frexp(s)
    return torch.ldexp(torch.ones_like(s), torch.where(mantissa == 0.5, exponent - 1, exponent))


def quantize_fp8_block(
    w: torch.Tensor, block: Sequence[int] = (128, 128), scale_fmt: str | None = None
) -> dict[str, torch.Tensor]:
    """DeepSeek-V3 block quantization of ``w [N, K]``.

    Returns ``{"weight": e4m3 [N, K], "weight_scale_inv": [ceil(N/bn), ceil(K/bk)]}``, the scale
    fp32 (``scale_fmt=None``) or ``float8_e8m0fnu`` (``"ue8m0"``); ``W ~= weight * scale``.
    """
    bn, bk = (int(b) for b in block)
    wf = _as_fp32_2d(w)
    N, K = wf.shape
    gn, gk = cdiv(N, bn), cdiv(K, bk)
    padded = torch.zeros(gn * bn, gk * bk, dtype=torch.float32, device=wf.device)
    padded[:N, :K] = wf
    amax = padded.reshape(gn, bn, gk, bk).abs().amax(dim=(1, 3))
    scale = torch.where(amax > 0, amax / FP8_E4M3_MAX, torch.ones_like(amax))
    if scale_fmt == "ue8m0":
        scale = _pow2_ceil(scale)
    elif scale_fmt is not None:
        raise ValueError(f"scale_fmt: expected None or 'ue8m0', got {scale_fmt!r}")
    q = _to_e4m3(padded.reshape(gn, bn, gk, bk) / scale[:, None, :, None]).reshape(gn * bn, gk * bk)[:N, :K]
    stored = scale.to(torch.float8_e8m0fnu) if scale_fmt == "ue8m0" else scale
    return {"weight": q.contiguous(), "weight_scale_inv": stored.contiguous()}


def quantize_fp8_tensor(w: torch.Tensor, scale_shape: tuple[int, ...] = ()) -> dict[str, torch.Tensor]:
    """Per-tensor quantization: ``s = amax / 448``, ``weight = e4m3(W / s)``.

    Returns ``{"weight": e4m3 [N, K], "weight_scale": fp32 of shape scale_shape}`` (``()`` as
    the per-tensor DeepSeek-style checkpoints store it, ``(1,)`` as compressed-tensors does).
    """
    wf = _as_fp32_2d(w)
    amax = wf.abs().amax()
    scale = torch.where(amax > 0, amax / FP8_E4M3_MAX, torch.ones_like(amax))
    return {"weight": _to_e4m3(wf / scale).contiguous(), "weight_scale": scale.reshape(scale_shape).clone()}


def quantize_fp8_channel(w: torch.Tensor, scale_dtype: torch.dtype = torch.float32) -> dict[str, torch.Tensor]:
    """Per-output-channel quantization, compressed-tensors layout.

    The scale is rounded to ``scale_dtype`` (the model dtype) *before* the weight is divided by
    it, so ``weight * weight_scale`` stays the producer's exact reconstruction. Returns
    ``{"weight": e4m3 [N, K], "weight_scale": scale_dtype [N, 1]}``.
    """
    wf = _as_fp32_2d(w)
    amax = wf.abs().amax(dim=1, keepdim=True)
    scale = torch.where(amax > 0, amax / FP8_E4M3_MAX, torch.ones_like(amax)).to(scale_dtype)
    return {"weight": _to_e4m3(wf / scale.float()).contiguous(), "weight_scale": scale.contiguous()}


def input_scale_for(x: torch.Tensor, shape: tuple[int, ...] = ()) -> torch.Tensor:
    """A static per-tensor activation scale calibrated on ``x``: ``amax(|x|) / 448`` (fp32)."""
    return (x.detach().float().abs().amax().clamp(min=ACT_SCALE_EPS) / FP8_E4M3_MAX).reshape(shape).clone()


def dequantize_fp8_block(weight: torch.Tensor, scale: torch.Tensor, block: Sequence[int] = (128, 128)) -> torch.Tensor:
    """``W[n, k] = weight[n, k] * scale[n // bn, k // bk]`` in fp32 (FORMATS.md)."""
    bn, bk = (int(b) for b in block)
    N, K = weight.shape
    if tuple(scale.shape) != (cdiv(N, bn), cdiv(K, bk)):
        raise ValueError(f"scale: expected shape {(cdiv(N, bn), cdiv(K, bk))} for weight {tuple(weight.shape)}, got {tuple(scale.shape)}")
    rows = torch.arange(N, device=weight.device) // bn
    cols = torch.arange(K, device=weight.device) // bk
    return weight.float() * scale.float()[rows[:, None], cols[None, :]]


def dequantize_fp8_tensor(weight: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """``W = weight * s`` with one scale element, in fp32."""
    if scale.numel() != 1:
        raise ValueError(f"scale: expected one element, got shape {tuple(scale.shape)}")
    return weight.float() * scale.float().reshape(())


def dequantize_fp8_channel(weight: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """``W[n, k] = weight[n, k] * s[n]`` with ``scale`` [N, 1] or [N], in fp32."""
    if scale.numel() != weight.shape[0]:
        raise ValueError(f"scale: expected {weight.shape[0]} elements, got shape {tuple(scale.shape)}")
    return weight.float() * scale.float().reshape(-1, 1)


def fake_quant_activations(x: torch.Tensor, mode: str, *, group_size: int = 128, input_scale: torch.Tensor | None = None) -> torch.Tensor:
    """What an FP8 linear feeds its GEMM, dequantized to fp32, for ``x [..., K]``.

    ``mode``: ``"group"`` (per token, groups of ``group_size`` columns, last group ragged),
    ``"token"`` (one group per row) or ``"static"`` (``input_scale``, one element). Dynamic
    scales are ``max(amax, 1e-10) / 448``; codes ``e4m3(clamp(x / s, -448, 448))``.
    """
    xf = x.detach().float()
    if mode == "static":
        if input_scale is None or input_scale.numel() != 1:
            raise ValueError("fake_quant_activations(mode='static'): input_scale with one element is required")
        s = input_scale.float().reshape(())
        return _to_e4m3(xf / s).float() * s
    if mode not in ("token", "group"):
        raise ValueError(f"mode: expected 'group', 'token' or 'static', got {mode!r}")
    K = xf.shape[-1]
    g = K if mode == "token" else int(group_size)
    out = torch.empty_like(xf)
    for start in range(0, K, g):  # plain loop over column groups: K / g is small in tests
        part = xf[..., start:start + g]
        s = part.abs().amax(dim=-1, keepdim=True).clamp(min=ACT_SCALE_EPS) / FP8_E4M3_MAX
        out[..., start:start + g] = _to_e4m3(part / s).float() * s
    return out


def fp8_linear_expected(
    x: torch.Tensor,
    w_dequantized: torch.Tensor,
    mode: str,
    *,
    group_size: int = 128,
    input_scale: torch.Tensor | None = None,
    bias: torch.Tensor | None = None,
) -> torch.Tensor:
    """fp32 ``fake_quant_activations(x) @ W^T (+ bias)``, shape ``[..., N]``."""
    a = fake_quant_activations(x, mode, group_size=group_size, input_scale=input_scale)
    out = a @ w_dequantized.float().t()
    return out + bias.float() if bias is not None else out


def relative_error(actual: torch.Tensor, expected: torch.Tensor) -> float:
    """``||actual - expected|| / ||expected||`` (Frobenius, fp64)."""
    a, e = actual.detach().double(), expected.detach().double()
    return float((a - e).norm() / e.norm().clamp(min=1e-300))


def fp8_block_config(
    block: Sequence[int] = (128, 128), scale_fmt: str | None = None, ignored_layers: Sequence[str] | None = None, **extra: Any
) -> dict[str, Any]:
    """A DeepSeek-V3 style ``quantization_config`` dict (``scale_fmt`` added only when given)."""
    cfg: dict[str, Any] = {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic",
                           "weight_block_size": [int(b) for b in block]}
    if scale_fmt is not None:
        cfg["scale_fmt"] = scale_fmt
    if ignored_layers is not None:
        cfg["ignored_layers"] = list(ignored_layers)
    cfg.update(extra)
    return cfg


def fp8_tensor_config(activation_scheme: str = "dynamic", ignored_layers: Sequence[str] | None = None, **extra: Any) -> dict[str, Any]:
    """The per-tensor ``quant_method: "fp8"`` config (no ``weight_block_size``)."""
    cfg: dict[str, Any] = {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": activation_scheme}
    if ignored_layers is not None:
        cfg["ignored_layers"] = list(ignored_layers)
    cfg.update(extra)
    return cfg
