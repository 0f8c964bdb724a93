"""Leaf helpers shared by every layer of the package.

Nothing here imports another qlinear module, triton, or a CUDA build: this is the bottom of
the import graph (see CONTRIBUTING.md).
"""

from __future__ import annotations

import dataclasses
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
    "Fp8GroupActivation",
    "define_op",
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


@dataclasses.dataclass(frozen=True)
class Fp8GroupActivation:
    """An activation already quantized per token and group of ``group_size`` columns, e.g. the
    ``(q, scales)`` that ``qlinear.ops.rms_norm_quant_fp8`` or ``per_token_group_quant_fp8`` returns:
    ``x[..., k] ~= q[..., k] * scales[..., k // group_size]``.

    ``q`` e4m3 ``[..., K]`` with ``stride(-1) == 1``; ``scales`` fp32 ``[..., cdiv(K, group_size)]``
    with the same leading dimensions (any strides: row- or column-major); ``dtype`` the output dtype
    of a layer fed with it (fp16 / bf16 / fp32: the dtype the activation had before quantization).
    A linear layer whose method quantizes activations this way (block-scaled FP8) takes it in place
    of ``x`` and skips its own quantization launch; other methods refuse it. Nothing is copied.
    """

    q: torch.Tensor
    scales: torch.Tensor
    group_size: int = 128
    dtype: torch.dtype = torch.bfloat16

    def __post_init__(self) -> None:
        q, s, g = self.q, self.scales, self.group_size
        if not isinstance(q, torch.Tensor) or q.dtype != FP8_E4M3 or q.dim() < 1 or q.shape[-1] == 0 or q.stride(-1) != 1:
            got = describe(q) if isinstance(q, torch.Tensor) else type(q).__name__
            raise TypeError(f"Fp8GroupActivation.q: expected {FP8_E4M3} [..., K] with K > 0 and stride(-1) == 1, got {got}")
        if not isinstance(g, int) or isinstance(g, bool) or g <= 0:
            raise ValueError(f"Fp8GroupActivation.group_size: expected a positive int, got {g!r}")
        expected = (*q.shape[:-1], cdiv(q.shape[-1], g))
        if not isinstance(s, torch.Tensor) or s.dtype != torch.float32 or tuple(s.shape) != expected:
            got = describe(s) if isinstance(s, torch.Tensor) else type(s).__name__
            raise ValueError(f"Fp8GroupActivation.scales: expected float32 {expected} (group {g}), got {got}")
        if s.device != q.device:
            raise ValueError(f"Fp8GroupActivation: scales on {s.device}, q on {q.device}")
        if self.dtype not in FLOAT_DTYPES:
            raise TypeError(f"Fp8GroupActivation.dtype: expected one of {FLOAT_DTYPES}, got {self.dtype}")

    # tensor-like views the layers use (shape checks, a row-parallel layer's column slice)
    @property
    def shape(self) -> torch.Size:
        return self.q.shape

    @property
    def device(self) -> torch.device:
        return self.q.device

    def dim(self) -> int:
        return self.q.dim()

    def narrow(self, dim: int, start: int, length: int) -> "Fp8GroupActivation":
        """Columns ``[start, start + length)`` (``dim`` must be the last): whole groups only, so
        ``start`` is a multiple of ``group_size`` and the slice ends on a group boundary or at K."""
        K, g = self.q.shape[-1], self.group_size
        if dim not in (-1, self.q.dim() - 1):
            raise ValueError(f"Fp8GroupActivation.narrow: only the last dimension can be sliced, got dim={dim}")
        if start < 0 or length < 0 or start + length > K:
            raise ValueError(f"Fp8GroupActivation.narrow: columns [{start}, {start + length}) outside [0, {K})")
        if start % g or ((start + length) % g and start + length != K):
            raise ValueError(f"Fp8GroupActivation.narrow: columns [{start}, {start + length}) cut a group of "
                             f"{g}; the slice must start and end on group boundaries (or at K = {K})")
        return Fp8GroupActivation(self.q.narrow(-1, start, length),
                                  self.scales.narrow(-1, start // g, cdiv(length, g)), g, self.dtype)


# Libraries that hold the definitions and kernels of define_op's operators: a registration lives as long
# as its Library object.
_LIBRARIES: dict[str, torch.library.Library] = {}


def _infer_schema(fn, mutates_args: tuple[str, ...]) -> str:
    infer = getattr(torch.library, "infer_schema", None)
    if infer is None:  # torch 2.4
        from torch._library.infer_schema import infer_schema as infer
    return infer(fn, mutates_args=mutates_args)


class _NoBackward(torch.autograd.Function):
    """Identity whose backward raises: the output of an operator that has no gradient formula."""

    @staticmethod
    def forward(ctx, qualname: str, t: torch.Tensor) -> torch.Tensor:
        ctx.qualname = qualname
        return t.view_as(t)

    @staticmethod
    def backward(ctx, grad):
        raise RuntimeError(f"{ctx.qualname}: no backward; qlinear's operators compute forward passes for inference")


class _Op:
    """An operator made by :func:`define_op`: calling it calls ``torch.ops.<ns>.<name>.default``."""

    def __init__(self, qualname: str, fn, mutates_args: tuple[str, ...]):
        ns, name = qualname.split("::")
        lib = _LIBRARIES.get(ns)
        if lib is None:
            lib = _LIBRARIES[ns] = torch.library.Library(ns, "FRAGMENT")
        lib.define(name + _infer_schema(fn, mutates_args))
        lib.impl(name, fn, "CompositeExplicitAutograd")
        self.qualname = qualname
        self.default = getattr(getattr(torch.ops, ns), name).default
        functools.update_wrapper(self, fn)

    def __call__(self, *args):
        out = self.default(*args)
        # torch's autograd fallback would only warn in the backward pass, with gradients of whatever the
        # kernel's own torch calls recorded
        if isinstance(out, torch.Tensor):
            return _NoBackward.apply(self.qualname, out) if out.requires_grad else out
        if isinstance(out, tuple) and any(isinstance(t, torch.Tensor) and t.requires_grad for t in out):
            return tuple(_NoBackward.apply(self.qualname, t) if t.requires_grad else t for t in out)
        return out

    def register_fake(self, fake):
        """Decorator: ``fake`` gives the outputs' shapes, dtypes and devices (torch.compile, meta tensors)."""
        torch.library.register_fake(self.qualname, fake)
        return fake


def define_op(qualname: str, *, mutates_args: tuple[str, ...] = ()):
    """Decorator: ``fn`` (annotated as for ``torch.library.custom_op``) becomes the operator ``qualname``
    ("ns::name"), one kernel for every device, and the decorated name the :class:`_Op` that calls it.

    Why not ``torch.library.custom_op``: its Python wrapper (an autograd function, alias checks, a dynamo
    guard) added ~9 us a call over calling the function itself, against ~2 us for this registration (CPU
    machine, torch 2.13, grad mode on), and an eager decode step of a few-microsecond kernel is paced by the
    host (benchmarks/results/session42: 35-40 us less per quantized layer call on the H200 machine). These operators are for inference: they
    register no autograd formula, and a backward through a tensor output raises.
    """
    return lambda fn: _Op(qualname, fn, tuple(mutates_args))
