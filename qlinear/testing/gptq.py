"""A GPTQ (checkpoint format v1, or ``gptq_v2``) writer and an independent decoder, from the spec.

No GPTQ producer installs on a CPU machine (AutoGPTQ / GPTQModel need CUDA builds), so the
checkpoint tensors are written here from the layout in FORMATS.md, with round-to-nearest
quantization in place of GPTQ's error feedback (the layout is the same, only the choice of
integers differs). With ``desc_act`` the input columns are visited in a random "activation
order" and numbered into groups in that order, as AutoGPTQ does, so ``g_idx`` is not monotone.

Layout (W is the logical weight ``[N, K]``, b bits, g group size, G = K / g):

* ``qweight`` int32 ``[K * b / 32, N]``: word ``r`` of column ``n`` holds ``q[8r + i, n]`` (4-bit)
  in bits ``[b*i, b*i + b)``, low bits first; values unsigned ``0 .. 2^b - 1``.
* ``qzeros`` int32 ``[G, ceil(N * b / 32)]``: packed along N the same way; v1 stores
  ``zero - 1`` (so a zero of 0 is stored as ``2^b - 1``: it wraps), ``gptq_v2`` stores ``zero``.
* ``scales`` fp16 ``[G, N]``; ``g_idx`` int32 ``[K]``: group of input column k.
* ``W[n, k] = scales[g_idx[k], n] * (q[k, n] - zero[g_idx[k], n])``.
"""

from __future__ import annotations

from typing import Any

import torch

__all__ = ["quantize_gptq", "dequantize_gptq", "gptq_config", "act_order_g_idx"]


def _to_int32(words: torch.Tensor) -> torch.Tensor:
    """Reinterpret non-negative int64 values < 2^32 as int32 words (two's complement)."""
    return torch.where(words >= 2**31, words - 2**32, words).to(torch.int32)


def _pack_rows(values: torch.Tensor, bits: int) -> torch.Tensor:
    """Pack unsigned ``values [R, C]`` along dim 0: word r holds rows ``r*per + i`` at bits ``b*i``.
    R is zero-padded up to a multiple of ``per = 32 // bits``."""
    per = 32 // bits
    rows, cols = values.shape
    padded = torch.zeros((-(-rows // per)) * per, cols, dtype=torch.int64)
    padded[:rows] = values.to(torch.int64)
    words = torch.zeros(padded.shape[0] // per, cols, dtype=torch.int64)
    for i in range(per):
        words |= padded[i::per] << (bits * i)
    return _to_int32(words)


def act_order_g_idx(k: int, group_size: int, perm: torch.Tensor) -> torch.Tensor:
    """``g_idx`` for columns visited in order ``perm``: the j-th visited column is in group j // g."""
    g_idx = torch.empty(k, dtype=torch.int32)
    g_idx[perm] = (torch.arange(k) // group_size).to(torch.int32)
    return g_idx


def quantize_gptq(
    w: torch.Tensor,
    bits: int = 4,
    group_size: int = 128,
    sym: bool = True,
    desc_act: bool = False,
    *,
    seed: int = 0,
    perm: torch.Tensor | None = None,
    checkpoint_format: str = "gptq",
    scale_dtype: torch.dtype = torch.float16,
) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
    """Quantize ``w`` fp32 ``[N, K]`` and write GPTQ tensors.

    Returns ``({"qweight", "qzeros", "scales", "g_idx"}, dequantized fp32 [N, K])`` where the
    dequantized weight is exactly what the tensors decode to (scales rounded to ``scale_dtype``
    first). ``group_size=-1`` means one group over all of K. ``desc_act=True`` draws a random
    column order from ``seed`` (or takes ``perm``); ``sym`` uses zero ``2^(b-1)`` and a scale from
    the absolute maximum, otherwise the zero comes from the min/max range (AutoGPTQ's rules).
    """
    if bits not in (4, 8):
        raise ValueError(f"quantize_gptq: bits must be 4 or 8, got {bits}")
    if checkpoint_format not in ("gptq", "gptq_v2"):
        raise ValueError(f"quantize_gptq: checkpoint_format must be 'gptq' or 'gptq_v2', got {checkpoint_format!r}")
    w = w.detach().to(torch.float32)
    n, k = w.shape
    g = k if group_size == -1 else group_size
    if g <= 0 or k % g or k % (32 // bits):
        raise ValueError(f"quantize_gptq: K={k} must be a multiple of group_size={group_size} and of {32 // bits}")
    groups = k // g
    maxq = 2**bits - 1
    if desc_act:
        if perm is None:
            perm = torch.randperm(k, generator=torch.Generator().manual_seed(seed))
        g_idx = act_order_g_idx(k, g, perm)
    else:
        g_idx = (torch.arange(k) // g).to(torch.int32)

    # Visit the columns group by group (act-order groups are scattered over K): sort by group,
    # quantize contiguous [N, G, g] blocks, then put the columns back where they were.
    order = torch.sort(g_idx.to(torch.int64), stable=True).indices
    blocks = w[:, order].reshape(n, groups, g)
    xmin = blocks.amin(dim=2).clamp(max=0)
    xmax = blocks.amax(dim=2).clamp(min=0)
    if sym:
        xmax = torch.maximum(xmin.abs(), xmax)
        xmin = -xmax
    empty = (xmin == 0) & (xmax == 0)
    xmin = torch.where(empty, -1.0, xmin)
    xmax = torch.where(empty, 1.0, xmax)
    scale = ((xmax - xmin) / maxq).to(scale_dtype).to(torch.float32)  # [N, G]
    if sym:
        zero = torch.full((n, groups), (maxq + 1) // 2, dtype=torch.int64)
    else:
        zero = torch.round(-xmin / scale).clamp(0, maxq).to(torch.int64)
    q_sorted = torch.clamp(torch.round(blocks / scale[..., None]) + zero[..., None], 0, maxq).to(torch.int64)
    deq_sorted = (q_sorted - zero[..., None]).to(torch.float32) * scale[..., None]
    q = torch.empty(n, k, dtype=torch.int64)
    deq = torch.empty(n, k, dtype=torch.float32)
    q[:, order] = q_sorted.reshape(n, k)
    deq[:, order] = deq_sorted.reshape(n, k)
    scales, zeros, q = scale.T.contiguous(), zero.T, q.T  # [G, N], [G, N], [K, N]

    stored_zeros = (zeros - 1) & maxq if checkpoint_format == "gptq" else zeros
    tensors = {
        "qweight": _pack_rows(q, bits),  # [K*b/32, N]
        "qzeros": _pack_rows(stored_zeros.T, bits).T.contiguous(),  # [G, ceil(N*b/32)]
        "scales": scales.to(scale_dtype),
        "g_idx": g_idx,
    }
    return tensors, deq


def _unpack_bits(words: torch.Tensor, bits: int, count: int) -> torch.Tensor:
    """int32 ``words [W, C]`` -> unsigned int64 ``[count, C]``: entry ``j`` is bits
    ``[b*(j % per), ...)`` of word ``j // per`` (per = 32 // bits)."""
    per = 32 // bits
    u = words.to(torch.int64) & 0xFFFFFFFF
    j = torch.arange(count)
    return (u[j // per] >> (bits * (j % per))[:, None]) & (2**bits - 1)


def dequantize_gptq(
    tensors: dict[str, torch.Tensor],
    bits: int,
    group_size: int | None = None,
    *,
    checkpoint_format: str = "gptq",
) -> torch.Tensor:
    """Decode GPTQ tensors to the fp32 weight ``[N, K]`` straight from the formula.

    Uses ``tensors["g_idx"]`` when present, else group ``k // group_size`` (``-1``: one group).
    v1 zeros are ``stored + 1`` modulo ``2^b`` (AutoGPTQ's own decoder masks after adding 1).
    """
    qweight, qzeros, scales = tensors["qweight"], tensors["qzeros"], tensors["scales"]
    groups, n = scales.shape
    k = qweight.shape[0] * 32 // bits
    q = _unpack_bits(qweight, bits, k)  # [K, N]
    z = _unpack_bits(qzeros.T, bits, n).T  # [G, N]
    if checkpoint_format == "gptq":
        z = (z + 1) & (2**bits - 1)
    g_idx = tensors.get("g_idx")
    if g_idx is None:
        g = k if group_size in (None, -1) else group_size
        g_idx = torch.arange(k) // g
    g_idx = g_idx.to(torch.int64)
    w = (q - z[g_idx]).to(torch.float32) * scales.to(torch.float32)[g_idx]
    return w.T.contiguous()


def gptq_config(
    bits: int = 4, group_size: int = 128, desc_act: bool = False, sym: bool = True, **extra: Any
) -> dict[str, Any]:
    """A ``quantization_config`` as AutoGPTQ writes it into ``config.json``."""
    cfg: dict[str, Any] = {
        "bits": bits,
        "group_size": group_size,
        "damp_percent": 0.01,
        "desc_act": desc_act,
        "static_groups": False,
        "sym": sym,
        "true_sequential": True,
        "model_name_or_path": None,
        "model_file_base_name": "model",
        "quant_method": "gptq",
    }
    cfg.update(extra)
    return cfg
