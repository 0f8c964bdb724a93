"""The swap-AB FP8 block GEMM (``GemmConfig(swap_ab=True)``, with and without the in-kernel
activation quantization) under ``TRITON_INTERPRET=1`` on small shapes: bit-equal to the split-K
kernel on the same quantized operands (the interpreter sums in a fixed order), unchanged by
``k_unroll``, and within 1e-2 of the fp32 reference; plus the small-M path selection. Runs in a
child process so the interpreter switch does not leak into other tests (as
tests/kernels/test_fp8_triton.py does).
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest
import torch

ROOT = pathlib.Path(__file__).resolve().parents[2]

# (M, N, K, (bn, bk), split_k, block_m, block_n, bias, strided x)
CASES = [
    (1, 200, 320, (128, 128), 3, 16, 64, True, True),  # ragged N and K, split, bias
    (4, 130, 256, (128, 128), 1, 8, 64, False, False),
    (16, 96, 512, (128, 128), 2, 16, 32, False, True),
    (20, 136, 384, (128, 128), 3, 8, 128, True, False),  # several token tiles, BLOCK_N > N tail
    (3, 200, 200, (64, 64), 2, 16, 128, False, True),  # BLOCK_N spans two scale blocks
    (5, 72, 96, (32, 32), 1, 16, 64, False, False),  # the smallest K block (fp8 MMA K = 32)
]


def _worker() -> dict:
    os.environ["TRITON_INTERPRET"] = "1"
    sys.path.insert(0, str(ROOT))
    from qlinear.kernels import fp8_triton as kern
    from qlinear.reference import fp8 as ref

    def case(M, N, K, block, split, bm, bn, bias, strided):
        g = torch.Generator().manual_seed(M * 131 + N)
        base = torch.randn(M, K + 24 if strided else K, generator=g) * 2
        base[:, ::17] *= 40  # groups with very different scales
        x = base.to(torch.bfloat16)[:, 5 : 5 + K] if strided else base.to(torch.bfloat16)
        w = (torch.randn(N, K, generator=g) * 50).to(torch.float8_e4m3fn)
        ws = torch.rand(-(-N // block[0]), -(-K // block[1]), generator=g) * 1e-2 + 1e-3
        b = torch.randn(N, generator=g).to(torch.bfloat16) if bias else None
        swap = kern.GemmConfig(bm, bn, split, swap_ab=True)
        fused = kern.GemmConfig(bm, bn, split, swap_ab=True, fuse_quant=True)
        plain = kern.GemmConfig(16, 64, split)
        out_fused = kern.fp8_block_linear_triton(x, w, ws, block, b, config=fused)
        out_swap = kern.fp8_block_linear_triton(x, w, ws, block, b, config=swap)
        out_plain = kern.fp8_block_linear_triton(x, w, ws, block, b, config=plain)
        assert out_fused.shape == (M, N) and out_fused.dtype == torch.bfloat16
        assert torch.equal(out_fused, out_swap), "fused quantization differs from quantize-then-swap-GEMM"
        assert torch.equal(out_swap, out_plain), "swap-AB differs from the split-K kernel"
        # k_unroll loads 2 / 4 K blocks per iteration (odd slices: the block past the end reads as
        # zeros): the same sums in the same order, so the same bits
        for ku in (2, 4):
            for cfg, ref_out in ((kern.GemmConfig(bm, bn, split, swap_ab=True, k_unroll=ku), out_swap),
                                 (kern.GemmConfig(16, 64, split, k_unroll=ku), out_plain)):
                got = kern.fp8_block_linear_triton(x, w, ws, block, b, config=cfg)
                assert torch.equal(got, ref_out), f"k_unroll={ku} differs ({cfg.short()})"
        want = ref.fp8_block_linear_ref(x.float(), w, ws, block, b)
        rel = ((out_fused.float() - want).norm() / want.norm()).item()
        assert rel < 1e-2, f"rel err {rel}"
        # fp8_block_gemm with a swap config on pre-quantized operands (row-major scales)
        q, s = ref.per_token_group_quant_fp8_ref(x, block[1])
        out_g = kern.fp8_block_gemm(q, s, w, ws, block, torch.float32, b, config=swap)
        want_g = ref.fp8_block_gemm_ref(q, s, w, ws, block, torch.float32, b)
        rel = ((out_g - want_g).norm() / want_g.norm()).item()
        assert rel < 1e-5, f"gemm rel err {rel}"

    def dispatch():
        os.environ["QLINEAR_FP8_SMALL_M"] = "swapab"
        try:
            cfg = kern.default_gemm_config(4, 2112, 7168)
            assert cfg.swap_ab and cfg.fuse_quant, cfg
            cfg = kern.default_gemm_config(4, 1536, 7168)  # no table entry: the heuristic
            assert cfg.swap_ab and cfg.split_k > 1, cfg
            assert not kern.default_gemm_config(kern.SWAP_AB_MAX_M + 1, 2112, 7168).swap_ab
        finally:
            os.environ.pop("QLINEAR_FP8_SMALL_M")
        assert not kern.default_gemm_config(4, 2112, 7168).swap_ab or kern.SMALL_M_PATH == "swapab"
        os.environ["QLINEAR_FP8_SMALL_M"] = "bogus"
        try:
            kern.small_m_path()
            raise AssertionError("no error for a bad QLINEAR_FP8_SMALL_M")
        except ValueError as exc:
            assert "QLINEAR_FP8_SMALL_M" in str(exc)
        finally:
            os.environ.pop("QLINEAR_FP8_SMALL_M")
        # the dispatched path end to end: one launch, the same output as quantize-then-GEMM
        os.environ["QLINEAR_FP8_SMALL_M"] = "swapab"
        try:
            g = torch.Generator().manual_seed(3)
            x = torch.randn(2, 256, generator=g).to(torch.bfloat16)
            w = (torch.randn(100, 256, generator=g) * 50).to(torch.float8_e4m3fn)
            ws = torch.rand(1, 2, generator=g) * 1e-2 + 1e-3
            out = kern.fp8_block_linear_triton(x, w, ws)
            want = kern.fp8_block_linear_triton(x, w, ws, config=kern.GemmConfig(16, 64, 0))
            assert torch.equal(out, want)
        finally:
            os.environ.pop("QLINEAR_FP8_SMALL_M")

    report = {}
    jobs = [(f"swapab-{i}", lambda c=c: case(*c)) for i, c in enumerate(CASES)] + [("dispatch", dispatch)]
    for cid, fn in jobs:
        try:
            fn()
            report[cid] = None
        except Exception as exc:  # reported per case to the parent
            report[cid] = f"{type(exc).__name__}: {exc}"
    return report


@pytest.fixture(scope="module")
def interpreter_report():
    env = dict(os.environ, TRITON_INTERPRET="1")
    env.pop("QLINEAR_FP8_SMALL_M", None)
    proc = subprocess.run([sys.executable, __file__, "--worker"], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("case_id", [f"swapab-{i}" for i in range(len(CASES))] + ["dispatch"])
def test_swapab_interpreter(case_id, interpreter_report):
    assert case_id in interpreter_report, f"case {case_id} did not run"
    assert interpreter_report[case_id] is None, interpreter_report[case_id]


if __name__ == "__main__" and "--worker" in sys.argv:
    print(json.dumps(_worker()))
