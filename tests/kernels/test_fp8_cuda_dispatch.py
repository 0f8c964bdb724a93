"""CPU-side logic of the FP8 block GEMM's "cuda" backend (qlinear.ops.fp8): the FP8_CUDA_MAX_M /
FP8_CUDA_CONFIG tables, the operand test, and the errors / dispatch off CUDA. The kernel itself is
tested on a GPU in tests/gpu/test_fp8_cuda_gemv.py."""

import re
from pathlib import Path

import pytest
import torch

from qlinear.ops import fp8 as ops


def _operands(m=2, n=256, k=256):
    x = torch.randn(m, k, dtype=torch.bfloat16)
    w = (torch.randn(n, k) * 4).to(torch.float8_e4m3fn)
    wsi = torch.rand(n // 128, k // 128) * 1e-2
    return x, w, wsi


def test_cuda_is_a_block_backend():
    assert "cuda" in ops._BLOCK_BACKENDS
    # on for the measured MLA / DeepSeek shapes only (7168x16384 through the TMA ring kernel, T = 1); every
    # other shape stays on Triton
    assert ops._cuda_max_m(2112, 7168) >= 1 and ops._cuda_max_m(256, 512) == 0
    assert ops._cuda_max_m(7168, 16384) == 16 and (ops._cuda_config(16, 7168, 16384) // ops._CUDA_TMA) % 10 == 1
    assert ops._cuda_config(1, 2112, 7168) < ops._CUDA_TMA


def test_tma_codes_need_sm90_and_aligned_scales(monkeypatch):
    x, w, wsi = _operands(k=512)
    code = 101042304
    # other codes are not its business
    assert ops._cuda_tma_ok(1011114, x, wsi)
    monkeypatch.setattr(ops, "cuda_capability", lambda index: None)
    assert not ops._cuda_tma_ok(code, x, wsi)
    monkeypatch.setattr(ops, "cuda_capability", lambda index: (8, 9))
    assert not ops._cuda_tma_ok(code, x, wsi)
    monkeypatch.setattr(ops, "cuda_capability", lambda index: (9, 0))
    assert ops._cuda_tma_ok(code, x, wsi) and ops._cuda_tma_ok(code, x, None)
    # K / 128 scales per row must be a 16-byte multiple (K % 512 == 0)
    x640, _, wsi640 = _operands(k=640)
    assert not ops._cuda_tma_ok(code, x640, wsi640)
    # weight scales stored column-major: rows not contiguous
    wsi_cm = torch.rand(8, 4).t().contiguous().t()
    assert wsi_cm.stride(1) != 1 and not ops._cuda_tma_ok(code, x, wsi_cm)
    # a 16-byte multiple per row in a wider buffer is fine, an odd pitch is not
    assert ops._cuda_tma_ok(code, x, torch.rand(2, 8)[:, :4])
    assert not ops._cuda_tma_ok(code, x, torch.rand(2, 6)[:, :4])
    # a scale tensor 4 bytes into its storage: refused, unless pointers are not checked (torch.compile's
    # fake tensors have none; the launch checks again)
    shifted = torch.rand(33)[1:].view(8, 4)
    assert shifted.data_ptr() % 16 == 4 and not ops._cuda_tma_ok(code, x, shifted)
    assert ops._cuda_tma_ok(code, x, shifted, check_pointers=False)


def test_tables_by_shape(monkeypatch):
    monkeypatch.setattr(ops, "FP8_CUDA_MAX_M", {(2112, 7168): 16, None: 4})
    assert ops._cuda_max_m(2112, 7168) == 16 and ops._cuda_max_m(1, 128) == 4
    monkeypatch.setattr(ops, "FP8_CUDA_MAX_M", 8)
    assert ops._cuda_max_m(2112, 7168) == 8
    monkeypatch.setattr(ops, "FP8_CUDA_MAX_M", {(2112, 7168): 16})
    assert ops._cuda_max_m(576, 7168) == 0
    monkeypatch.setattr(ops, "FP8_CUDA_CONFIG", {(2112, 7168): ((4, 11116), (16, 14008)), None: 41108})
    assert ops._cuda_config(1, 2112, 7168) == 11116
    assert ops._cuda_config(9, 2112, 7168) == 14008
    assert ops._cuda_config(17, 2112, 7168) == 0
    assert ops._cuda_config(3, 576, 7168) == 41108
    monkeypatch.setattr(ops, "FP8_CUDA_CONFIG", 0)
    assert ops._cuda_config(3, 576, 7168) == 0
    monkeypatch.setattr(ops, "FP8_CUDA_CONFIG", {(2112, 7168): ((8, 11116), (16, 1011114, "early"))})
    assert ops._cuda_entry(4, 2112, 7168) == (11116, None)
    assert ops._cuda_entry(12, 2112, 7168) == (1011114, "early")
    assert ops._cuda_entry(12, 576, 7168) == (0, None)
    monkeypatch.setattr(ops, "FP8_CUDA_QUANTIZER", "triton")
    monkeypatch.setattr(ops, "FP8_CUDA_CONFIG", {(2112, 7168): ((8, 11116), (12, 1011114, "first", "cuda"),
                                                              (16, 1011114, "early"))})
    assert [ops._cuda_quantizer(m, 2112, 7168) for m in (4, 9, 12, 13, 16, 17)] == ["triton", "cuda", "cuda",
                                                                                  "triton", "triton", "triton"]
    assert ops._cuda_entry(12, 2112, 7168) == (1011114, "first")
    monkeypatch.setattr(ops, "FP8_CUDA_QUANTIZER", "cuda")
    assert ops._cuda_quantizer(16, 2112, 7168) == "cuda" and ops._cuda_quantizer(1, 576, 7168) == "cuda"


def test_operand_test_off_cuda():
    x, w, _ = _operands()
    assert not ops._cuda_gemv_ok(x, w, (128, 128))
    assert ops.fp8_block_gemv_cuda(x, w, _operands()[2]) is None


def test_cpu_dispatch_ignores_cuda_bound(monkeypatch):
    monkeypatch.delenv("QLINEAR_FP8_BLOCK_BACKEND", raising=False)
    monkeypatch.setattr(ops, "FP8_CUDA_MAX_M", 16)
    x, w, wsi = _operands()
    assert ops.fp8_block_backend(x, w, (128, 128), wsi) == "reference"


def test_env_selects_cuda(monkeypatch):
    monkeypatch.setenv("QLINEAR_FP8_BLOCK_BACKEND", "cuda")
    x, w, wsi = _operands()
    assert ops.fp8_block_backend(x, w, (128, 128), wsi) == "cuda"


def test_cuda_backend_on_cpu_is_an_error():
    x, w, wsi = _operands()
    with pytest.raises(ValueError, match="backend 'cuda' needs CUDA tensors"):
        ops.fp8_block_linear(x, w, wsi, backend="cuda")


def _tma_keys() -> set[int]:
    """fp8_tma.cuh's compiled shape keys (kTmaKeys), read from the source."""
    text = (Path(__file__).resolve().parents[2] / "csrc" / "fp8_tma.cuh").read_text()
    body = re.search(r"kTmaKeys\[\]\s*=\s*\{([^}]*)\}", text).group(1)
    return {int(v) for v in body.split(",")}


def test_config_codes_well_formed():
    """Every row's trigger and quantizer (if any) are ones the launches know; every T = 1 code names a
    compiled TMA ring shape with pre-quantized x; every other code in FP8_CUDA_CONFIG is
    X * 10000000 + Q * 1000000 + S * 10000 + R * 1000 + PF * 100 + W
    with X, Q in {0, 1} (x ahead, pre-quantized x), R in {1, 2, 4}, PF <= 3, no R = 4 with Q = 1 and
    X = 1 only with R = 1, PF in {1, 2} (the compiled instances)."""
    table = ops.FP8_CUDA_CONFIG
    entries = table.values() if isinstance(table, dict) else [table]
    rows = [x for e in entries if isinstance(e, (tuple, list)) for x in e]
    # (max_m, code), (max_m, code, trigger) or (max_m, code, trigger, quantizer); a quantizer only on a Q = 1 code
    assert all(len(x) == 2 or (len(x) in (3, 4) and x[2] in ops._GQ_TRIGGERS) for x in rows), rows
    assert all(x[3] in ("triton", "cuda") and x[1] // ops._CUDA_PREQ % 10 == 1 for x in rows if len(x) == 4), rows
    codes = [c for e in entries for c in ((x[1] for x in e) if isinstance(e, (tuple, list)) else [e])]
    tma_keys = _tma_keys()
    for code in codes:
        if code == 0:
            continue
        if code // ops._CUDA_TMA:
            # T = 1: the TMA ring kernel, pre-quantized x, a compiled shape key (R KS ST CW), X in {0, 1}
            t, xa, q = code // ops._CUDA_TMA, code // 10000000 % 10, code // 1000000 % 10
            key = (code // 1000 % 10) * 1000 + (code // 10000 % 100) * 100 + (code // 100 % 10) * 10 + code % 100
            assert t == 1 and xa in (0, 1) and q == 1 and key in tma_keys, code
            continue
        xa, q = code // 10000000, code // 1000000 % 10
        s, r, pf, w = code // 10000 % 100, code // 1000 % 10, code // 100 % 10, code % 100
        assert xa in (0, 1) and q in (0, 1) and 1 <= s <= 99 and r in (1, 2, 4) and pf <= 3 and 1 <= w <= 16, code
        assert not (q == 1 and r == 4), code
        assert not xa or (r == 1 and pf in (1, 2)), code
