"""Plain float weights: ``y = x @ W^T + b`` through ``torch.nn.functional.linear``."""

from __future__ import annotations

from typing import Sequence

import torch
import torch.nn.functional as F

from qlinear.parameter import DimMap, ShardedParameter
from qlinear.quantization.base import QuantizeMethodBase

__all__ = ["UnquantizedLinearMethod"]


class UnquantizedLinearMethod(QuantizeMethodBase):
    """``weight [N, K]`` in ``params_dtype``; a checkpoint's float weight is cast to it."""

    name = "unquantized"

    def create_weights(self, layer, input_size: int, output_partition_sizes: Sequence[int], params_dtype: torch.dtype) -> None:
        weight = torch.empty(sum(output_partition_sizes), input_size, dtype=params_dtype)
        layer.register_parameter(
            "weight",
            ShardedParameter(weight, plan=layer.shard_plan, output=DimMap(0), input=DimMap(1, kind="cols"), convertible=True),
        )

    def apply(self, layer, x: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
        return F.linear(x, layer.weight, bias)

    def backend(self, layer, x=None) -> str:
        return "torch.linear"
