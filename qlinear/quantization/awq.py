"""AWQ checkpoints (``quant_method: "awq"``, ``version: "gemm"``).

Tensors of one checkpoint matrix ``W [N, K]`` (4 bits, g group size, G = K / g; FORMATS.md):

* ``qweight`` int32 ``[K, N / 8]``, packed along **N**: nibble ``i`` of word ``c`` holds
  column ``8c + AWQ_ORDER[i]``, ``AWQ_ORDER = [0, 2, 4, 6, 1, 3, 5, 7]``;
* ``qzeros`` int32 ``[G, N / 8]``, same packing, zeros stored as they are;
* ``scales`` ``[G, N]`` (fp16 on disk; declared fp32 here, which holds it exactly). No ``g_idx``.

``W[n, k] = scales[k // g, n] * (q[k, n] - zeros[k // g, n])``.

Both int tensors pack N, so in a merged layer every shard but the last must be a multiple of
8 rows. After loading the layer is decoded to the canonical form and repacked for
``qlinear.ops.w4a16`` (``_int_weight``).
"""

from __future__ import annotations

from typing import Any, Sequence

import torch

from qlinear._utils import cdiv
from qlinear.parameter import DimMap, ShardedParameter
from qlinear.quantization._int_weight import (
    AWQ_ORDER,
    CanonicalWeight,
    WeightOnlyIntMethod,
    is_skipped,
    symmetric_or_zeros,
    unpack_int32,
)
from qlinear.quantization.base import QuantizationConfig, QuantizeMethodBase, config_error, ignore_patterns
from qlinear.quantization.unquantized import UnquantizedLinearMethod

__all__ = ["AWQConfig", "AWQLinearMethod"]

_METHOD = "awq"
_PACK = 8  # 4-bit fields per int32 word

# transformers' AwqConfig / AutoAWQ keys that do not change the checkpoint tensors.
_INFORMATIONAL = frozenset({
    "quant_method", "backend", "do_fuse", "fuse_max_seq_len", "modules_to_fuse", "exllama_config",
    "quant_type",
})
_LAYOUT_KEYS = frozenset({
    "bits", "w_bit", "group_size", "q_group_size", "zero_point", "version",
    "modules_to_not_convert", "ignore", "ignored_layers",
})


def _alias(config: dict[str, Any], key: str, alias: str, default: Any) -> Any:
    """AutoAWQ's own ``quant_config.json`` spells bits/group_size as w_bit/q_group_size."""
    if key in config and alias in config and config[key] != config[alias]:
        raise ValueError(f"quantization_config ({_METHOD}): {key}={config[key]!r} and {alias}={config[alias]!r} disagree")
    return config.get(key, config.get(alias, default))


class AWQConfig(QuantizationConfig):
    """A parsed AWQ ``quantization_config`` (GEMM version, 4-bit, with zero points).

    Args:
        group_size: g, a positive divisor of K, or -1 (per channel).
        modules_to_not_convert: modules left unquantized (substring of the module path as AutoAWQ
            matches them, or ``re:<regex>``).
    """

    quant_method = _METHOD

    def __init__(self, group_size: int = 128, modules_to_not_convert: Sequence[str] | None = None):
        super().__init__()
        if isinstance(group_size, bool) or not isinstance(group_size, int) or not (group_size == -1 or group_size > 0):
            raise config_error(_METHOD, "group_size", group_size, "-1 (per channel) or a positive divisor of K")
        self.bits = 4
        self.group_size = group_size
        self.modules_to_not_convert = list(modules_to_not_convert or [])

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> "AWQConfig":
        if config.get("quant_method", _METHOD) != _METHOD:
            raise config_error(_METHOD, "quant_method", config.get("quant_method"), [_METHOD])
        unknown = sorted(set(config) - _INFORMATIONAL - _LAYOUT_KEYS)
        if unknown:
            raise ValueError(
                f"quantization_config ({_METHOD}): unknown setting(s) {unknown}; supported: {sorted(_LAYOUT_KEYS)}"
            )
        bits = _alias(config, "bits", "w_bit", 4)
        if isinstance(bits, bool) or bits != 4:
            raise config_error(_METHOD, "bits", bits, [4])
        version = config.get("version", "gemm")
        if not isinstance(version, str) or version.lower() != "gemm":
            raise config_error(_METHOD, "version", version, ["gemm"])
        zero_point = config.get("zero_point", True)
        if zero_point is not True:
            # AutoAWQ's GEMM packer always writes zero points; a symmetric GEMM checkpoint has
            # no agreed layout to decode.
            raise config_error(_METHOD, "zero_point", zero_point, [True])
        ignore = ignore_patterns(config, _METHOD, ("modules_to_not_convert", "ignore", "ignored_layers"))
        return cls(group_size=_alias(config, "group_size", "q_group_size", 128), modules_to_not_convert=ignore)

    def get_quant_method(self, layer, prefix: str) -> QuantizeMethodBase:
        skip = lambda name: is_skipped(name, self.modules_to_not_convert)  # noqa: E731
        if self.all_or_none(layer, prefix, skip, "modules_to_not_convert"):
            return UnquantizedLinearMethod()
        return AWQLinearMethod(self)

    def __repr__(self) -> str:
        return f"AWQConfig(bits=4, group_size={self.group_size}, zero_point=True, version='gemm')"


class AWQLinearMethod(WeightOnlyIntMethod):
    """AWQ GEMM tensors in, ``qlinear.ops.w4a16`` packed weights out."""

    name = "awq-w4a16"
    checkpoint_params = ("qweight", "qzeros", "scales")

    def __init__(self, config: AWQConfig):
        super().__init__(4)
        self.config = config

    def output_alignment(self) -> int:
        return _PACK  # qweight and qzeros pack N: shards must start on a word

    def input_alignment(self) -> int:
        return 1 if self.config.group_size == -1 else self.config.group_size

    def create_weights(self, layer, input_size: int, output_partition_sizes: Sequence[int], params_dtype: torch.dtype) -> None:
        plan, g = layer.shard_plan, self.config.group_size
        n = sum(output_partition_sizes)
        words = sum(cdiv(s, _PACK) for s in output_partition_sizes)
        if g == -1:
            groups, group_dim = 1, None  # one group: the group dim does not run along K
        else:
            groups, group_dim = cdiv(input_size, g), DimMap(0, g, "group")
        params = {
            "qweight": ShardedParameter(
                torch.empty(input_size, words, dtype=torch.int32),
                plan=plan, output=DimMap(1, _PACK, "pack"), input=DimMap(0, kind="cols"),
            ),
            "qzeros": ShardedParameter(
                torch.empty(groups, words, dtype=torch.int32), plan=plan, output=DimMap(1, _PACK, "pack"), input=group_dim,
            ),
            "scales": ShardedParameter(
                torch.empty(groups, n, dtype=torch.float32), plan=plan, output=DimMap(1), input=group_dim,
            ),
        }
        for name, param in params.items():
            layer.register_parameter(name, param)

    def canonical(self, layer) -> CanonicalWeight:
        n = layer.shard_plan.local_output
        q = unpack_int32(layer.qweight.data, 4, dim=1, order=AWQ_ORDER, count=n)  # [K, N]
        zeros = unpack_int32(layer.qzeros.data, 4, dim=1, order=AWQ_ORDER, count=n)  # [G, N]
        return CanonicalWeight(
            q=q.t().contiguous(),
            zeros=symmetric_or_zeros(zeros.t().contiguous(), 4),
            scales=layer.scales.data.t().contiguous(),
            group_size=self.config.group_size,
            bits=4,
        )
