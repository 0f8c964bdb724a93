"""Layers an inference framework builds its model from."""

from qlinear.layers.linear import LinearBase, MergedReplicatedLinear, ReplicatedLinear

__all__ = ["LinearBase", "ReplicatedLinear", "MergedReplicatedLinear"]
