"""Small merged-layer checkpoints in every format, for the loader properties and corrupt-file tests.

``FormatCase`` holds one quantization config, K, the shard sizes and each shard's checkpoint
tensors (named as the layer's parameters), written by the format's writer: ``qlinear.testing``
(GPTQ, AWQ, DeepSeek FP8) or compressed-tensors' ``pack_to_int32`` (pack-quantized).
``format_cases(fmt)`` is a hypothesis strategy of them; ``build_case(fmt, seed, **choices)`` makes
one from plain arguments (for the example-based tests).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import torch
from hypothesis import strategies as st

import _robust_common as rc
from qlinear.layers import MergedReplicatedLinear
from qlinear.parameter import ShardedParameter, StackedParameter
from qlinear.quantization import get_quantization_config

FORMATS = ["dense", "fp8-block", "fp8-tensor", "gptq", "awq", "ct-int"]
PARENT = "model.layers.0.self_attn"
SHARD_NAMES = ["q_a_proj", "kv_a_proj_with_mqa", "q_b_proj"]


def ct_int_config(bits: int, symmetric: bool, group: int, version: str | None = None) -> dict:
    """A pack-quantized ``quantization_config`` as compressed-tensors writes it (one group)."""
    weights = {"num_bits": bits, "type": "int", "symmetric": symmetric, "dynamic": False,
               "strategy": "channel" if group == -1 else "group", "group_size": None if group == -1 else group}
    cfg = {"quant_method": "compressed-tensors", "format": "pack-quantized", "quantization_status": "compressed",
           "config_groups": {"group_0": {"targets": ["Linear"], "weights": weights}}, "ignore": []}
    if version is not None:
        cfg["version"] = version
    return cfg


def ct_int_tensors(n: int, k: int, bits: int, symmetric: bool, group: int, gen: torch.Generator):
    """compressed-tensors' pack-quantized tensors of one matrix, packed by its own ``pack_to_int32``,
    and the fp32 weight they stand for."""
    from compressed_tensors.compressors.pack_quantized.helpers import pack_to_int32  # the producer's packer

    half = 2 ** (bits - 1)
    gs = k if group == -1 else group
    groups = k // gs
    q = torch.randint(-half, half, (n, k), generator=gen, dtype=torch.int8)
    scale = (torch.rand(n, groups, generator=gen) * 0.05 + 1e-3).to(torch.bfloat16)
    tensors = {"weight_packed": pack_to_int32(q, bits, packed_dim=1), "weight_scale": scale,
               "weight_shape": torch.tensor([n, k], dtype=torch.int64)}
    zp = torch.zeros(n, groups, dtype=torch.int8)
    if not symmetric:
        zp = torch.randint(-half, half, (n, groups), generator=gen, dtype=torch.int8)
        tensors["weight_zero_point"] = pack_to_int32(zp, bits, packed_dim=0)
    w = (q.float() - zp.float().repeat_interleave(gs, dim=1)) * scale.float().repeat_interleave(gs, dim=1)
    return tensors, w


@dataclass
class FormatCase:
    fmt: str
    config: dict | None
    k: int
    sizes: list[int]
    dtype: torch.dtype
    shards: list[dict[str, torch.Tensor]]
    bias: bool = False
    choices: dict[str, Any] = field(default_factory=dict)
    names: list[str] | None = None  # checkpoint module names of the shards (default: SHARD_NAMES)

    @property
    def shard_names(self) -> list[str]:
        return list(self.names) if self.names is not None else SHARD_NAMES[: len(self.sizes)]

    def make_layer(self, prefix: str = f"{PARENT}.fused_qkv_a_proj") -> MergedReplicatedLinear:
        qc = get_quantization_config(self.config) if self.config is not None else None
        return MergedReplicatedLinear(self.k, self.sizes, bias=self.bias, params_dtype=self.dtype, quant_config=qc,
                                      prefix=prefix, shard_names=self.shard_names)

    def checkpoint(self, prefix_parent: str = PARENT) -> dict[str, torch.Tensor]:
        """Checkpoint tensor names -> tensors, one tensor per shard (``<parent>.<shard>.<param>``)."""
        return {f"{prefix_parent}.{self.shard_names[i]}.{name}": t for i, ts in enumerate(self.shards) for name, t in ts.items()}

    def fused(self, layer) -> dict[str, torch.Tensor | None]:
        """Each parameter's tensor as it would sit fused on disk (None: per shard only, e.g. stacked
        slots whose shards differ)."""
        out: dict[str, torch.Tensor | None] = {}
        for name in self.shards[0]:
            param = getattr(layer, name)
            parts = [s[name] for s in self.shards]
            if isinstance(param, ShardedParameter):
                out[name] = torch.cat(parts, dim=param.output.dim)
            elif isinstance(param, StackedParameter):
                out[name] = parts[0] if all(torch.equal(rc.bits_of(p), rc.bits_of(parts[0])) for p in parts) else None
            else:
                out[name] = None
        return out

    def decoy(self, layer, name: str, like: torch.Tensor, seed: int) -> torch.Tensor:
        """A tensor the loader accepts in place of ``like`` (same shape / dtype, other values)."""
        g = rc.gen(seed)
        if name == "g_idx":
            return torch.randint(0, getattr(layer, name).num_groups, like.shape, generator=g, dtype=like.dtype)
        if like.dtype.is_floating_point:
            return (torch.rand(like.shape, generator=g) + 0.5).to(like.dtype)
        info = torch.iinfo(like.dtype)
        return torch.randint(max(info.min, -2**31), min(info.max, 2**31 - 1), like.shape, generator=g, dtype=torch.int64).to(like.dtype)


def _sizes(seed_draw, n, align, max_rows=24):
    return [align * seed_draw(1, max(1, max_rows // align)) for _ in range(n - 1)] + [seed_draw(1, max_rows)]


def build_case(fmt: str, seed: int, *, n_shards: int = 2, **c) -> FormatCase:
    """One case; choices not given are drawn from ``seed``."""
    g = rc.gen(seed)

    def pick(lo, hi):
        return int(torch.randint(lo, hi + 1, (1,), generator=g))

    def choose(key, options):
        if key not in c:
            c[key] = options[pick(0, len(options) - 1)]
        return c[key]

    if fmt == "dense":
        k = c.setdefault("k", pick(1, 40))
        sizes = c.setdefault("sizes", _sizes(pick, n_shards, 1))
        dtype = choose("dtype", [torch.float32, torch.bfloat16, torch.float16])
        shards = []
        for n in sizes:
            src = choose("src_dtype", [torch.float32, torch.bfloat16, torch.float16])
            shards.append({"weight": torch.randn(n, k, generator=g).to(src), "bias": torch.randn(n, generator=g).to(src)})
        return FormatCase(fmt, None, k, sizes, dtype, shards, bias=True, choices=c)

    if fmt == "fp8-block":
        from qlinear.testing.fp8 import fp8_block_config, quantize_fp8_block

        block = choose("block", [(8, 8), (16, 8), (8, 16), (16, 16)])
        k = c.setdefault("k", pick(1, 40))
        sizes = c.setdefault("sizes", _sizes(pick, n_shards, block[0], 40))
        fmt_s = choose("scale_fmt", [None, "ue8m0"])
        shards = [quantize_fp8_block(torch.randn(n, k, generator=g), block, scale_fmt=fmt_s) for n in sizes]
        return FormatCase(fmt, fp8_block_config(block, scale_fmt=fmt_s), k, sizes, torch.bfloat16, shards, choices=c)

    if fmt == "fp8-tensor":
        from qlinear.testing.fp8 import fp8_tensor_config, input_scale_for, quantize_fp8_tensor

        k = c.setdefault("k", pick(1, 40))
        sizes = c.setdefault("sizes", _sizes(pick, n_shards, 1))
        shards = []
        for n in sizes:
            t = quantize_fp8_tensor(torch.randn(n, k, generator=g) * (0.5 + pick(0, 3)), scale_shape=choose("scale_shape", [(), (1,)]))
            t["input_scale"] = input_scale_for(torch.randn(4, k, generator=g) * (1 + pick(0, 3)))
            shards.append(t)
        return FormatCase(fmt, fp8_tensor_config("static"), k, sizes, torch.bfloat16, shards, choices=c)

    if fmt == "gptq":
        from qlinear.testing.gptq import gptq_config, quantize_gptq

        bits = choose("bits", [4, 8])
        pack = 32 // bits
        group = choose("group", [8, 16, 32, -1])
        k = c.setdefault("k", (math.lcm(pack, group) if group != -1 else pack) * pick(1, 4))
        sizes = c.setdefault("sizes", _sizes(pick, n_shards, pack))
        sym = choose("sym", [True, False])
        desc_act = choose("desc_act", [False, True]) and group != -1
        shards = []
        for i, n in enumerate(sizes):
            t, _ = quantize_gptq(torch.randn(n, k, generator=g), bits, group, sym, desc_act, seed=seed + i)
            if not desc_act and not c.get("keep_g_idx", False):
                t.pop("g_idx")
            shards.append(t)
        return FormatCase(fmt, gptq_config(bits, group, desc_act, sym), k, sizes, torch.bfloat16, shards, choices=c)

    if fmt == "awq":
        from qlinear.testing.awq import awq_config, quantize_awq

        group = choose("group", [8, 16, 32, -1])
        k = c.setdefault("k", (group if group != -1 else pick(1, 9)) * pick(1, 4))
        sizes = c.setdefault("sizes", _sizes(pick, n_shards, 8))
        shards = [quantize_awq(torch.randn(n, k, generator=g), group)[0] for n in sizes]
        return FormatCase(fmt, awq_config(group), k, sizes, torch.bfloat16, shards, choices=c)

    if fmt == "ct-int":
        bits = choose("bits", [4, 8])
        sym = choose("sym", [True, False])
        group = choose("group", [8, 16, -1])
        k = c.setdefault("k", (group if group != -1 else pick(1, 12)) * pick(1, 4))
        sizes = c.setdefault("sizes", _sizes(pick, n_shards, 1 if sym else 32 // bits))
        shards = [ct_int_tensors(n, k, bits, sym, group, g)[0] for n in sizes]
        return FormatCase(fmt, ct_int_config(bits, sym, group, c.get("version")), k, sizes, torch.bfloat16, shards, choices=c)

    raise ValueError(f"unknown format {fmt!r}; known: {FORMATS}")


@st.composite
def format_cases(draw, fmt: str, max_shards: int = 3):
    return build_case(fmt, draw(st.integers(0, 2**31 - 1)), n_shards=draw(st.integers(1, max_shards)))
