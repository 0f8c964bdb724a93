"""Snapshots of a layer's parameters, for tests that check a refused load leaves the layer as it was.

Bytes are compared, not values: parameters that no shard has reached yet hold uninitialized memory,
whose NaN patterns would make an untouched tensor unequal to itself under ``torch.equal``.
"""

from __future__ import annotations

import torch

__all__ = ["snapshot", "changed"]


def snapshot(layer: torch.nn.Module) -> dict[str, tuple[torch.Tensor, frozenset[int]]]:
    """Every parameter's bytes (a copy) and its set of loaded shards (empty where it keeps none)."""
    return {
        name: (p.detach().contiguous().view(torch.uint8).clone(), frozenset(getattr(p, "loaded_shards", ())))
        for name, p in layer.named_parameters()
    }


def changed(layer: torch.nn.Module, snap: dict[str, tuple[torch.Tensor, frozenset[int]]]) -> list[str]:
    """Names of the parameters whose bytes or loaded shards differ from ``snap`` (or that appeared or
    went away since)."""
    now = dict(layer.named_parameters())
    out = sorted(set(now) ^ set(snap))
    for name in sorted(set(now) & set(snap)):
        data, shards = snap[name]
        p = now[name]
        if not torch.equal(p.detach().contiguous().view(torch.uint8), data) or \
                frozenset(getattr(p, "loaded_shards", ())) != shards:
            out.append(name)
    return out
