"""Loader for the CUDA RMSNorm extension (``csrc/``): prebuilt at install time, else built on
first use with ``torch.utils.cpp_extension.load`` and cached.

The extension registers ``torch.ops.qlinear_C.rms_norm`` and ``torch.ops.qlinear_C.fused_add_rms_norm``
(TORCH_LIBRARY, no pybind11); :func:`load` returns the ``torch.ops.qlinear_C`` namespace.

Where the build goes: ``$QLINEAR_BUILD_DIR`` or ``~/.cache/qlinear/build``, in a sub-folder keyed
by a hash of the sources, the flags and the torch / CUDA versions, so an edit or an upgrade
rebuilds instead of loading a stale library. Flags: ``-O3``, SASS for sm_90 and compute_80 PTX
(JIT-compiled by the driver on any other arch >= 8.0).

Not imported by ``import qlinear``; importing this module is cheap (the cpp_extension machinery is
imported inside :func:`load`).
"""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path

import torch

__all__ = ["load", "is_available", "failure_reason", "csrc_dir", "EXT_NAME", "CUDA_FLAGS"]

EXT_NAME = "qlinear_norm_C"
_SOURCES = ("binding.cpp", "norm_launch.cu")
_HEADERS = ("norm.cuh", "norm_launch.h")
CUDA_FLAGS = (
    "-O3",
    "-gencode=arch=compute_90,code=sm_90",
    "-gencode=arch=compute_80,code=compute_80",
)
CXX_FLAGS = ("-O3",)

_PACKAGE_DIR = Path(__file__).resolve().parent.parent  # .../qlinear
_lock = threading.Lock()
_loaded = False
_failure: str | None = None


def csrc_dir() -> Path | None:
    """The folder holding the CUDA sources: ``qlinear/csrc`` when shipped as package data,
    else ``csrc/`` next to the package (the repository layout), else None."""
    for candidate in (_PACKAGE_DIR / "csrc", _PACKAGE_DIR.parent / "csrc"):
        if all((candidate / f).is_file() for f in _SOURCES + _HEADERS):
            return candidate
    return None


def _prebuilt() -> Path | None:
    """The library built by setup.py (``qlinear/_norm_C*.so``), unless the sources next to it
    are newer (an editable install whose csrc/ was edited after the build)."""
    libs = sorted(_PACKAGE_DIR.glob("_norm_C*.so"))
    if not libs:
        return None
    lib = libs[0]
    src = csrc_dir()
    if src is not None:
        newest = max((src / f).stat().st_mtime for f in _SOURCES + _HEADERS)
        if newest > lib.stat().st_mtime:
            return None
    return lib


def _build_dir(src: Path) -> Path:
    h = hashlib.sha256()
    for f in _SOURCES + _HEADERS:
        h.update(f.encode())
        h.update((src / f).read_bytes())
    h.update(" ".join(CUDA_FLAGS + CXX_FLAGS).encode())
    h.update(f"{torch.__version__}|{torch.version.cuda}".encode())
    root = os.environ.get("QLINEAR_BUILD_DIR") or os.path.join(Path.home(), ".cache", "qlinear", "build")
    path = Path(root) / f"{EXT_NAME}-{h.hexdigest()[:16]}"
    path.mkdir(parents=True, exist_ok=True)
    return path


def load(verbose: bool | None = None):
    """Load (building if needed) the extension; returns ``torch.ops.qlinear_C``.

    Raises RuntimeError with the reason when torch has no CUDA, the sources are missing, or the
    build fails. ``verbose`` (default: ``$QLINEAR_BUILD_VERBOSE == "1"``) shows the compiler output.
    """
    global _loaded, _failure
    if _loaded:
        return torch.ops.qlinear_C
    with _lock:
        if _loaded:
            return torch.ops.qlinear_C
        if torch.version.cuda is None:
            raise RuntimeError("torch was built without CUDA; the CUDA norm extension cannot be used")
        lib = _prebuilt()
        if lib is not None:
            torch.ops.load_library(str(lib))
        else:
            src = csrc_dir()
            if src is None:
                raise RuntimeError(
                    f"CUDA sources not found (looked for csrc/ in {_PACKAGE_DIR} and {_PACKAGE_DIR.parent})"
                )
            # cpp_extension imports setuptools and friends: only pay for it when building
            from torch.utils import cpp_extension

            if verbose is None:
                verbose = os.environ.get("QLINEAR_BUILD_VERBOSE") == "1"
            cpp_extension.load(
                name=EXT_NAME,
                sources=[str(src / f) for f in _SOURCES],
                extra_cflags=list(CXX_FLAGS),
                extra_cuda_cflags=list(CUDA_FLAGS),
                extra_include_paths=[str(src)],
                build_directory=str(_build_dir(src)),
                is_python_module=False,
                verbose=verbose,
            )
        _loaded = True
        _failure = None
        return torch.ops.qlinear_C


def is_available() -> bool:
    """True when :func:`load` succeeds; the first failure is remembered (see :func:`failure_reason`)
    so a broken toolchain costs one build attempt per process, not one per call."""
    global _failure
    if _loaded:
        return True
    if _failure is not None:
        return False
    try:
        load()
    except Exception as exc:  # any build / load error means "use another backend"
        _failure = f"{type(exc).__name__}: {exc}".strip()[:2000]
        return False
    return True


def failure_reason() -> str | None:
    """Why the last :func:`is_available` returned False (None if it did not fail)."""
    return _failure
