"""Process-group lookup and collectives over ``torch.distributed``.

``tp_group=None`` means "the world group when ``torch.distributed`` is initialized, otherwise a
single process": the replicated layers are exactly the ``world == 1`` case, and every helper
below is then the identity without touching ``torch.distributed``.
"""

from __future__ import annotations

import torch
import torch.distributed as dist

__all__ = ["resolve_group", "tp_rank_size", "all_gather", "all_reduce_sum"]

# torch >= 2.12 names the single-tensor all-gather ``all_gather_single`` and deprecates
# ``all_gather_into_tensor``; older releases (the GPU image's 2.11) only have the latter.
_all_gather_single = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor


def resolve_group(group: "dist.ProcessGroup | None" = None) -> "dist.ProcessGroup | None":
    """The group to use: ``group`` itself, else the world group when ``torch.distributed`` is
    initialized, else ``None`` (one process, no communication)."""
    if group is not None:
        if not (dist.is_available() and dist.is_initialized()):
            raise ValueError("tp_group was given but torch.distributed is not initialized (call init_process_group first)")
        return group
    if dist.is_available() and dist.is_initialized():
        return dist.group.WORLD
    return None


def tp_rank_size(group: "dist.ProcessGroup | None" = None) -> tuple[int, int]:
    """``(rank, world_size)`` of this process in ``group`` (resolved as in ``resolve_group``);
    ``(0, 1)`` without ``torch.distributed``. Raises ``ValueError`` if this process is not a
    member of ``group``."""
    group = resolve_group(group)
    if group is None:
        return 0, 1
    rank = dist.get_rank(group)
    if rank < 0:
        raise ValueError(f"this process (global rank {dist.get_rank()}) is not a member of tp_group")
    return rank, dist.get_world_size(group)


def all_gather(x: torch.Tensor, group: "dist.ProcessGroup | None" = None) -> torch.Tensor:
    """Stack every rank's ``x`` (same shape and dtype on all ranks): ``[world, *x.shape]``,
    rank ``r``'s tensor at index ``r``. Any strides are accepted (``x`` is copied into the
    contiguous send buffer the backends need). One process: ``x.unsqueeze(0)``."""
    group = resolve_group(group)
    if group is None or dist.get_world_size(group) == 1:
        return x.unsqueeze(0)
    world = dist.get_world_size(group)
    # The backends gather flat contiguous buffers; this copy is private, never the caller's tensor.
    send = (x if x.is_contiguous() else x.contiguous()).reshape(-1)
    out = torch.empty(world * send.numel(), dtype=x.dtype, device=x.device)
    _all_gather_single(out, send, group=group)
    return out.view(world, *x.shape)


def all_reduce_sum(x: torch.Tensor, group: "dist.ProcessGroup | None" = None) -> torch.Tensor:
    """Sum ``x`` over the ranks of ``group`` in place and return it. ``x`` must be contiguous
    (the backends reduce a flat buffer); the parallel layers pass their own fresh GEMM output.
    One process: ``x`` unchanged."""
    group = resolve_group(group)
    if group is None or dist.get_world_size(group) == 1:
        return x
    if not x.is_contiguous():
        raise ValueError(f"all_reduce_sum: x must be contiguous, got shape {tuple(x.shape)} stride {tuple(x.stride())}")
    dist.all_reduce(x, op=dist.ReduceOp.SUM, group=group)
    return x
