"""Tensor-parallel linear layers over ``torch.distributed`` (NCCL on GPUs, gloo on CPUs).

Every layer here is a ``LinearBase`` whose ``ShardPlan`` holds only this rank's part of the
checkpoint matrices; the parameters (hence every format) slice checkpoint tensors themselves,
so a layer's whole job is to compute the plan and wrap ``forward`` with one collective:

- ``ColumnParallelLinear`` / ``MergedColumnParallelLinear`` / ``QKVParallelLinear`` split the
  output rows N: rank ``r`` holds rows ``[r·n/w, (r+1)·n/w)`` of every fused checkpoint matrix and
  computes ``y_r = x @ W_r^T + b_r`` (``[..., N/w]``); ``gather_output=True`` all-gathers the
  full ``[..., N]`` in checkpoint order.
- ``RowParallelLinear`` splits the input columns K: rank ``r`` holds ``W[:, r·K/w : (r+1)·K/w]``,
  computes the partial product of its slice of ``x`` and all-reduces:
  ``y = sum_r x_r @ W_r^T + b`` (bias added once, after the reduce).

With one process (``torch.distributed`` not initialized, or a one-rank ``tp_group``) the plan
is the replicated one and these layers *are* ``ReplicatedLinear`` / ``MergedReplicatedLinear``.

Alignment: a rank's slice of a packed or block-scaled tensor must be whole packs / blocks /
groups. Every rank checks every rank's slice at construction (pure arithmetic on the plans,
no communication), so a bad tensor-parallel size raises the same ``ValueError`` naming the
rank, the shard, the slice and the alignment on all ranks instead of hanging a collective.
"""

from __future__ import annotations

from typing import Sequence

import torch

from qlinear._utils import cdiv
from qlinear.distributed import all_gather, all_reduce_sum, resolve_group, tp_rank_size
from qlinear.layers.linear import LinearBase
from qlinear.parameter import QParameter, ShardedParameter, ShardPlan, StackedParameter
from qlinear.quantization.base import QuantizationConfig

__all__ = [
    "ColumnParallelLinear",
    "MergedColumnParallelLinear",
    "QKVParallelLinear",
    "RowParallelLinear",
    "column_parallel_plans",
    "row_parallel_plans",
    "checkpoint_slices",
]


# --------------------------------------------------------------------------------------------
# Plans: pure arithmetic, one ShardPlan per rank
# --------------------------------------------------------------------------------------------
def column_parallel_plans(
    output_sizes: Sequence[int],
    input_size: int,
    world: int,
    *,
    unit_rows: Sequence[int] | None = None,
    replicable: Sequence[bool] | None = None,
    names: Sequence[str] | None = None,
    where: str = "ColumnParallelLinear",
) -> list[ShardPlan]:
    """Plans of ranks ``0..world-1`` splitting each shard's rows evenly.

    Shard ``i`` is ``output_sizes[i] / unit_rows[i]`` units (heads of ``unit_rows[i]`` rows; 1
    by default). With ``u`` units and ``u % world == 0`` rank ``r`` holds units
    ``[r·u/w, (r+1)·u/w)``. A ``replicable`` shard with fewer units than ranks
    (``world % u == 0``, e.g. KV heads) is replicated: rank ``r`` holds unit ``r // (w / u)``.
    Anything else raises ``ValueError`` naming the shard.
    """
    n = len(output_sizes)
    unit_rows = list(unit_rows) if unit_rows is not None else [1] * n
    replicable = list(replicable) if replicable is not None else [False] * n
    labels = [f" '{name}'" for name in names] if names else [""] * n
    per_rank: list[tuple[list[int], list[int]]] = [([], []) for _ in range(world)]
    for i, (rows, unit) in enumerate(zip(output_sizes, unit_rows)):
        units = rows // unit
        if units * unit != rows:
            raise ValueError(f"{where}: shard {i}{labels[i]} has {rows} rows, not a multiple of its {unit}-row unit")
        what = "heads" if unit > 1 else "rows"
        if units % world == 0:
            count = units // world
            firsts = [r * count for r in range(world)]
        elif replicable[i] and world % units == 0:
            count, replicas = 1, world // units
            firsts = [r // replicas for r in range(world)]
        else:
            hint = f" nor {world} a multiple of {units}" if replicable[i] else ""
            raise ValueError(
                f"{where}: shard {i}{labels[i]} ({units} {what}) cannot be split over {world} tensor-parallel "
                f"ranks: {units} is not a multiple of {world}{hint}"
            )
        for r in range(world):
            per_rank[r][0].append(count * unit)
            per_rank[r][1].append(firsts[r] * unit)
    full = tuple(int(s) for s in output_sizes)
    return [
        ShardPlan(full, tuple(sizes), tuple(starts), int(input_size), int(input_size), 0, rank=r, world=world)
        for r, (sizes, starts) in enumerate(per_rank)
    ]


def row_parallel_plans(output_sizes: Sequence[int], input_size: int, world: int, *, where: str = "RowParallelLinear") -> list[ShardPlan]:
    """Plans of ranks ``0..world-1`` splitting the input columns evenly: rank ``r`` holds
    columns ``[r·K/w, (r+1)·K/w)`` and every output row."""
    if input_size % world:
        raise ValueError(
            f"{where}: input_size={input_size} cannot be split over {world} tensor-parallel ranks "
            f"({input_size} is not a multiple of {world})"
        )
    local = input_size // world
    full = tuple(int(s) for s in output_sizes)
    return [ShardPlan(full, full, (0,) * len(full), int(input_size), local, r * local, rank=r, world=world) for r in range(world)]


def _gather_index(plans: Sequence[ShardPlan]) -> torch.Tensor | None:
    """For the all-gathered ``[..., world · local_out]`` (rank-major), the column holding each
    checkpoint-order output row (first rank that has it: replicated KV heads appear on several),
    or None when the gather already is in checkpoint order."""
    full = plans[0].full_sizes
    bases = [sum(full[:i]) for i in range(len(full))]
    local_out = plans[0].local_output
    index = torch.full((sum(full),), -1, dtype=torch.long)
    for r, plan in enumerate(plans):
        for i, (size, start, off) in enumerate(zip(plan.local_sizes, plan.local_starts, plan.local_offsets)):
            seg = index[bases[i] + start: bases[i] + start + size]
            src = torch.arange(r * local_out + off, r * local_out + off + size)
            unset = seg < 0
            seg[unset] = src[unset]
    if bool((index < 0).any()):  # the plans above always cover every row; guard the invariant
        raise AssertionError(f"tensor-parallel plans leave output rows unassigned: {plans}")
    if torch.equal(index, torch.arange(index.numel())):
        return None
    return index


# --------------------------------------------------------------------------------------------
# Alignment of every rank's slice
# --------------------------------------------------------------------------------------------
def _slice_problem(start: int, size: int, full: int, div: int, last: bool) -> bool:
    """A slice ``[start, start+size)`` of ``full`` entries, stored ``div`` to a pack / block /
    group, is storable when it starts on a boundary and is whole units, except that the last
    slice of the local layout may end raggedly where the checkpoint tensor itself ends."""
    return bool(start % div or (size % div and not (last and start + size == full)))


class _ParallelLinear(LinearBase):
    """Shared setup: group, rank plans, the all-rank alignment check."""

    def __init__(
        self,
        input_size: int,
        output_sizes: Sequence[int],
        plans: Sequence[ShardPlan],
        *,
        bias: bool,
        params_dtype: torch.dtype,
        quant_config: QuantizationConfig | None,
        prefix: str,
        shard_names: Sequence[str] | None,
        display_names: Sequence[str] | None = None,
    ):
        # Plain attributes may be set before nn.Module.__init__; LinearBase.__init__ calls our
        # _check_alignment, which needs every rank's plan.
        self._tp_plans = tuple(plans)
        names = display_names or shard_names
        self._shard_labels = [f" '{name}'" for name in names] if names else [""] * len(output_sizes)
        super().__init__(
            input_size,
            output_sizes,
            bias=bias,
            params_dtype=params_dtype,
            quant_config=quant_config,
            prefix=prefix,
            shard_names=shard_names,
            plan=plans[self.tp_rank],
        )
        if self.tp_size > 1:
            self._check_rank_slices(self._param_requirements())

    # Subclasses call this first: the plans (and _check_alignment) need rank and size.
    def _resolve_group(self, tp_group) -> None:
        self.tp_group = resolve_group(tp_group)
        self.tp_rank, self.tp_size = tp_rank_size(self.tp_group)

    @property
    def _where(self) -> str:
        return self.prefix or type(self).__name__

    def _check_alignment(self) -> None:
        if self.tp_size > 1:
            self._check_rank_slices(self._method_requirements())
        super()._check_alignment()

    def _method_requirements(self) -> list[tuple[str, int, str]]:
        """(axis, div, why) from the quantization method's capability hooks."""
        method, reqs = self.quant_method, []
        if method.supports_block_quantization():
            bn, bk = method.weight_block_size
            block = f"{method.name} weight_block_size=[{bn}, {bk}]"
            reqs += [("out", bn, f"{block}: block_n={bn}"), ("in", bk, f"{block}: block_k={bk}")]
        if method.output_alignment() > 1:
            reqs.append(("out", method.output_alignment(), f"{method.name} output alignment {method.output_alignment()}"))
        if method.input_alignment() > 1:
            reqs.append(("in", method.input_alignment(), f"{method.name} input alignment {method.input_alignment()}"))
        return reqs

    def _param_requirements(self) -> list[tuple[str, int, str]]:
        """(axis, div, why) from the DimMaps of the parameters the method registered."""
        reqs = []
        for p in self.parameters(recurse=False):
            if isinstance(p, ShardedParameter):
                if p.output.div > 1:
                    reqs.append(("out", p.output.div, f"{p.qualname}: {p.output.kind} size {p.output.div} along {p.output.describe()}"))
                if p.input is not None and p.input.div > 1:
                    reqs.append(("in", p.input.div, f"{p.qualname}: {p.input.kind} size {p.input.div} along {p.input.describe()}"))
            elif isinstance(p, StackedParameter) and p.input is not None and p.input.div > 1:
                reqs.append(("in", p.input.div, f"{p.qualname}: {p.input.kind} size {p.input.div} along dim {p.input.dim + 1}"))
        return reqs

    def _check_rank_slices(self, reqs: Sequence[tuple[str, int, str]]) -> None:
        """Raise for the first (rank, shard) whose slice is not whole units of some requirement.

        Every rank runs the same arithmetic over the same plans, so all raise the same error.
        """
        for plan in self._tp_plans:
            for axis, div, why in reqs:
                if axis == "out":
                    n = plan.num_shards
                    for i, (full, size, start) in enumerate(zip(plan.full_sizes, plan.local_sizes, plan.local_starts)):
                        if _slice_problem(start, size, full, div, last=i == n - 1):
                            raise ValueError(
                                f"{self._where}: tensor-parallel rank {plan.rank}/{plan.world} would hold rows "
                                f"[{start}, {start + size}) of shard {i}{self._shard_labels[i]} ({full} rows): "
                                f"a slice of {size} rows starting at row {start} is not whole {div}-row units "
                                f"({why}); choose a tensor-parallel size that splits every shard into multiples "
                                f"of {div} rows"
                            )
                elif _slice_problem(plan.input_start, plan.local_input, plan.full_input, div, last=True):
                    start, size = plan.input_start, plan.local_input
                    raise ValueError(
                        f"{self._where}: tensor-parallel rank {plan.rank}/{plan.world} would hold input columns "
                        f"[{start}, {start + size}) of {plan.full_input}: a slice of {size} columns starting at "
                        f"column {start} is not whole {div}-column units ({why}); choose a tensor-parallel size "
                        f"that splits input_size={plan.full_input} into multiples of {div}"
                    )

    def extra_repr(self) -> str:
        return super().extra_repr() + (f", tp={self.tp_rank}/{self.tp_size}" if self.tp_size > 1 else "")


# --------------------------------------------------------------------------------------------
# Column parallel: split N, optionally all-gather
# --------------------------------------------------------------------------------------------
class ColumnParallelLinear(_ParallelLinear):
    """``[output_size, input_size]`` split along the output rows over ``tp_group``.

    ``forward(x [..., input_size])`` returns this rank's ``[..., output_size / tp_size]`` or,
    with ``gather_output=True``, the full ``[..., output_size]`` on every rank. ``tp_group``:
    a ``torch.distributed`` process group; default the world group when initialized, else one
    process (the layer is then ``ReplicatedLinear``).
    """

    def __init__(
        self,
        input_size: int,
        output_size: int,
        bias: bool = False,
        params_dtype: torch.dtype = torch.bfloat16,
        quant_config: QuantizationConfig | None = None,
        prefix: str = "",
        gather_output: bool = False,
        tp_group=None,
    ):
        self._column_init(input_size, [output_size], bias=bias, params_dtype=params_dtype, quant_config=quant_config,
                          prefix=prefix, gather_output=gather_output, tp_group=tp_group, shard_names=None)

    def _column_init(self, input_size, output_sizes, *, gather_output, tp_group, unit_rows=None, replicable=None,
                     display_names=None, **kwargs) -> None:
        self._resolve_group(tp_group)
        names = display_names or kwargs.get("shard_names")
        where = kwargs.get("prefix") or type(self).__name__
        plans = column_parallel_plans(output_sizes, input_size, self.tp_size, unit_rows=unit_rows,
                                      replicable=replicable, names=names, where=where)
        super().__init__(input_size, output_sizes, plans, display_names=display_names, **kwargs)
        self.gather_output = bool(gather_output)
        # Non-persistent: derived from the plans, not part of a checkpoint.
        self.register_buffer("_gather_index", _gather_index(self._tp_plans) if self.tp_size > 1 else None, persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``x [..., K]`` (``stride(-1) == 1``) -> ``[..., N/w]``, or ``[..., N]`` when gathering."""
        y = super().forward(x)
        if not self.gather_output or self.tp_size == 1:
            return y
        gathered = all_gather(y, self.tp_group)  # [w, ..., N/w]
        y = gathered.movedim(0, -2).reshape(*y.shape[:-1], -1)  # [..., w·N/w], rank-major
        if self._gather_index is not None:  # merged shards / replicated heads: back to checkpoint order
            y = y.index_select(-1, self._gather_index)
        return y


class MergedColumnParallelLinear(ColumnParallelLinear):
    """Several checkpoint matrices with the same input (``gate_proj`` + ``up_proj``) fused into
    one column-parallel GEMM: each is split over the ranks, and rank ``r``'s output is
    ``[..., sum(output_sizes) / w]`` laid out shard by shard. Load shard ``i`` with
    ``loaded_shard_id=i``; ``gather_output=True`` returns ``[..., sum(output_sizes)]`` in
    checkpoint order."""

    def __init__(
        self,
        input_size: int,
        output_sizes: Sequence[int],
        bias: bool = False,
        params_dtype: torch.dtype = torch.bfloat16,
        quant_config: QuantizationConfig | None = None,
        prefix: str = "",
        gather_output: bool = False,
        tp_group=None,
        shard_names: Sequence[str] | None = None,
    ):
        self._column_init(input_size, list(output_sizes), bias=bias, params_dtype=params_dtype, quant_config=quant_config,
                          prefix=prefix, gather_output=gather_output, tp_group=tp_group, shard_names=shard_names)


class QKVParallelLinear(ColumnParallelLinear):
    """Attention's q, k and v projections fused and split by heads.

    Shards: q ``[total_num_heads · head_size, hidden_size]`` (0 / "q"), k and v
    ``[total_num_kv_heads · head_size, hidden_size]`` (1 / "k", 2 / "v"). Rank ``r`` of ``w``
    holds ``num_heads = total_num_heads / w`` query heads and ``num_kv_heads`` KV heads: with
    ``total_num_kv_heads >= w`` a ``1/w`` share, otherwise one head replicated on
    ``num_kv_head_replicas = w / total_num_kv_heads`` consecutive ranks (rank ``r`` holds KV head
    ``r // num_kv_head_replicas``). ``loaded_shard_id`` may be 0/1/2 or "q"/"k"/"v".
    """

    SHARD_IDS = {"q": 0, "k": 1, "v": 2}

    def __init__(
        self,
        hidden_size: int,
        head_size: int,
        total_num_heads: int,
        total_num_kv_heads: int | None = None,
        bias: bool = False,
        params_dtype: torch.dtype = torch.bfloat16,
        quant_config: QuantizationConfig | None = None,
        prefix: str = "",
        gather_output: bool = False,
        tp_group=None,
        shard_names: Sequence[str] | None = None,
    ):
        total_num_kv_heads = total_num_heads if total_num_kv_heads is None else total_num_kv_heads
        if min(head_size, total_num_heads, total_num_kv_heads) <= 0:
            raise ValueError(f"{prefix or 'QKVParallelLinear'}: head_size={head_size}, total_num_heads={total_num_heads}, "
                             f"total_num_kv_heads={total_num_kv_heads} must be positive")
        self.head_size = head_size
        self.total_num_heads = total_num_heads
        self.total_num_kv_heads = total_num_kv_heads
        sizes = [total_num_heads * head_size, total_num_kv_heads * head_size, total_num_kv_heads * head_size]
        self._column_init(hidden_size, sizes, bias=bias, params_dtype=params_dtype, quant_config=quant_config,
                          prefix=prefix, gather_output=gather_output, tp_group=tp_group, shard_names=shard_names,
                          unit_rows=[head_size] * 3, replicable=[False, True, True],
                          display_names=list(shard_names) if shard_names else ["q", "k", "v"])
        self.num_heads = total_num_heads // self.tp_size
        self.num_kv_heads = max(1, total_num_kv_heads // self.tp_size)
        self.num_kv_head_replicas = max(1, self.tp_size // total_num_kv_heads)

    def register_parameter(self, name: str, param) -> None:
        # Accept "q"/"k"/"v" as loaded_shard_id: the parameter's own loader takes shard indices.
        if isinstance(param, QParameter) and "weight_loader" not in param.__dict__:
            param.weight_loader = _named_shard_loader(type(param).weight_loader, self.SHARD_IDS)
        super().register_parameter(name, param)


def _named_shard_loader(loader, ids: dict[str, int]):
    def weight_loader(param, loaded_weight, loaded_shard_id=None):
        if isinstance(loaded_shard_id, str):
            if loaded_shard_id not in ids:
                raise ValueError(f"{param.qualname}: loaded_shard_id must be one of {sorted(ids)} or an int, got {loaded_shard_id!r}")
            loaded_shard_id = ids[loaded_shard_id]
        loader(param, loaded_weight, loaded_shard_id)

    return weight_loader


# --------------------------------------------------------------------------------------------
# Row parallel: split K, all-reduce
# --------------------------------------------------------------------------------------------
class RowParallelLinear(_ParallelLinear):
    """``[output_size, input_size]`` split along the input columns over ``tp_group``.

    ``forward(x)``: ``x [..., input_size / w]`` when ``input_is_parallel`` (the output of a
    column-parallel layer without gather), else the full ``x [..., input_size]`` from which
    each rank takes its columns (a view; ``stride(-1) == 1`` required). Returns
    ``[..., output_size]``: the all-reduced sum plus bias when ``reduce_results``; otherwise
    this rank's partial product, with the bias on rank 0 only so that a later sum adds it once.
    """

    def __init__(
        self,
        input_size: int,
        output_size: int,
        bias: bool = False,
        params_dtype: torch.dtype = torch.bfloat16,
        quant_config: QuantizationConfig | None = None,
        prefix: str = "",
        input_is_parallel: bool = True,
        reduce_results: bool = True,
        tp_group=None,
    ):
        self._resolve_group(tp_group)
        plans = row_parallel_plans([output_size], input_size, self.tp_size, where=prefix or type(self).__name__)
        super().__init__(input_size, [output_size], plans, bias=bias, params_dtype=params_dtype,
                         quant_config=quant_config, prefix=prefix, shard_names=None)
        self.input_is_parallel = bool(input_is_parallel)
        self.reduce_results = bool(reduce_results)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        plan = self.shard_plan
        self._check_input(x)
        if not self.input_is_parallel:
            if x.shape[-1] != plan.full_input:
                raise ValueError(f"{self._where}: x must be [..., {plan.full_input}] (input_is_parallel=False), got {tuple(x.shape)}")
            x = x.narrow(-1, plan.input_start, plan.local_input)
        elif x.shape[-1] != plan.local_input:
            raise ValueError(f"{self._where}: x must be [..., {plan.local_input}] (this rank's columns "
                             f"[{plan.input_start}, {plan.input_start + plan.local_input})), got {tuple(x.shape)}")
        if self.tp_size == 1:
            return self.quant_method.apply(self, x, self.bias)
        if not self.reduce_results:
            return self.quant_method.apply(self, x, self.bias if self.tp_rank == 0 else None)
        y = self.quant_method.apply(self, x, None)
        # The backends reduce a flat buffer; a method returning a view gets a private copy.
        y = all_reduce_sum(y if y.is_contiguous() else y.contiguous(), self.tp_group)
        if self.bias is not None:
            y += self.bias
        return y


# --------------------------------------------------------------------------------------------
# What a streaming loader would read for this rank (proposal for QParameter.checkpoint_slice)
# --------------------------------------------------------------------------------------------
def checkpoint_slices(param: QParameter, shard_id: int | None) -> list[tuple[int | None, tuple[slice, ...]]]:
    """The parts of a checkpoint tensor this process needs, as index tuples for
    ``safetensors``' ``get_slice(name)[...]``.

    Returns ``[(shard, index), ...]``: ``tensor[index]`` (``tensor`` shaped
    ``param.checkpoint_shape(shard_id)``) is what ``param.weight_loader`` would write for
    ``shard`` — one entry for a single shard, one per shard for a fused-on-disk
    ``ShardedParameter`` (``shard_id=None``), ``(None, index)`` for a ``StackedParameter``
    (one tensor for all slots). Index entries are step-1 slices (empty tuple: whole tensor).
    """
    plan = param.plan
    if isinstance(param, StackedParameter):
        shape = param.checkpoint_shape(shard_id)
        index = [slice(None)] * len(shape)
        if param.input is not None:
            inp = param.input
            index[inp.dim] = slice(plan.input_start // inp.div, cdiv(plan.input_start + plan.local_input, inp.div))
        return [(shard_id, tuple(index))]
    if not isinstance(param, ShardedParameter):
        raise TypeError(f"checkpoint_slices: expected a ShardedParameter or StackedParameter, got {type(param).__name__}")
    out, inp = param.output, param.input
    shards = range(plan.num_shards) if shard_id is None else [shard_id]
    pieces = []
    for i in shards:
        base = sum(out.stored(s) for s in plan.full_sizes[:i]) if shard_id is None else 0
        start, size = plan.local_starts[i], plan.local_sizes[i]
        index = [slice(None)] * param.dim()
        index[out.dim] = slice(base + start // out.div, base + cdiv(start + size, out.div))
        if inp is not None:
            index[inp.dim] = slice(plan.input_start // inp.div, cdiv(plan.input_start + plan.local_input, inp.div))
        pieces.append((i, tuple(index)))
    return pieces
