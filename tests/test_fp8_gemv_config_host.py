"""The FP8 decode GEMM launcher's config logic (csrc/fp8_gemv_launch.cu) on the host, without a GPU:
a small program (tests/csrc_host/fp8_gemv_config_main.cu) linked against the launchers, with device
code compiled to PTX only (nothing runs on a device), asks fp8_gemv_supported / resolve / encode /
decode about codes on a 2112 x 7168 weight. The GPU tests launch these codes; this checks the
decoding and the refusals (code 5 = kBadConfig) where CI has no GPU."""

from __future__ import annotations

import shutil

import pytest
from _host_tool import ask, build

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")


@pytest.fixture(scope="module")
def tool(tmp_path_factory):
    return build(tmp_path_factory.mktemp("fp8cfg"), "fp8_gemv_config_main.cu",
                 ["fp8_gemv_launch.cu", "fp8_gemv_launch_preq.cu", "fp8_tma_launch.cu"])


def _ask(tool, cases):
    rows = ask(tool, cases)
    return {(r[0], r[1], bool(r[2])): (r[3], r[4], r[5]) for r in rows}


def test_x_ahead_codes(tool):
    cases = [
        (11011114, 16, True),    # the 2112x7168 M = 9..16 table entry
        (10011116, 8, False),    # the M <= 8 entry (in-kernel quantization)
        (10011116, 16, False),   # 16 warps of two 16-bit token tiles: over the XA register cap (384 threads)
        (10011112, 16, False),   # 12 warps fit
        (10012108, 8, False),    # XA with R = 2: not compiled
        (10011008, 8, False),    # XA with PF = 0: not compiled
        (10011312, 8, False),    # XA with PF = 3: not compiled
        (20011116, 8, False),    # X = 2
        (110011116, 8, False),   # a digit above X
        (11011114, 16, False),   # Q = 1 without pre-quantized x
    ]
    got = _ask(tool, cases)
    want_ok = {(11011114, 16, True), (10011116, 8, False), (10011112, 16, False)}
    for case in cases:
        why, used, round_trip = got[case]
        assert (why == 0) == (case in want_ok), (case, why)
        if case in want_ok:
            assert used == case[0], (case, used)  # fully specified codes resolve to themselves
        else:
            assert why == 5, (case, why)
        if case[0] < 100000000:
            assert round_trip == case[0], (case, round_trip)


def test_automatic_fields(tool):
    got = _ask(tool, [(0, 4, False), (0, 16, True), (10000000, 16, True), (10000000, 4, False)])
    # automatic: R = 1, PF = 1, 16 warps, one split on 132 tiles (one per SM)
    assert got[(0, 4, False)] == (0, 11116, 0)
    assert got[(0, 16, True)] == (0, 1011116, 0)
    # X with automatic fields keeps R = 1 (the only compiled XA row count)
    assert got[(10000000, 16, True)] == (0, 11011116, 10000000)
    assert got[(10000000, 4, False)] == (0, 10011116, 10000000)


def test_tma_codes(tool):
    """T = 1 codes (the TMA ring kernel): decoded and re-encoded whole, zero fields resolved to the shape
    key 2444, and refused here (kBadConfig): the host has no sm_90 device, and without pre-quantized x
    they are refused anywhere."""
    cases = [(101042304, 16, True), (111041402, 1, True), (100000000, 16, True), (101042304, 16, False)]
    got = _ask(tool, cases)
    for case in cases:
        why, used, round_trip = got[case]
        assert why == 5 and round_trip == case[0], (case, got[case])
    assert got[(101042304, 16, True)][1] == 101042304
    assert got[(111041402, 1, True)][1] == 111041402
    assert got[(100000000, 16, True)][1] == 101042404
