"""Leaf helpers shared by every layer of the package.

Nothing here imports another qlinear module, triton, or a CUDA build: this is the bottom of
the import graph (see CONTRIBUTING.md).
"""

from __future__ import annotations

import functools
import os

import torch

__all__ = [
    "cdiv",
    "round_up",
    "FLOAT_DTYPES",
    "FP8_E4M3",
    "FP8_E4M3_MAX",
    "empty_group_scales",
    "is_lossless_cast",
    "describe",
    "cuda_capability",
    "env_backend",
]


def cdiv(a: int, b: int) -> int:
    """ceil(a / b) for non-negative integers."""
    return -(-a // b)


def round_up(a: int, b: int) -> int:
    """Smallest multiple of ``b`` that is >= ``a``."""
    return cdiv(a, b) * b


FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32)
FP8_E4M3 = torch.float8_e4m3fn
FP8_E4M3_MAX = float(torch.finfo(torch.float8_e4m3fn).max)  # 448.0


def empty_group_scales(M: int, G: int, column_major: bool, device) -> torch.Tensor:
    """Uninitialized fp32 per-token-group scales ``[M, G]``: row-major, or with
    ``column_major`` the transpose of a contiguous ``[G, M]`` (strides ``(1, M)``, the layout the
    block GEMM reads coalesced). One allocation for kernels, references and fakes, so their
    strides agree even for size-1 dimensions."""
    if column_major:
        return torch.empty((G, M), dtype=torch.float32, device=device).t()
    return torch.empty((M, G), dtype=torch.float32, device=device)

# Casts that keep every value exactly: a checkpoint's fp16 / bf16 / e8m0 scales may be widened
# into fp32 parameters without anyone having to notice.
_LOSSLESS = {
    torch.float16: {torch.float16, torch.float32, torch.float64},
    torch.bfloat16: {torch.bfloat16, torch.float32, torch.float64},
    torch.float32: {torch.float32, torch.float64},
}
if hasattr(torch, "float8_e8m0fnu"):
    _LOSSLESS[torch.float8_e8m0fnu] = {torch.float8_e8m0fnu, torch.float32, torch.float64}


def is_lossless_cast(src: torch.dtype, dst: torch.dtype) -> bool:
    """True when every value of ``src`` is representable in ``dst`` (so a cast loses nothing)."""
    return src == dst or dst in _LOSSLESS.get(src, ())


def describe(t: torch.Tensor) -> str:
    """Short shape/dtype/stride text for error messages."""
    return f"shape={tuple(t.shape)} dtype={t.dtype} stride={tuple(t.stride())}"


@functools.lru_cache(maxsize=None)
def cuda_capability(device_index: int = 0) -> tuple[int, int] | None:
    """(major, minor) of a CUDA device, or None without one. Cached: the answer cannot change."""
    if not torch.cuda.is_available():
        return None
    return torch.cuda.get_device_capability(device_index)


def env_backend(var: str, choices: tuple[str, ...]) -> str | None:
    """Backend named by environment variable ``var`` (lower-cased), checked against ``choices``."""
    value = os.environ.get(var)
    if value is None or value == "" or value.lower() == "auto":
        return None
    value = value.lower()
    if value not in choices:
        raise ValueError(f"environment variable {var}={value!r}: expected one of {choices} or 'auto'")
    return value
