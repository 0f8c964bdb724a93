"""The wgmma W4A16 GEMM launcher's config logic (csrc/w4a16_wgmma_launch.cu) on the host, without a GPU:
a small program (tests/csrc_host/w4a16_wgmma_config_main.cu) linked against the launchers, device code
compiled to PTX only, asks w4_wgmma_resolve / w4_wgmma_supported. The automatic config must stay the
one session 11 measured best on the issue shapes (benchmarks/results/session11/run8, the reason
qlinear/ops/w4a16.py _CUDA_WGMMA_AUTO is empty), and without a GPU every case is refused with
kNoWgmma after the operand checks."""

from __future__ import annotations

import shutil

import pytest
from _host_tool import ask, build

SOURCES = ["w4a16_wgmma_launch.cu", "w4a16_gemm_launch.cu", "w4a16_gemv_launch.cu", "w4a16_ring_bf16.cu",
           "w4a16_ring_f16.cu", "w4a16_bulk_bf16.cu", "w4a16_bulk_f16.cu"]

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")


@pytest.fixture(scope="module")
def tool(tmp_path_factory):
    return build(tmp_path_factory.mktemp("wgcfg"), "w4a16_wgmma_config_main.cu", SOURCES)


def _tiles(n, m, tokens):
    return -(-n // 128) * -(-m // tokens)


def _workspace(tiles, tokens, splits, stages, ctas):
    """fp32 partials: [tile][split] for one CTA per (tile, split) (the grid kernel), one slot per piece
    (at most ctas + tiles - 1) for a stream-K launch whose CTAs do not divide the tiles."""
    if ctas == tiles * splits:
        return tiles * splits * 128 * tokens if splits > 1 else 0
    return 0 if tiles % ctas == 0 else (ctas + tiles - 1) * 128 * tokens


def test_automatic_config_on_measured_shapes(tool):
    # (n, k, m) -> (tokens, splits, stages, ctas): ctas = tiles x splits is the classic K split, 132 (the
    # SM count) one stream-K wave (never at 256 tokens: that instance runs the classic grid only)
    want = {
        (2112, 7168, 128): (128, 7, 4, 17 * 7),
        (24576, 1536, 128): (128, 1, 4, 132),
        (24576, 1536, 512): (256, 1, 3, 384),
        (7168, 16384, 128): (128, 3, 4, 132),
        (7168, 16384, 512): (256, 1, 3, 112),
        (7168, 16384, 1024): (256, 1, 3, 224),
        (7168, 16384, 64): (64, 3, 8, 132),
    }
    rows = ask(tool, [(*key, 0, 0, 0, 0) for key in want])
    for (key, expect), row in zip(want.items(), rows):
        assert row[1:5] == expect, (key, row)
        assert row[5] == _workspace(_tiles(key[0], key[2], expect[0]), *expect), (key, row)


def test_explicit_configs_and_refusals(tool):
    rows = ask(tool, [(7168, 16384, 1024, 128, 3, 5, 0), (7168, 16384, 0, 0, 0, 0, 0), (7168, 16384, 200, 0, 0, 0, 0),
                      (2112, 7168, 128, 0, 40, 0, 0), (2112, 7168, 128, 128, 0, 4, 50), (2112, 7168, 128, 128, 0, 4, 17),
                      (2112, 7168, 300, 128, 0, 4, 5), (2112, 7168, 300, 256, 0, 3, 5), (2112, 7168, 300, 256, 2, 3, 0)])
    assert rows[0][1:5] == (128, 3, 5, 56 * 8 * 3)  # an explicit config is kept: one CTA per (tile, split)
    assert rows[1][0] == 1  # M < 1: kBadM, before anything else
    assert rows[2][0] == 10  # no GPU here: kNoWgmma
    assert rows[3][1:5] == (128, 28, 4, 17 * 28)  # 40 splits of 56 superblocks: no empty split, 28 of 2 each
    # explicit CTAs: splits = ceil(ctas / tiles); pieces need partials unless the CTAs divide the tiles
    assert rows[4][1:6] == (128, 3, 4, 50, (50 + 17 - 1) * 128 * 128)
    assert rows[5][1:6] == (128, 1, 4, 17, 0)
    assert rows[6][1:6] == (128, 1, 4, 5, (5 + 51 - 1) * 128 * 128)  # 51 tiles on 5 CTAs
    assert rows[7][1:5] == (256, 1, 3, 5)  # 256 tokens with ctas != tiles x splits: refused on a GPU (kBadConfig)
    assert rows[8][1:6] == (256, 2, 3, 17 * 2 * 2, 17 * 2 * 2 * 128 * 256)  # its classic split: [tile][split]
