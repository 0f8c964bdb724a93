"""Optional install-time build of the CUDA RMSNorm extension (``qlinear/_norm_C*.so``).

Metadata lives in pyproject.toml. The extension is built only when torch with CUDA and nvcc are
importable / on PATH in the build environment, i.e. with ``pip install --no-build-isolation .``
on a CUDA machine; everywhere else (a CPU machine, pip's isolated build environment without
torch, ``QLINEAR_NO_CUDA_BUILD=1``) this installs pure Python and the extension is built on first
use instead (qlinear/kernels/cuda_ext.py).
"""

from __future__ import annotations

import os
import shutil

from setuptools import setup


def _cuda_extension() -> tuple[list, dict]:
    if os.environ.get("QLINEAR_NO_CUDA_BUILD") == "1":
        return [], {}
    try:
        import torch
        from torch.utils.cpp_extension import CUDA_HOME, BuildExtension, CUDAExtension
    except ImportError:  # no torch in the build environment: pure-Python install
        return [], {}
    if torch.version.cuda is None or CUDA_HOME is None or shutil.which("nvcc") is None:
        return [], {}
    # the source list and the flags live in qlinear/kernels/cuda_ext.py; read them without importing qlinear
    import ast

    tree = ast.parse(open(os.path.join("qlinear", "kernels", "cuda_ext.py")).read())

    def constant(name):
        return next(ast.literal_eval(n.value) for n in tree.body
                    if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", None) == name)

    ext = CUDAExtension(
        name="qlinear._norm_C",
        sources=[f"csrc/{f}" for f in constant("SOURCES")],
        include_dirs=[os.path.abspath("csrc")],
        extra_compile_args={"cxx": list(constant("CXX_FLAGS")), "nvcc": list(constant("CUDA_FLAGS"))},
    )
    return [ext], {"build_ext": BuildExtension}


_ext_modules, _cmdclass = _cuda_extension()
setup(ext_modules=_ext_modules, cmdclass=_cmdclass)
