"""compressed-tensors checkpoints (``quant_method: "compressed-tensors"``), as llm-compressor writes them.

The config is parsed with compressed-tensors' own pydantic models
(``compressed_tensors.quantization.QuantizationConfig.model_validate``), and a layer's scheme is
found with compressed-tensors' own matching rules (``compressed_tensors.utils.match``): of all
``config_groups[*].targets``, an exact module name beats a ``"re:"`` regex (``re.match`` on the
module path) beats a class name (``"Linear"`` matches every qlinear linear layer: they derive
from ``LinearBase``, which compressed-tensors treats as ``Linear``); a module matching an
``ignore`` entry stays unquantized, and so does one no target matches. A fused layer is resolved
per checkpoint module (``checkpoint_prefixes``); shards with different schemes raise.

Supported schemes (anything else raises ``ValueError`` naming the field and what is supported):

``pack-quantized`` (int weights, activations unquantized: W4A16, W4A16_ASYM, W8A16, ...)
    ``num_bits`` 4 or 8, ``type`` int, symmetric or not, ``strategy`` group (``group_size`` g,
    K a multiple of g) or channel, ``actorder`` null or "weight" (which changes only the
    calibration, not the layout). Checkpoint tensors per module of ``n`` rows, b bits,
    ``G = K / g`` (1 for channel)::

        weight_packed      int32 [n, ceil(K*b/32)]   packed along K, low bits first
        weight_scale       model dtype [n, G]         (declared fp32: widens exactly)
        weight_zero_point  int32 [ceil(n*b/32), G]    asymmetric only, packed along N
                           (int8 [n, G] unpacked for checkpoints of version <= 0.9)
        weight_shape       int64 [2] = [n, K]

    Stored integers are offset-binary, ``stored = signed + 2**(b-1)``, i.e. already the
    unsigned ``q`` of the canonical form ``W = (q - zero) * scale``; a symmetric scheme's zero is
    ``2**(b-1)``. After loading the layer repacks into ``qlinear.ops.w4a16``'s layout.

``float-quantized`` / ``naive-quantized`` (FP8 e4m3 weights: FP8, FP8_DYNAMIC, FP8_BLOCK, ...)
    ``weight`` e4m3 [n, K] and ``weight_scale`` (model dtype): ``(1,)`` per tensor, ``(n, 1)``
    per channel, ``(ceil(n/bn), ceil(K/bk))`` per block. Activations: static per tensor
    (``input_scale`` ``(1,)``), dynamic per token (or per tensor: qlinear quantizes per token,
    which is finer), or for block weights dynamic per token group of ``bk``. Computed by the
    methods of ``qlinear.quantization.fp8``.

``kv_cache_scheme`` concerns attention, not linear layers, and is kept but not used here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Sequence

import torch

from qlinear._utils import cdiv
from qlinear.parameter import DimMap, ShardedParameter, StackedParameter
from qlinear.quantization._int_weight import CanonicalWeight, WeightOnlyIntMethod, symmetric_or_zeros, unpack_int32
from qlinear.quantization.base import QuantizationConfig, QuantizeMethodBase, config_error
from qlinear.quantization.fp8 import Fp8LinearMethod
from qlinear.quantization.unquantized import UnquantizedLinearMethod

__all__ = ["CompressedTensorsConfig", "CompressedTensorsWNA16Method", "IntWeightScheme", "Fp8Scheme", "method_for_scheme"]

_METHOD = "compressed-tensors"
PACKED_FORMAT = "pack-quantized"
FP8_FORMATS = ("float-quantized", "naive-quantized")
SUPPORTED_FORMATS = (PACKED_FORMAT,) + FP8_FORMATS
# compressed-tensors started packing asymmetric zero points along N in 0.10 (PR #296); older
# checkpoints hold them unpacked, int8 [N, G].
_PACKED_ZERO_POINT_SINCE = (0, 10)


def _value(x: Any) -> Any:
    """An enum member's value (compressed-tensors' models mix enums and their strings)."""
    return getattr(x, "value", x)


def _parse_version(version: Any) -> tuple[int, ...] | None:
    if version is None:
        return None
    found = re.match(r"\s*v?(\d+)(?:\.(\d+))?(?:\.(\d+))?", str(version))
    if found is None:
        raise config_error(_METHOD, "version", version, "a version string such as '0.9.1' or '0.20.1'")
    return tuple(int(p) for p in found.groups() if p is not None)


@dataclass(frozen=True)
class IntWeightScheme:
    """A supported ``pack-quantized`` scheme: int weights, activations left in the model dtype."""

    bits: int
    symmetric: bool
    group_size: int  # -1: per output channel

    def describe(self) -> str:
        grouping = "channel" if self.group_size == -1 else f"group {self.group_size}"
        return f"{PACKED_FORMAT} int{self.bits} {grouping} {'symmetric' if self.symmetric else 'asymmetric'}"


@dataclass(frozen=True)
class Fp8Scheme:
    """A supported FP8 scheme: e4m3 weights with per-tensor / channel / block scales."""

    strategy: str  # "tensor" | "channel" | "block"
    block_size: tuple[int, int] | None
    static_input: bool

    def describe(self) -> str:
        weights = f"block {list(self.block_size)}" if self.block_size else self.strategy
        return f"fp8 weights {weights}, {'static' if self.static_input else 'dynamic'} activations"


Scheme = IntWeightScheme | Fp8Scheme


def _import_compressed_tensors():
    """compressed-tensors' config model and matching helpers, imported when a checkpoint needs
    them: the package pulls in pydantic and transformers, which ``import qlinear`` must not."""
    try:
        from compressed_tensors.quantization import QuantizationConfig as CTQuantizationConfig
        from compressed_tensors.utils.match import is_match, match_targets
    except ImportError as exc:
        raise ImportError(
            "quant_method 'compressed-tensors' needs the compressed-tensors package to parse the "
            "checkpoint's quantization_config: pip install compressed-tensors"
        ) from exc
    return CTQuantizationConfig, is_match, match_targets


def _check_actorder(config: dict[str, Any]) -> None:
    """Act-order 'group' (``weight_g_idx``) is refused up front with a clear message:
    compressed-tensors' own model rejects it too, with a message that does not say what works."""
    for name, group in (config.get("config_groups") or {}).items():
        weights = group.get("weights") if isinstance(group, dict) else None
        if isinstance(weights, dict) and weights.get("actorder") in ("group", "dynamic", True):
            raise config_error(
                _METHOD,
                f"config_groups.{name}.weights.actorder",
                weights.get("actorder"),
                "null, 'weight' or 'static' (act-order 'group' with weight_g_idx is not supported)",
            )


def _scheme_from_group(name: str, scheme: Any, default_format: str) -> Scheme | None:
    """The supported scheme one config group describes, or ValueError naming the field."""
    where = f"config_groups.{name}"
    if scheme.weights is None and scheme.input_activations is None and scheme.output_activations is None:
        return None  # the UNQUANTIZED preset
    fmt = _value(scheme.format) or default_format
    if fmt == "mixed-precision":
        raise config_error(_METHOD, f"{where}.format", None,
                           "each group's own format when the config's format is 'mixed-precision'")
    if fmt not in SUPPORTED_FORMATS:
        raise config_error(_METHOD, f"{where}.format", fmt, list(SUPPORTED_FORMATS))
    if scheme.output_activations is not None:
        raise config_error(_METHOD, f"{where}.output_activations", scheme.output_activations.model_dump(), "null")
    w = scheme.weights
    if w is None:
        raise config_error(_METHOD, f"{where}.weights", None, "int weights (pack-quantized) or fp8 weights (float-quantized)")
    wtype, strategy = _value(w.type), _value(w.strategy)
    if w.scale_dtype is not None and w.scale_dtype not in (torch.float16, torch.bfloat16, torch.float32):
        raise config_error(_METHOD, f"{where}.weights.scale_dtype", str(w.scale_dtype), "null, float16, bfloat16 or float32")
    if w.dynamic:
        raise config_error(_METHOD, f"{where}.weights.dynamic", w.dynamic, [False])
    if _value(w.actorder) not in (None, "weight", "static"):
        raise config_error(_METHOD, f"{where}.weights.actorder", _value(w.actorder), [None, "weight", "static"])

    if fmt == PACKED_FORMAT:
        if wtype != "int":
            raise config_error(_METHOD, f"{where}.weights.type", wtype, "['int'] with format 'pack-quantized'")
        if w.num_bits not in (4, 8):
            raise config_error(_METHOD, f"{where}.weights.num_bits", w.num_bits, [4, 8])
        if strategy not in ("group", "channel"):
            raise config_error(_METHOD, f"{where}.weights.strategy", strategy, ["group", "channel"])
        if scheme.input_activations is not None:
            raise config_error(
                _METHOD, f"{where}.input_activations", scheme.input_activations.model_dump(),
                "null (pack-quantized int weights with unquantized activations)",
            )
        group = int(w.group_size) if strategy == "group" else -1
        return IntWeightScheme(bits=int(w.num_bits), symmetric=bool(w.symmetric), group_size=group)

    # float-quantized / naive-quantized
    if wtype != "float" or w.num_bits != 8:
        raise config_error(_METHOD, f"{where}.weights", f"type={wtype} num_bits={w.num_bits}",
                           "type 'float' with num_bits 8 (e4m3) for formats " + str(list(FP8_FORMATS)))
    if not w.symmetric:
        raise config_error(_METHOD, f"{where}.weights.symmetric", w.symmetric, [True])
    if strategy not in ("tensor", "channel", "block"):
        raise config_error(_METHOD, f"{where}.weights.strategy", strategy, ["tensor", "channel", "block"])
    block = tuple(int(b) for b in w.block_structure) if strategy == "block" else None
    a = scheme.input_activations
    if a is None:
        raise config_error(_METHOD, f"{where}.input_activations", None,
                           "fp8 activations (weight-only fp8 is not supported): static tensor, dynamic token/tensor, "
                           "or dynamic group of block_structure[1] for block weights")
    atype, astrategy = _value(a.type), _value(a.strategy)
    if atype != "float" or a.num_bits != 8 or not a.symmetric:
        raise config_error(_METHOD, f"{where}.input_activations", f"type={atype} num_bits={a.num_bits} symmetric={a.symmetric}",
                           "type 'float', num_bits 8, symmetric")
    if block is not None:
        if not (a.dynamic is True and astrategy == "group" and a.group_size == block[1]):
            raise config_error(
                _METHOD, f"{where}.input_activations", f"strategy={astrategy} dynamic={a.dynamic} group_size={a.group_size}",
                f"dynamic group of {block[1]} (= block_structure[1]) with block weights",
            )
        return Fp8Scheme("block", block, static_input=False)
    if a.dynamic is False and astrategy == "tensor":
        return Fp8Scheme(strategy, None, static_input=True)
    if a.dynamic is True and astrategy in ("token", "tensor"):
        return Fp8Scheme(strategy, None, static_input=False)
    raise config_error(_METHOD, f"{where}.input_activations", f"strategy={astrategy} dynamic={a.dynamic}",
                       "static tensor, or dynamic token / tensor, for tensor and channel weights")


class CompressedTensorsConfig(QuantizationConfig):
    """A parsed compressed-tensors ``quantization_config`` (see the module docstring).

    ``ct_config`` is compressed-tensors' own ``QuantizationConfig`` object; ``schemes`` maps each
    config group to its supported scheme (None: unquantized); ``zero_points_packed`` tells which
    layout asymmetric zero points have (from the config's ``version``).
    """

    quant_method = _METHOD

    def __init__(self, ct_config: Any, schemes: dict[str, Scheme | None], *, version: tuple[int, ...] | None, matchers):
        super().__init__()
        self.ct_config = ct_config
        self.schemes = schemes
        self.version = version
        self.zero_points_packed = version is None or version >= _PACKED_ZERO_POINT_SINCE
        self.ignore: list[str] = list(ct_config.ignore or [])
        self._is_match, self._match_targets = matchers
        # Target -> group, later groups winning a repeated target, as compressed-tensors' own
        # apply_quantization_config builds it.
        self.target_groups: dict[str, str] = {}
        for name, group in ct_config.config_groups.items():
            for target in group.targets:
                self.target_groups[target] = name

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> "CompressedTensorsConfig":
        if config.get("quant_method", _METHOD) != _METHOD:
            raise config_error(_METHOD, "quant_method", config.get("quant_method"), [_METHOD])
        CTQuantizationConfig, is_match, match_targets = _import_compressed_tensors()
        _check_actorder(config)
        try:
            parsed = CTQuantizationConfig.model_validate(config)
        except (ValueError, NotImplementedError, KeyError) as exc:  # pydantic's ValidationError is a ValueError
            raise ValueError(f"quantization_config ({_METHOD}): compressed-tensors rejects it: {exc}") from exc
        for key in ("sparsity_config", "transform_config"):
            value = config.get(key)
            if value and not (key == "sparsity_config" and value.get("format") == "dense"):
                raise config_error(_METHOD, key, value, "null or {} (sparse / transformed weights are not supported)")
        status = _value(parsed.quantization_status)
        if status != "compressed":  # other states keep float weights (fake quantization)
            raise config_error(_METHOD, "quantization_status", status, ["compressed"])
        if not parsed.config_groups:
            raise config_error(_METHOD, "config_groups", config.get("config_groups"), "at least one group")
        schemes = {name: _scheme_from_group(name, group, _value(parsed.format)) for name, group in parsed.config_groups.items()}
        return cls(parsed, schemes, version=_parse_version(config.get("version")), matchers=(is_match, match_targets))

    # -- per-module resolution ----------------------------------------------------------------
    def group_for(self, layer, name: str) -> str | None:
        """Config group quantizing checkpoint module ``name`` of ``layer`` (None: unquantized)."""
        if self.ignore and self._is_match(name, layer, self.ignore):
            return None
        matched = self._match_targets(name, layer, list(self.target_groups))
        return self.target_groups[matched[0]] if matched else None

    def scheme_for(self, layer, prefix: str) -> Scheme | None:
        """The one scheme of every checkpoint module of the layer; ValueError when they differ."""
        prefixes = self.checkpoint_prefixes(layer, prefix)
        groups = [self.group_for(layer, p) for p in prefixes]
        schemes = [None if g is None else self.schemes[g] for g in groups]
        if any(s != schemes[0] for s in schemes[1:]):
            detail = ", ".join(
                f"{p}: {'unquantized' if s is None else f'{g} ({s.describe()})'}"
                for p, g, s in zip(prefixes, groups, schemes)
            )
            raise ValueError(f"{prefix}: the modules fused into this layer have different compressed-tensors schemes: {detail}")
        return schemes[0]

    def get_quant_method(self, layer, prefix: str) -> QuantizeMethodBase:
        return method_for_scheme(self.scheme_for(layer, prefix), zero_points_packed=self.zero_points_packed)

    def __repr__(self) -> str:
        groups = {name: (None if s is None else s.describe()) for name, s in self.schemes.items()}
        return f"CompressedTensorsConfig(groups={groups}, ignore={self.ignore}, version={self.version})"


def method_for_scheme(scheme: Scheme | None, *, zero_points_packed: bool = True) -> QuantizeMethodBase:
    """The method for one parsed scheme (None: unquantized). Needs no compressed-tensors, so a
    machine without it can still build layers for a scheme parsed elsewhere."""
    if scheme is None:
        return UnquantizedLinearMethod()
    if isinstance(scheme, IntWeightScheme):
        return CompressedTensorsWNA16Method(scheme, zero_points_packed=zero_points_packed)
    return Fp8LinearMethod.for_scheme(
        scheme.strategy,
        block_size=scheme.block_size,
        scale_name="weight_scale",
        static_input=scheme.static_input,
        channel_scale_ndim=2,
    )


class CompressedTensorsWNA16Method(WeightOnlyIntMethod):
    """``pack-quantized`` int4 / int8 weights (see the module docstring for the tensors).

    ``weight_shape`` is one ``[n, K]`` slot per checkpoint matrix (``[N_total, K]`` in every slot
    when the tensors were fused on disk); it is checked against the layer when finishing.
    """

    def __init__(self, scheme: IntWeightScheme, *, zero_points_packed: bool = True):
        super().__init__(scheme.bits)
        self.scheme = scheme
        self.zero_points_packed = zero_points_packed
        self.pack = 32 // scheme.bits
        self.name = f"ct-w{scheme.bits}a16" + ("" if scheme.symmetric else "-asym")
        self.checkpoint_params = ("weight_packed", "weight_scale", "weight_shape") + (
            () if scheme.symmetric else ("weight_zero_point",)
        )

    def output_alignment(self) -> int:
        # packed zero points start a fresh int32 word per checkpoint matrix
        return self.pack if not self.scheme.symmetric and self.zero_points_packed else 1

    def input_alignment(self) -> int:
        # the kernel layout needs whole groups; per channel any K works (words are padded)
        return self.scheme.group_size if self.scheme.group_size > 0 else 1

    def create_weights(self, layer, input_size: int, output_partition_sizes: Sequence[int], params_dtype: torch.dtype) -> None:
        plan, s = layer.shard_plan, self.scheme
        rows = sum(output_partition_sizes)
        grouped = s.group_size > 0
        groups = input_size // s.group_size if grouped else 1
        group_dim = DimMap(1, s.group_size, "group") if grouped else None
        layer.register_parameter(
            "weight_packed",
            ShardedParameter(torch.empty(rows, cdiv(input_size, self.pack), dtype=torch.int32), plan=plan,
                             output=DimMap(0), input=DimMap(1, self.pack, "pack")),
        )
        layer.register_parameter(
            "weight_scale",
            ShardedParameter(torch.empty(rows, groups, dtype=torch.float32), plan=plan, output=DimMap(0), input=group_dim),
        )
        if not s.symmetric:
            if self.zero_points_packed:
                zp = ShardedParameter(
                    torch.empty(sum(cdiv(n, self.pack) for n in output_partition_sizes), groups, dtype=torch.int32),
                    plan=plan, output=DimMap(0, self.pack, "pack"), input=group_dim,
                )
            else:
                zp = ShardedParameter(torch.empty(rows, groups, dtype=torch.int8), plan=plan, output=DimMap(0), input=group_dim)
            layer.register_parameter("weight_zero_point", zp)
        layer.register_parameter(
            "weight_shape", StackedParameter(torch.empty(plan.num_shards, 2, dtype=torch.int64), plan=plan)
        )

    def _check_weight_shape(self, layer) -> None:
        plan = layer.shard_plan
        got = [tuple(int(v) for v in row) for row in layer.weight_shape.detach().cpu()]
        per_shard = [(n, plan.full_input) for n in plan.full_sizes]
        fused = [(sum(plan.full_sizes), plan.full_input)] * plan.num_shards
        if got != per_shard and got != fused:
            names = getattr(layer, "shard_names", None) or [f"shard {i}" for i in range(plan.num_shards)]
            raise ValueError(
                f"{layer.weight_shape.qualname}: weight_shape disagrees with the layer: expected "
                + ", ".join(f"{nm}={list(e)}" for nm, e in zip(names, per_shard))
                + f" (or {list(fused[0])} in every slot when fused on disk), got "
                + ", ".join(f"{nm}={list(g)}" for nm, g in zip(names, got))
            )

    def canonical(self, layer) -> CanonicalWeight:
        self._check_weight_shape(layer)
        s, bits = self.scheme, self.bits
        n, k = layer.shard_plan.local_output, layer.shard_plan.local_input
        q = unpack_int32(layer.weight_packed.detach(), bits, 1, count=k)
        zeros = None
        if not s.symmetric:
            zp = layer.weight_zero_point.detach()
            if self.zero_points_packed:
                # only the last checkpoint matrix may end in a partial word (output_alignment)
                zeros = unpack_int32(zp, bits, 0, count=n)
            else:
                signed = zp.to(torch.int16)
                lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
                if signed.numel() and (int(signed.min()) < lo or int(signed.max()) > hi):
                    raise ValueError(
                        f"{layer.weight_zero_point.qualname}: int{bits} zero points must lie in [{lo}, {hi}], "
                        f"got [{int(signed.min())}, {int(signed.max())}]"
                    )
                zeros = (signed + (1 << (bits - 1))).to(torch.uint8)
            zeros = symmetric_or_zeros(zeros, bits)  # all zeros at 2**(bits-1): skip their loads
        return CanonicalWeight(q, zeros, layer.weight_scale.detach(), s.group_size, bits)
