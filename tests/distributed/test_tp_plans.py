"""Tensor-parallel plan arithmetic and the one-process case, in this process (no torch.distributed).

The multi-process comparisons live in ``test_tp_multiprocess.py``; here: which rows / columns each
rank holds, the gather order, the checkpoint slices a streaming loader would read, and that the
parallel layers with one process are exactly the replicated ones.
"""

from __future__ import annotations

import pytest
import torch
import torch.distributed as dist

from qlinear.distributed import all_gather, all_reduce_sum, tp_rank_size
from qlinear.layers import MergedReplicatedLinear, ReplicatedLinear
from qlinear.layers.parallel import (
    ColumnParallelLinear,
    MergedColumnParallelLinear,
    QKVParallelLinear,
    RowParallelLinear,
    _gather_index,
    checkpoint_slices,
    column_parallel_plans,
    row_parallel_plans,
)
from qlinear.parameter import DimMap, ShardedParameter, StackedParameter

WORLDS = [1, 2, 4, 8]
# (total heads, kv heads, world): GQA split, KV replicated, MQA
QKV_HEADS = [(8, 2, 2), (8, 2, 4), (8, 2, 8), (16, 1, 4), (6, 6, 3), (4, 4, 1)]


def _rel(a, b):
    return float((a.double() - b.double()).norm() / b.double().norm())


def test_no_process_group_means_one_rank():
    assert not dist.is_initialized()
    assert tp_rank_size() == (0, 1)
    x = torch.randn(3, 5)
    assert torch.equal(all_gather(x)[0], x) and all_gather(x).shape == (1, 3, 5)
    assert all_reduce_sum(x) is x


@pytest.mark.parametrize("world", WORLDS)
def test_column_plans_tile_every_shard(world):
    sizes = [24 * world, 40 * world, 8 * world]
    plans = column_parallel_plans(sizes, 72, world)
    for i, full in enumerate(sizes):
        covered = sorted((p.local_starts[i], p.local_starts[i] + p.local_sizes[i]) for p in plans)
        assert covered[0][0] == 0 and covered[-1][1] == full
        assert all(a[1] == b[0] for a, b in zip(covered, covered[1:]))  # no gap, no overlap
    assert all(p.rank == r and p.world == world and p.local_input == 72 for r, p in enumerate(plans))


@pytest.mark.parametrize("heads,kv,world", QKV_HEADS)
def test_qkv_plans_replicate_kv_heads(heads, kv, world):
    hd = 16
    plans = column_parallel_plans([heads * hd, kv * hd, kv * hd], 64, world, unit_rows=[hd] * 3,
                                  replicable=[False, True, True])
    for r, p in enumerate(plans):
        assert p.local_sizes[0] == heads // world * hd and p.local_starts[0] == r * (heads // world) * hd
        if world <= kv:  # a 1/world share of the KV heads
            count, first = kv // world, r * (kv // world)
        else:  # one KV head on world/kv consecutive ranks
            count, first = 1, r // (world // kv)
        assert p.local_sizes[1:] == (count * hd,) * 2 and p.local_starts[1:] == (first * hd,) * 2


@pytest.mark.parametrize("heads,kv,world", QKV_HEADS)
def test_gather_index_restores_checkpoint_order(heads, kv, world):
    hd = 4
    sizes = [heads * hd, kv * hd, kv * hd]
    plans = column_parallel_plans(sizes, 8, world, unit_rows=[hd] * 3, replicable=[False, True, True])
    full = torch.arange(sum(sizes))  # the replicated output row ids
    bases = [0, sizes[0], sizes[0] + sizes[1]]
    per_rank = [torch.cat([full[bases[i] + s: bases[i] + s + n] for i, (s, n) in enumerate(zip(p.local_starts, p.local_sizes))])
                for p in plans]
    gathered = torch.cat(per_rank)
    index = _gather_index(plans)
    assert torch.equal(gathered if index is None else gathered[index], full)


def test_plans_refuse_uneven_splits():
    with pytest.raises(ValueError, match=r"m\.qkv: shard 0 'q' \(6 heads\) cannot be split over 4 tensor-parallel ranks"):
        column_parallel_plans([96, 32, 32], 64, 4, unit_rows=[16] * 3, replicable=[False, True, True],
                              names=["q", "k", "v"], where="m.qkv")
    with pytest.raises(ValueError, match=r"shard 1 'k' \(3 heads\).*3 is not a multiple of 2 nor 2 a multiple of 3"):
        column_parallel_plans([64, 48, 48], 64, 2, unit_rows=[16] * 3, replicable=[False, True, True], names=["q", "k", "v"])
    with pytest.raises(ValueError, match=r"input_size=100 cannot be split over 8 tensor-parallel ranks"):
        row_parallel_plans([64], 100, 8)


@pytest.mark.parametrize("world", [2, 4])
def test_row_plans_split_columns(world):
    plans = row_parallel_plans([40, 24], 96, world)
    assert [(p.input_start, p.local_input) for p in plans] == [(r * 96 // world, 96 // world) for r in range(world)]
    assert all(p.local_sizes == (40, 24) and p.local_starts == (0, 0) for p in plans)


# -- checkpoint_slices: what a get_slice-based loader would read equals what the loader writes ---
SLICE_CASES = [
    # (output DimMap, input DimMap, shape builder)
    (DimMap(0), DimMap(1, kind="cols")),  # plain weight [N, K]
    (DimMap(0, 16, "block"), DimMap(1, 16, "block")),  # block scale
    (DimMap(1), DimMap(0, 8, "pack")),  # GPTQ qweight [K/8, N]
    (DimMap(1, 8, "pack"), DimMap(0, 16, "group")),  # GPTQ qzeros [G, N/8]
]


def _dim_shape(out: DimMap, inp: DimMap, rows: int, cols: int) -> list[int]:
    shape = [0, 0]
    shape[out.dim], shape[inp.dim] = out.stored(rows), inp.stored(cols)
    return shape


@pytest.mark.parametrize("out,inp", SLICE_CASES)
@pytest.mark.parametrize("world", [1, 2, 4])
@pytest.mark.parametrize("split", ["column", "row"])
def test_checkpoint_slices_match_the_loader(out, inp, world, split):
    sizes, k = [64 * world, 32 * world], 64 * world
    plans = column_parallel_plans(sizes, k, world) if split == "column" else row_parallel_plans(sizes, k, world)
    full = [torch.randint(-2**31, 2**31 - 1, _dim_shape(out, inp, s, k), dtype=torch.int32) for s in sizes]
    fused = torch.cat(full, dim=out.dim)
    for plan in plans:
        local = _dim_shape(out, inp, plan.local_output, plan.local_input)
        p = ShardedParameter(torch.zeros(local, dtype=torch.int32), plan=plan, output=out, input=inp)
        q = ShardedParameter(torch.zeros(local, dtype=torch.int32), plan=plan, output=out, input=inp)
        for i, t in enumerate(full):
            p.weight_loader(p, t, i)
            for shard, index in checkpoint_slices(q, i):
                dst = q.data.narrow(out.dim, plan.local_offsets[shard] // out.div, out.stored(plan.local_sizes[shard]))
                dst.copy_(t[index])
        assert torch.equal(p.data, q.data)
        # fused on disk: one piece per shard, indexing the fused tensor
        r = ShardedParameter(torch.zeros(local, dtype=torch.int32), plan=plan, output=out, input=inp)
        for shard, index in checkpoint_slices(r, None):
            dst = r.data.narrow(out.dim, plan.local_offsets[shard] // out.div, out.stored(plan.local_sizes[shard]))
            dst.copy_(fused[index])
        assert torch.equal(p.data, r.data)


@pytest.mark.parametrize("world", [1, 2, 4])
def test_checkpoint_slices_of_a_stacked_g_idx(world):
    k = 48 * world
    for plan in row_parallel_plans([16, 8], k, world):
        p = StackedParameter(torch.zeros(2, plan.local_input, dtype=torch.int32), plan=plan, input=DimMap(0, kind="cols"))
        g = torch.randint(0, 9, (k,), dtype=torch.int32)
        p.weight_loader(p, g, 1)
        [(shard, index)] = checkpoint_slices(p, 1)
        assert shard == 1 and torch.equal(p.data[1], g[index])


# -- one process: the parallel layers are the replicated ones -------------------------------------
def _load_all(layer, tensors_per_shard, ids):
    for sid, tensors in zip(ids, tensors_per_shard):
        for name, t in tensors.items():
            p = getattr(layer, name)
            p.weight_loader(p, t, sid)
    layer.process_weights_after_loading()


@pytest.mark.parametrize("bias", [False, True])
def test_world_one_is_replicated(bias):
    k, sizes = 40, [24, 16, 16]
    shards = [{"weight": torch.randn(n, k), **({"bias": torch.randn(n)} if bias else {})} for n in sizes]
    ref = MergedReplicatedLinear(k, sizes, bias=bias, params_dtype=torch.float32, prefix="l")
    _load_all(ref, shards, [0, 1, 2])
    x = torch.randn(3, 2, k)
    expected = ref(x)
    layers = {
        "merged": (MergedColumnParallelLinear(k, sizes, bias=bias, params_dtype=torch.float32, prefix="l", gather_output=True), [0, 1, 2]),
        "qkv": (QKVParallelLinear(k, 8, 3, 2, bias=bias, params_dtype=torch.float32, prefix="l"), ["q", "k", "v"]),
    }
    for name, (layer, ids) in layers.items():
        assert layer.tp_size == 1 and layer.shard_plan == ref.shard_plan, name
        _load_all(layer, shards, ids)
        assert torch.equal(layer(x), expected), name
    single = {"weight": torch.randn(24, k), **({"bias": torch.randn(24)} if bias else {})}
    ref1 = ReplicatedLinear(k, 24, bias=bias, params_dtype=torch.float32, prefix="l")
    _load_all(ref1, [single], [None])
    for layer in (ColumnParallelLinear(k, 24, bias=bias, params_dtype=torch.float32, prefix="l"),
                  RowParallelLinear(k, 24, bias=bias, params_dtype=torch.float32, prefix="l", input_is_parallel=False)):
        _load_all(layer, [single], [None])
        assert torch.equal(layer(x), ref1(x))


def test_qkv_shard_names_are_checked():
    layer = QKVParallelLinear(16, 4, 2, 1, params_dtype=torch.float32, prefix="attn.qkv_proj")
    with pytest.raises(ValueError, match=r"attn\.qkv_proj\.weight: loaded_shard_id must be one of \['k', 'q', 'v'\] or an int, got 'o'"):
        layer.weight.weight_loader(layer.weight, torch.randn(4, 16), "o")
    assert (layer.num_heads, layer.num_kv_heads, layer.num_kv_head_replicas) == (2, 1, 1)


def test_row_parallel_checks_x_width():
    layer = RowParallelLinear(32, 8, params_dtype=torch.float32, prefix="o_proj", input_is_parallel=False)
    with pytest.raises(ValueError, match=r"o_proj: x must be \[\.\.\., 32\] \(input_is_parallel=False\), got \(2, 31\)"):
        layer(torch.randn(2, 31))


def test_strided_input_is_accepted():
    k = 24
    layer = RowParallelLinear(k, 8, params_dtype=torch.float32, input_is_parallel=False)
    w = torch.randn(8, k)
    _load_all(layer, [{"weight": w}], [None])
    xs = torch.randn(5, k + 3)[:, :k]
    assert not xs.is_contiguous() and xs.stride(-1) == 1
    assert _rel(layer(xs), xs @ w.T) < 1e-6
