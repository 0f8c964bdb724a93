"""GPTQ checkpoints (``quant_method: "gptq"``): checkpoint format v1, and ``gptq_v2``.

Tensors of one checkpoint matrix ``W [N, K]`` (b bits, g group size, G = K / g; FORMATS.md):

* ``qweight`` int32 ``[K * b / 32, N]``, packed along **K**, low bits first, unsigned;
* ``qzeros`` int32 ``[G, N * b / 32]``, packed along **N**; v1 stores ``zero - 1`` (an
  asymmetric zero of 0 is stored as -1 and wraps: decode ``(stored + 1) mod 2^b``), v2 ``zero``;
* ``scales`` ``[G, N]`` (fp16 on disk; declared fp32 here, which holds it exactly);
* ``g_idx`` int32 ``[K]``: group of input column k. With ``desc_act`` (act-order) it is not
  monotone and differs between the matrices fused into one layer, so it is stored per shard.

``W[n, k] = scales[g_idx[k], n] * (q[k, n] - zero[g_idx[k], n])``.

In a merged layer the shards sit side by side along N: ``qweight`` / ``scales`` dim 1 at row
offsets, ``qzeros`` dim 1 at offsets divided by the pack factor (so every shard but the last
must be a multiple of ``32 / b`` rows), ``g_idx`` one slot per shard. After loading the layer is
decoded to the canonical form and repacked for ``qlinear.ops.w4a16`` (``_int_weight``).
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import torch

from qlinear._utils import cdiv
from qlinear.parameter import DimMap, ShardedParameter
from qlinear.quantization._int_weight import (
    CanonicalWeight,
    GroupIndexParameter,
    WeightOnlyIntMethod,
    is_skipped,
    per_shard_g_idx,
    symmetric_or_zeros,
    unpack_int32,
)
from qlinear.quantization.base import (
    QuantizationConfig,
    QuantizeMethodBase,
    config_error,
    ignore_patterns,
    match_module_name,
)
from qlinear.quantization.unquantized import UnquantizedLinearMethod

__all__ = ["GPTQConfig", "GPTQLinearMethod"]

_METHOD = "gptq"

# Keys AutoGPTQ, GPTQModel and transformers write that describe how the checkpoint was made,
# not how its tensors are laid out: accepted and ignored.
_INFORMATIONAL = frozenset({
    "quant_method", "damp_percent", "damp_auto_increment", "static_groups", "true_sequential",
    "model_name_or_path", "model_file_base_name", "meta", "lm_head", "tokenizer", "dataset",
    "use_cuda_fp16", "model_seqlen", "block_name_to_quantize", "module_name_preceding_first_block",
    "batch_size", "pad_token_id", "use_exllama", "max_input_length", "exllama_config",
    "cache_block_outputs", "backend", "quantizer", "mse", "v2", "v2_alpha", "act_group_aware",
    "hyb_act", "fail_safe", "offload_to_disk", "offload_to_disk_path", "device", "hessian",
    "gptaq", "foem", "gar", "quant_type",
})
# Keys whose non-default values would change the layout or the math: default -> accepted.
_MUST_BE_DEFAULT = {
    "is_marlin_format": (None, False),
    "dynamic": (None, {}),
    "rotation": (None,),
    "adapter": (None,),
    "pack_dtype": (None, "int32", "torch.int32"),
}
_LAYOUT_KEYS = frozenset({
    "bits", "group_size", "desc_act", "sym", "checkpoint_format", "format",
    "modules_to_not_convert", "ignore", "ignored_layers", "modules_in_block_to_quantize",
})


def _flatten(names: Any) -> list[str]:
    """``modules_in_block_to_quantize`` may be a list of lists (one per sequential step)."""
    if names is None:
        return []
    if isinstance(names, str):
        return [names]
    return [n for item in names for n in _flatten(item)]


class GPTQConfig(QuantizationConfig):
    """A parsed GPTQ ``quantization_config``.

    Args:
        bits: 4 or 8.
        group_size: g, a positive divisor of K, or -1 (one group over all of K: per channel).
        desc_act: act-order; ``g_idx`` must then be in the checkpoint (one per fused shard).
        sym: symmetric quantization. Zero points are still read from ``qzeros`` (the format's
            formula); when all equal ``2^(b-1)`` the kernels take the symmetric path.
        checkpoint_format: ``"gptq"`` (v1, zeros stored minus one) or ``"gptq_v2"`` (true zeros).
        modules_to_not_convert: modules left unquantized (substring of the module path, or
            ``re:<regex>``), from ``modules_to_not_convert`` / ``ignore`` / ``ignored_layers``.
        modules_in_block_to_quantize: if given, only modules whose path ends with one of these
            names are quantized (transformers' ``GPTQConfig``).
    """

    quant_method = _METHOD

    def __init__(
        self,
        bits: int = 4,
        group_size: int = 128,
        desc_act: bool = False,
        sym: bool = True,
        checkpoint_format: str = "gptq",
        modules_to_not_convert: Sequence[str] | None = None,
        modules_in_block_to_quantize: Sequence[str] | None = None,
    ):
        super().__init__()
        if isinstance(bits, bool) or bits not in (4, 8):
            raise config_error(_METHOD, "bits", bits, [4, 8])
        if isinstance(group_size, bool) or not isinstance(group_size, int) or not (group_size == -1 or group_size > 0):
            raise config_error(_METHOD, "group_size", group_size, "-1 (per channel) or a positive divisor of K")
        for key, value in (("desc_act", desc_act), ("sym", sym)):
            if not isinstance(value, bool):
                raise config_error(_METHOD, key, value, [True, False])
        if checkpoint_format not in ("gptq", "gptq_v2"):
            raise config_error(_METHOD, "checkpoint_format", checkpoint_format, ["gptq", "gptq_v2", None])
        self.bits = bits
        self.group_size = group_size
        self.desc_act = desc_act
        self.sym = sym
        self.checkpoint_format = checkpoint_format
        self.modules_to_not_convert = list(modules_to_not_convert or [])
        self.modules_in_block_to_quantize = (
            None if modules_in_block_to_quantize is None else list(modules_in_block_to_quantize)
        )

    @property
    def pack_factor(self) -> int:
        return 32 // self.bits

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> "GPTQConfig":
        if config.get("quant_method", _METHOD) != _METHOD:
            raise config_error(_METHOD, "quant_method", config.get("quant_method"), [_METHOD])
        unknown = sorted(set(config) - _INFORMATIONAL - _LAYOUT_KEYS - set(_MUST_BE_DEFAULT))
        if unknown:
            raise ValueError(
                f"quantization_config ({_METHOD}): unknown setting(s) {unknown}; supported: "
                f"{sorted(_LAYOUT_KEYS)} (and descriptive keys such as damp_percent, true_sequential)"
            )
        for key, allowed in _MUST_BE_DEFAULT.items():
            if key in config and config[key] not in allowed:
                raise config_error(_METHOD, key, config[key], list(allowed))
        fmt = config.get("checkpoint_format")
        alias = config.get("format")
        if fmt is not None and alias is not None and fmt != alias:
            raise ValueError(
                f"quantization_config ({_METHOD}): checkpoint_format={fmt!r} and format={alias!r} disagree"
            )
        fmt = fmt or alias or "gptq"
        ignore = ignore_patterns(config, _METHOD, ("modules_to_not_convert", "ignore", "ignored_layers"))
        in_block = config.get("modules_in_block_to_quantize")
        return cls(
            bits=config.get("bits", 4),
            group_size=config.get("group_size", 128),
            desc_act=config.get("desc_act", False),
            sym=config.get("sym", True),
            checkpoint_format=fmt,
            modules_to_not_convert=ignore,
            modules_in_block_to_quantize=None if in_block is None else _flatten(in_block),
        )

    def _is_unquantized(self, name: str) -> bool:
        if is_skipped(name, self.modules_to_not_convert):
            return True
        if self.modules_in_block_to_quantize is not None:
            return not match_module_name(name, self.modules_in_block_to_quantize)
        return False

    def get_quant_method(self, layer, prefix: str) -> QuantizeMethodBase:
        if self.all_or_none(layer, prefix, self._is_unquantized, "being left unquantized"):
            return UnquantizedLinearMethod()
        return GPTQLinearMethod(self)

    def __repr__(self) -> str:
        return (
            f"GPTQConfig(bits={self.bits}, group_size={self.group_size}, desc_act={self.desc_act}, "
            f"sym={self.sym}, checkpoint_format={self.checkpoint_format!r})"
        )


class GPTQLinearMethod(WeightOnlyIntMethod):
    """GPTQ tensors in, ``qlinear.ops.w4a16`` packed weights out."""

    checkpoint_params = ("qweight", "qzeros", "scales", "g_idx")

    def __init__(self, config: GPTQConfig):
        super().__init__(config.bits)
        self.config = config
        self.name = f"gptq-w{config.bits}a16"

    def output_alignment(self) -> int:
        return self.config.pack_factor  # qzeros packs N: shards must start on a word

    def input_alignment(self) -> int:
        g = self.config.group_size
        return self.config.pack_factor if g == -1 else math.lcm(self.config.pack_factor, g)

    def create_weights(self, layer, input_size: int, output_partition_sizes: Sequence[int], params_dtype: torch.dtype) -> None:
        plan, cfg, per = layer.shard_plan, self.config, self.config.pack_factor
        if cfg.desc_act and plan.local_input != plan.full_input:
            # act-order scatters every group over all of K: a K slice holds ragged parts of many
            # groups, which the W4A16 layout (whole groups after one permutation) cannot express
            raise ValueError(
                f"{layer.prefix or type(layer).__name__}{plan.where}: GPTQ act-order (desc_act=true) cannot be "
                f"split along the input: this rank would hold input columns [{plan.input_start}, "
                f"{plan.input_start + plan.local_input}) of {plan.full_input}; shard this layer along its "
                f"output (column-parallel) or use a checkpoint without desc_act"
            )
        n = sum(output_partition_sizes)
        if cfg.group_size == -1:
            groups, group_dim = 1, None  # one group: the group dim does not run along K
        else:
            groups, group_dim = cdiv(input_size, cfg.group_size), DimMap(0, cfg.group_size, "group")
        self.num_groups_full = 1 if cfg.group_size == -1 else cdiv(plan.full_input, cfg.group_size)
        zero_words = sum(cdiv(s, per) for s in output_partition_sizes)
        params = {
            "qweight": ShardedParameter(
                torch.empty(input_size // per, n, dtype=torch.int32),
                plan=plan, output=DimMap(1), input=DimMap(0, per, "pack"),
            ),
            "qzeros": ShardedParameter(
                torch.empty(groups, zero_words, dtype=torch.int32),
                plan=plan, output=DimMap(1, per, "pack"), input=group_dim,
            ),
            "scales": ShardedParameter(
                torch.empty(groups, n, dtype=torch.float32), plan=plan, output=DimMap(1), input=group_dim,
            ),
            # Without act-order g_idx is k // g and checkpoints may leave it out.
            "g_idx": GroupIndexParameter(
                torch.zeros(plan.num_shards, input_size, dtype=torch.int32),
                plan=plan, num_groups=self.num_groups_full, required=cfg.desc_act,
            ),
        }
        for name, param in params.items():
            layer.register_parameter(name, param)

    def canonical(self, layer) -> CanonicalWeight:
        cfg, bits = self.config, self.config.bits
        n = layer.shard_plan.local_output
        q = unpack_int32(layer.qweight.data, bits, dim=0).t()  # [N, K]
        zeros = unpack_int32(layer.qzeros.data, bits, dim=1, count=n)  # [G, N]
        if cfg.checkpoint_format == "gptq":
            # v1 stores zero - 1; AutoGPTQ's own decoder adds 1 and masks, so -1 means 0.
            zeros = (zeros + 1) & ((1 << bits) - 1)
        g_idx = per_shard_g_idx(layer, layer.g_idx, cfg.group_size, self.num_groups_full)
        return CanonicalWeight(
            q=q.contiguous(),
            zeros=symmetric_or_zeros(zeros.t().contiguous(), bits),
            scales=layer.scales.data.t().contiguous(),
            group_size=cfg.group_size,
            bits=bits,
            g_idx=g_idx,
        )
