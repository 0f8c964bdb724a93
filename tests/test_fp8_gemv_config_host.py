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
                 ["fp8_gemv_launch.cu", "fp8_gemv_launch_preq.cu", "fp8_gemv_launch_sk.cu"])


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
        (1010011116, 8, False),  # a digit above K
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
        if case[0] < 1000000000:
            assert round_trip == case[0], (case, round_trip)


def test_automatic_fields(tool):
    got = _ask(tool, [(0, 4, False), (0, 16, True), (10000000, 16, True), (10000000, 4, False)])
    # automatic: R = 1, PF = 1, 16 warps, one split on 132 tiles (one per SM)
    assert got[(0, 4, False)] == (0, 11116, 0)
    assert got[(0, 16, True)] == (0, 1011116, 0)
    # X with automatic fields keeps R = 1 (the only compiled XA row count)
    assert got[(10000000, 16, True)] == (0, 11011116, 10000000)
    assert got[(10000000, 4, False)] == (0, 10011116, 10000000)


def test_stream_k_codes(tool):
    """K = 1 .. 9 (stream-K): X = 1, R = 1, PF 1 / 2 and S 0 / 1 only, warps within the XA cap."""
    cases = [
        (111011114, 16, True),   # 132 CTAs of 14 warps, pre-quantized two token tiles
        (411011104, 16, True),   # 4 CTAs per SM of 4 warps
        (211011208, 16, True),   # PF = 2: 12 warps at most for two token tiles, 8 fit
        (110011116, 8, False),   # in-kernel quantization, one token tile: 16 warps fit
        (110011116, 16, False),  # two 16-bit token tiles: over the XA register cap (384 threads)
        (211011216, 16, True),   # PF = 2 with 16 warps: over the cap
        (210011208, 16, False),  # PF = 2 with two token tiles quantized in the kernel: not compiled
        (210011208, 8, False),   # one token tile: compiled
        (101011114, 16, True),   # K without X
        (111021114, 16, True),   # K with S = 2
        (111012114, 16, True),   # K with R = 2
        (111011014, 16, True),   # K with PF = 0
        (111011314, 16, True),   # K with PF = 3
    ]
    got = _ask(tool, cases)
    want_ok = {(111011114, 16, True), (411011104, 16, True), (211011208, 16, True), (110011116, 8, False),
               (210011208, 8, False)}
    for case in cases:
        why, used, round_trip = got[case]
        assert (why == 0) == (case in want_ok), (case, why)
        assert why in (0, 5), (case, why)
        if case in want_ok:
            assert used == case[0], (case, used)
        assert round_trip == case[0], (case, round_trip)
    # automatic fields under K: R = 1, PF = 1, one split, 16 / K warps (within the cap)
    got = _ask(tool, [(110000000, 16, True), (410000000, 4, False), (310000000, 16, False)])
    assert got[(110000000, 16, True)] == (0, 111011116, 110000000)
    assert got[(410000000, 4, False)] == (0, 410011104, 410000000)
    assert got[(310000000, 16, False)] == (0, 310011105, 310000000)
