"""Layers an inference framework builds its model from."""

from qlinear.layers.linear import LinearBase, MergedReplicatedLinear, ReplicatedLinear
from qlinear.layers.norm import RMSNorm
from qlinear.layers.parallel import (
    ColumnParallelLinear,
    MergedColumnParallelLinear,
    QKVParallelLinear,
    RowParallelLinear,
)

__all__ = [
    "LinearBase",
    "ReplicatedLinear",
    "MergedReplicatedLinear",
    "ColumnParallelLinear",
    "MergedColumnParallelLinear",
    "QKVParallelLinear",
    "RowParallelLinear",
    "RMSNorm",
]
