"""csrc/code_list.h, the lookup every CUDA launcher uses to turn a run-time config code into the
compiled instance it names: run on the host against a list of the test's own (tests/csrc_host)."""

from __future__ import annotations

import shutil

import pytest
from _host_tool import ask, build

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")

LISTED = [1210, 4110, 11824, 7]  # the program's kCodes, in its order


def test_with_listed_code_picks_the_entry_or_none(tmp_path):
    exe = build(tmp_path, "code_list_main.cpp", [])
    codes = LISTED + [0, -1, 1211, 4111, 11825, 70, 99999]
    rows = ask(exe, [(c,) for c in codes])
    for code, (listed, value) in zip(codes, rows):
        want = 3 * code + 1 if code in LISTED else -1
        assert (listed, value) == (int(code in LISTED), want), f"code {code}: got {(listed, value)}"
