"""Checkpoint tensor names -> (parameter, shard), and the checks a tensor must pass to load.

A checkpoint names tensors ``<module path>.<param>``. A parameter of the model is reachable
under its ``named_parameters`` path and, for a ``LinearBase`` layer, under its ``prefix`` (the
layer's module path in the checkpoint). A fused layer at ``<parent>.<fused>`` whose shards are
``[s0, s1, ...]`` (``fused_modules={"<fused>": [...]}`` or the layer's ``shard_names``) also
takes ``<parent>.<s_i>.<param>`` as shard ``i``; a tensor named after the fused layer itself is
already fused on disk (shard ``None``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

import torch
from torch import nn

from qlinear.layers.linear import LinearBase
from qlinear.parameter import accepts_dtype

__all__ = ["Target", "ParamInfo", "ParamIndex", "build_index", "dtype_accepted", "check_tensor"]


@dataclass
class ParamInfo:
    """One parameter of the model and what the checkpoint must provide for it."""

    name: str  # model path (named_parameters)
    param: nn.Parameter
    module: nn.Module
    module_name: str
    pname: str  # attribute name on its module
    shard_names: list[str] | None = None  # checkpoint module names of the shards
    ckpt_names: list[str] = field(default_factory=list)  # names that reach it directly (shard None)
    display: str = ""  # checkpoint-side name, for messages

    def shard_tensor_name(self, shard: int) -> str:
        """Checkpoint name of one shard's tensor (``<parent>.<shard name>.<param>``)."""
        if not self.shard_names:
            return f"{self.display} (shard {shard})"
        parent = self.display.rpartition(".")[0].rpartition(".")[0]
        return _join(parent, self.shard_names[shard], self.pname)

    @property
    def num_shards(self) -> int | None:
        """Shards the parameter's loader distinguishes, or None for a plain parameter."""
        plan = getattr(self.param, "plan", None)
        return plan.num_shards if plan is not None and hasattr(self.param, "loaded_shards") else None

    @property
    def required(self) -> bool:
        return bool(getattr(self.param, "required", True))

    def already_loaded(self) -> set[int]:
        return set(getattr(self.param, "loaded_shards", ()))

    def label(self, shard: int | None) -> str:
        if shard is None:
            return self.display
        who = self.shard_names[shard] if self.shard_names and shard < len(self.shard_names) else f"shard {shard}"
        return f"{self.display}[{who}]"


@dataclass(frozen=True)
class Target:
    info: ParamInfo
    shard: int | None


@dataclass
class ParamIndex:
    params: list[ParamInfo]
    direct: dict[str, ParamInfo]  # checkpoint name -> parameter (shard None)
    aliases: dict[str, tuple[nn.Module, str, int, list[str]]]  # checkpoint module path -> (module, its name, shard, shard names)
    finished: dict[str, str]  # checkpoint module paths of layers already finished -> layer name
    by_module: dict[tuple[int, str], ParamInfo] = field(default_factory=dict)  # (id(module), attr) -> parameter

    def __post_init__(self) -> None:
        self.by_module = {(id(info.module), info.pname): info for info in self.params}

    def lookup(self, name: str) -> Target | str:
        """The parameter and shard a checkpoint tensor goes to, or why none does."""
        info = self.direct.get(name)
        if info is not None:
            return Target(info, None)
        module_path, _, pname = name.rpartition(".")
        alias = self.aliases.get(module_path)
        if alias is not None:
            module, module_name, shard, _ = alias
            info = self.by_module.get((id(module), pname))
            if info is not None:
                return Target(info, shard)
            return f"fused layer {module_name or '<root>'} (shard {shard}) has no parameter {pname!r}"
        if module_path in self.finished:
            return (
                f"layer {self.finished[module_path] or '<root>'} is already finished (process_weights_after_loading ran); "
                f"build a fresh layer to load it again"
            )
        return "no parameter of the model has this name"


def _join(*parts: str) -> str:
    return ".".join(p for p in parts if p)


def _fused_names(module_name: str, fused_modules: Mapping[str, Sequence[str]]) -> list[str] | None:
    """Shard names for the module at ``module_name``: a key equal to the whole path or to its
    trailing components (``"fused_qkv_a_proj"`` matches ``"model.layers.0.self_attn.fused_qkv_a_proj"``)."""
    best = None
    for key, names in fused_modules.items():
        if module_name == key or module_name.endswith("." + key):
            if best is None or len(key) > len(best[0]):
                best = (key, names)
    return list(best[1]) if best is not None else None


def build_index(model: nn.Module, fused_modules: Mapping[str, Sequence[str]] | None) -> ParamIndex:
    """Every parameter of ``model`` and every checkpoint name that reaches it.

    Raises ``ValueError`` when the model itself is inconsistent with ``fused_modules`` (a fused
    layer with a different number of shards, shard names that disagree with the layer's
    ``shard_names``) or two parameters claim one checkpoint name.
    """
    fused_modules = dict(fused_modules or {})
    for key, names in fused_modules.items():
        if not isinstance(key, str) or isinstance(names, str) or not all(isinstance(n, str) for n in names) or not names:
            raise TypeError(f"fused_modules: expected {{str: [str, ...]}}, got {key!r}: {names!r}")
    params: list[ParamInfo] = []
    direct: dict[str, ParamInfo] = {}
    aliases: dict[str, tuple[nn.Module, str, int, list[str]]] = {}
    finished: dict[str, str] = {}
    seen: set[int] = set()

    def claim(table: dict, key: str, value, what: str) -> None:
        old = table.get(key)
        if old is not None and old is not value and not (isinstance(old, tuple) and old[0] is value[0] and old[2] == value[2]):
            raise ValueError(f"load_checkpoint: checkpoint name {key!r} would reach two {what}s of the model")
        table[key] = value

    for module_name, module in model.named_modules():
        paths = [module_name]
        prefix = getattr(module, "prefix", None) if isinstance(module, LinearBase) else None
        if prefix and prefix != module_name:
            paths.append(prefix)

        shard_names = _fused_names(module_name, fused_modules)
        if shard_names is None and prefix:
            shard_names = _fused_names(prefix, fused_modules)
        layer_names = getattr(module, "shard_names", None) if isinstance(module, LinearBase) else None
        if isinstance(module, LinearBase):
            n = len(module.output_sizes)
            if shard_names is not None and len(shard_names) != n:
                raise ValueError(
                    f"fused_modules gives {module_name or prefix or '<root>'} {len(shard_names)} shards "
                    f"{shard_names}, but the layer has {n} (output_sizes={module.output_sizes})"
                )
            if shard_names is not None and layer_names and list(layer_names) != shard_names:
                raise ValueError(
                    f"{module_name or prefix or '<root>'}: fused_modules names its shards {shard_names}, "
                    f"the layer's shard_names say {list(layer_names)}"
                )
            shard_names = shard_names or (list(layer_names) if layer_names else None)

        if isinstance(module, LinearBase) and module.weights_finished:
            for path in paths:
                finished[path] = module_name
                parent = path.rpartition(".")[0]
                for shard in shard_names or ():
                    finished[_join(parent, shard)] = module_name
            continue

        for pname, param in module.named_parameters(recurse=False):
            if id(param) in seen:  # tied: loaded through its first name only
                continue
            seen.add(id(param))
            info = ParamInfo(_join(module_name, pname), param, module, module_name, pname, shard_names)
            info.display = _join(paths[-1], pname)
            params.append(info)
            for path in paths:
                key = _join(path, pname)
                claim(direct, key, info, "parameter")
                info.ckpt_names.append(key)

        if shard_names:
            for path in paths:
                parent = path.rpartition(".")[0]
                for i, shard in enumerate(shard_names):
                    claim(aliases, _join(parent, shard), (module, module_name, i, shard_names), "fused layer")
    return ParamIndex(params, direct, aliases, finished)


def dtype_accepted(param: torch.Tensor, dtype: torch.dtype) -> bool:
    """Would ``param``'s loader take a checkpoint tensor of ``dtype``? ``accepts_dtype``'s rule; a
    plain ``nn.Parameter`` (no ``convertible`` attribute) counts as convertible when it is a float:
    its default loader casts floats."""
    return accepts_dtype(param.dtype, dtype, convertible=getattr(param, "convertible", param.dtype.is_floating_point))


def check_tensor(target: Target, shape: tuple[int, ...], dtype: torch.dtype) -> str | None:
    """Why a ``shape`` / ``dtype`` tensor cannot load into ``target``, or None if it can."""
    info, param = target.info, target.info.param
    where = info.label(target.shard)
    checkpoint_shape = getattr(param, "checkpoint_shape", None)
    has_loader = callable(getattr(param, "weight_loader", None))
    if target.shard is not None and not has_loader:
        return f"{where}: a plain parameter cannot take a shard (loaded_shard_id={target.shard})"
    if callable(checkpoint_shape):
        expected = tuple(checkpoint_shape(target.shard))
        ok = shape == expected or (expected == () and shape == (1,))  # a scalar slot takes [1] too
        what = "all shards fused on disk" if target.shard is None and (info.num_shards or 1) > 1 else (
            f"shard {target.shard}" if target.shard is not None else "tensor")
    elif has_loader:
        ok, expected, what = True, shape, "tensor"  # a foreign loader: its own checks run at load time
    else:
        expected = tuple(param.shape)
        ok, what = shape == expected, "tensor"
    problems = []
    if not ok:
        problems.append(f"{what}: expected shape {expected}, got {shape}")
    if not dtype_accepted(param, dtype):
        want = param.dtype
        rule = " (or a float dtype that widens to it exactly)" if want.is_floating_point and want.itemsize > 1 else " exactly"
        problems.append(f"expected dtype {param.dtype}{rule}, got {dtype}")
    return f"{where}: " + "; ".join(problems) if problems else None
