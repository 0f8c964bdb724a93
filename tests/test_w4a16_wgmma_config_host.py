"""The wgmma W4A16 GEMM launcher's config logic (csrc/w4a16_wgmma_launch.cu) on the host, without a GPU:
a small program (tests/csrc_host/w4a16_wgmma_config_main.cu) linked against the launchers, device code
compiled to PTX only, asks w4_wgmma_resolve / w4_wgmma_supported. The automatic config must stay the
one session 11 measured best on the issue shapes (benchmarks/results/session11/run8; qlinear/ops/w4a16.py
_CUDA_WGMMA_AUTO overrides it per shape class where later runs measured better), and without a GPU every
case is refused with kNoWgmma after the operand checks."""

from __future__ import annotations

import shutil

import pytest
from _host_tool import ask, build

SOURCES = ["w4a16_wgmma_launch.cu", "w4a16_gemm_launch.cu", "w4a16_gemv_launch.cu", "w4a16_ring_bf16.cu",
           "w4a16_ring_f16.cu", "w4a16_bulk_bf16.cu", "w4a16_bulk_f16.cu", "w4a16_tma_launch.cu", "w4a16_xs.cu"]

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")


@pytest.fixture(scope="module")
def tool(tmp_path_factory):
    return build(tmp_path_factory.mktemp("wgcfg"), "w4a16_wgmma_config_main.cu", SOURCES)


def test_automatic_config_on_measured_shapes(tool):
    # (n, k, m) -> (tokens, splits, stages): run 8's best within noise
    want = {
        (2112, 7168, 128): (128, 7, 4),
        (24576, 1536, 128): (128, 1, 4),
        (24576, 1536, 512): (256, 1, 3),
        (7168, 16384, 128): (128, 2, 4),
        (7168, 16384, 512): (256, 1, 3),
        (7168, 16384, 1024): (256, 1, 3),
        (7168, 16384, 64): (64, 2, 8),
    }
    rows = ask(tool, [(*key, 0, 0, 0, 0) for key in want])
    for (key, expect), row in zip(want.items(), rows):
        assert row[1:4] == expect, (key, row)
        tiles = -(-key[0] // 128) * -(-key[2] // expect[0])
        assert row[4] == (tiles * expect[1] * 128 * expect[0] if expect[1] > 1 else 0), (key, row)
        # a split is summed spread over the tile's CTAs where the grid fits on the 132 SMs at once
        assert row[5] == (2 if expect[1] > 1 and tiles * expect[1] <= 132 else 1), (key, row)
        assert row[6] == 128, (key, row)  # 128-row CTAs unless asked


def test_explicit_configs_and_refusals(tool):
    rows = ask(tool, [(7168, 16384, 1024, 128, 3, 5, 0), (7168, 16384, 0, 0, 0, 0, 0), (7168, 16384, 200, 0, 0, 0, 0),
                      (2112, 7168, 128, 0, 40, 0, 0)])
    assert rows[0][1:4] == (128, 3, 5)  # an explicit config is kept
    assert rows[1][0] == 1  # M < 1: kBadM, before anything else
    assert rows[2][0] == 10  # no GPU here: kNoWgmma
    assert rows[3][1:4] == (128, 28, 4)  # 40 splits of 56 superblocks: no empty split, 28 of 2 each
    assert rows[3][5] == 1  # 17 x 28 CTAs do not fit at once: the last CTA of a tile sums


def test_64_and_192_row_ctas(tool):
    """rows = 64: twice the row tiles (2112 rows: 33), tokens at least 128 (64 per warpgroup), the
    workspace per tile 64 x tokens floats, and the launcher's split choice on that grid: 2112x7168 at
    M = 1024 is one wave of 33 x 4 CTAs, no split."""
    rows = ask(tool, [(2112, 7168, 1024, 0, 0, 0, 64), (2112, 7168, 40, 0, 0, 0, 64),
                      (2112, 7168, 128, 128, 4, 4, 64), (24576, 1536, 128, 128, 1, 4, 192),
                      (24576, 1536, 1024, 0, 0, 0, 192), (2112, 7168, 40, 0, 0, 0, 192)])
    assert rows[0][1:4] == (256, 1, 3) and rows[0][4] == 0 and rows[0][6] == 64
    assert rows[1][1] == 128 and rows[1][6] == 64  # not 64 tokens: 32 per warpgroup is not compiled
    assert rows[2][1:4] == (128, 4, 4) and rows[2][4] == 33 * 4 * 64 * 128
    assert rows[2][5] == 2  # 132 CTAs fit at once: spread
    # 192 rows (three warpgroups): 24576 rows are 128 tiles, one wave at M = 128 without a split
    assert rows[3][1:4] == (128, 1, 4) and rows[3][4] == 0 and rows[3][6] == 192
    # automatic tokens for 192 rows: 128, the only compiled tile, at any M
    assert rows[4][1:4] == (128, 1, 4) and rows[5][1] == 128
