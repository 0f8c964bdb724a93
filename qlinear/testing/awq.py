"""An AWQ (GEMM version) writer and an independent decoder, from the spec.

AutoAWQ needs a CUDA build, so the tensors are written here from the layout in FORMATS.md with
AutoAWQ's min/max round-to-nearest (the activation-aware scale search only changes which
integers are chosen, not the layout). compressed-tensors' ``AutoAWQConverter`` decodes the same
tensors independently in the tests.

Layout (W is the logical weight ``[N, K]``, 4 bits, g group size, G = K / g):

* ``qweight`` int32 ``[K, N / 8]``: packed along **N**; nibble ``i`` (bits ``[4i, 4i+4)``) of word
  ``c`` holds column ``8c + ORDER[i]`` with ``ORDER = [0, 2, 4, 6, 1, 3, 5, 7]``.
* ``qzeros`` int32 ``[G, N / 8]``: same packing, zeros stored as they are.
* ``scales`` fp16 ``[G, N]``. No ``g_idx``: group of column k is ``k // g``.
* ``W[n, k] = scales[k // g, n] * (q[k, n] - zeros[k // g, n])``.
"""

from __future__ import annotations

from typing import Any

import torch

__all__ = ["AWQ_ORDER", "quantize_awq", "dequantize_awq", "awq_config"]

#: nibble i of an AWQ word holds column 8c + AWQ_ORDER[i]
AWQ_ORDER = (0, 2, 4, 6, 1, 3, 5, 7)


def _pack_cols(values: torch.Tensor) -> torch.Tensor:
    """Pack unsigned 4-bit ``values [R, C]`` along dim 1 in AWQ order; C is zero-padded to 8s."""
    rows, cols = values.shape
    padded = torch.zeros(rows, (-(-cols // 8)) * 8, dtype=torch.int64)
    padded[:, :cols] = values.to(torch.int64)
    words = torch.zeros(rows, padded.shape[1] // 8, dtype=torch.int64)
    for i, col in enumerate(AWQ_ORDER):
        words |= padded[:, col::8] << (4 * i)
    return torch.where(words >= 2**31, words - 2**32, words).to(torch.int32)


def quantize_awq(
    w: torch.Tensor, group_size: int = 128, *, scale_dtype: torch.dtype = torch.float16
) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
    """Quantize ``w`` fp32 ``[N, K]`` to 4-bit asymmetric groups and write AWQ GEMM tensors.

    Returns ``({"qweight", "qzeros", "scales"}, dequantized fp32 [N, K])``; the dequantized weight
    is exactly what the tensors decode to. ``group_size=-1``: one group over all of K.
    """
    w = w.detach().to(torch.float32)
    n, k = w.shape
    g = k if group_size == -1 else group_size
    if g <= 0 or k % g:
        raise ValueError(f"quantize_awq: K={k} must be a multiple of group_size={group_size}")
    blocks = w.reshape(n, k // g, g)
    wmax, wmin = blocks.amax(dim=2), blocks.amin(dim=2)
    scales = ((wmax - wmin).clamp(min=1e-5) / 15).to(scale_dtype).to(torch.float32)  # [N, G]
    zeros = (-torch.round(wmin / scales)).clamp(0, 15)
    q = torch.clamp(torch.round(blocks / scales[..., None]) + zeros[..., None], 0, 15)
    deq = ((q - zeros[..., None]) * scales[..., None]).reshape(n, k)
    tensors = {
        "qweight": _pack_cols(q.reshape(n, k).T),  # [K, N/8]
        "qzeros": _pack_cols(zeros.T),  # [G, N/8]
        "scales": scales.T.contiguous().to(scale_dtype),  # [G, N]
    }
    return tensors, deq


def _unpack_cols(words: torch.Tensor, count: int) -> torch.Tensor:
    """int32 ``words [R, C]`` -> unsigned int64 ``[R, count]``: column j is the nibble at position
    ``AWQ_ORDER.index(j % 8)`` of word ``j // 8``."""
    u = words.to(torch.int64) & 0xFFFFFFFF
    j = torch.arange(count)
    nibble = torch.tensor([AWQ_ORDER.index(int(c)) for c in (j % 8)], dtype=torch.int64)
    return (u[:, j // 8] >> (4 * nibble)) & 0xF


def dequantize_awq(tensors: dict[str, torch.Tensor]) -> torch.Tensor:
    """Decode AWQ GEMM tensors to the fp32 weight ``[N, K]`` straight from the formula."""
    qweight, qzeros, scales = tensors["qweight"], tensors["qzeros"], tensors["scales"]
    groups, n = scales.shape
    k = qweight.shape[0]
    grp = torch.arange(k) // (k // groups)
    q = _unpack_cols(qweight, n)  # [K, N]
    z = _unpack_cols(qzeros, n)  # [G, N]
    w = (q - z[grp]).to(torch.float32) * scales.to(torch.float32)[grp]
    return w.T.contiguous()


def awq_config(group_size: int = 128, **extra: Any) -> dict[str, Any]:
    """A ``quantization_config`` as AutoAWQ writes it into ``config.json``."""
    cfg: dict[str, Any] = {
        "quant_method": "awq",
        "zero_point": True,
        "group_size": group_size,
        "bits": 4,
        "version": "gemm",
        "modules_to_not_convert": None,
    }
    cfg.update(extra)
    return cfg
