"""Linear layers: one GEMM over one or several fused checkpoint matrices.

``y = x @ W^T + b`` with ``x [..., K]`` and ``W = cat(W_0, W_1, ...) [N, K]``, ``N = sum(output_sizes)``.
What the weight looks like in memory and how the product is computed is the layer's
``quant_method``'s business (``qlinear.quantization``); the layer only owns the shape of the
problem (its ``ShardPlan``) and asks the method through its hooks. This module imports the
quantization *base* and the unquantized method, never a concrete format.
"""

from __future__ import annotations

from typing import Sequence

import torch
from torch import nn

from qlinear._utils import Fp8GroupActivation
from qlinear.parameter import DimMap, QParameter, ShardedParameter, ShardPlan
from qlinear.quantization.base import QuantizationConfig, QuantizeMethodBase
from qlinear.quantization.unquantized import UnquantizedLinearMethod

__all__ = ["LinearBase", "ReplicatedLinear", "MergedReplicatedLinear"]


class LinearBase(nn.Module):
    """Shared machinery of every linear layer.

    Args:
        input_size: K, columns of the checkpoint weight.
        output_sizes: rows of each checkpoint matrix fused into this layer, in order.
        bias: whether the layer adds a bias (loaded per shard like the weight rows).
        params_dtype: dtype of float weights and of activations the layer expects.
        quant_config: parsed ``quantization_config`` or None for plain float weights.
        prefix: module path in the checkpoint (``model.layers.0.self_attn.fused_qkv_a_proj``).
        shard_names: checkpoint module names of the fused matrices, when they differ from the
            layer's own name (``["q_a_proj", "kv_a_proj_with_mqa"]``); used to resolve per-module
            quantization settings such as ignore lists.
        plan: which rows/columns this process holds (tensor parallelism); default: all of them.
    """

    def __init__(
        self,
        input_size: int,
        output_sizes: Sequence[int],
        *,
        bias: bool = False,
        params_dtype: torch.dtype = torch.bfloat16,
        quant_config: QuantizationConfig | None = None,
        prefix: str = "",
        shard_names: Sequence[str] | None = None,
        plan: ShardPlan | None = None,
    ):
        super().__init__()
        output_sizes = [int(s) for s in output_sizes]
        if int(input_size) <= 0 or not output_sizes or any(s <= 0 for s in output_sizes):
            raise ValueError(f"{prefix or type(self).__name__}: input_size={input_size} and output_sizes={output_sizes} must be positive")
        if shard_names is not None and len(shard_names) != len(output_sizes):
            raise ValueError(f"{prefix}: shard_names {list(shard_names)} must name each of the {len(output_sizes)} shards")
        self.input_size = int(input_size)
        self.output_sizes = output_sizes
        self.output_size = sum(output_sizes)
        self.params_dtype = params_dtype
        self.prefix = prefix
        self.shard_names = list(shard_names) if shard_names is not None else None
        self.shard_plan = plan if plan is not None else ShardPlan.replicated(output_sizes, input_size)
        if self.shard_plan.full_sizes != tuple(output_sizes) or self.shard_plan.full_input != self.input_size:
            raise ValueError(f"{prefix}: plan {self.shard_plan} does not describe output_sizes={output_sizes}, input_size={input_size}")

        method = quant_config.get_quant_method(self, prefix) if quant_config is not None else None
        self.quant_method: QuantizeMethodBase = method if method is not None else UnquantizedLinearMethod()
        self._check_alignment()
        plan = self.shard_plan
        self.quant_method.create_weights(self, plan.local_input, list(plan.local_sizes), params_dtype)
        if bias:
            self.bias = ShardedParameter(
                torch.empty(plan.local_output, dtype=params_dtype), plan=plan, output=DimMap(0), convertible=True
            )
        else:
            self.register_parameter("bias", None)
        self.weights_finished = False

    # Every QParameter learns its full name here, so loader errors can say which tensor failed.
    def register_parameter(self, name: str, param: nn.Parameter | None) -> None:
        super().register_parameter(name, param)
        if isinstance(param, QParameter):
            param.qualname = f"{self.prefix}.{name}" if self.prefix else name

    def _check_alignment(self) -> None:
        """Refuse at construction what the method cannot store: misaligned shards or K."""
        plan, method = self.shard_plan, self.quant_method
        where = f"{self.prefix or type(self).__name__}{plan.where}"
        if method.supports_block_quantization():
            block_n, block_k = method.weight_block_size
            bad = [i for i, s in enumerate(plan.local_sizes[:-1]) if s % block_n]
            if bad:
                raise ValueError(
                    f"{where}: {method.name} with weight_block_size=[{block_n}, {block_k}] needs every output "
                    f"shard but the last to be a multiple of block_n={block_n}; shard sizes "
                    f"{list(plan.local_sizes)} (shard {bad[0]} has {plan.local_sizes[bad[0]]} rows)"
                )
            if plan.input_start % block_k or any(s % block_n for s in plan.local_starts):
                raise ValueError(
                    f"{where}: this process's slice (rows from {list(plan.local_starts)}, columns from "
                    f"{plan.input_start}) does not start on a {block_n}x{block_k} block boundary"
                )
        align = method.output_alignment()
        bad = [i for i, s in enumerate(plan.local_sizes[:-1]) if s % align]
        if bad:
            raise ValueError(
                f"{where}: {method.name} needs every output shard but the last to be a multiple of "
                f"{align} rows; shard sizes {list(plan.local_sizes)} (shard {bad[0]} has {plan.local_sizes[bad[0]]})"
            )
        k_align = method.input_alignment()
        if plan.local_input % k_align:
            raise ValueError(f"{where}: {method.name} needs input_size to be a multiple of {k_align}, got {plan.local_input}")

    def _check_input(self, x) -> None:
        """A pre-quantized activation (``Fp8GroupActivation``) only for a method that takes one, with
        that method's group size; anything else but a tensor is refused."""
        if isinstance(x, torch.Tensor):
            return
        where = self.prefix or type(self).__name__
        if not isinstance(x, Fp8GroupActivation):
            raise TypeError(f"{where}: x must be a tensor or an Fp8GroupActivation, got {type(x).__name__}")
        group = self.quant_method.quantized_input_group()
        if group is None:
            raise TypeError(f"{where}: {self.quant_method.name} takes float activations, got a pre-quantized "
                            "Fp8GroupActivation")
        if x.group_size != group:
            raise ValueError(f"{where}: {self.quant_method.name} quantizes activations in groups of {group}, got an "
                             f"Fp8GroupActivation with group_size={x.group_size}")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``x [..., K]`` -> ``[..., N]``; ``x`` may be an ``Fp8GroupActivation`` where the method takes
        one (block-scaled FP8: its quantization launch is skipped)."""
        self._check_input(x)
        if x.shape[-1] != self.shard_plan.local_input:
            raise ValueError(f"{self.prefix or type(self).__name__}: x must be [..., {self.shard_plan.local_input}], got {tuple(x.shape)}")
        return self.quant_method.apply(self, x, self.bias)

    def process_weights_after_loading(self) -> None:
        """Check every shard of every parameter arrived, then let the method finish the layer.

        Idempotent: a second call does nothing.
        """
        if self.weights_finished:
            return
        missing = {
            p.qualname: p.missing_shards()
            for p in self.parameters(recurse=False)
            if isinstance(p, QParameter) and p.missing_shards()
        }
        if missing:
            names = self.shard_names or [f"shard {i}" for i in range(len(self.output_sizes))]
            detail = "; ".join(f"{name}: {[names[i] for i in shards]}" for name, shards in missing.items())
            raise ValueError(f"{self.prefix or type(self).__name__}: never loaded: {detail}")
        self.quant_method.process_weights_after_loading(self)
        self.weights_finished = True

    def backend(self, x: torch.Tensor | None = None) -> str:
        """The compute path ``forward`` takes (for ``x``, or a typical input)."""
        return self.quant_method.backend(self, x)

    def extra_repr(self) -> str:
        plan = self.shard_plan
        return (
            f"in={plan.local_input}, out={list(plan.local_sizes)}, method={self.quant_method.name}, "
            f"bias={self.bias is not None}" + ("" if plan.world == 1 else f", rank={plan.rank}/{plan.world}")
        )


class ReplicatedLinear(LinearBase):
    """One checkpoint matrix ``[output_size, input_size]``, whole on every process."""

    def __init__(
        self,
        input_size: int,
        output_size: int,
        bias: bool = False,
        params_dtype: torch.dtype = torch.bfloat16,
        quant_config: QuantizationConfig | None = None,
        prefix: str = "",
    ):
        super().__init__(input_size, [output_size], bias=bias, params_dtype=params_dtype, quant_config=quant_config, prefix=prefix)


class MergedReplicatedLinear(LinearBase):
    """Several checkpoint matrices with the same input fused into one GEMM.

    ``MergedReplicatedLinear(7168, [1536, 576])`` holds DeepSeek MLA's ``q_a_proj`` (shard 0) and
    ``kv_a_proj_with_mqa`` (shard 1); ``forward`` returns ``[..., 2112]``, shard ``i``'s rows at
    ``sum(output_sizes[:i])``. Load each checkpoint matrix with ``loaded_shard_id=i``.
    """

    def __init__(
        self,
        input_size: int,
        output_sizes: Sequence[int],
        bias: bool = False,
        params_dtype: torch.dtype = torch.bfloat16,
        quant_config: QuantizationConfig | None = None,
        prefix: str = "",
        shard_names: Sequence[str] | None = None,
    ):
        super().__init__(
            input_size,
            output_sizes,
            bias=bias,
            params_dtype=params_dtype,
            quant_config=quant_config,
            prefix=prefix,
            shard_names=shard_names,
        )
