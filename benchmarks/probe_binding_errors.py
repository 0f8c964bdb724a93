"""Why does a failing check in the FP8 decode binding kill the process on the H200 image?

    python benchmarks/probe_binding_errors.py

Runs each case in a child process and prints its exit code: errors raised by torch itself, by
qlinear's other bindings (a TORCH_CHECK with and without integers in the message) and by the FP8
decode binding; plus the compilers and the libstdc++ the process loads.
"""

from __future__ import annotations

import subprocess
import sys

PRE = """
import torch
from qlinear.kernels import cuda_ext
C = cuda_ext.load()
dev = "cuda"
"""
CASES = {
    "torch mm shape error": "torch.mm(torch.ones(2, 3, device=dev), torch.ones(4, 5, device=dev))",
    "rms_norm weight size (TORCH_CHECK, ints)": (
        "x = torch.randn(1, 4, 64, device=dev, dtype=torch.bfloat16); "
        "C.rms_norm(torch.empty_like(x), x, torch.ones(32, device=dev, dtype=torch.bfloat16), 1e-6, 0, 0, 0, 0, 0, 0, 0)"),
    "rms_norm weight dtype": (
        "x = torch.randn(1, 4, 64, device=dev, dtype=torch.bfloat16); "
        "C.rms_norm(torch.empty_like(x), x, torch.ones(64, device=dev), 1e-6, 0, 0, 0, 0, 0, 0, 0)"),
    "fp8 gemv wsi shape": (
        "w = torch.randn(256, 256, device=dev).to(torch.float8_e4m3fn); s = torch.ones(2, 2, device=dev); "
        "x = torch.randn(2, 256, device=dev, dtype=torch.bfloat16); ws = torch.zeros(8192, dtype=torch.int32, device=dev); "
        "C.fp8_block_gemv(x, w, s[:, :1], None, ws, 0, False, 1e-10)"),
    "fp8 gemv weight dtype": (
        "w = torch.randn(256, 256, device=dev).to(torch.float8_e4m3fn); s = torch.ones(2, 2, device=dev); "
        "x = torch.randn(2, 256, device=dev, dtype=torch.bfloat16); ws = torch.zeros(8192, dtype=torch.int32, device=dev); "
        "C.fp8_block_gemv(x, w.view(torch.uint8), s, None, ws, 0, False, 1e-10)"),
}


# A CPU-only extension built here (load_inline, the same compiler flags as qlinear's): does any
# c10::Error from a TORCH_LIBRARY op kill the process, or only some kinds?
INLINE = r"""
#include <torch/library.h>
#include <c10/util/Exception.h>
void throw_kind(int64_t kind) {
  if (kind == 0) TORCH_CHECK(false, "plain error");
  if (kind == 1) TORCH_CHECK(false, "error with an int ", kind);
  if (kind == 2) TORCH_CHECK_TYPE(false, "type error with an int ", kind);
  if (kind == 3) TORCH_CHECK_VALUE(false, "value error with an int ", kind);
  if (kind == 4) TORCH_CHECK_INDEX(false, "index error with an int ", kind);
}
TORCH_LIBRARY(qlinear_probe_err, m) { m.def("throw_kind(int kind) -> ()", &throw_kind); }
"""
PRE_INLINE = """
import torch
from torch.utils.cpp_extension import load_inline
load_inline("qlinear_probe_err", cpp_sources=[SRC], is_python_module=False, build_directory=BUILD)
"""


def main() -> None:
    import os
    import tempfile

    build = os.path.join(tempfile.gettempdir(), "qlinear_probe_err")
    os.makedirs(build, exist_ok=True)
    for kind, label in enumerate(("TORCH_CHECK", "TORCH_CHECK + int", "TORCH_CHECK_TYPE", "TORCH_CHECK_VALUE",
                                  "TORCH_CHECK_INDEX")):
        src = (f"SRC = {INLINE!r}\nBUILD = {build!r}\n" + PRE_INLINE
               + f"try:\n    torch.ops.qlinear_probe_err.throw_kind({kind})\nexcept Exception as e:\n"
               "    print(type(e).__name__, str(e).splitlines()[0][:120])\n")
        p = subprocess.run([sys.executable, "-X", "faulthandler", "-c", src], capture_output=True, text=True, timeout=300)
        tail = (p.stdout.strip().splitlines() or [""])[-1]
        err = " | ".join(p.stderr.strip().splitlines()[-2:]) if p.returncode else ""
        print(f"BINDERR inline {label:28s} rc={p.returncode:4d} {tail} {err[:200]}", flush=True)
    for name, code in CASES.items():
        src = PRE + f"try:\n    {code}\n    print('NO ERROR')\nexcept Exception as e:\n    print(type(e).__name__, str(e).splitlines()[0][:160])\n"
        p = subprocess.run([sys.executable, "-X", "faulthandler", "-c", src], capture_output=True, text=True, timeout=120)
        tail = (p.stdout.strip().splitlines() or [""])[-1]
        err = " | ".join(p.stderr.strip().splitlines()[-3:]) if p.returncode else ""
        print(f"BINDERR {name:42s} rc={p.returncode:4d} {tail} {err[:300]}", flush=True)
    for cmd in (["g++", "--version"], ["/opt/gcc/bin/g++", "--version"]):
        try:
            print("BINDERR", " ".join(cmd), "->", subprocess.run(cmd, capture_output=True, text=True).stdout.splitlines()[0])
        except OSError as exc:
            print("BINDERR", " ".join(cmd), "->", exc)
    import torch

    show = torch.__config__.show()
    print("BINDERR torch built with:", " ".join(line.strip() for line in show.splitlines() if "C++ Version" in line or "GCC" in line or "CXX_COMPILER" in line)[:300])
    with open("/proc/self/maps") as f:
        libs = sorted({line.split()[-1] for line in f if "libstdc++" in line or "libgcc_s" in line})
    print("BINDERR loaded:", libs)


if __name__ == "__main__":
    main()
