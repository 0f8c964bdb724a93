"""fp32 references for weight-only integer linear layers (W4A16 / W8A16).

Two independent dequantizations live here:

* :func:`dequantize_canonical` evaluates the canonical formula that every checkpoint format
  decodes into, ``W[n, k] = (q[n, k] - zeros[n, grp(n, k)]) * scales[n, grp(n, k)]``, straight
  from the unpacked integers. It knows nothing about qlinear's packed layout.
* :func:`dequantize_w4a16` unpacks qlinear's internal layout (``W4A16Weights``, built by
  ``qlinear.ops.w4a16.pack_w4a16``) and undoes its activation-order permutation. Tests compare
  the two on fresh random data; the CPU path of ``w4a16_linear`` runs on the second.

Packed layout (documented here because this module is its reference decoder):

* ``qweight`` int32 ``[N, Kp * bits / 32]``, Kp = K rounded up to a *superblock* of
  ``16 * (32 // bits)`` columns (128 for 4-bit, 64 for 8-bit). Superblock ``sb`` of a row is 16
  consecutive words; bits ``[i*bits, (i+1)*bits)`` of its word ``j`` hold column
  ``sb * SB + i * 16 + j``. So "plane" i of a superblock (field i of all 16 words) is 16 contiguous
  columns, which lets a kernel unpack a 16-byte load into fields that each line up with a
  contiguous 16-element slice of the activations. Padding columns (k >= K) hold 0 and are ignored.
* Columns are in the *shard's sorted order* under act-order: rows ``row_bounds[s]:row_bounds[s+1]``
  use column permutation ``perm[s]`` (int32 ``[S, K]``): packed column j holds logical column
  ``perm[s, j]``, sorted so that the groups are contiguous (packed column j is in group ``j // g``).
  Without act-order ``perm`` is None and the order is the identity.
* ``scales`` ``[G, N]`` (fp32, bf16 or fp16 — whichever holds every value exactly), ``zeros``
  uint8 ``[G, N]`` or None (symmetric: zero = 2^(bits-1)). Group of packed column j is ``j // g``;
  per-channel is G = 1.
"""

from __future__ import annotations

from typing import Any, Sequence

import torch
import torch.nn.functional as F

__all__ = [
    "SUPERBLOCK_WORDS",
    "superblock_cols",
    "dequantize_canonical",
    "dequantize_w4a16",
    "w4a16_linear_ref",
]

SUPERBLOCK_WORDS = 16  # words per superblock of one row; a "plane" is 16 contiguous columns


def superblock_cols(bits: int) -> int:
    """Columns per superblock: 16 words x (32 // bits) fields."""
    return SUPERBLOCK_WORDS * (32 // bits)


def _group_index(n: int, k: int, num_groups: int, group_size: int, g_idx: Any, device) -> torch.Tensor:
    """int64 ``[N, K]`` group of every weight element (canonical form, no packing)."""
    if g_idx is None:
        if num_groups == 1:
            col = torch.zeros(k, dtype=torch.int64, device=device)
        else:
            col = torch.arange(k, device=device) // group_size
        return col.expand(n, k)
    grp = torch.empty(n, k, dtype=torch.int64, device=device)
    for r0, r1, gi in g_idx:
        grp[r0:r1] = gi.to(device=device, dtype=torch.int64)
    return grp


def dequantize_canonical(
    q: torch.Tensor,
    zeros: torch.Tensor | None,
    scales: torch.Tensor,
    group_size: int,
    g_idx: Sequence[tuple[int, int, torch.Tensor]] | None = None,
    *,
    bits: int = 4,
) -> torch.Tensor:
    """fp32 ``[N, K]`` weight from the canonical quantized form.

    ``W[n, k] = (q[n, k] - zeros[n, grp(n, k)]) * scales[n, grp(n, k)]`` where
    ``grp(n, k) = k // group_size`` (or 0 for per-channel, ``group_size`` in {-1, K}), or, with
    act-order, ``g_idx_s[k]`` for the row range ``(r0, r1, g_idx_s)`` that holds row n. ``q`` and
    ``zeros`` ([N, G]) are unsigned integers; ``zeros=None`` means the symmetric zero
    ``2**(bits - 1)``. ``scales`` is any float ``[N, G]``.
    """
    n, k = q.shape
    num_groups = scales.shape[1]
    grp = _group_index(n, k, num_groups, group_size, g_idx, q.device)
    s = scales.float().gather(1, grp)
    if zeros is None:
        z = float(2 ** (bits - 1))
    else:
        z = zeros.to(torch.float32).gather(1, grp)
    return (q.to(torch.float32) - z) * s


def _unpack_words(qweight: torch.Tensor, bits: int, k: int) -> torch.Tensor:
    """int32 ``[N, Kp*bits/32]`` superblock words -> int64 ``[N, K]`` fields in packed column order."""
    fields = 32 // bits
    n, words = qweight.shape
    w = qweight.to(torch.int64) & 0xFFFFFFFF  # unsigned view of each word
    w = w.view(n, words // SUPERBLOCK_WORDS, 1, SUPERBLOCK_WORDS)
    shifts = (torch.arange(fields, device=qweight.device) * bits).view(1, 1, fields, 1)
    q = (w >> shifts) & ((1 << bits) - 1)  # [N, nsb, field i, word j] = column sb*SB + i*16 + j
    return q.reshape(n, -1)[:, :k]


def dequantize_w4a16(packed: Any) -> torch.Tensor:
    """fp32 ``[N, K]`` logical weight from a ``qlinear.ops.w4a16.W4A16Weights``.

    Unpacks the superblock words, applies ``(q - zero) * scale`` with the group of packed column
    j being ``j // group_size`` (0 per channel), then scatters every shard's columns back through
    its ``perm``. Exact: the result equals ``dequantize_canonical`` of the data that was packed,
    up to the chosen storage dtype of ``scales`` (which ``pack_w4a16`` only narrows losslessly).
    """
    n, k, bits = packed.n, packed.k, packed.bits
    q = _unpack_words(packed.qweight, bits, k).to(torch.float32)
    num_groups = packed.scales.shape[0]
    if num_groups == 1:
        grp = torch.zeros(k, dtype=torch.int64, device=q.device)
    else:
        grp = torch.arange(k, device=q.device) // packed.group_size
    s = packed.scales.float().t()[:, grp]  # [N, K]
    if packed.zeros is None:
        z = float(2 ** (bits - 1))
    else:
        z = packed.zeros.to(torch.float32).t()[:, grp]
    w_sorted = (q - z) * s
    if packed.perm is None:
        return w_sorted
    w = torch.empty_like(w_sorted)
    bounds = packed.shard_rows
    for s_idx in range(len(bounds) - 1):
        r0, r1 = bounds[s_idx], bounds[s_idx + 1]
        w[r0:r1, packed.perm[s_idx].long()] = w_sorted[r0:r1]
    return w


def w4a16_linear_ref(x: torch.Tensor, packed: Any, bias: torch.Tensor | None = None) -> torch.Tensor:
    """``x @ W.T + bias`` in fp32 with W from :func:`dequantize_w4a16`; returned in ``x.dtype``.

    ``x`` is ``[..., K]`` of any float dtype, ``bias`` ``[N]`` or None.
    """
    w = dequantize_w4a16(packed).to(x.device)
    b = None if bias is None else bias.float()
    return F.linear(x.float(), w, b).to(x.dtype)
