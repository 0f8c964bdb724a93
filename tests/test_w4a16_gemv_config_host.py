"""The W4A16 decode launcher's config logic (csrc/w4a16_gemv_launch.cu) on the host, without a GPU:
a small program (tests/csrc_host/w4a16_gemv_config_main.cu) linked against the launchers, with
device code compiled to PTX only (nothing runs on a device), asks w4_gemv_supported / resolve about
register-kernel configs. The GPU tests launch them; this checks the refusals (6 = kBadConfig) and
that every register config of the dispatch table (qlinear/ops/w4a16.py _CUDA_REG_AUTO) is one the
launcher takes on its shape class, where CI has no GPU."""

from __future__ import annotations

import shutil

import pytest
from _host_tool import ask, build

from qlinear.ops import w4a16 as ops

SOURCES = ["w4a16_gemv_launch.cu", "w4a16_ring_bf16.cu", "w4a16_ring_f16.cu", "w4a16_bulk_bf16.cu",
           "w4a16_bulk_f16.cu", "w4a16_tma_launch.cu", "w4a16_xs.cu"]

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")


@pytest.fixture(scope="module")
def tool(tmp_path_factory):
    return build(tmp_path_factory.mktemp("w4cfg"), "w4a16_gemv_config_main.cu", SOURCES)


def test_pipe_values(tool):
    # (n, k, m, row_tiles, chunk, warps, ring, pipe, fold); ring -1 = the register kernel
    cases = [(7168, 16384, 1, 1, 2, 4, -1, p, 0) for p in (0, 1, 2, 3, 4, -1)]
    cases += [(7168, 16384, 1, 1, 1, 4, -1, p, 0) for p in (0, 1, 2)]  # R1 U1: compiled with pipe 1 only
    rows = ask(tool, cases)
    why = [r[0] for r in rows]
    # R1 U2 (codes 1210 / 1211): pipe 0 / 1 / 2 taken; 3 (the x-staged kernel: no one-token-tile code
    # 1213 compiled), 4 and -1 refused; R1 U1 only double-buffered
    assert why == [0, 0, 0, 6, 6, 6, 6, 0, 6], why
    assert rows[2][1:] == (1, 2, 4, -1, 2, 0)  # pipe 2 resolves to itself (the pipe 0 instance runs it)


def test_xs_pipe(tool):
    """Pipe 3 (the x-staged kernel, csrc/w4a16_xs.cuh) at two token tiles: a compiled code (1223) with
    either fold passes the config checks and then needs sm_90 (12 = kNoXs here: the host tool
    sees compute capability 0); an uncompiled code (2223) or too many warps (13 > 384 threads) is 6;
    warps 0 resolve to about two CTAs per SM (24576 rows, R1: 1536 tiles over 264 CTAs -> 6 warps)."""
    cases = [(24576, 1536, 16, 1, 2, 6, -1, 3, f) for f in (0, 1)]
    cases += [(24576, 1536, 16, 2, 2, 6, -1, 3, 0), (24576, 1536, 16, 1, 2, 13, -1, 3, 0),
              (24576, 1536, 16, 1, 2, 0, -1, 3, 0)]
    rows = ask(tool, cases)
    assert [r[0] for r in rows] == [12, 12, 6, 6, 12], rows
    assert rows[4][1:] == (1, 2, 6, -1, 3, 0), rows[4]


SHAPES = {"few": (2112, 7168), "short": (24576, 1536), "many": (7168, 16384)}
TILES_M = {0: 1, 4: 4, 1: 8, 2: 16}  # _cuda_table_entry's tile keys -> an M they serve


def test_dispatch_table_configs_are_taken(tool):
    """Every _CUDA_REG_AUTO entry is supported by the launcher on its shape class at the M its key
    stands for (a refused entry would fail the layer's forward on a GPU)."""
    cases, keys = [], []
    for (cls, tiles), cfg in sorted(ops._CUDA_REG_AUTO.items()):
        n, k = SHAPES[cls]
        r, u, w = cfg[:3]
        pipe = cfg[3] if len(cfg) > 3 else 0
        fold = cfg[4] if len(cfg) > 4 else 0
        cases.append((n, k, TILES_M[tiles], r, u, w, -1, pipe, fold))
        keys.append((cls, tiles))
    for key, row, case in zip(keys, ask(tool, cases), cases):
        assert row[0] == 0, (key, case, row)
        assert row[1:4] == case[3:6], (key, row)


def test_xs_dispatch_table_configs_pass_the_config_checks(tool):
    """Every _CUDA_XS_AUTO entry is a compiled x-staged config with a warp count its code takes: the
    launcher refuses it only for wanting sm_90 (12 = kNoXs; the host tool sees compute capability 0)
    and resolves it to itself."""
    assert ops._CUDA_XS_AUTO
    for (cls, tiles), cfg in sorted(ops._CUDA_XS_AUTO.items()):
        n, k = SHAPES[cls]
        r, u, w, pipe = cfg[:4]
        assert pipe == 3, cfg
        fold = cfg[4] if len(cfg) > 4 else 0
        (row,) = ask(tool, [(n, k, TILES_M[tiles], r, u, w, -1, pipe, fold)])
        assert row == (12, r, u, w, -1, 3, fold), ((cls, tiles), row)


def test_dispatch_table_tma_codes_are_compiled(tool):
    """Every TMA ring code (>= 20000) of _CUDA_RING_AUTO is in the compiled list for its token tiles
    (w4_ring_configs, which lists csrc/w4a16_tma.cuh kTmaNT1 / kTmaNT2 after the other rings). The
    launcher refuses these codes on a machine without an sm_90 GPU before it looks the code up, so the
    list is asked for directly; the GPU tests run the table's choices."""
    import subprocess

    out = subprocess.run([str(tool), "lists"], capture_output=True, text=True, timeout=60, check=True).stdout
    lists = {nt: {int(c) for c in line.split()} for nt, line in zip((1, 2), out.splitlines())}
    assert all(any(c >= 20000 for c in codes) for codes in lists.values()), lists
    tma = {key: code for key, code in ops._CUDA_RING_AUTO.items() if code >= 20000}
    assert tma, "the table has no TMA ring entry"
    for (cls, tiles), code in tma.items():
        nt = 2 if tiles == 2 else 1
        assert code in lists[nt], ((cls, tiles), code, sorted(lists[nt]))
