"""Host programs of tests/csrc_host/: a main linked against csrc/ launchers whose device code is
compiled to PTX only, so a launcher's config logic runs on a machine without a GPU. ``build``
compiles the sources in parallel (the kernel-heavy translation units dominate) and links;
``ask`` runs the program on integer arguments and returns one tuple of ints per output line."""

from __future__ import annotations

import pathlib
import subprocess
from concurrent.futures import ThreadPoolExecutor

ROOT = pathlib.Path(__file__).resolve().parents[1]
_PTX_ONLY = "-gencode=arch=compute_90,code=compute_90"


def _nvcc(args: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(["nvcc", "-O1", "-std=c++17", f"-I{ROOT / 'csrc'}", *args], capture_output=True,
                          text=True, timeout=900)


def build(out: pathlib.Path, main: str, sources: list[str]) -> pathlib.Path:
    """``out``/tool from ``tests/csrc_host/<main>`` and ``csrc/<source>`` for each of ``sources``."""
    paths = [ROOT / "tests/csrc_host" / main] + [ROOT / "csrc" / src for src in sources]
    jobs = [[_PTX_ONLY, "-c", str(p), "-o", str(out / (p.name + ".o"))] for p in paths]
    with ThreadPoolExecutor(max_workers=3) as pool:  # CI has 2 cores
        for proc in pool.map(_nvcc, jobs):
            assert proc.returncode == 0, proc.stderr[-4000:]
    exe = out / "tool"
    proc = _nvcc([str(out / (p.name + ".o")) for p in paths] + ["-o", str(exe)])
    assert proc.returncode == 0, proc.stderr[-4000:]
    return exe


def ask(exe: pathlib.Path, cases: list[tuple]) -> list[tuple[int, ...]]:
    """One output row per case (each case's values passed as consecutive integer arguments)."""
    args = [str(int(v)) for case in cases for v in case]
    out = subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=60, check=True).stdout
    rows = [tuple(int(v) for v in line.split()) for line in out.splitlines()]
    assert len(rows) == len(cases)
    return rows
