"""Shared pieces of the packed-integer weight-only formats (GPTQ, AWQ, compressed-tensors pack-quantized).

Every such format stores small unsigned integers packed into int32 words plus per-group scales
(and zero points); each decodes its checkpoint tensors into the *canonical* form of
``qlinear.ops.w4a16`` and lets :class:`WeightOnlyIntMethod` do the rest (repack for the kernels,
run the GEMM, name the backend).

API (for format modules):

``unpack_int32(packed, bits, dim, *, order=None, count=None) -> uint8 tensor``
    Unpack int32 words along ``dim``: each word becomes ``32 // bits`` entries, so that dim grows
    from ``W`` to ``W * 32 // bits`` (then narrowed to ``count`` if given, dropping padding).
    Field ``i`` (bits ``[i*bits, (i+1)*bits)``, low bits first) of word ``c`` holds entry
    ``c * per + order[i]`` (``per = 32 // bits``; ``order=None`` is the identity, i.e. a dense
    little-endian stream as GPTQ and compressed-tensors write; AWQ passes ``AWQ_ORDER``).
    Values are unsigned ``0 .. 2**bits - 1`` whatever the sign of the word.

``AWQ_ORDER = (0, 2, 4, 6, 1, 3, 5, 7)``

``CanonicalWeight(q, zeros, scales, group_size, bits, g_idx)``
    The canonical form: ``q`` uint8 ``[N, K]``, ``zeros`` uint8 ``[N, G]`` or None (symmetric
    ``2**(bits-1)``), ``scales`` float ``[N, G]``, ``group_size`` (g or -1), ``g_idx`` None or
    ``[(row_start, row_end, g_idx[K]), ...]`` per shard (act-order), exactly what
    ``qlinear.ops.w4a16.pack_w4a16`` takes. ``dequantize()`` gives the fp32 ``[N, K]`` weight
    through ``qlinear.reference.w4a16.dequantize_canonical``.

``symmetric_or_zeros(zeros, bits) -> zeros | None``
    None when every zero equals ``2**(bits-1)`` (the kernels then skip the zero loads), else ``zeros``.

``GroupIndexParameter(data [S, K] int32, *, plan, num_groups, required)``
    A ``StackedParameter`` for per-shard ``g_idx`` whose loader also rejects values outside
    ``[0, num_groups)`` before writing anything.

``per_shard_g_idx(layer, param, group_size, num_groups) -> list | None``
    Turns a loaded ``GroupIndexParameter`` into ``pack_w4a16``'s ``g_idx`` list: None when it was
    never loaded or every shard holds the trivial ``k // g``; ``ValueError`` naming the tensor and
    shard for out-of-range values.

``is_skipped(name, patterns) -> bool``
    The ignore-list rule of AutoAWQ / AutoGPTQ / transformers' ``modules_to_not_convert``: a plain
    pattern matches when it is a substring of the module path (``"visual"`` skips
    ``model.visual.blocks.0.qkv``), ``"re:<regex>"`` as in ``match_module_name``.

``WeightOnlyIntMethod(QuantizeMethodBase)``
    Base of the weight-only int methods. A subclass implements ``create_weights`` (checkpoint
    parameters) and ``canonical(layer) -> CanonicalWeight``, and lists its checkpoint parameter
    names in ``checkpoint_params``. ``process_weights_after_loading`` decodes, packs with
    ``pack_w4a16`` (on the device of the loaded tensors), removes the checkpoint parameters and
    registers the packed tensors as buffers ``w4a16_<name>``; ``apply`` calls ``w4a16_linear``;
    ``backend`` calls ``w4a16_backend``. ``packed(layer) -> W4A16Weights`` gives the packed weight.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Sequence

import torch

from qlinear._utils import describe
from qlinear.ops.w4a16 import W4A16Weights, pack_w4a16, w4a16_backend, w4a16_linear
from qlinear.parameter import DimMap, LoadError, ShardPlan, StackedParameter
from qlinear.quantization.base import QuantizeMethodBase, check_scales, match_module_name
from qlinear.reference.w4a16 import dequantize_canonical

__all__ = [
    "AWQ_ORDER",
    "CanonicalWeight",
    "GroupIndexParameter",
    "WeightOnlyIntMethod",
    "is_skipped",
    "per_shard_g_idx",
    "symmetric_or_zeros",
    "unpack_int32",
]

AWQ_ORDER = (0, 2, 4, 6, 1, 3, 5, 7)

_BUFFER_PREFIX = "w4a16_"


def unpack_int32(
    packed: torch.Tensor, bits: int, dim: int, *, order: Sequence[int] | None = None, count: int | None = None
) -> torch.Tensor:
    """Unpack int32 words along ``dim`` into uint8 entries (see the module docstring)."""
    if packed.dtype != torch.int32:
        raise TypeError(f"unpack_int32: expected int32 words, got {describe(packed)}")
    if bits not in (2, 4, 8):
        raise ValueError(f"unpack_int32: bits must be 2, 4 or 8, got {bits}")
    per = 32 // bits
    order = tuple(range(per)) if order is None else tuple(order)
    if sorted(order) != list(range(per)):
        raise ValueError(f"unpack_int32: order {order} is not a permutation of range({per})")
    dim = dim % packed.dim()
    words = packed.movedim(dim, -1)
    out = torch.empty(*words.shape, per, dtype=torch.uint8, device=packed.device)
    mask = (1 << bits) - 1
    # One field at a time keeps the temporary at the size of the packed tensor (an int32 copy
    # of all fields at once would be 8x that on a 7168x16384 weight).
    for i, pos in enumerate(order):
        out[..., pos] = ((words >> (bits * i)) & mask).to(torch.uint8)
    out = out.flatten(-2)
    if count is not None:
        if count > out.shape[-1]:
            raise ValueError(f"unpack_int32: count={count} exceeds the {out.shape[-1]} entries of {describe(packed)}")
        out = out[..., :count]
    return out.movedim(-1, dim)


def symmetric_or_zeros(zeros: torch.Tensor, bits: int) -> torch.Tensor | None:
    """None when every zero point is the symmetric ``2**(bits-1)``, else ``zeros`` unchanged."""
    return None if bool((zeros == (1 << (bits - 1))).all()) else zeros


def is_skipped(name: str, patterns: Sequence[str] | None) -> bool:
    """Producers' ``modules_to_not_convert`` rule: substring of the path, or ``re:`` full match."""
    for pattern in patterns or ():
        if pattern.startswith("re:"):
            if match_module_name(name, [pattern]):
                return True
        elif pattern and pattern in name:
            return True
    return False


@dataclass
class CanonicalWeight:
    """The canonical weight-only int form that ``pack_w4a16`` takes (see the module docstring)."""

    q: torch.Tensor
    zeros: torch.Tensor | None
    scales: torch.Tensor
    group_size: int
    bits: int
    g_idx: list[tuple[int, int, torch.Tensor]] | None = None

    def dequantize(self) -> torch.Tensor:
        return dequantize_canonical(self.q, self.zeros, self.scales, self.group_size, self.g_idx, bits=self.bits)

    def pack(self) -> W4A16Weights:
        return pack_w4a16(self.q, self.zeros, self.scales, self.group_size, bits=self.bits, g_idx=self.g_idx)


class GroupIndexParameter(StackedParameter):
    """Per-shard ``g_idx`` ``[num_shards, K]`` int32 whose loader rejects out-of-range groups."""

    def __new__(cls, data, **kwargs):
        return super().__new__(cls, data)

    def __init__(self, data: torch.Tensor, *, plan: ShardPlan, num_groups: int, required: bool = True):
        super().__init__(data, plan=plan, input=DimMap(0, kind="cols"), required=required)
        self.num_groups = num_groups

    def _plan_writes(self, loaded, shard_id):
        writes = super()._plan_writes(loaded, shard_id)  # shape checks first: clearer message
        if loaded.numel():
            lo, hi = int(loaded.min()), int(loaded.max())
            if lo < 0 or hi >= self.num_groups:
                which = "all shards (fused on disk)" if shard_id is None else f"shard {shard_id}"
                raise LoadError(
                    f"{self.qualname}: {which}: group indices must lie in [0, {self.num_groups}) "
                    f"({self.num_groups} groups), got values in [{lo}, {hi}]{self.plan.where}"
                )
        return writes


def per_shard_g_idx(
    layer, param: StackedParameter, group_size: int, num_groups: int
) -> list[tuple[int, int, torch.Tensor]] | None:
    """``pack_w4a16``'s act-order list from a loaded per-shard ``g_idx`` parameter.

    None when nothing was loaded (the format then means ``k // g``) or when every shard holds the
    trivial ``k // g`` (static groups, or a checkpoint that writes ``g_idx`` without act-order).
    Raises ``ValueError`` naming the tensor and shard for out-of-range values.
    """
    if not param.loaded_shards:
        return None
    plan = layer.shard_plan
    k = param.shape[1]
    names = getattr(layer, "shard_names", None) or [f"shard {i}" for i in range(plan.num_shards)]
    # With one group every in-range g_idx is all zeros: nothing to permute.
    trivial = (torch.arange(k, device=param.device) + plan.input_start) // group_size if num_groups > 1 else None
    out, all_trivial = [], True
    for i, (r0, size) in enumerate(zip(plan.local_offsets, plan.local_sizes)):
        gi = param.data[i]
        lo, hi = int(gi.min()), int(gi.max())
        if lo < 0 or hi >= num_groups:
            raise ValueError(
                f"{param.qualname}: shard {i} ({names[i]}): group indices must lie in [0, {num_groups}), "
                f"got values in [{lo}, {hi}]"
            )
        if trivial is not None and not torch.equal(gi.to(torch.int64), trivial):
            all_trivial = False
            # act-order permutes columns, it never resizes groups: each must keep its column count
            want = torch.bincount(trivial, minlength=num_groups)
            got = torch.bincount(gi.to(torch.int64), minlength=num_groups)
            if not torch.equal(got, want):
                g = int((got != want).nonzero()[0])
                raise ValueError(
                    f"{param.qualname}: shard {i} ({names[i]}): not a group assignment: group {g} has "
                    f"{int(got[g])} columns, expected {int(want[g])} (group_size={group_size})"
                )
        out.append((r0, r0 + size, gi))
    if all_trivial:
        return None
    if plan.local_input != plan.full_input:  # formats refuse this at construction; keep the guard
        raise ValueError(
            f"{param.qualname}: act-order g_idx with an input-sliced (row-parallel) layer is not supported "
            f"(input columns [{plan.input_start}, {plan.input_start + plan.local_input}) of {plan.full_input})"
        )
    return out


class WeightOnlyIntMethod(QuantizeMethodBase):
    """Base for weight-only int methods that repack into ``qlinear.ops.w4a16``'s layout."""

    #: checkpoint parameter names, removed from the layer once packed
    checkpoint_params: ClassVar[tuple[str, ...]] = ()

    def __init__(self, bits: int):
        self.bits = bits

    def canonical(self, layer) -> CanonicalWeight:
        """Decode the loaded checkpoint parameters into the canonical form."""
        raise NotImplementedError

    def process_weights_after_loading(self, layer) -> None:
        # Decode and pack before touching the layer, so a failure leaves it as loaded.
        where = layer.prefix or type(layer).__name__
        for name in self.checkpoint_params:
            param = layer._parameters.get(name)
            if param is not None and param.dtype.is_floating_point:
                check_scales(where, name, param, kind="weight")
        packed = self.canonical(layer).pack()
        for name in self.checkpoint_params:
            if name in layer._parameters:
                del layer._parameters[name]
        for name, tensor in packed.tensors().items():
            layer.register_buffer(_BUFFER_PREFIX + name, tensor)
        layer._w4a16_cache = packed

    def packed(self, layer) -> W4A16Weights:
        """The packed weight, rebuilt from the buffers if the layer was moved (``layer.to``)."""
        cache = getattr(layer, "_w4a16_cache", None)
        if cache is None:
            raise RuntimeError(
                f"{layer.prefix or type(layer).__name__}: call layer.process_weights_after_loading() "
                f"before forward ({self.name} weights are not packed yet)"
            )
        if cache.qweight is not layer._buffers[_BUFFER_PREFIX + "qweight"]:
            cache = W4A16Weights.from_tensors(
                {k[len(_BUFFER_PREFIX):]: v for k, v in layer._buffers.items() if k.startswith(_BUFFER_PREFIX)}
            )
            layer._w4a16_cache = cache
        return cache

    def apply(self, layer, x: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
        return w4a16_linear(x, self.packed(layer), bias)

    def backend(self, layer, x: torch.Tensor | None = None) -> str:
        packed = self.packed(layer)
        if x is None:
            x = torch.empty(1, packed.k, dtype=layer.params_dtype, device=packed.device)
        return w4a16_backend(x, packed)
