"""Small compressed-tensors checkpoints written by compressed-tensors' own producer.

``make_ct_checkpoint(weights, scheme)`` follows the recipe an llm-compressor run takes, minus
calibration: a tiny ``torch.nn`` model whose ``nn.Linear`` submodules carry the checkpoint's
module names, ``apply_quantization_config`` with one of compressed-tensors' preset schemes,
real scales from ``calculate_qparams`` on the weights' min / max per strategy (per tensor,
channel, group or block), ``ModelCompressor.compress_model``, and the ``quantization_config``
that ``ModelCompressor.update_config`` writes into ``config.json``. The fp32 reference weights
come from compressed-tensors' own decompressor for the format, run on the compressed tensors
with their float scales widened to fp32 (so the reference is exact: no bf16 rounding of
``(q - zp) * scale``).

compressed-tensors (and the transformers it pulls in) is imported inside the functions here:
``import qlinear.testing.compressed_tensors`` stays free, and a machine without it can still
import the module (and gets an ``ImportError`` naming the package on the first call).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from typing import Any, Mapping, NamedTuple

import torch

from qlinear._utils import cdiv

__all__ = ["CT_SCHEMES", "CTCheckpoint", "make_ct_checkpoint", "legacy_zero_point_layout", "write_ct_fixtures"]

#: compressed-tensors preset schemes qlinear loads (``make_ct_checkpoint``'s ``scheme``)
CT_SCHEMES = ("W4A16", "W4A16_ASYM", "W8A16", "FP8", "FP8_DYNAMIC", "FP8_BLOCK")


class CTCheckpoint(NamedTuple):
    """What ``make_ct_checkpoint`` returns (a tuple: ``state_dict, config, dequantized = ...``).

    ``state_dict``: checkpoint tensor name -> tensor, exactly as it would be saved.
    ``config``: the ``quantization_config`` dict of ``config.json`` (``quant_method``,
    ``version``, ``format``, ``config_groups``, ``ignore``, ...).
    ``dequantized``: module name -> fp32 ``[N, K]`` weight decoded by compressed-tensors.
    """

    state_dict: dict[str, torch.Tensor]
    config: dict[str, Any]
    dequantized: dict[str, torch.Tensor]


def _import_ct():
    try:
        import compressed_tensors  # noqa: F401  (the producer; heavy, so imported on demand)
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "qlinear.testing.compressed_tensors needs the compressed-tensors package: "
            "pip install compressed-tensors"
        ) from exc
    from compressed_tensors.compressors import BaseCompressor, ModelCompressor
    from compressed_tensors.quantization import (
        QuantizationConfig,
        apply_quantization_config,
        preset_name_to_scheme,
    )
    from compressed_tensors.quantization.utils import calculate_qparams

    return (BaseCompressor, ModelCompressor, QuantizationConfig, apply_quantization_config,
            preset_name_to_scheme, calculate_qparams)


def _build_model(weights: Mapping[str, torch.Tensor], dtype: torch.dtype) -> torch.nn.Module:
    """A module tree with one bias-free ``nn.Linear`` per checkpoint module name."""
    root = torch.nn.Module()
    for name, w in weights.items():
        if w.dim() != 2:
            raise ValueError(f"weights[{name!r}]: expected a 2-D [N, K] tensor, got shape {tuple(w.shape)}")
        parent = root
        *path, leaf = name.split(".")
        for part in path:
            child = getattr(parent, part, None)
            if child is None:
                child = torch.nn.Module()
                parent.add_module(part, child)
            parent = child
        linear = torch.nn.Linear(w.shape[1], w.shape[0], bias=False, dtype=dtype)
        with torch.no_grad():
            linear.weight.copy_(w.to(dtype))
        parent.add_module(leaf, linear)
    return root


def _min_max(w: torch.Tensor, args) -> tuple[torch.Tensor, torch.Tensor]:
    """Min / max of fp32 ``w [N, K]`` over each scale's scope, shaped like the scale parameter
    compressed-tensors allocates for ``args.strategy`` (what its min-max observer computes)."""
    n, k = w.shape
    strategy = str(getattr(args.strategy, "value", args.strategy))
    if strategy == "tensor":
        return w.amin().reshape(1), w.amax().reshape(1)
    if strategy == "channel":
        return w.amin(dim=1, keepdim=True), w.amax(dim=1, keepdim=True)
    if strategy == "group":
        g = args.group_size
        if k % g:
            raise ValueError(f"make_ct_checkpoint: K={k} is not a multiple of group_size={g}")
        grouped = w.reshape(n, k // g, g)
        return grouped.amin(dim=-1), grouped.amax(dim=-1)
    if strategy == "block":
        bn, bk = args.block_structure
        # zero padding leaves every block's range as it is (calculate_qparams widens to include 0)
        padded = torch.nn.functional.pad(w, (0, cdiv(k, bk) * bk - k, 0, cdiv(n, bn) * bn - n))
        blocks = padded.reshape(cdiv(n, bn), bn, cdiv(k, bk), bk)
        return blocks.amin(dim=(1, 3)), blocks.amax(dim=(1, 3))
    raise ValueError(f"make_ct_checkpoint: no min-max rule for weight strategy {strategy!r}")


def _scheme_for(preset: str, targets: list[str], weight_args: Mapping[str, Any] | None, preset_name_to_scheme):
    if preset.upper() not in CT_SCHEMES:
        raise ValueError(f"make_ct_checkpoint: scheme={preset!r}; supported: {list(CT_SCHEMES)}")
    scheme = preset_name_to_scheme(preset, targets)
    if weight_args:
        # re-validate through compressed-tensors' model so its inference rules (strategy from
        # group_size, ...) apply to the overridden fields
        fields = scheme.weights.model_dump()
        fields.update(weight_args)
        scheme = type(scheme).model_validate({**scheme.model_dump(), "weights": fields})
    return scheme


def make_ct_checkpoint(
    weights: Mapping[str, torch.Tensor],
    scheme: str | Mapping[str, str],
    *,
    dtype: torch.dtype = torch.bfloat16,
    weight_args: Mapping[str, Any] | None = None,
    input_absmax: float = 4.0,
    ignore: list[str] | None = None,
) -> CTCheckpoint:
    """Quantize ``weights`` with compressed-tensors and return the checkpoint it would save.

    Args:
        weights: module name (``"model.layers.0.self_attn.q_a_proj"``) -> float ``[N, K]``.
        scheme: one of ``CT_SCHEMES`` for every module, or module name -> scheme (several
            config groups; the config's ``format`` becomes ``"mixed-precision"`` when the
            groups' formats differ). Modules named in neither stay unquantized.
        dtype: the model dtype: float weights of unquantized modules and the stored scales.
        weight_args: overrides of the weight ``QuantizationArgs`` of every group, e.g.
            ``{"group_size": 64}`` or ``{"strategy": "channel", "group_size": None}``.
        input_absmax: activation range the static ``input_scale`` (scheme ``FP8``) is set for.
        ignore: the config's ``ignore`` list (module names or ``"re:"`` regexes).

    Returns:
        ``CTCheckpoint(state_dict, config, dequantized)``; ``dequantized[name]`` is the fp32
        weight compressed-tensors' decompressor reads back (``weight.float()`` for a module
        left unquantized).
    """
    (BaseCompressor, ModelCompressor, QuantizationConfig, apply_quantization_config,
     preset_name_to_scheme, calculate_qparams) = _import_ct()

    model = _build_model(weights, dtype)
    per_module = {name: scheme for name in weights} if isinstance(scheme, str) else dict(scheme)
    unknown = sorted(set(per_module) - set(weights))
    if unknown:
        raise ValueError(f"make_ct_checkpoint: scheme names modules not in weights: {unknown}")
    by_preset: dict[str, list[str]] = {}
    for name, preset in per_module.items():
        by_preset.setdefault(preset.upper(), []).append(name)
    if isinstance(scheme, str):
        groups = {"group_0": _scheme_for(scheme, ["Linear"], weight_args, preset_name_to_scheme)}
    else:
        groups = {
            f"group_{i}": _scheme_for(preset, names, weight_args, preset_name_to_scheme)
            for i, (preset, names) in enumerate(sorted(by_preset.items()))
        }
    apply_quantization_config(model, QuantizationConfig(config_groups=groups, ignore=list(ignore or [])), show_progress=False)

    schemes = {}
    with torch.no_grad():
        for name, module in model.named_modules():
            scheme_obj = getattr(module, "quantization_scheme", None)
            if scheme_obj is None or not isinstance(module, torch.nn.Linear):
                continue
            schemes[name] = scheme_obj
            wargs = scheme_obj.weights
            lo, hi = _min_max(module.weight.detach().float(), wargs)
            scale, zero_point = calculate_qparams(lo, hi, wargs)
            module.weight_scale.copy_(scale.to(module.weight_scale.dtype).reshape(module.weight_scale.shape))
            if hasattr(module, "weight_zero_point"):
                module.weight_zero_point.copy_(
                    zero_point.to(module.weight_zero_point.dtype).reshape(module.weight_zero_point.shape)
                )
            iargs = scheme_obj.input_activations
            if iargs is not None and not iargs.dynamic and hasattr(module, "input_scale"):
                bound = torch.tensor([input_absmax], dtype=torch.float32)
                in_scale, _ = calculate_qparams(-bound, bound, iargs)
                module.input_scale.copy_(in_scale.to(module.input_scale.dtype).reshape(module.input_scale.shape))

    compressor = ModelCompressor.from_pretrained_model(model)
    compressor.compress_model(model)
    state_dict = {k: v.detach().clone() for k, v in model.state_dict().items()}
    with tempfile.TemporaryDirectory() as tmp:
        compressor.update_config(tmp)
        with open(f"{tmp}/config.json") as f:
            config = json.load(f)["quantization_config"]

    dequantized = {}
    for name in weights:
        local = {k[len(name) + 1:]: v for k, v in state_dict.items() if k.startswith(name + ".")}
        if name not in schemes:
            dequantized[name] = local["weight"].float()
            continue
        sch = schemes[name]
        fmt = str(getattr(sch.format, "value", sch.format))
        widened = {k: (v.float() if v.dtype in (torch.float16, torch.bfloat16) else v) for k, v in local.items()}
        out = BaseCompressor.get_value_from_registry(fmt).decompress(widened, sch)
        dequantized[name] = out["weight"].float()
    return CTCheckpoint(state_dict, config, dequantized)


def legacy_zero_point_layout(ckpt: CTCheckpoint, version: str = "0.9.2") -> CTCheckpoint:
    """The same checkpoint as compressed-tensors <= 0.9 stored it: asymmetric ``weight_zero_point``
    unpacked, int8 ``[N, G]`` in the signed range, and ``version`` set accordingly.

    Unpacking uses compressed-tensors' own ``unpack_from_int32``; the weights and the reference
    are unchanged (only the zero points' storage differs between the versions).
    """
    _import_ct()
    from compressed_tensors.compressors.pack_quantized.helpers import unpack_from_int32

    config = json.loads(json.dumps(ckpt.config))
    config["version"] = version
    bits = {g["weights"]["num_bits"] for g in config["config_groups"].values()
            if g.get("weights") and not g["weights"].get("symmetric", True)}
    if len(bits) > 1:
        raise ValueError(f"legacy_zero_point_layout: asymmetric groups with different num_bits {sorted(bits)}")
    state_dict = dict(ckpt.state_dict)
    for key, zp in ckpt.state_dict.items():
        if not key.endswith(".weight_zero_point") or zp.dtype != torch.int32:
            continue
        module = key[: -len(".weight_zero_point")]
        n = int(state_dict[f"{module}.weight_shape"][0])
        groups = state_dict[f"{module}.weight_scale"].shape[1]
        (num_bits,) = bits
        state_dict[key] = unpack_from_int32(zp, num_bits, torch.Size((n, groups)), packed_dim=0)
    return CTCheckpoint(state_dict, config, ckpt.dequantized)


def write_ct_fixtures(
    directory: str,
    *,
    k: int = 1024,
    sizes: tuple[int, ...] = (512, 200),
    block_k: int = 1000,
    names: tuple[str, ...] = ("model.layers.0.self_attn.q_a_proj", "model.layers.0.self_attn.kv_a_proj_with_mqa"),
    seed: int = 0,
) -> list[str]:
    """Write one ``<scheme>.pt`` per ``CT_SCHEMES`` entry into ``directory`` for machines without
    compressed-tensors (the GPU image): ``torch.save`` of a dict with ``state_dict``, ``config``,
    ``dequantized`` (the producer's fp32 weights), ``names``, ``sizes`` and ``k`` (``block_k`` for
    FP8_BLOCK, so its K ends in a partial block). Returns the paths written."""
    os.makedirs(directory, exist_ok=True)
    gen = torch.Generator().manual_seed(seed)
    paths = []
    for scheme in CT_SCHEMES:
        kk = block_k if scheme == "FP8_BLOCK" else k
        weights = {n: torch.randn(s, kk, generator=gen) * 0.05 for n, s in zip(names, sizes)}
        ckpt = make_ct_checkpoint(weights, scheme)
        path = os.path.join(directory, f"{scheme}.pt")
        torch.save({"scheme": scheme, "state_dict": ckpt.state_dict, "config": ckpt.config,
                    "dequantized": ckpt.dequantized, "names": list(names), "sizes": list(sizes), "k": kk}, path)
        paths.append(path)
    return paths


if __name__ == "__main__":  # python -m qlinear.testing.compressed_tensors DIR
    if len(sys.argv) != 2:
        raise SystemExit("usage: python -m qlinear.testing.compressed_tensors OUTPUT_DIR")
    for written in write_ct_fixtures(sys.argv[1]):
        print(written)
