"""Build a quantized layer with random but valid checkpoint tensors, for benchmarks.

The layer is filled through its own ``weight_loader``s (so the benchmark exercises the same
placement and ``process_weights_after_loading`` path as a real checkpoint), with values drawn
per tensor kind: fp8 weights from N(0, 1) cast to e4m3, scales in [0.5, 1.5] * 2^-7 rounded to the
dtype the format stores on disk (GPTQ's fp16, so the layer keeps the narrow scales a real checkpoint
gives it), packed integers uniformly random except a symmetric GPTQ format's zero points (the value
its producer writes in every field, so the layer takes the symmetric path as a real checkpoint's
does), ``weight_shape`` the true shape; optional tensors (``g_idx`` without act-order) are left out,
as checkpoints may do (:func:`_on_disk`).
"""

from __future__ import annotations

import torch

from qlinear.layers import LinearBase, MergedReplicatedLinear
from qlinear.parameter import QParameter
from qlinear.quantization import get_quantization_config

# quantization_config dicts for the benchmarked formats
CONFIGS = {
    "bf16": None,
    "fp8-block": {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic",
                  "weight_block_size": [128, 128]},
    "w4a16": {"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False, "sym": True},
    # with zero points: what the W4A16 kernel sweeps (bench_w4reg, bench_w4ring) tune the tables on
    "w4a16-asym": {"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False, "sym": False},
}


def _on_disk(fmt: str) -> tuple[torch.dtype | None, int | None]:
    """(scale dtype, symmetric zero-point bits) of a ``fmt`` checkpoint, read off its config: GPTQ
    stores fp16 scales (fp32 parameters here) and, with ``sym`` (GPTQ's default), 2^(b-1) - 1 (zero
    minus one, v1) in every b-bit ``qzeros`` field; (None, None) for the other formats.

    Until session 14 both were drawn at random: fp32 scale values do not fit fp16, so the W4A16
    benchmark layers kept fp32 scales (twice the scale bytes, the kernels' fp32-scale path), and the
    "symmetric" layer carried random zero points and ran the asymmetric kernels."""
    cfg = CONFIGS[fmt] or {}
    if cfg.get("quant_method") != "gptq":
        return None, None
    return torch.float16, (cfg["bits"] if cfg.get("sym", True) else None)


def _random_like(param: QParameter, shard: int, layer: LinearBase, gen: torch.Generator,
                 scale_dtype: torch.dtype | None = None, sym_bits: int | None = None) -> torch.Tensor:
    shape = param.checkpoint_shape(shard)
    name = param.qualname.rsplit(".", 1)[-1]
    dev = param.device
    if param.dtype == torch.float8_e4m3fn:
        return torch.randn(shape, generator=gen, device="cpu").clamp_(-448, 448).to(torch.float8_e4m3fn).to(dev)
    if name == "weight_shape":
        return torch.tensor([layer.output_sizes[shard], layer.input_size], dtype=torch.int64, device=dev)
    if name == "qzeros" and sym_bits is not None:
        field = (1 << (sym_bits - 1)) - 1
        word = sum(field << (sym_bits * i) for i in range(32 // sym_bits))  # < 2^31: fits int32
        return torch.full(shape, word, dtype=param.dtype).to(dev)
    if not param.dtype.is_floating_point:
        info = torch.iinfo(param.dtype)
        return torch.randint(info.min, info.max, shape, dtype=param.dtype, generator=gen).to(dev)
    if "scale" in name:
        values = (torch.rand(shape, generator=gen) + 0.5) * 2.0**-7
        if scale_dtype is not None:
            values = values.to(scale_dtype)
        return values.to(param.dtype).to(dev)
    return (torch.randn(shape, generator=gen) * 0.05).to(param.dtype).to(dev)


def _new_layer(fmt, input_size, output_sizes, dtype, device, prefix):
    with torch.device(device):
        return MergedReplicatedLinear(input_size, output_sizes, params_dtype=dtype,
                                      quant_config=get_quantization_config(CONFIGS[fmt]), prefix=prefix)


def build_layer(fmt: str, input_size: int, output_sizes: list[int], *, dtype=torch.bfloat16,
                device="cuda", seed: int = 0, split: bool = False):
    """A finished ``MergedReplicatedLinear`` of format ``fmt`` with random valid weights on ``device``.

    With ``split=True`` also returns one single-shard layer per output shard holding exactly the
    same checkpoint tensors (the unfused layers a merged one replaces): ``(merged, [separate...])``.
    """
    gen = torch.Generator().manual_seed(seed)
    disk = _on_disk(fmt)
    layer = _new_layer(fmt, input_size, output_sizes, dtype, device, f"bench.{fmt}")
    tensors: dict[tuple[str, int], torch.Tensor] = {}
    for name, param in list(layer.named_parameters()):
        if not isinstance(param, QParameter) or not param.required:
            continue
        for shard in range(len(output_sizes)):
            tensors[name, shard] = _random_like(param, shard, layer, gen, *disk)
            param.weight_loader(param, tensors[name, shard], shard)
    layer.process_weights_after_loading()
    if not split:
        return layer
    separate = []
    for shard, size in enumerate(output_sizes):
        one = _new_layer(fmt, input_size, [size], dtype, device, f"bench.{fmt}.shard{shard}")
        for name, param in list(one.named_parameters()):
            if isinstance(param, QParameter) and param.required:
                param.weight_loader(param, tensors[name, shard], 0)
        one.process_weights_after_loading()
        separate.append(one)
    return layer, separate
