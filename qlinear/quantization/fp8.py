"""FP8 (e4m3) weights: DeepSeek-V3 style ``quant_method: "fp8"`` and the methods other formats reuse.

Checkpoint tensors (FORMATS.md), ``W [N, K]`` the logical weight, every scale a *multiplier*::

    block    weight e4m3 [N, K], S [ceil(N/bn), ceil(K/bk)]   W[n, k] = w[n, k] * S[n // bn, k // bk]
    tensor   weight e4m3 [N, K], s scalar per checkpoint matrix W[n, k] = w[n, k] * s
    channel  weight e4m3 [N, K], s [N, 1] (or [N])              W[n, k] = w[n, k] * s[n]

DeepSeek names the block scale ``weight_scale_inv`` (fp32, or float8_e8m0fnu with
``scale_fmt: "ue8m0"``) although it multiplies; compressed-tensors names every weight scale
``weight_scale`` and stores it in the model dtype. Scale parameters are declared fp32, so bf16 /
fp16 / e8m0 scales widen into them exactly. Static activations add a per-tensor ``input_scale``.

Activations are quantized by the ops (``qlinear.ops.fp8``): per token and group of ``bk`` columns
for block weights, per token for dynamic tensor / channel weights, with the one static scale
otherwise. On CPU and GPUs without FP8 the ops run the exact dequantized fp32 reference.

Constructor API for other formats (compressed-tensors' float-quantized scheme)::

    Fp8LinearMethod.for_scheme(
        strategy,                  # "tensor" | "channel" | "block"
        *,
        block_size=None,           # (bn, bk), required for "block", refused otherwise
        scale_name="weight_scale", # checkpoint name of the weight scale
        static_input=False,        # True: a per-tensor "input_scale" per checkpoint matrix
        input_scale_name="input_scale",
        channel_scale_ndim=2,      # "channel": checkpoint scale is [N, 1] (2) or [N] (1)
    ) -> Fp8LinearMethod

returns an ``Fp8BlockLinearMethod``, ``Fp8TensorLinearMethod`` or ``Fp8ChannelLinearMethod``.
Checkpoint shapes each expects, per checkpoint matrix of ``n`` rows: block scale
``(ceil(n/bn), ceil(K/bk))``; tensor scale ``()`` or ``(1,)``; channel scale ``(n, 1)`` / ``(n,)``;
input scale ``()`` or ``(1,)``.

Fused layers: the block and channel scales are stacked along N like the weight. Per-tensor
scales (one per checkpoint matrix, ``StackedParameter``) are reconciled *exactly* after loading:
each row gets its own matrix's scale, i.e. the per-tensor scales become one per-channel scale
vector (collapsed back to one element when all shards agree); no weight is requantized. A static
input scale is per checkpoint matrix too, but the fused layer quantizes one activation for all
shards, so it uses the largest of them: each shard's matrix was calibrated for the same input
``x``, and the largest scale is the one under which no shard's calibrated range clips.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any, ClassVar, Sequence

import torch

from qlinear._utils import FP8_E4M3, Fp8GroupActivation, cdiv
from qlinear.ops.fp8 import (fp8_block_backend, fp8_block_linear, fp8_block_linear_quantized, fp8_block_quantized_backend,
                             fp8_scaled_backend, fp8_scaled_linear)
from qlinear.parameter import DimMap, ShardedParameter, StackedParameter
from qlinear.quantization.base import (
    QuantizationConfig,
    QuantizeMethodBase,
    check_scales,
    config_error,
    ignore_patterns,
    match_module_name,
)
from qlinear.quantization.unquantized import UnquantizedLinearMethod

__all__ = [
    "Fp8Config",
    "Fp8LinearMethod",
    "Fp8BlockLinearMethod",
    "Fp8TensorLinearMethod",
    "Fp8ChannelLinearMethod",
]

# Buffers written by process_weights_after_loading (not checkpoint tensors: persistent=False).
_WEIGHT_SCALE_BUF = "fp8_weight_scale"
_INPUT_SCALE_BUF = "fp8_input_scale"


def _check_block_size(block_size: Any, what: str) -> tuple[int, int]:
    ok = (
        isinstance(block_size, (list, tuple))
        and len(block_size) == 2
        and all(isinstance(b, int) and not isinstance(b, bool) and b > 0 for b in block_size)
    )
    if not ok:
        raise ValueError(f"{what}: expected [block_n, block_k], two positive ints, got {block_size!r}")
    return int(block_size[0]), int(block_size[1])


class Fp8LinearMethod(QuantizeMethodBase):
    """What every FP8 scheme shares: the e4m3 ``weight [N, K]``, the optional static
    ``input_scale`` (one per checkpoint matrix, finished to their max), the finiteness checks.

    Subclasses declare their weight scale (``_create_scale``), finish it (``_finish_scale``) and
    compute (``apply`` / ``backend``). Build one with :meth:`for_scheme`.
    """

    strategy: ClassVar[str] = ""

    def __init__(self, *, scale_name: str = "weight_scale", static_input: bool = False, input_scale_name: str = "input_scale"):
        if not scale_name.isidentifier() or not input_scale_name.isidentifier() or scale_name == input_scale_name:
            raise ValueError(
                f"scale_name={scale_name!r} / input_scale_name={input_scale_name!r}: need two different identifiers"
            )
        self.scale_name = scale_name
        self.static_input = bool(static_input)
        self.input_scale_name = input_scale_name
        self.name = f"fp8-{self.strategy}" + ("-static" if self.static_input else "")

    @classmethod
    def for_scheme(
        cls,
        strategy: str,
        *,
        block_size: Sequence[int] | None = None,
        scale_name: str = "weight_scale",
        static_input: bool = False,
        input_scale_name: str = "input_scale",
        channel_scale_ndim: int = 2,
    ) -> "Fp8LinearMethod":
        """The method for weight-scale ``strategy`` ("tensor", "channel" or "block"); see the
        module docstring for the checkpoint shapes each one expects."""
        common = dict(scale_name=scale_name, static_input=static_input, input_scale_name=input_scale_name)
        if strategy == "block":
            if block_size is None:
                raise ValueError("Fp8LinearMethod.for_scheme('block'): block_size=(block_n, block_k) is required")
            return Fp8BlockLinearMethod(block_size, **common)
        if block_size is not None:
            raise ValueError(f"Fp8LinearMethod.for_scheme({strategy!r}): block_size={block_size!r} only applies to 'block'")
        if strategy == "tensor":
            return Fp8TensorLinearMethod(**common)
        if strategy == "channel":
            return Fp8ChannelLinearMethod(scale_ndim=channel_scale_ndim, **common)
        raise ValueError(f"Fp8LinearMethod.for_scheme: unsupported strategy={strategy!r}; supported: 'tensor', 'channel', 'block'")

    # -- weights ---------------------------------------------------------------------------------
    def create_weights(self, layer, input_size: int, output_partition_sizes: Sequence[int], params_dtype: torch.dtype) -> None:
        plan = layer.shard_plan
        rows = sum(output_partition_sizes)
        layer.register_parameter(
            "weight",
            ShardedParameter(
                torch.empty(rows, input_size, dtype=FP8_E4M3), plan=plan, output=DimMap(0), input=DimMap(1, kind="cols")
            ),
        )
        layer.register_parameter(self.scale_name, self._create_scale(layer, input_size, output_partition_sizes))
        if self.static_input:
            layer.register_parameter(
                self.input_scale_name, StackedParameter(torch.empty(plan.num_shards, dtype=torch.float32), plan=plan)
            )

    @abstractmethod
    def _create_scale(self, layer, input_size: int, output_partition_sizes: Sequence[int]) -> torch.nn.Parameter:
        """The weight-scale parameter (registered as ``scale_name``)."""

    def process_weights_after_loading(self, layer) -> None:
        # Check everything before registering anything, so a refused layer is left as loaded.
        scale = getattr(layer, self.scale_name)
        _check_scale(layer, self.scale_name, scale, positive=False)
        if self.static_input:
            input_scale = getattr(layer, self.input_scale_name)
            _check_scale(layer, self.input_scale_name, input_scale, positive=True)
        self._finish_scale(layer, scale)
        if self.static_input:
            # One activation feeds every shard: the largest calibrated scale clips none of them.
            layer.register_buffer(_INPUT_SCALE_BUF, input_scale.detach().amax().reshape(1).clone(), persistent=False)

    def _finish_scale(self, layer, scale: torch.Tensor) -> None:
        """Turn the loaded weight scale into what ``apply`` uses. Default: use it as loaded."""

    def _input_scale(self, layer) -> torch.Tensor | None:
        if not self.static_input:
            return None
        buf = getattr(layer, _INPUT_SCALE_BUF, None)
        if buf is None:
            raise RuntimeError(f"{_where(layer)}: {self.name}: call layer.process_weights_after_loading() before forward")
        return buf


def _typical_input(layer, x: torch.Tensor | None) -> torch.Tensor:
    """``x``, or a one-token input in the layer's dtype on the weight's device (the backend choice
    depends only on device, dtype and M)."""
    if x is not None:
        return x
    return torch.empty(1, layer.weight.shape[1], dtype=layer.params_dtype, device=layer.weight.device)


def _where(layer) -> str:
    return getattr(layer, "prefix", "") or type(layer).__name__


def _check_scale(layer, name: str, scale: torch.Tensor, *, positive: bool) -> None:
    """Scales must be finite (an e8m0 0xFF byte is NaN); input scales divide, so also > 0; zero or
    negative weight scales load with a warning (``check_scales``)."""
    check_scales(_where(layer), name, scale, kind="input" if positive else "weight")


class Fp8BlockLinearMethod(Fp8LinearMethod):
    """Block-scaled e4m3: ``weight [N, K]`` and ``<scale_name> fp32 [ceil(N/bn), ceil(K/bk)]``.

    Each checkpoint matrix's scale grid starts a fresh block row, so every shard but the last must
    be a multiple of ``bn`` rows (the layer refuses others at construction through the
    ``weight_block_size`` hook); ``K`` and the last shard may end in a partial block.
    Activations are quantized per token and group of ``bk`` columns, so static input scales are
    not supported.
    """

    strategy = "block"

    def __init__(self, block_size: Sequence[int], *, scale_name: str = "weight_scale_inv", static_input: bool = False,
                 input_scale_name: str = "input_scale"):
        if static_input:
            raise ValueError("Fp8BlockLinearMethod: block-quantized weights take dynamic activations only (static_input=True given)")
        super().__init__(scale_name=scale_name, static_input=False, input_scale_name=input_scale_name)
        self.block_size = _check_block_size(block_size, "Fp8BlockLinearMethod: block_size")

    @property
    def weight_block_size(self) -> tuple[int, int]:
        return self.block_size

    def _create_scale(self, layer, input_size, output_partition_sizes):
        bn, bk = self.block_size
        rows = sum(cdiv(s, bn) for s in output_partition_sizes)
        return ShardedParameter(
            torch.empty(rows, cdiv(input_size, bk), dtype=torch.float32),
            plan=layer.shard_plan,
            output=DimMap(0, bn, "block"),
            input=DimMap(1, bk, "block"),
        )

    def quantized_input_group(self) -> int:
        return self.block_size[1]

    def apply(self, layer, x: torch.Tensor | Fp8GroupActivation, bias: torch.Tensor | None = None) -> torch.Tensor:
        if isinstance(x, Fp8GroupActivation):
            # quantized before the layer (e.g. fused into the RMSNorm): same GEMM, no quantization launch
            return fp8_block_linear_quantized(x.q, x.scales, layer.weight, getattr(layer, self.scale_name),
                                              self.block_size, bias, out_dtype=x.dtype)
        return fp8_block_linear(x, layer.weight, getattr(layer, self.scale_name), self.block_size, bias)

    def backend(self, layer, x: torch.Tensor | Fp8GroupActivation | None = None) -> str:
        scale = getattr(layer, self.scale_name)
        if isinstance(x, Fp8GroupActivation):
            return fp8_block_quantized_backend(x.q, x.scales, layer.weight, self.block_size, scale)
        return fp8_block_backend(_typical_input(layer, x), layer.weight, self.block_size, scale)


class Fp8TensorLinearMethod(Fp8LinearMethod):
    """Per-tensor e4m3: ``weight [N, K]`` and ``<scale_name> fp32 [num_shards]`` (one scalar per
    checkpoint matrix, slot ``i`` for shard ``i``).

    ``process_weights_after_loading`` gives every row its own shard's scale: the buffer
    ``fp8_weight_scale`` is fp32 ``[N]``, or ``[1]`` when all shards share one scale (then the
    GEMM can use a per-tensor scale). Exact: no weight is requantized.
    """

    strategy = "tensor"

    def _create_scale(self, layer, input_size, output_partition_sizes):
        return StackedParameter(torch.empty(layer.shard_plan.num_shards, dtype=torch.float32), plan=layer.shard_plan)

    def _finish_scale(self, layer, scale: torch.Tensor) -> None:
        scale = scale.detach().float()
        if bool((scale == scale[0]).all()):
            per_row = scale[:1].clone()
        else:
            sizes = torch.tensor(layer.shard_plan.local_sizes, device=scale.device)
            per_row = torch.repeat_interleave(scale, sizes)
        layer.register_buffer(_WEIGHT_SCALE_BUF, per_row.contiguous(), persistent=False)

    def apply(self, layer, x: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
        scale = getattr(layer, _WEIGHT_SCALE_BUF, None)
        if scale is None:
            raise RuntimeError(f"{_where(layer)}: {self.name}: call layer.process_weights_after_loading() before forward")
        return fp8_scaled_linear(x, layer.weight, scale, self._input_scale(layer), bias)

    def backend(self, layer, x: torch.Tensor | None = None) -> str:
        return fp8_scaled_backend(_typical_input(layer, x), layer.weight)


class Fp8ChannelLinearMethod(Fp8LinearMethod):
    """Per-channel e4m3: ``weight [N, K]`` and ``<scale_name> fp32 [N, 1]`` (``scale_ndim=2``, as
    compressed-tensors writes it) or ``[N]`` (``scale_ndim=1``), stacked along N like the weight."""

    strategy = "channel"

    def __init__(self, *, scale_ndim: int = 2, **kwargs):
        if scale_ndim not in (1, 2):
            raise ValueError(f"Fp8ChannelLinearMethod: scale_ndim must be 1 ([N]) or 2 ([N, 1]), got {scale_ndim!r}")
        super().__init__(**kwargs)
        self.scale_ndim = scale_ndim

    def _create_scale(self, layer, input_size, output_partition_sizes):
        rows = sum(output_partition_sizes)
        shape = (rows, 1) if self.scale_ndim == 2 else (rows,)
        return ShardedParameter(torch.empty(shape, dtype=torch.float32), plan=layer.shard_plan, output=DimMap(0))

    def apply(self, layer, x: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
        return fp8_scaled_linear(x, layer.weight, getattr(layer, self.scale_name).reshape(-1), self._input_scale(layer), bias)

    def backend(self, layer, x: torch.Tensor | None = None) -> str:
        return fp8_scaled_backend(_typical_input(layer, x), layer.weight)


class Fp8Config(QuantizationConfig):
    """``quantization_config`` with ``quant_method: "fp8"`` (DeepSeek-V3 style and its per-tensor form).

    Keys: ``fmt`` ("e4m3"), ``activation_scheme`` ("dynamic" | "static"), ``weight_block_size``
    ([bn, bk] or absent/None for per-tensor scales), ``scale_fmt`` (None / "float" / "ue8m0", block
    form only), ``ignored_layers`` and ``modules_to_not_convert`` (ignore lists: plain names or
    ``re:`` patterns). Informational keys transformers writes are accepted when they leave the
    meaning unchanged: ``dequantize`` (false), ``modules_to_convert`` (names of extra
    non-linear modules such as embeddings), ``expert_dtype`` ("fp8"). Any other key or value
    raises ``ValueError`` naming it.
    """

    quant_method = "fp8"
    _KEYS = ("quant_method", "fmt", "activation_scheme", "weight_block_size", "scale_fmt", "ignored_layers",
             "modules_to_not_convert")
    # key -> (what is accepted, check): values that change nothing for linear layers
    _INFORMATIONAL: ClassVar[dict[str, tuple[str, Any]]] = {
        "dequantize": ("false (a transformers load option)", lambda v: v in (False, None)),
        "modules_to_convert": ("null or a list of names (non-linear modules such as embeddings)",
                               lambda v: v is None or (isinstance(v, list) and all(isinstance(n, str) for n in v))),
        "expert_dtype": ("'fp8' (MoE experts; this layer is dense)", lambda v: v in ("fp8", None)),
    }

    def __init__(
        self,
        *,
        activation_scheme: str = "dynamic",
        weight_block_size: Sequence[int] | None = None,
        scale_fmt: str | None = None,
        ignored_layers: Sequence[str] = (),
    ):
        super().__init__()
        self.fmt = "e4m3"
        self.activation_scheme = activation_scheme
        self.weight_block_size = tuple(weight_block_size) if weight_block_size is not None else None
        self.scale_fmt = scale_fmt
        self.ignored_layers = list(ignored_layers)

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> "Fp8Config":
        method = "fp8"
        if config.get("quant_method", method) != method:
            raise config_error(method, "quant_method", config.get("quant_method"), [method])
        for key, value in config.items():
            if key in cls._KEYS:
                continue
            if key not in cls._INFORMATIONAL:
                raise config_error(method, "key", key, list(cls._KEYS) + [f"{k} (informational)" for k in cls._INFORMATIONAL])
            accepted, check = cls._INFORMATIONAL[key]
            if not check(value):
                raise config_error(method, key, value, accepted)

        fmt = config.get("fmt", "e4m3")
        if fmt != "e4m3":
            raise config_error(method, "fmt", fmt, ["e4m3"])
        scheme = config.get("activation_scheme", "dynamic")
        if scheme not in ("dynamic", "static"):
            raise config_error(method, "activation_scheme", scheme, ["dynamic", "static"])
        block = config.get("weight_block_size")
        if block is not None:
            try:
                block = _check_block_size(block, "weight_block_size")
            except ValueError:
                raise config_error(method, "weight_block_size", block, "[block_n, block_k] with both > 0, or null for per-tensor scales") from None
            if scheme != "dynamic":
                raise config_error(method, "activation_scheme", scheme, "['dynamic'] with weight_block_size (activations are quantized per token group)")
        scale_fmt = config.get("scale_fmt")
        if scale_fmt == "float":  # transformers' spelling of the default fp32 scales
            scale_fmt = None
        if scale_fmt not in (None, "ue8m0"):
            raise config_error(method, "scale_fmt", scale_fmt, [None, "float", "ue8m0"])
        if scale_fmt is not None and block is None:
            raise config_error(method, "scale_fmt", scale_fmt, "None without weight_block_size (ue8m0 stores block scales)")

        ignored = ignore_patterns(config, method, ("ignored_layers", "modules_to_not_convert"))
        return cls(activation_scheme=scheme, weight_block_size=block, scale_fmt=scale_fmt, ignored_layers=ignored)

    def is_ignored(self, layer, prefix: str) -> bool:
        """Whether the layer's checkpoint modules are on an ignore list (all or none of a fused
        layer's shards must be, else ``ValueError``)."""
        if not self.ignored_layers:
            return False
        return self.all_or_none(
            layer, prefix, lambda p: match_module_name(p, self.ignored_layers), "ignored_layers / modules_to_not_convert"
        )

    def get_quant_method(self, layer, prefix: str) -> QuantizeMethodBase:
        if self.is_ignored(layer, prefix):
            return UnquantizedLinearMethod()
        if self.weight_block_size is not None:
            # fp32 param; ue8m0 (float8_e8m0fnu) checkpoint scales widen into it exactly.
            return Fp8BlockLinearMethod(self.weight_block_size, scale_name="weight_scale_inv")
        return Fp8TensorLinearMethod(scale_name="weight_scale", static_input=self.activation_scheme == "static")

    def __repr__(self) -> str:
        return (
            f"Fp8Config(activation_scheme={self.activation_scheme!r}, weight_block_size={self.weight_block_size}, "
            f"scale_fmt={self.scale_fmt!r}, ignored_layers={self.ignored_layers})"
        )
