"""Property-based tests of packing and unpacking, for every format, on random shapes / groups / bits.

Writers: ``qlinear.testing`` (GPTQ, AWQ, DeepSeek FP8: written from FORMATS.md) and
compressed-tensors' own ``pack_to_int32`` (pack-quantized). Readers: qlinear's layer side (load
shard by shard into a ``MergedReplicatedLinear``, finish, decode the kernel layout with
``dequantize_w4a16`` / ``dequant_fp8_block_ref``), checked bit-exactly against the writers'
dequantized weights, the independent decoders of ``qlinear.testing`` and, where cheap,
compressed-tensors' decoders (``unpack_from_int32``, ``AutoAWQConverter``).

* ``pack_w4a16`` -> ``dequantize_w4a16`` == the canonical formula (bits 4 / 8, groups, per
  channel, symmetric or not, act-order shards), and bad canonical input raises before packing.
* ``unpack_int32`` == compressed-tensors' ``pack_to_int32`` inverted (bits 2 / 4 / 8, both dims).
* GPTQ (v1 / v2, 4 / 8 bits, act-order), AWQ, compressed-tensors int4 / int8 (sym / asym, group /
  channel) and FP8 block (fp32 or ue8m0 scales, random block sizes): writer -> layer -> decode.
"""

from __future__ import annotations

import functools
import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import _robust_common as rc
from _robust_formats import ct_int_config, ct_int_tensors
from qlinear.layers import MergedReplicatedLinear
from qlinear.ops.w4a16 import W4A16Weights, pack_w4a16
from qlinear.quantization import get_quantization_config
from qlinear.quantization._int_weight import unpack_int32
from qlinear.reference.fp8 import dequant_fp8_block_ref
from qlinear.reference.w4a16 import dequantize_canonical, dequantize_w4a16
from qlinear.testing.awq import awq_config, dequantize_awq, quantize_awq
from qlinear.testing.fp8 import dequantize_fp8_block, fp8_block_config, quantize_fp8_block
from qlinear.testing.gptq import dequantize_gptq, gptq_config, quantize_gptq

ct_helpers = pytest.importorskip("compressed_tensors.compressors.pack_quantized.helpers")


def _formula(q, zeros, scales, group, bits, g_idx=None):
    """W[n, k] = (q[n, k] - z[n, grp]) * s[n, grp], straight from the canonical definition."""
    n, k = q.shape
    if g_idx is None:
        grp = torch.zeros(k, dtype=torch.long) if scales.shape[1] == 1 else torch.arange(k) // group
        grp = grp.expand(n, k)
    else:
        grp = torch.cat([gi.long().expand(r1 - r0, k) for r0, r1, gi in g_idx])
    z = torch.full((n, k), float(2 ** (bits - 1))) if zeros is None else zeros.float().gather(1, grp)
    return (q.float() - z) * scales.float().gather(1, grp)


def _act_order(k, group, seed):
    perm = torch.randperm(k, generator=rc.gen(seed))
    gi = torch.empty(k, dtype=torch.int32)
    gi[perm] = (torch.arange(k) // group).to(torch.int32)
    return gi


def _split(draw, n_shards, align, max_rows=24):
    """Shard row counts: every shard but the last a multiple of ``align``."""
    sizes = [align * draw(st.integers(1, max(1, max_rows // align))) for _ in range(n_shards - 1)]
    return sizes + [draw(st.integers(1, max_rows))]


# ---------------------------------------------------------------------------------------------------
# the kernel layout
# ---------------------------------------------------------------------------------------------------


@st.composite
def _canonical(draw):
    bits = draw(st.sampled_from([4, 8]))
    group = draw(st.sampled_from([1, 2, 16, 32, 64, -1]))
    groups = 1 if group == -1 else draw(st.integers(1, 4))
    k = draw(st.integers(1, 160)) if group == -1 else group * groups
    shards = draw(st.lists(st.integers(1, 9), min_size=1, max_size=3))
    return dict(bits=bits, group=group, k=k, shards=shards, sym=draw(st.booleans()),
                act_order=draw(st.booleans()) and group != -1, scale_kind=draw(st.sampled_from(["fp32", "bf16", "fp16"])),
                seed=draw(st.integers(0, 2**31 - 1)))


def _canonical_tensors(c):
    g = rc.gen(c["seed"])
    n, k, bits = sum(c["shards"]), c["k"], c["bits"]
    groups = 1 if c["group"] == -1 else k // c["group"]
    q = torch.randint(0, 2**bits, (n, k), generator=g, dtype=torch.uint8)
    zeros = None if c["sym"] else torch.randint(0, 2**bits, (n, groups), generator=g, dtype=torch.uint8)
    scales = torch.rand(n, groups, generator=g) * 0.1 + 1e-3
    scales = scales.to({"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[c["scale_kind"]]).float()
    g_idx = None
    if c["act_order"]:
        g_idx, r0 = [], 0
        for i, rows in enumerate(c["shards"]):
            g_idx.append((r0, r0 + rows, _act_order(k, c["group"], c["seed"] + i)))
            r0 += rows
    return q, zeros, scales, g_idx


@rc.property_of("pack_w4a16 -> dequantize_w4a16 == canonical formula (bits, groups, act-order shards)")
@given(c=_canonical())
def test_pack_w4a16_roundtrip(c):
    rc.tally("pack_w4a16 -> dequantize_w4a16 == canonical formula (bits, groups, act-order shards)")
    q, zeros, scales, g_idx = _canonical_tensors(c)
    packed = pack_w4a16(q, zeros, scales, c["group"], bits=c["bits"], g_idx=g_idx)
    expected = _formula(q, zeros, scales, c["group"], c["bits"], g_idx)
    assert torch.equal(dequantize_canonical(q, zeros, scales, c["group"], g_idx, bits=c["bits"]), expected)
    assert torch.equal(dequantize_w4a16(packed), expected)
    assert torch.equal(packed.scales.float().t(), scales), "scales were not kept exactly"
    again = W4A16Weights.from_tensors({k: v.clone() for k, v in packed.tensors().items()})
    assert torch.equal(dequantize_w4a16(again), expected)


BAD_CANONICAL = ["q_too_big", "q_negative", "zeros_too_big", "scales_shape", "g_idx_counts", "g_idx_range",
                 "g_idx_rows", "group_not_divisor", "q_float"]


@rc.property_of("pack_w4a16: invalid canonical input raises ValueError / TypeError")
@given(c=_canonical(), bad=st.sampled_from(BAD_CANONICAL))
def test_pack_w4a16_rejects(c, bad):
    rc.tally("pack_w4a16: invalid canonical input raises ValueError / TypeError")
    q, zeros, scales, g_idx = _canonical_tensors(dict(c, sym=False, act_order=c["group"] not in (-1, 1) and c["k"] > c["group"]))
    q = q.to(torch.int32)
    group, bits, n, k = c["group"], c["bits"], q.shape[0], q.shape[1]
    if bad == "q_too_big":
        q[n // 2, k // 2] = 2**bits
    elif bad == "q_negative":
        q[0, -1] = -1
    elif bad == "zeros_too_big":
        zeros = zeros.to(torch.int32)
        zeros[-1, 0] = 2**bits
    elif bad == "scales_shape":
        scales = torch.ones(n, scales.shape[1] + 1)
    elif bad == "g_idx_counts" and g_idx is not None:
        r0, r1, gi = g_idx[0]
        gi = gi.clone()
        gi[gi == 0] = 1  # group 0 empty, group 1 doubled
        g_idx[0] = (r0, r1, gi)
    elif bad == "g_idx_range":
        gi = torch.zeros(k, dtype=torch.int32)
        gi[0] = k  # no such group
        g_idx = [(0, n, gi)]
    elif bad == "g_idx_rows":
        g_idx = [(0, n + 1, torch.arange(k, dtype=torch.int32) // max(group, 1) if group != -1 else torch.zeros(k, dtype=torch.int32))]
    elif bad == "group_not_divisor" and k > 1:
        group = k + 1 if group == -1 else group + (1 if k % (group + 1) else 2)
        if k % group == 0:
            group = k + 1
    else:  # q_float, and the cases above that do not apply to this shape
        q = q.float()
    with pytest.raises((ValueError, TypeError)):
        pack_w4a16(q, zeros, scales, group, bits=bits, g_idx=g_idx)


@rc.property_of("unpack_int32 inverts compressed-tensors' pack_to_int32 (bits 2/4/8, dim 0/1)")
@given(bits=st.sampled_from([2, 4, 8]), rows=st.integers(1, 20), cols=st.integers(1, 70), dim=st.sampled_from([0, 1]),
       seed=st.integers(0, 2**31 - 1))
def test_unpack_int32_vs_compressed_tensors(bits, rows, cols, dim, seed):
    rc.tally("unpack_int32 inverts compressed-tensors' pack_to_int32 (bits 2/4/8, dim 0/1)")
    half = 2 ** (bits - 1)
    signed = torch.randint(-half, half, (rows, cols), generator=rc.gen(seed), dtype=torch.int8)
    packed = ct_helpers.pack_to_int32(signed, bits, packed_dim=dim)
    if not (dim == 0 and packed.shape[0] == 1 and packed.shape[1] > 1):
        # compressed-tensors 0.20.1's own unpacker fails on that shape (see notes/ROBUSTNESS.md)
        assert torch.equal(ct_helpers.unpack_from_int32(packed, bits, signed.shape, packed_dim=dim), signed)
    count = signed.shape[dim]
    mine = unpack_int32(packed, bits, dim, count=count)
    assert mine.dtype == torch.uint8 and torch.equal(mine.to(torch.int16) - half, signed.to(torch.int16))


# ---------------------------------------------------------------------------------------------------
# writer -> layer -> decoded weight
# ---------------------------------------------------------------------------------------------------


def _layer(k, sizes, config, dtype=torch.float32):
    return MergedReplicatedLinear(k, sizes, params_dtype=dtype, quant_config=get_quantization_config(config),
                                  prefix="model.layers.0.fused")


def _load_shards(layer, per_shard, order):
    for i in order:
        for name, t in per_shard[i].items():
            param = getattr(layer, name)
            param.weight_loader(param, t, i)


@st.composite
def _gptq_case(draw):
    bits = draw(st.sampled_from([4, 8]))
    pack = 32 // bits
    group = draw(st.sampled_from([8, 16, 32, -1]))
    k = (math.lcm(pack, group) if group != -1 else pack) * draw(st.integers(1, 4))
    return dict(bits=bits, group=group, k=k, sizes=_split(draw, draw(st.integers(1, 3)), pack),
                sym=draw(st.booleans()), desc_act=draw(st.booleans()) and group != -1,
                fmt=draw(st.sampled_from(["gptq", "gptq_v2"])), order=draw(st.permutations(range(3))),
                seed=draw(st.integers(0, 2**31 - 1)))


@rc.property_of("GPTQ writer -> merged layer -> packed weight == writer's and decoder's dequantization")
@given(c=_gptq_case())
def test_gptq_layer_decode(c):
    rc.tally("GPTQ writer -> merged layer -> packed weight == writer's and decoder's dequantization")
    g = rc.gen(c["seed"])
    shards, deqs = [], []
    for i, n in enumerate(c["sizes"]):
        tensors, deq = quantize_gptq(torch.randn(n, c["k"], generator=g), c["bits"], c["group"], c["sym"], c["desc_act"],
                                     seed=c["seed"] + i, checkpoint_format=c["fmt"])
        assert torch.equal(dequantize_gptq(tensors, c["bits"], c["group"], checkpoint_format=c["fmt"]), deq)
        if not c["desc_act"]:
            tensors.pop("g_idx")  # optional without act-order
        shards.append(tensors)
        deqs.append(deq)
    cfg = gptq_config(c["bits"], c["group"], c["desc_act"], c["sym"], checkpoint_format=c["fmt"])
    layer = _layer(c["k"], c["sizes"], cfg)
    _load_shards(layer, shards, [i for i in c["order"] if i < len(c["sizes"])])
    layer.process_weights_after_loading()
    assert torch.equal(dequantize_w4a16(layer.quant_method.packed(layer)), torch.cat(deqs))


@st.composite
def _awq_case(draw):
    group = draw(st.sampled_from([1, 8, 16, 32, -1]))
    k = (group if group != -1 else 1) * draw(st.integers(1, 6)) * (1 if group != 1 else 3)
    return dict(group=group, k=k, sizes=_split(draw, draw(st.integers(1, 3)), 8), order=draw(st.permutations(range(3))),
                seed=draw(st.integers(0, 2**31 - 1)))


def _ct_unpack(words: torch.Tensor, bits: int, count: int, dim: int) -> torch.Tensor:
    """compressed-tensors' dense little-endian packing read from its spec: entry j of a row is
    bits [b*(j % per), ...) of word j // per, offset-binary (signed = stored - 2^(b-1))."""
    per = 32 // bits
    w = (words if dim == 1 else words.t()).to(torch.int64) & 0xFFFFFFFF
    j = torch.arange(count)
    vals = (w[:, j // per] >> (bits * (j % per))) & (2**bits - 1)
    vals = (vals - 2 ** (bits - 1)).float()
    return vals if dim == 1 else vals.t()


@functools.lru_cache(maxsize=None)
def _awq_converter(group):
    conv = pytest.importorskip("compressed_tensors.entrypoints.convert.converters.autoawq")
    return conv.AutoAWQConverter.from_autoawq_config(awq_config(group))


@rc.property_of("AWQ writer -> merged layer -> packed weight == writer's, decoder's and AutoAWQConverter's")
@given(c=_awq_case())
def test_awq_layer_decode(c):
    rc.tally("AWQ writer -> merged layer -> packed weight == writer's, decoder's and AutoAWQConverter's")
    g = rc.gen(c["seed"])
    k, group = c["k"], c["group"]
    shards, deqs = [], []
    for n in c["sizes"]:
        tensors, deq = quantize_awq(torch.randn(n, k, generator=g), group)
        assert torch.equal(dequantize_awq(tensors), deq)
        if n % 8 == 0:  # the converter reads whole words of 8 columns
            out = _awq_converter(k if group == -1 else group).process({f"m.{a}": b.clone() for a, b in tensors.items()})
            gs = k if group == -1 else group
            q = _ct_unpack(out["m.weight_packed"], 4, k, dim=1)
            zp = _ct_unpack(out["m.weight_zero_point"], 4, n, dim=0)
            theirs = (q - zp.repeat_interleave(gs, dim=1)) * out["m.weight_scale"].float().repeat_interleave(gs, dim=1)
            assert torch.equal(theirs, deq)
        shards.append(tensors)
        deqs.append(deq)
    layer = _layer(k, c["sizes"], awq_config(group))
    _load_shards(layer, shards, [i for i in c["order"] if i < len(c["sizes"])])
    layer.process_weights_after_loading()
    assert torch.equal(dequantize_w4a16(layer.quant_method.packed(layer)), torch.cat(deqs))


@st.composite
def _ct_case(draw):
    bits = draw(st.sampled_from([4, 8]))
    sym = draw(st.booleans())
    group = draw(st.sampled_from([8, 16, 32, -1]))
    k = (group if group != -1 else draw(st.integers(1, 12))) * draw(st.integers(1, 4))
    return dict(bits=bits, sym=sym, group=group, k=k, sizes=_split(draw, draw(st.integers(1, 3)), 1 if sym else 32 // bits),
                order=draw(st.permutations(range(3))), seed=draw(st.integers(0, 2**31 - 1)))


@rc.property_of("compressed-tensors pack_to_int32 tensors -> merged layer -> packed weight == formula")
@given(c=_ct_case())
def test_compressed_tensors_int_layer_decode(c):
    rc.tally("compressed-tensors pack_to_int32 tensors -> merged layer -> packed weight == formula")
    g = rc.gen(c["seed"])
    shards, ws = [], []
    for n in c["sizes"]:
        tensors, w = ct_int_tensors(n, c["k"], c["bits"], c["sym"], c["group"], g)
        shards.append(tensors)
        ws.append(w)
    layer = _layer(c["k"], c["sizes"], ct_int_config(c["bits"], c["sym"], c["group"]))
    _load_shards(layer, shards, [i for i in c["order"] if i < len(c["sizes"])])
    layer.process_weights_after_loading()
    assert torch.equal(dequantize_w4a16(layer.quant_method.packed(layer)), torch.cat(ws))


@st.composite
def _fp8_case(draw):
    bn, bk = draw(st.sampled_from([8, 16, 32])), draw(st.sampled_from([8, 16, 32]))
    return dict(block=(bn, bk), k=draw(st.integers(1, 70)), sizes=_split(draw, draw(st.integers(1, 3)), bn, max_rows=40),
                ue8m0=draw(st.booleans()), order=draw(st.permutations(range(3))), seed=draw(st.integers(0, 2**31 - 1)),
                magnitude=10.0 ** draw(st.integers(-4, 3)))


@rc.property_of("FP8 block writer -> merged layer -> dequantized == decoder's; e4m3 error bound")
@given(c=_fp8_case())
def test_fp8_block_layer_decode(c):
    rc.tally("FP8 block writer -> merged layer -> dequantized == decoder's; e4m3 error bound")
    g = rc.gen(c["seed"])
    block, k = c["block"], c["k"]
    fmt = "ue8m0" if c["ue8m0"] else None
    shards, deqs, ws = [], [], []
    for n in c["sizes"]:
        w = torch.randn(n, k, generator=g) * c["magnitude"]
        tensors = quantize_fp8_block(w, block, scale_fmt=fmt)
        deq = dequantize_fp8_block(tensors["weight"], tensors["weight_scale_inv"], block)
        assert torch.equal(dequant_fp8_block_ref(tensors["weight"], tensors["weight_scale_inv"], block), deq)
        # half an e4m3 ulp of |w| (normals) or of the subnormal step (2^-9 * s)
        s = tensors["weight_scale_inv"].float().repeat_interleave(block[0], 0)[:n].repeat_interleave(block[1], 1)[:, :k]
        assert bool(((deq - w).abs() <= torch.maximum(w.abs() * 2.0**-4, s * 2.0**-10) * (1 + 1e-6)).all())
        shards.append(tensors)
        deqs.append(deq)
        ws.append(w)
    layer = _layer(k, c["sizes"], fp8_block_config(block, scale_fmt=fmt), dtype=torch.bfloat16)
    _load_shards(layer, shards, [i for i in c["order"] if i < len(c["sizes"])])
    layer.process_weights_after_loading()
    got = dequant_fp8_block_ref(layer.weight, layer.weight_scale_inv, block)
    assert torch.equal(got, torch.cat(deqs))
