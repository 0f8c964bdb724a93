"""Parameter types that own their ``weight_loader``.

A fused layer holds several checkpoint matrices ("shards") stacked along its output rows, e.g.
DeepSeek MLA's ``q_a_proj`` (1536 rows) and ``kv_a_proj_with_mqa`` (576 rows) in one 2112-row
weight. Every tensor a format stores for such a layer relates to the logical weight
``W [N, K]`` in one of two ways, and each way is one parameter type here:

``ShardedParameter``
    Some tensor dim runs along N (the output rows) and, optionally, another along K. Along each
    such dim the tensor stores ``ceil(L / div)`` entries for ``L`` logical rows/columns, where
    ``div`` is 1 for a plain weight, the pack factor for packed integers (8 nibbles per int32)
    and the block size for block scales (128). Shard ``i`` lands at stored offset
    ``offset_i / div``, so every offset must be a multiple of ``div``: that is the alignment
    rule (e.g. FP8 128x128 blocks: every shard but the last is a multiple of 128 rows).

``StackedParameter``
    One slot per shard along a new leading dim: per-tensor scales (``[num_shards]``), per-shard
    ``g_idx`` (``[num_shards, K]``), ``weight_shape`` (``[num_shards, 2]``). A tensor loaded with
    ``loaded_shard_id=None`` (already fused on disk) fills every slot.

The split of the output rows into shards and the part of each shard this process holds (for
tensor parallelism) is a ``ShardPlan`` that all parameters of one layer share. The arithmetic
of offsets, packing, blocks and rank slices lives here and nowhere else.

A loader checks everything before it writes anything, so a rejected tensor leaves the parameter
exactly as it was. Float weights may be cast to the parameter's dtype (``convertible=True``);
scales only widen losslessly (fp16/bf16/e8m0 -> fp32); integers and fp8 must match exactly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import torch
from torch import nn

from qlinear._utils import cdiv, is_lossless_cast

__all__ = ["DimMap", "ShardPlan", "QParameter", "ShardedParameter", "StackedParameter", "LoadError", "accepts_dtype"]


class LoadError(ValueError):
    """A checkpoint tensor does not fit the parameter it was sent to."""


@dataclass(frozen=True)
class DimMap:
    """How a logical extent (output rows N or input columns K) lies along tensor dim ``dim``.

    ``stored = ceil(logical / div)``; a logical offset ``o`` (a multiple of ``div``) is stored at
    ``o // div``. ``kind`` names what ``div`` is, for error messages ("pack", "block", "group").
    """

    dim: int
    div: int = 1
    kind: str = "rows"

    def stored(self, logical: int) -> int:
        return cdiv(logical, self.div)

    def describe(self) -> str:
        return f"dim {self.dim}" + ("" if self.div == 1 else f" ({self.kind} {self.div})")


@dataclass(frozen=True)
class ShardPlan:
    """Output shards of a layer and the part of each that this process holds.

    ``full_sizes[i]`` rows of shard ``i`` exist in the checkpoint; this process holds rows
    ``[local_starts[i], local_starts[i] + local_sizes[i])`` of it, laid out back to back in its
    parameters (shard ``i`` at local row ``local_offsets[i]``). Likewise input columns
    ``[input_start, input_start + local_input)`` of the checkpoint's ``full_input``.
    ``rank`` / ``world`` only label messages; the numbers above say everything.
    """

    full_sizes: tuple[int, ...]
    local_sizes: tuple[int, ...]
    local_starts: tuple[int, ...]
    full_input: int
    local_input: int
    input_start: int = 0
    rank: int = 0
    world: int = 1

    @classmethod
    def replicated(cls, output_sizes: Sequence[int], input_size: int) -> "ShardPlan":
        sizes = tuple(int(s) for s in output_sizes)
        return cls(sizes, sizes, (0,) * len(sizes), int(input_size), int(input_size))

    def __post_init__(self) -> None:
        n = len(self.full_sizes)
        if n == 0 or len(self.local_sizes) != n or len(self.local_starts) != n:
            raise ValueError(f"ShardPlan: need one size/start per shard, got {self}")
        for i, (full, size, start) in enumerate(zip(self.full_sizes, self.local_sizes, self.local_starts)):
            if full <= 0 or size < 0 or start < 0 or start + size > full:
                raise ValueError(f"ShardPlan: shard {i} holds rows [{start}, {start + size}) of {full}")
        if not (0 <= self.input_start and self.input_start + self.local_input <= self.full_input):
            raise ValueError(
                f"ShardPlan: input columns [{self.input_start}, {self.input_start + self.local_input}) "
                f"outside 0..{self.full_input}"
            )

    @property
    def num_shards(self) -> int:
        return len(self.full_sizes)

    @property
    def local_offsets(self) -> tuple[int, ...]:
        offsets, acc = [], 0
        for size in self.local_sizes:
            offsets.append(acc)
            acc += size
        return tuple(offsets)

    @property
    def local_output(self) -> int:
        return sum(self.local_sizes)

    @property
    def where(self) -> str:
        return "" if self.world == 1 else f" on rank {self.rank}/{self.world}"


def accepts_dtype(want: torch.dtype, got: torch.dtype, *, convertible: bool) -> bool:
    """The one dtype rule of every loader: may a checkpoint tensor of ``got`` fill a ``want`` slot?

    Equal dtypes always; a float tensor into a ``convertible`` float parameter (cast to the layer's
    ``params_dtype``, never from an fp8 tensor); otherwise only a lossless widening (fp16 / bf16 /
    e8m0 -> fp32). Integers and fp8 must match exactly.
    """
    if got == want:
        return True
    if convertible and got.is_floating_point and want.is_floating_point and got.itemsize > 1:
        return True
    return is_lossless_cast(got, want)


class QParameter(nn.Parameter):
    """A non-trainable parameter that knows how to place checkpoint tensors into itself.

    ``param.weight_loader(param, loaded_weight, loaded_shard_id=None)`` is the entry point
    (a plain function, so ``param.weight_loader(param, ...)`` works as frameworks call it).
    ``param.qualname`` is set by the layer when it registers the parameter, for messages.
    """

    def __new__(cls, data: torch.Tensor, **kwargs):
        return super().__new__(cls, data, requires_grad=False)

    def __init__(self, data: torch.Tensor, *, plan: ShardPlan, convertible: bool = False, required: bool = True):
        self.plan = plan
        self.convertible = convertible
        # An optional tensor (GPTQ's g_idx without act-order, say) may be absent from a
        # checkpoint altogether; once any shard of it arrives, all must.
        self.required = required
        self.qualname = "<unnamed>"
        self.loaded_shards: set[int] = set()

    @staticmethod
    def weight_loader(param: "QParameter", loaded_weight: torch.Tensor, loaded_shard_id: int | None = None) -> None:
        param.load(loaded_weight, loaded_shard_id)

    def load(self, loaded: torch.Tensor, shard_id: int | None = None) -> None:
        if not isinstance(loaded, torch.Tensor):
            raise LoadError(f"{self.qualname}: expected a torch.Tensor, got {type(loaded).__name__}")
        self._check_dtype(loaded)
        shards = self._shard_ids(shard_id)
        writes = self._plan_writes(loaded, shard_id)  # checks everything before the first write
        with torch.no_grad():
            for dst, src in writes:
                # cast where the source lives: not every device copy converts every dtype (e8m0)
                dst.copy_(src.to(dtype=dst.dtype))
        self.loaded_shards.update(shards)

    def missing_shards(self) -> list[int]:
        if not self.required and not self.loaded_shards:
            return []
        return [i for i in range(self.plan.num_shards) if i not in self.loaded_shards]

    # -- helpers shared by the two kinds -------------------------------------------------
    def _shard_ids(self, shard_id: int | None) -> list[int]:
        n = self.plan.num_shards
        if shard_id is None:
            return list(range(n))
        if isinstance(shard_id, bool) or not isinstance(shard_id, int) or not 0 <= shard_id < n:
            raise LoadError(f"{self.qualname}: loaded_shard_id must be None or an int in [0, {n}), got {shard_id!r}")
        return [shard_id]

    def _check_dtype(self, loaded: torch.Tensor) -> None:
        if accepts_dtype(self.dtype, loaded.dtype, convertible=self.convertible):
            return
        want, got = self.dtype, loaded.dtype
        raise LoadError(
            f"{self.qualname}: expected dtype {want}"
            + (" (or a float dtype that widens to it exactly)" if want.is_floating_point else "")
            + f", got {got}{self.plan.where}"
        )

    def _shape_error(self, what: str, expected: Sequence[int], got: Sequence[int]) -> LoadError:
        return LoadError(
            f"{self.qualname}: {what}: expected shape {tuple(expected)}, got {tuple(got)}{self.plan.where}"
        )

    def _plan_writes(self, loaded: torch.Tensor, shard_id: int | None) -> list[tuple[torch.Tensor, torch.Tensor]]:
        raise NotImplementedError


class ShardedParameter(QParameter):
    """A tensor with one dim along the output rows and optionally one along the input columns.

    Shape: ``output.dim`` has ``sum_i ceil(local_sizes[i] / output.div)`` entries; ``input.dim``
    (if any) has ``ceil(local_input / input.div)``; other dims are free (e.g. group count).
    """

    def __new__(cls, data, **kwargs):
        return super().__new__(cls, data)

    def __init__(
        self,
        data: torch.Tensor,
        *,
        plan: ShardPlan,
        output: DimMap,
        input: DimMap | None = None,
        convertible: bool = False,
        required: bool = True,
    ):
        super().__init__(data, plan=plan, convertible=convertible, required=required)
        self.output = output
        self.input = input
        self._check_layout()

    def _check_layout(self) -> None:
        plan, out = self.plan, self.output
        # Each shard starts a fresh run of packed words / blocks, so offsets must be aligned.
        for i, (off, start) in enumerate(zip(plan.local_offsets, plan.local_starts)):
            if off % out.div or start % out.div:
                raise ValueError(
                    f"{self.qualname if self.qualname != '<unnamed>' else 'parameter'}: output shards "
                    f"{list(plan.local_sizes)} (of checkpoint shards {list(plan.full_sizes)}){plan.where}: "
                    f"shard {i} starts at row {off} locally / {start} in its checkpoint tensor, "
                    f"not a multiple of the {out.kind} size {out.div} along {out.describe()}"
                )
        expected_out = sum(out.stored(s) for s in plan.local_sizes)
        if self.shape[out.dim] != expected_out:
            raise ValueError(f"parameter {out.describe()} has {self.shape[out.dim]} entries, plan needs {expected_out}")
        if self.input is not None:
            inp = self.input
            if plan.input_start % inp.div:
                raise ValueError(
                    f"input columns start at {plan.input_start}{plan.where}, not a multiple of the "
                    f"{inp.kind} size {inp.div} along {inp.describe()}"
                )
            if self.shape[inp.dim] != inp.stored(plan.local_input):
                raise ValueError(
                    f"parameter {inp.describe()} has {self.shape[inp.dim]} entries, plan needs "
                    f"{inp.stored(plan.local_input)}"
                )

    def checkpoint_shape(self, shard_id: int | None) -> tuple[int, ...]:
        """Shape the checkpoint tensor of shard ``shard_id`` (None: all shards fused) must have."""
        plan, shape = self.plan, list(self.shape)
        rows = sum(plan.full_sizes) if shard_id is None else plan.full_sizes[shard_id]
        shape[self.output.dim] = self.output.stored(rows)
        if self.input is not None:
            shape[self.input.dim] = self.input.stored(plan.full_input)
        return tuple(shape)

    def _plan_writes(self, loaded, shard_id):
        plan, out = self.plan, self.output
        if shard_id is None:
            expected = self.checkpoint_shape(None)
            if tuple(loaded.shape) != expected:
                raise self._shape_error(f"all {plan.num_shards} shards fused on disk {list(plan.full_sizes)}", expected, loaded.shape)
            for i, full in enumerate(plan.full_sizes[:-1]):
                if full % out.div:
                    raise LoadError(
                        f"{self.qualname}: cannot split a fused tensor at shard {i} ({full} rows): not a "
                        f"multiple of the {out.kind} size {out.div}"
                    )
            parts = torch.split(loaded, [out.stored(s) for s in plan.full_sizes], dim=out.dim)
            return [w for i, part in enumerate(parts) for w in self._shard_writes(part, i)]
        expected = self.checkpoint_shape(shard_id)
        if tuple(loaded.shape) != expected:
            raise self._shape_error(
                f"shard {shard_id} ({plan.full_sizes[shard_id]} rows of {list(plan.full_sizes)})", expected, loaded.shape
            )
        return self._shard_writes(loaded, shard_id)

    def _shard_writes(self, part: torch.Tensor, i: int):
        plan, out = self.plan, self.output
        start, size = plan.local_starts[i], plan.local_sizes[i]
        src = part.narrow(out.dim, start // out.div, cdiv(start + size, out.div) - start // out.div)
        if self.input is not None:
            inp = self.input
            first = plan.input_start // inp.div
            src = src.narrow(inp.dim, first, cdiv(plan.input_start + plan.local_input, inp.div) - first)
        dst = self.data.narrow(out.dim, plan.local_offsets[i] // out.div, out.stored(size))
        if src.shape != dst.shape:  # only possible with rank slices whose edges split a block
            raise self._shape_error(f"shard {i} slice", dst.shape, src.shape)
        return [(dst, src)]


class StackedParameter(QParameter):
    """One slot per shard along dim 0: shape ``[num_shards, *rest]``.

    ``input`` optionally names a dim of ``rest`` that runs along K (indexing ``rest``, so tensor dim
    ``input.dim + 1``), sliced for this process's input columns. A scalar slot (``rest == ()``)
    accepts a checkpoint tensor of shape ``()`` or ``(1,)``.
    """

    def __new__(cls, data, **kwargs):
        return super().__new__(cls, data)

    def __init__(
        self,
        data: torch.Tensor,
        *,
        plan: ShardPlan,
        input: DimMap | None = None,
        convertible: bool = False,
        required: bool = True,
    ):
        super().__init__(data, plan=plan, convertible=convertible, required=required)
        if self.shape[0] != plan.num_shards:
            raise ValueError(f"stacked parameter needs {plan.num_shards} slots, has shape {tuple(self.shape)}")
        self.input = input

    def checkpoint_shape(self, shard_id: int | None = None) -> tuple[int, ...]:
        rest = list(self.shape[1:])
        if self.input is not None:
            rest[self.input.dim] = self.input.stored(self.plan.full_input)
        return tuple(rest)

    def _plan_writes(self, loaded, shard_id):
        expected = self.checkpoint_shape()
        shape = tuple(loaded.shape)
        if expected == () and shape == (1,):
            loaded = loaded.reshape(())
        elif shape != expected:
            which = "all shards (fused on disk)" if shard_id is None else f"shard {shard_id}"
            raise self._shape_error(which, expected, shape)
        if self.input is not None:
            inp, plan = self.input, self.plan
            first = plan.input_start // inp.div
            loaded = loaded.narrow(inp.dim, first, cdiv(plan.input_start + plan.local_input, inp.div) - first)
        slots = range(self.plan.num_shards) if shard_id is None else [shard_id]
        return [(self.data[i], loaded) for i in slots]
