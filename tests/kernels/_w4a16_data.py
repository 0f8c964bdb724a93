"""Random W4A16 layers and activations for the Triton kernel tests (test_w4a16_triton.py,
test_w4a16_wgmma.py), checked against the fp32 reference in float64."""

from __future__ import annotations

import torch

from qlinear.ops import w4a16 as ops
from qlinear.reference import w4a16 as ref


def layer(n, k, group, bits, sym, seed, bounds=None, half_scales=False):
    """(packed, reference weight [n, k] float64): random codes, zeros (None when ``sym``) and
    scales in the canonical layout, group ``k`` when ``group`` is -1; ``bounds`` gives each shard
    [r0, r1) a random act-order permutation of the group labels; ``half_scales`` stores fp16-exact
    scales as fp16 (the 16-bit dequantization path)."""
    gen = torch.Generator().manual_seed(seed)
    g = k if group == -1 else group
    q = torch.randint(0, 1 << bits, (n, k), generator=gen, dtype=torch.int32)
    z = None if sym else torch.randint(0, 1 << bits, (n, k // g), generator=gen, dtype=torch.int32)
    s = torch.rand(n, k // g, generator=gen) * 0.02 + 1e-3
    if half_scales:
        s = s.half().float()
    g_idx = None
    if bounds is not None:
        labels = torch.arange(k) // g
        g_idx = [(r0, r1, labels[torch.randperm(k, generator=gen)]) for r0, r1 in zip(bounds[:-1], bounds[1:])]
    packed = ops.pack_w4a16(q, z, s, group, bits=bits, g_idx=g_idx,
                            scale_dtype=torch.float16 if half_scales else None)
    return packed, ref.dequantize_canonical(q, z, s, group, g_idx, bits=bits).double()


def activations(m, k, dtype, seed, strided=False):
    """Random x [m, k]; ``strided`` rows are a column window of a wider buffer."""
    gen = torch.Generator().manual_seed(seed)
    base = torch.randn(m, k + 24 if strided else k, generator=gen).to(dtype)
    x = base[:, 8 : 8 + k] if strided else base
    assert (x.stride(0) != k) == strided
    return x


def rel(y, want):
    """Relative error ||y - want|| / ||want|| (want float64)."""
    return ((y.double() - want).norm() / want.norm()).item()
