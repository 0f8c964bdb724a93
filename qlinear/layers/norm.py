"""RMSNorm module over :mod:`qlinear.ops.norm`."""

from __future__ import annotations

import torch
from torch import nn

from qlinear.ops.norm import fused_add_rms_norm, rms_norm

__all__ = ["RMSNorm", "rms_norm_weight_loader"]


def rms_norm_weight_loader(
    param: torch.Tensor, loaded_weight: torch.Tensor, loaded_shard_id: object = None
) -> None:
    """Copy a checkpoint's norm weight ``[H]`` into ``param`` (shape checked).

    A floating-point ``loaded_weight`` of another dtype (e.g. fp32 in the checkpoint, bf16
    parameter) is converted to ``param``'s dtype. The norm weight is replicated, so
    ``loaded_shard_id`` must be None.
    """
    if loaded_shard_id is not None:
        raise ValueError(f"loaded_shard_id: RMSNorm weights are not sharded, got {loaded_shard_id!r}")
    if not isinstance(loaded_weight, torch.Tensor):
        raise TypeError(f"loaded_weight: expected a torch.Tensor, got {type(loaded_weight).__name__}")
    if tuple(loaded_weight.shape) != tuple(param.shape):
        raise ValueError(
            f"loaded_weight: expected shape {tuple(param.shape)}, got {tuple(loaded_weight.shape)}"
        )
    if not loaded_weight.is_floating_point():
        raise TypeError(f"loaded_weight: expected a floating-point tensor, got {loaded_weight.dtype}")
    with torch.no_grad():
        param.data.copy_(loaded_weight)


class RMSNorm(nn.Module):
    """y = x / sqrt(mean(x^2, -1) + eps) * weight over the last dim (size ``hidden_size``).

    ``forward(x)`` returns a new tensor; ``forward(x, residual)`` runs the fused add in place
    (residual <- x + residual; x <- rms_norm(residual)) and returns ``(x, residual)``.
    x / residual: ``[..., hidden_size]`` in ``params_dtype`` with ``stride(-1) == 1`` (other strides
    free). ``weight`` is a ``[hidden_size]`` parameter initialised to ones, with a
    ``weight_loader(param, loaded_weight, loaded_shard_id=None)`` attribute for checkpoint loading.
    ``backend`` (None: automatic) is passed to the ops.
    """

    def __init__(
        self,
        hidden_size: int,
        eps: float = 1e-6,
        params_dtype: torch.dtype = torch.bfloat16,
        device: torch.device | str | None = None,
        backend: str | None = None,
    ) -> None:
        super().__init__()
        if hidden_size <= 0:
            raise ValueError(f"hidden_size: expected a positive int, got {hidden_size}")
        self.hidden_size = hidden_size
        self.eps = float(eps)
        self.backend = backend
        self.weight = nn.Parameter(
            torch.ones(hidden_size, dtype=params_dtype, device=device), requires_grad=False
        )
        self.weight.weight_loader = rms_norm_weight_loader

    def forward(
        self, x: torch.Tensor, residual: torch.Tensor | None = None
    ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        if residual is None:
            return rms_norm(x, self.weight, self.eps, backend=self.backend)
        fused_add_rms_norm(x, residual, self.weight, self.eps, backend=self.backend)
        return x, residual

    def extra_repr(self) -> str:
        return f"{self.hidden_size}, eps={self.eps}, dtype={self.weight.dtype}"
