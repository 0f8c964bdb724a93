"""csrc/ compiles without a GPU: nvcc builds the launchers (all kernel instantiations) for sm_90a,
and the torch binding passes a g++ syntax check against torch's headers. A compile error in
csrc/ fails CI on a machine without a GPU."""

from __future__ import annotations

import os
import pathlib
import re
import shutil
import subprocess
import sysconfig

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
CSRC = ROOT / "csrc"


from qlinear.kernels.cuda_ext import HEADERS, SOURCES

CU_SOURCES = [f for f in SOURCES if f.endswith(".cu")]
CPP_SOURCES = [f for f in SOURCES if f.endswith(".cpp")]


def test_source_list_matches_csrc():
    """Every file in csrc/ is in the build's list and every listed file exists."""
    on_disk = {p.name for p in CSRC.iterdir() if p.suffix in (".cu", ".cpp", ".cuh", ".h")}
    assert on_disk == set(SOURCES) | set(HEADERS)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
@pytest.mark.parametrize("source", CU_SOURCES)
def test_launcher_compiles_for_sm90a(tmp_path, source):
    obj = tmp_path / (source + ".o")
    proc = subprocess.run(
        ["nvcc", "-O3", "-std=c++17", "-gencode=arch=compute_90a,code=sm_90a",
         "-Xptxas", "-v,-warn-spills", "-c", str(CSRC / source), "-o", str(obj)],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert obj.stat().st_size > 0
    # register spills would mean the "row in registers" kernels lost their point (-v prints
    # "0 bytes spill stores" for every kernel: only a non-zero count is a spill)
    spills = re.findall(r"[1-9]\d* bytes spill", proc.stderr)
    assert not spills, proc.stderr[-4000:]
    # ptxas serializes the wgmma groups it cannot prove safe (C7510 / C7518, printed with -v only)
    assert "serialized" not in proc.stderr, proc.stderr[-4000:]


PROBES = sorted(p.name for p in (CSRC / "probe").glob("*.cu"))


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
@pytest.mark.parametrize("source", PROBES)
def test_probe_compiles_for_sm90a(tmp_path, source):
    """The stand-alone micro-benchmarks in csrc/probe (built on the GPU machine by the benchmark scripts, not part
    of the extension) still compile against the headers they share with it."""
    obj = tmp_path / (source + ".o")
    proc = subprocess.run(
        ["nvcc", "-O3", "-std=c++17", "-gencode=arch=compute_90a,code=sm_90a", "-c", str(CSRC / "probe" / source),
         "-o", str(obj)],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert obj.stat().st_size > 0


def _cuda_include() -> pathlib.Path | None:
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        return None
    roots = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda",
             str(pathlib.Path(nvcc).resolve().parent.parent)]
    for root in filter(None, roots):
        inc = pathlib.Path(root) / "include"
        if (inc / "cuda_runtime_api.h").is_file():
            return inc
    return None


@pytest.mark.skipif(shutil.which("g++") is None or _cuda_include() is None, reason="g++ or CUDA headers missing")
@pytest.mark.parametrize("source", CPP_SOURCES)
def test_binding_syntax(tmp_path, source):
    pytest.importorskip("torch")
    from torch.utils.cpp_extension import include_paths

    incs = list(include_paths())
    torch_inc = pathlib.Path(incs[0])
    # A CPU build of torch ships c10/cuda headers but not this generated one; a stub with the
    # macro it defines is enough for a syntax check.
    macros = pathlib.Path("c10/cuda/impl/cuda_cmake_macros.h")
    if not (torch_inc / macros).is_file():
        stub = tmp_path / macros
        stub.parent.mkdir(parents=True)
        stub.write_text("#pragma once\n#define C10_CUDA_BUILD_SHARED_LIBS\n")
        incs.insert(0, str(tmp_path))
    args = ["g++", "-std=c++17", "-fsyntax-only", "-w", f"-I{CSRC}", f"-I{_cuda_include()}",
            f"-I{sysconfig.get_paths()['include']}"]
    args += [f"-I{p}" for p in incs]
    proc = subprocess.run(args + [str(CSRC / source)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]


def _op_schemas(text: str) -> list[str]:
    """The schema strings of every ``m.def(...)`` in a binding: adjacent C string literals joined."""
    import re

    schemas = []
    for match in re.finditer(r"m\.def\(\s*((?:\"(?:[^\"\\]|\\.)*\"\s*)+)", text):
        schemas.append("".join(re.findall(r"\"((?:[^\"\\]|\\.)*)\"", match.group(1))))
    return schemas


@pytest.mark.parametrize("source", [s for s in SOURCES if s.endswith(".cpp")])
def test_binding_schemas_parse(source):
    # A schema torch cannot parse aborts the process when the library loads on the GPU box (a
    # C++ exception in a static initializer), long after every CPU test passed: parse them here.
    import torch

    text = (CSRC / source).read_text()
    schemas = _op_schemas(text)
    # every m.def must have been read as a schema, or a definition would go unchecked
    defs = text.count("m.def(")
    assert len(schemas) == defs, f"{source}: read {len(schemas)} schema strings for {defs} m.def calls"
    for schema in schemas:
        try:
            torch._C.parse_schema(schema)
        except RuntimeError as exc:
            pytest.fail(f"{source}: torch cannot parse the op schema {schema!r}: {exc}")
