"""Loader for the CUDA RMSNorm extension (``csrc/``): prebuilt at install time, else built on
first use with ``torch.utils.cpp_extension.load`` (or, when ninja is not installed, a plain
nvcc + c++ build) and cached.

The extension registers its ops in the ``qlinear_C`` namespace (``binding.cpp`` owns
``TORCH_LIBRARY(qlinear_C)``; every other ``binding_*.cpp`` adds to it with
``TORCH_LIBRARY_FRAGMENT``; no pybind11); :func:`load` returns the ``torch.ops.qlinear_C`` namespace.
Sources are listed once, in :data:`SOURCES` / :data:`HEADERS` (setup.py and the CI compile test read
them from here), and so are the install-time flags (:data:`CUDA_FLAGS`, :data:`CXX_FLAGS`: setup.py).

Where the build goes: ``$QLINEAR_BUILD_DIR`` or ``~/.cache/qlinear/build``, in a sub-folder keyed
by a hash of the sources, the flags and the torch / CUDA versions, so an edit or an upgrade
rebuilds instead of loading a stale library. Flags: ``-O3``; a first-use build compiles SASS for
the GPU at hand only (:func:`jit_cuda_flags`; sm_90a on an sm_90 GPU), setup.py :data:`CUDA_FLAGS`:
SASS for sm_90a and compute_80 PTX (JIT-compiled by the driver on any other arch >= 8.0).

Not imported by ``import qlinear``; importing this module is cheap (the cpp_extension machinery is
imported inside :func:`load`).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sysconfig
import threading
import warnings
from pathlib import Path

import torch

__all__ = ["load", "is_available", "failure_reason", "failed", "ops_or_none", "csrc_dir", "EXT_NAME", "CUDA_FLAGS", "jit_cuda_flags", "SOURCES", "HEADERS"]

EXT_NAME = "qlinear_norm_C"
# Translation units (one launcher .cu + one binding .cpp per kernel family) and the headers whose
# edits must trigger a rebuild.
SOURCES = (
    "binding.cpp",
    "norm_launch.cu",
    "norm_launch_fused.cu",
    "binding_norm_quant.cpp",
    "norm_quant_launch.cu",
    "group_quant_launch.cu",
    "binding_w4a16.cpp",
    "w4a16_gemv_launch.cu",
    "w4a16_gemm_launch.cu",
    "w4a16_wgmma_launch.cu",
    "w4a16_ring_bf16.cu",
    "w4a16_ring_f16.cu",
    "binding_norm_slices_quant.cpp",
    "norm_slices_quant_launch.cu",
    "binding_fp8_gemv.cpp",
    "fp8_gemv_launch.cu",
    "fp8_gemv_launch_preq.cu",
    "w4a16_bulk_bf16.cu",
    "w4a16_bulk_f16.cu",
    "w4a16_tma_launch.cu",
    "w4a16_xs.cu",
    "fp8_tma_launch.cu",
)
HEADERS = (
    "device_attrs.h",
    "norm.cuh",
    "norm_launch.h",
    "norm_launch_impl.cuh",
    "norm_quant.cuh",
    "norm_quant_launch.h",
    "group_quant.cuh",
    "group_quant_launch.h",
    "pdl.cuh",
    "bulk_copy.cuh",
    "cluster.cuh",
    "w4a16_gemv.cuh",
    "w4a16_tma.cuh",
    "w4a16_xs.cuh",
    "w4a16_gemv_launch.h",
    "w4a16_gemm.cuh",
    "w4a16_gemm_launch.h",
    "w4a16_wgmma.cuh",
    "w4a16_params.cuh",
    "norm_slices_quant.cuh",
    "norm_slices_quant_launch.h",
    "fp8_gemv.cuh",
    "fp8_gemv_launch.h",
    "fp8_gemv_dispatch.cuh",
    "fp8_tma.cuh",
    "tensor_map.h",
    "code_list.h",
    "int_math.h",
    "msg.h",
    "binding_util.h",
)
_SOURCES, _HEADERS = SOURCES, HEADERS
CUDA_FLAGS = (
    "-O3",
    # sm_90a, not sm_90: the W4A16 wgmma GEMM needs the architecture-specific features; the other
    # kernels' code is the same for both
    "-gencode=arch=compute_90a,code=sm_90a",
    "-gencode=arch=compute_80,code=compute_80",
)
CXX_FLAGS = ("-O3",)


def jit_cuda_flags() -> tuple[str, ...]:
    """nvcc flags of a first-use build: SASS for the GPU in this process only (one compile pass per
    translation unit instead of two; on the H200 image the two-target build took 45.7 s against the
    30 s first-use budget). Install-time builds (setup.py) keep :data:`CUDA_FLAGS`' targets."""
    if torch.cuda.is_available():
        major, minor = torch.cuda.get_device_capability()
        arch = f"{major}{minor}" + ("a" if (major, minor) == (9, 0) else "")  # wgmma: sm_90a
        return ("-O3", f"-gencode=arch=compute_{arch},code=sm_{arch}")
    return CUDA_FLAGS

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
    h.update(" ".join(jit_cuda_flags() + CXX_FLAGS).encode())
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
            build_dir = _build_dir(src)
            if cpp_extension.is_ninja_available():
                cpp_extension.load(
                    name=EXT_NAME,
                    sources=[str(src / f) for f in _SOURCES],
                    extra_cflags=list(CXX_FLAGS),
                    extra_cuda_cflags=list(jit_cuda_flags()),
                    extra_include_paths=[str(src)],
                    build_directory=str(build_dir),
                    is_python_module=False,
                    verbose=verbose,
                )
            else:
                torch.ops.load_library(str(_build_without_ninja(src, build_dir, verbose)))
        _loaded = True
        _failure = None
        return torch.ops.qlinear_C


def _std_flag() -> str:
    # the C++ standard torch's own extension builder uses for this torch version
    from torch.utils import cpp_extension

    text = Path(cpp_extension.__file__).read_text()
    return "-std=c++20" if "'-std=c++20'" in text else "-std=c++17"


def _cuda_home(torch_guess: str | None) -> str:
    nvcc = shutil.which("nvcc")
    candidates = [torch_guess, os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda",
                  str(Path(nvcc).resolve().parents[1]) if nvcc else None]
    for c in filter(None, candidates):
        if (Path(c) / "include" / "cuda_runtime.h").is_file():
            return c
    raise RuntimeError("CUDA toolkit not found (no include/cuda_runtime.h under CUDA_HOME, /usr/local/cuda or nvcc's prefix)")


def build_commands(src: Path, build_dir: Path) -> tuple[list[list[str]], list[str], Path]:
    """(compile commands, link command, library path) of a plain nvcc + g++ build, used when
    ninja (which cpp_extension.load needs) is not installed."""
    from torch.utils import cpp_extension

    cuda_home = _cuda_home(cpp_extension.CUDA_HOME)
    nvcc = str(Path(cuda_home) / "bin" / "nvcc") if (Path(cuda_home) / "bin" / "nvcc").is_file() else "nvcc"
    std = _std_flag()
    abi = f"-D_GLIBCXX_USE_CXX11_ABI={int(torch._C._GLIBCXX_USE_CXX11_ABI)}"
    incs = [f"-I{p}" for p in [str(src), *cpp_extension.include_paths(), str(Path(cuda_home) / "include"),
                               sysconfig.get_paths()["include"]]]
    lib = build_dir / f"{EXT_NAME}.so"
    compiles, objs = [], []
    for f in _SOURCES:
        obj = build_dir / (Path(f).stem + (".cuda.o" if f.endswith(".cu") else ".o"))
        objs.append(str(obj))
        if f.endswith(".cu"):
            compiles.append([nvcc, *jit_cuda_flags(), std, abi, "-Xcompiler", "-fPIC", *incs, "-c", str(src / f), "-o", str(obj)])
        else:
            compiles.append(["c++", *CXX_FLAGS, std, abi, "-fPIC", "-w", *incs, "-c", str(src / f), "-o", str(obj)])
    torch_lib = str(Path(torch.__file__).parent / "lib")
    cuda_lib = str(Path(cuda_home) / "lib64")
    link = ["c++", "-shared", *objs, "-o", str(lib), f"-L{torch_lib}", f"-L{cuda_lib}",
            "-lc10", "-lc10_cuda", "-ltorch_cpu", "-ltorch_cuda", "-ltorch", "-lcudart", f"-Wl,-rpath,{torch_lib}"]
    return compiles, link, lib


def _build_without_ninja(src: Path, build_dir: Path, verbose: bool) -> Path:
    compiles, link, lib = build_commands(src, build_dir)
    if lib.is_file():
        return lib
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for cmd in compiles]
    for cmd, proc in zip(compiles, procs):
        out, _ = proc.communicate()
        if verbose or proc.returncode:
            print(" ".join(cmd), out, sep="\n")
        if proc.returncode:
            raise RuntimeError(f"compiling {cmd[-3]} failed (exit {proc.returncode}):\n{out[-3000:]}")
    tmp = lib.with_suffix(f".tmp{os.getpid()}.so")
    link[link.index(str(lib))] = str(tmp)
    proc = subprocess.run(link, capture_output=True, text=True)
    if proc.returncode:
        raise RuntimeError(f"linking {lib.name} failed:\n{proc.stderr[-3000:]}")
    os.replace(tmp, lib)  # atomic: a concurrent process sees the whole library or none
    return lib


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


def failed() -> bool:
    """True once a load attempt has failed; asking never starts a build (cheap enough for dispatch)."""
    return _failure is not None


_warned: set[str] = set()


def ops_or_none(fallback: str, stacklevel: int = 3):
    """``torch.ops.qlinear_C`` when the extension loads (:func:`is_available`), else None after one
    RuntimeWarning per process and ``fallback``: "qlinear: CUDA extension unavailable (<reason>);
    <fallback>". ``stacklevel`` counts from this function (3 = the caller's caller)."""
    if is_available():
        return load()
    if fallback not in _warned:
        _warned.add(fallback)
        warnings.warn(f"qlinear: CUDA extension unavailable ({_failure}); {fallback}", RuntimeWarning,
                      stacklevel=stacklevel)
    return None
