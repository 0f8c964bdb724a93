"""Split-K in one launch, shared by the Triton GEMMs (FP8 block, W4A16).

Each of the ``SPLIT_K`` programs of an output tile stores its fp32 partial tile into a workspace
plane ``WS[pid_k]`` (``[SPLIT_K, M, N]`` fp32), then bumps the tile's counter with an acq_rel
atomic; the program that sees ``SPLIT_K - 1`` (the last to arrive) sums the planes in the fixed
order 0 .. SPLIT_K - 1 (so the result does not depend on arrival order), and resets the counter.

    total[m, n] = sum_{s < SPLIT_K} WS[s, m, n]

The counters (:func:`locks`) live in one zeroed int32 buffer per (device, stream), allocated
once and left zeroed by every launch, so a launch needs no memset and no host sync: CUDA-graph
capturable, and a second reduction kernel (one more launch, ~2 us at decode sizes) is not needed.
Two launches on one stream never use the counters at once (stream order; a kernel launched early
by programmatic dependent launch waits at ``griddepcontrol.wait`` before any of its work).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

__all__ = ["LOCK_SLOTS", "locks", "splitk_sum"]

LOCK_SLOTS = 1 << 14  # 64 KB per (device, stream); split-K grids have far fewer tiles
_LOCKS: dict[tuple[str, int, int], torch.Tensor] = {}


def locks(device: torch.device) -> torch.Tensor:
    """Zeroed int32 split-K counters for the current stream of ``device`` (kernels reset them)."""
    if device.type == "cuda":
        key = ("cuda", device.index or 0, torch.cuda.current_stream(device).cuda_stream)
    else:
        key = (device.type, 0, 0)
    buf = _LOCKS.get(key)
    if buf is None:
        buf = torch.zeros(LOCK_SLOTS, dtype=torch.int32, device=device)
        _LOCKS[key] = buf
    return buf


@triton.jit
def splitk_sum(acc, ws_ptrs, plane, mask, lock_ptr, pid_k, SPLIT_K: tl.constexpr):
    """``(total, last)``: stores this split's ``acc`` at ``ws_ptrs + pid_k * plane`` (``ws_ptrs``:
    the tile's addresses in plane 0; ``plane`` = M * N), and for the last split to arrive returns
    the fixed-order sum of every plane with ``last`` True (zeros and False for the others)."""
    tl.store(ws_ptrs + pid_k.to(tl.int64) * plane, acc, mask=mask)
    # every thread's partial must be issued before the (single-thread) release below
    tl.debug_barrier()
    arrived = tl.atomic_add(lock_ptr, 1, sem="acq_rel", scope="gpu")
    last = arrived == SPLIT_K - 1
    total = tl.zeros_like(acc)
    if last:
        for s in tl.static_range(SPLIT_K):
            # .cg: read L2, never a stale L1 line of another SM's partial
            total += tl.load(ws_ptrs + s * plane, mask=mask, other=0.0, cache_modifier=".cg")
        tl.store(lock_ptr, 0)  # all SPLIT_K arrived: ready for the next launch
    return total, last
