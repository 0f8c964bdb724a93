"""Shard placement, packing / block arithmetic and error behaviour of the parameter types."""

from __future__ import annotations

import pytest
import torch

from qlinear._utils import cdiv
from qlinear.parameter import DimMap, LoadError, ShardedParameter, ShardPlan, StackedParameter

SHARDS = [[1536, 576], [256, 72], [128, 128, 40], [64]]
DIVS = [1, 8, 128]


def _plan(sizes, k=256):
    return ShardPlan.replicated(sizes, k)


@pytest.mark.parametrize("sizes", SHARDS)
@pytest.mark.parametrize("div", DIVS)
def test_sharded_rows_land_at_their_offsets(sizes, div):
    if any(s % div for s in sizes[:-1]):
        pytest.skip("misaligned combination is tested separately")
    plan = _plan(sizes)
    k_groups = 3
    p = ShardedParameter(torch.full((sum(cdiv(s, div) for s in sizes), k_groups), -1.0), plan=plan,
                         output=DimMap(0, div, "block"))
    parts = [torch.randn(cdiv(s, div), k_groups) for s in sizes]
    for i in reversed(range(len(sizes))):  # order must not matter
        p.weight_loader(p, parts[i], i)
    assert torch.equal(p.data, torch.cat(parts))
    assert p.missing_shards() == []


@pytest.mark.parametrize("sizes", SHARDS)
def test_fused_on_disk_equals_shard_by_shard(sizes):
    plan = _plan(sizes, k=64)
    a = ShardedParameter(torch.empty(sum(sizes), 8, dtype=torch.int32), plan=plan, output=DimMap(0),
                         input=DimMap(1, 8, "pack"))
    b = ShardedParameter(torch.empty(sum(sizes), 8, dtype=torch.int32), plan=plan, output=DimMap(0),
                         input=DimMap(1, 8, "pack"))
    full = torch.randint(-2**31, 2**31 - 1, (sum(sizes), 8), dtype=torch.int32)
    a.weight_loader(a, full, None)
    for i, part in enumerate(torch.split(full, sizes)):
        b.weight_loader(b, part, i)
    assert torch.equal(a.data, b.data) and torch.equal(a.data, full)


def test_packed_along_output_dim_of_a_transposed_layout():
    # GPTQ/AWQ-style qzeros [G, N/8]: N lies along dim 1, packed 8 per int32.
    plan = _plan([128, 72], k=256)
    p = ShardedParameter(torch.empty(2, 25, dtype=torch.int32), plan=plan, output=DimMap(1, 8, "pack"),
                         input=DimMap(0, 128, "group"))
    z0 = torch.randint(0, 2**31 - 1, (2, 16), dtype=torch.int32)
    z1 = torch.randint(0, 2**31 - 1, (2, 9), dtype=torch.int32)
    p.weight_loader(p, z1, 1)
    p.weight_loader(p, z0, 0)
    assert torch.equal(p.data, torch.cat([z0, z1], dim=1))


def test_misaligned_shard_is_refused_at_construction():
    with pytest.raises(ValueError, match=r"shard 1 starts at row 72.*block size 128"):
        ShardedParameter(torch.empty(3, 2), plan=_plan([72, 128]), output=DimMap(0, 128, "block"))


@pytest.mark.parametrize(
    "bad, match",
    [
        (torch.randn(575, 256), r"shard 1 \(576 rows of \[1536, 576\]\): expected shape \(576, 256\), got \(575, 256\)"),
        (torch.randn(256, 576), r".*expected shape \(576, 256\), got \(256, 576\)"),
        (torch.randn(576, 256).to(torch.float8_e4m3fn), r"expected dtype torch.bfloat16.*got torch.float8_e4m3fn"),
        ([1, 2], r"expected a torch.Tensor"),
    ],
)
def test_bad_input_names_parameter_and_leaves_it_unchanged(bad, match):
    plan = _plan([1536, 576])
    p = ShardedParameter(torch.randn(2112, 256, dtype=torch.bfloat16), plan=plan, output=DimMap(0), convertible=True)
    p.qualname = "layer.fused.weight"
    before = p.data.clone()
    with pytest.raises(LoadError, match=("layer.fused.weight: " + match) if not isinstance(bad, list) else match):
        p.weight_loader(p, bad, 1)
    assert torch.equal(p.data, before) and p.loaded_shards == set()


def test_float_weight_converts_but_scales_only_widen():
    plan = _plan([8])
    w = ShardedParameter(torch.empty(8, 4, dtype=torch.bfloat16), plan=plan, output=DimMap(0), convertible=True)
    src = torch.randn(8, 4, dtype=torch.float32)
    w.weight_loader(w, src, 0)
    assert torch.equal(w.data, src.to(torch.bfloat16))
    s = ShardedParameter(torch.empty(8, 1), plan=plan, output=DimMap(0))
    s.weight_loader(s, src[:, :1].to(torch.bfloat16), 0)  # bf16 -> fp32 is exact
    with pytest.raises(LoadError, match="widens to it exactly"):
        lossy = ShardedParameter(torch.empty(8, 1, dtype=torch.bfloat16), plan=plan, output=DimMap(0))
        lossy.weight_loader(lossy, src[:, :1].to(torch.float16), 0)
    ints = ShardedParameter(torch.empty(8, 4, dtype=torch.int32), plan=plan, output=DimMap(0))
    with pytest.raises(LoadError, match="expected dtype torch.int32, got torch.int64"):
        ints.weight_loader(ints, torch.zeros(8, 4, dtype=torch.int64), 0)


def test_stacked_slots_per_shard_and_broadcast():
    plan = _plan([1536, 576])
    s = StackedParameter(torch.full((2,), float("nan")), plan=plan)
    s.weight_loader(s, torch.tensor([0.5]), 1)  # a (1,) scale, as compressed-tensors writes it
    assert torch.isnan(s.data[0]) and s.data[1] == 0.5, "shard 1's scale must land in slot 1 only"
    assert s.missing_shards() == [0]
    s.weight_loader(s, torch.tensor(0.25), None)
    assert torch.equal(s.data, torch.tensor([0.25, 0.25]))
    g = StackedParameter(torch.empty(2, 64, dtype=torch.int32), plan=_plan([1536, 576], k=64), input=DimMap(0))
    with pytest.raises(LoadError, match=r"expected shape \(64,\), got \(63,\)"):
        g.weight_loader(g, torch.zeros(63, dtype=torch.int32), 0)


def test_optional_parameter_may_be_absent_but_not_partial():
    plan = _plan([8, 8], k=16)
    g = StackedParameter(torch.empty(2, 16, dtype=torch.int32), plan=plan, input=DimMap(0), required=False)
    assert g.missing_shards() == []
    g.weight_loader(g, torch.arange(16, dtype=torch.int32), 0)
    assert g.missing_shards() == [1]


def test_rank_slices_of_packed_and_block_tensors():
    # rank 1 of 2 holds rows [768, 1536) of shard 0 and [256, 512) of a 512-row shard 1
    plan = ShardPlan((1536, 512), (768, 256), (768, 256), 7168, 7168, rank=1, world=2)
    scales = ShardedParameter(torch.empty(8, 56), plan=plan, output=DimMap(0, 128, "block"),
                              input=DimMap(1, 128, "block"))
    s0, s1 = torch.randn(12, 56), torch.randn(4, 56)
    scales.weight_loader(scales, s0, 0)
    scales.weight_loader(scales, s1, 1)
    assert torch.equal(scales.data, torch.cat([s0[6:], s1[2:]]))
    # a rank slice that splits a block is refused, naming the rank
    bad = ShardPlan((1536, 576), (768, 288), (768, 288), 7168, 7168, rank=1, world=2)
    with pytest.raises(ValueError, match=r"on rank 1/2.*block size 128"):
        ShardedParameter(torch.empty(9, 56), plan=bad, output=DimMap(0, 128, "block"))
    # row-parallel: K columns [3584, 7168) of a K-packed weight
    row = ShardPlan((64,), (64,), (0,), 7168, 3584, input_start=3584, rank=1, world=2)
    q = ShardedParameter(torch.empty(64, 448, dtype=torch.int32), plan=row, output=DimMap(0), input=DimMap(1, 8, "pack"))
    full = torch.randint(0, 100, (64, 896), dtype=torch.int32)
    q.weight_loader(q, full, 0)
    assert torch.equal(q.data, full[:, 448:])
