"""Quantization configs and methods, and the registry that maps ``quant_method`` to a config.

Concrete formats are imported when a checkpoint asks for them, not at ``import qlinear``:
compressed-tensors pulls in pydantic and transformers, which an inference framework on a GPU
image may not carry, and which take seconds to import.
"""

from __future__ import annotations

import importlib
from typing import Any

from qlinear.quantization.base import QuantizationConfig, QuantizeMethodBase, match_module_name
from qlinear.quantization.unquantized import UnquantizedLinearMethod

__all__ = [
    "QuantizationConfig",
    "QuantizeMethodBase",
    "UnquantizedLinearMethod",
    "get_quantization_config",
    "register_quantization_config",
    "supported_quant_methods",
    "match_module_name",
]

# quant_method -> "module:ClassName". Resolved on lookup so that each format's own dependencies
# load only when a checkpoint uses that format.
_REGISTRY: dict[str, str] = {
    "fp8": "qlinear.quantization.fp8:Fp8Config",
    "gptq": "qlinear.quantization.gptq:GPTQConfig",
    "awq": "qlinear.quantization.awq:AWQConfig",
    "compressed-tensors": "qlinear.quantization.compressed_tensors:CompressedTensorsConfig",
}


def supported_quant_methods() -> list[str]:
    return sorted(_REGISTRY)


def register_quantization_config(quant_method: str, target: str | type[QuantizationConfig]) -> None:
    """Add a format: ``target`` is a ``QuantizationConfig`` subclass or ``"module:ClassName"``."""
    if isinstance(target, type):
        if not issubclass(target, QuantizationConfig):
            raise TypeError(f"register_quantization_config: {target!r} is not a QuantizationConfig subclass")
        target = f"{target.__module__}:{target.__qualname__}"
    _REGISTRY[quant_method] = target


def _resolve(quant_method: str) -> type[QuantizationConfig]:
    module_name, _, class_name = _REGISTRY[quant_method].partition(":")
    cls = getattr(importlib.import_module(module_name), class_name)
    if not (isinstance(cls, type) and issubclass(cls, QuantizationConfig)):
        raise TypeError(f"registry entry {quant_method!r} -> {cls!r} is not a QuantizationConfig")
    return cls


def get_quantization_config(hf_quantization_config: dict[str, Any] | None) -> QuantizationConfig | None:
    """Parse a checkpoint's ``config.json["quantization_config"]``; ``None`` means unquantized.

    Raises ``ValueError`` naming the setting when the method or one of its settings is not
    supported, listing what is.
    """
    if hf_quantization_config is None:
        return None
    if not isinstance(hf_quantization_config, dict):
        raise TypeError(
            f"quantization_config must be a dict or None, got {type(hf_quantization_config).__name__}"
        )
    method = hf_quantization_config.get("quant_method")
    if method is None:
        raise ValueError(
            f"quantization_config has no 'quant_method' (keys: {sorted(hf_quantization_config)}); "
            f"supported methods: {supported_quant_methods()}"
        )
    if method not in _REGISTRY:
        raise ValueError(f"quantization_config: unsupported quant_method={method!r}; supported: {supported_quant_methods()}")
    return _resolve(method).from_config(hf_quantization_config)
