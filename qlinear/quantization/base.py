"""The quantization-method hierarchy every format plugs into.

A format is one ``QuantizationConfig`` (parsed from a checkpoint's ``quantization_config``)
that hands each linear layer a ``QuantizeMethodBase``. The layer never asks *which* method it
has: it calls the four verbs below and consults the capability hooks
(``supports_block_quantization()``, ``weight_block_size``, ``output_alignment()``) instead of
``isinstance`` checks, so ``qlinear.layers`` depends on this module only.
"""

from __future__ import annotations

import re
import warnings
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, ClassVar, Iterable, Sequence

import torch

if TYPE_CHECKING:  # layer types only for annotations: layers import us, not the other way
    from qlinear.layers.linear import LinearBase

__all__ = [
    "QuantizeMethodBase",
    "QuantizationConfig",
    "match_module_name",
    "config_error",
    "check_scales",
    "ignore_patterns",
]


class QuantizeMethodBase(ABC):
    """How one linear layer stores, finishes and applies its weight.

    Lifecycle: ``create_weights`` registers parameters (each a ``QParameter`` with its
    ``weight_loader``) on the layer; the loader fills them shard by shard;
    ``process_weights_after_loading`` turns checkpoint tensors into the kernel's layout;
    ``apply`` computes ``y = x @ W^T + bias`` for ``x [..., K]`` -> ``y [..., N]``.
    """

    #: short name shown in reports, e.g. "unquantized", "fp8-block", "gptq-w4a16"
    name: ClassVar[str] = "base"

    @abstractmethod
    def create_weights(
        self,
        layer: "LinearBase",
        input_size: int,
        output_partition_sizes: Sequence[int],
        params_dtype: torch.dtype,
    ) -> None:
        """Register this format's parameters on ``layer`` for a ``[sum(output_partition_sizes),
        input_size]`` logical weight (the part this process holds; ``layer.shard_plan`` has the
        checkpoint-side sizes)."""

    @abstractmethod
    def apply(self, layer: "LinearBase", x: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
        """``x [..., K]`` -> ``x @ W^T + bias``, shape ``[..., N]``, in ``x``'s dtype. Where
        :meth:`quantized_input_group` is not None, ``x`` may also be an ``Fp8GroupActivation`` (output in
        its ``dtype``)."""

    def process_weights_after_loading(self, layer: "LinearBase") -> None:
        """Finish the layer once every shard is loaded (reconcile scales, repack). Default: nothing."""

    # -- capability hooks the layers consult -------------------------------------------------
    @property
    def weight_block_size(self) -> tuple[int, int] | None:
        """``(block_n, block_k)`` of block-wise weight scales, or None."""
        return None

    def supports_block_quantization(self) -> bool:
        return self.weight_block_size is not None

    def output_alignment(self) -> int:
        """Rows every output shard but the last must be a multiple of (a pack factor along N,
        or ``block_n``). Parameters enforce it too; the layer checks it first for a clear message."""
        block = self.weight_block_size
        return block[0] if block is not None else 1

    def input_alignment(self) -> int:
        """Columns the layer's input size must be a multiple of (pack factor or group along K)."""
        return 1

    def quantized_input_group(self) -> int | None:
        """The group size of the pre-quantized activations (``qlinear.ops.Fp8GroupActivation``: e4m3 codes
        with one fp32 scale per token and group) that ``apply`` takes in place of ``x``, or None where the
        method takes float activations only. The layers refuse any other input before calling ``apply``."""
        return None

    def backend(self, layer: "LinearBase", x: torch.Tensor | None = None) -> str:
        """Name of the path ``apply`` takes for ``x`` (or for a typical input), for reports."""
        return "torch"


class QuantizationConfig(ABC):
    """A checkpoint's ``quantization_config``, parsed and checked.

    ``packed_modules_mapping`` maps a fused module's name to the checkpoint modules it holds
    (``{"fused_qkv_a_proj": ["q_a_proj", "kv_a_proj_with_mqa"]}``), so that per-module settings
    such as ignore lists can be resolved for fused layers.
    """

    #: the ``quant_method`` value this class parses
    quant_method: ClassVar[str] = ""

    def __init__(self) -> None:
        self.packed_modules_mapping: dict[str, list[str]] = {}

    @classmethod
    @abstractmethod
    def from_config(cls, config: dict[str, Any]) -> "QuantizationConfig":
        """Parse a ``quantization_config`` dict; raise ``ValueError`` on unsupported settings."""

    @abstractmethod
    def get_quant_method(self, layer: "LinearBase", prefix: str) -> QuantizeMethodBase:
        """The method for the layer at module path ``prefix``."""

    # -- helpers for subclasses ---------------------------------------------------------------
    def checkpoint_prefixes(self, layer: "LinearBase", prefix: str) -> list[str]:
        """Checkpoint module paths a layer stands for: its own, or its shards' for a fused layer.

        The shard names come from the layer (``layer.shard_names``) or from
        ``packed_modules_mapping`` keyed by the last component of ``prefix``.
        """
        parent, _, leaf = prefix.rpartition(".")
        names = getattr(layer, "shard_names", None) or self.packed_modules_mapping.get(leaf)
        if not names:
            return [prefix]
        return [f"{parent}.{n}" if parent else n for n in names]

    def all_or_none(self, layer: "LinearBase", prefix: str, predicate, what: str) -> bool:
        """True when ``predicate`` holds for every checkpoint module of the layer, False when for
        none; a fused layer whose shards disagree cannot be built and raises ``ValueError``."""
        prefixes = self.checkpoint_prefixes(layer, prefix)
        hits = [bool(predicate(p)) for p in prefixes]
        if all(hits):
            return True
        if not any(hits):
            return False
        raise ValueError(
            f"{prefix}: the modules fused into this layer disagree on {what}: "
            + ", ".join(f"{p}={'yes' if h else 'no'}" for p, h in zip(prefixes, hits))
        )


def match_module_name(name: str, patterns: Iterable[str] | None) -> bool:
    """Does module path ``name`` match one of ``patterns``?

    A pattern ``"re:<regex>"`` matches when the regex matches the whole path (``re.fullmatch``,
    as compressed-tensors does); a plain pattern matches the whole path or its trailing
    components (``"lm_head"`` matches ``"model.lm_head"``, ``"q_a_proj"`` matches
    ``"model.layers.0.self_attn.q_a_proj"``).
    """
    for pattern in patterns or ():
        if pattern.startswith("re:"):
            if re.fullmatch(pattern[3:], name):
                return True
        elif name == pattern or name.endswith("." + pattern):
            return True
    return False


def config_error(method: str, key: str, value: Any, supported: Any) -> ValueError:
    """The one error shape for unsupported settings: what, where, and what would work."""
    return ValueError(f"quantization_config ({method}): unsupported {key}={value!r}; supported: {supported}")


def ignore_patterns(config: dict[str, Any], method: str, keys: Sequence[str]) -> list[str]:
    """The module patterns of every ignore list among ``keys`` in a ``quantization_config``
    (``modules_to_not_convert``, ``ignored_layers``, ``ignore``), each a list of names or
    ``re:`` patterns; anything else raises ``config_error`` naming the key."""
    patterns: list[str] = []
    for key in keys:
        value = config.get(key)
        if value is None:
            continue
        if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
            raise config_error(method, key, value, "a list of module names or 're:' patterns")
        patterns.extend(value)
    return patterns


def check_scales(where: str, name: str, scale: torch.Tensor, *, kind: str) -> None:
    """The scale policy every format applies when it finishes a layer (README "Guarantees").

    ``kind="weight"``: NaN / inf is an error (the weight would be garbage); zero or negative
    values load with a ``UserWarning`` (no producer writes them, so they hint at a corrupt or
    hand-edited checkpoint, yet they are representable). ``kind="input"``: activation scales
    divide, so anything but finite and > 0 is an error. ``where.name`` names the tensor.
    """
    values = scale.detach().float()
    bad = ~torch.isfinite(values)
    if kind == "input":
        bad |= values <= 0
    elif kind != "weight":
        raise ValueError(f"check_scales: kind must be 'weight' or 'input', got {kind!r}")
    if bool(bad.any()):
        first = tuple(int(i) for i in bad.nonzero()[0])
        raise ValueError(
            f"{where}.{name}: expected {'finite positive' if kind == 'input' else 'finite'} scales, "
            f"got {values[first].item()} at index {first} ({int(bad.sum())} bad of {values.numel()})"
        )
    if kind == "weight":
        odd = values <= 0
        if bool(odd.any()):
            first = tuple(int(i) for i in odd.nonzero()[0])
            warnings.warn(
                f"{where}.{name}: {int(odd.sum())} of {values.numel()} weight scales are zero or negative "
                f"(first {values[first].item()} at index {first}); no quantizer writes these: is the checkpoint intact?",
                stacklevel=3,
            )
