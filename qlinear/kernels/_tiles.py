"""Tile order shared by the Triton GEMMs."""

from __future__ import annotations

import triton
import triton.language as tl

__all__ = ["grouped_tile"]


@triton.jit
def grouped_tile(pid, m_tiles, n_tiles, GROUP_M: tl.constexpr):
    """``(pid_m, pid_n)`` of program ``pid`` in grouped order: GROUP_M consecutive M tiles walk
    the N tiles together, so a weight tile is read by GROUP_M programs close in time (L2 reuse at
    large M)::

        width = GROUP_M * n_tiles;  first_m = (pid // width) * GROUP_M
        pid_m = first_m + (pid % width) % min(m_tiles - first_m, GROUP_M)
        pid_n = (pid % width) // min(m_tiles - first_m, GROUP_M)
    """
    width = GROUP_M * n_tiles
    first_m = (pid // width) * GROUP_M
    gsize = tl.minimum(m_tiles - first_m, GROUP_M)
    return first_m + (pid % width) % gsize, (pid % width) // gsize
