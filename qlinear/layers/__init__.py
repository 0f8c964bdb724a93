"""Layers an inference framework builds its model from."""

from qlinear.layers.linear import LinearBase, MergedReplicatedLinear, ReplicatedLinear
from qlinear.layers.norm import RMSNorm

__all__ = ["LinearBase", "ReplicatedLinear", "MergedReplicatedLinear", "RMSNorm"]
