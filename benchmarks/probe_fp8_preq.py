"""Where the pre-quantized FP8 decode path (Q = 1) loses on 2112x7168 at M = 16 (issue 4): the GEMV on
codes quantized once outside the timed graph ("gemv only", PDL on, several configs), the whole path
(the Triton quantizer with its PDL trigger late / early, then the GEMV with PDL), the in-kernel path
(--kernel-codes, default 11116), the Triton path (quantizer trigger late / early) and the auto dispatch, on 2112x7168 and
1536x7168 (--shapes) with cold weights, alternated graph replays; with --cuda-quant also the pairs with the
CUDA quantizer (csrc/group_quant.cuh) at the given triggers and threads per CTA, and that quantizer alone. One line per case:
``PREQ M=16 NxK name us``.

    python benchmarks/probe_fp8_preq.py [--out DIR] [--m 16] [--shapes ...] [--gemv-codes ...] [--pair-codes ...] [--kernel-codes ...]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _timing import cold_fp8_block_weights, env_info, rel_err_check, runnable, time_case_rows, write_results  # noqa: E402

from qlinear.kernels import cuda_ext, fp8_triton  # noqa: E402
from qlinear.ops import fp8 as ops  # noqa: E402
from qlinear.reference import fp8 as ref  # noqa: E402


GEMV_CODES = "1011116,1011115,1011114,1011113,1011214,1011213,1021107"
PAIR_CODES = "1011116,1011115,1011114,1011113,1011214,1011213,1021107"


def _set_carveout(jit_fn, percent: int) -> int:
    """cuFuncSetAttribute(PREFERRED_SHARED_MEMORY_CARVEOUT) on every compiled kernel of a Triton JIT function
    (its device caches' first field holds them); returns how many."""
    import ctypes

    libcuda = ctypes.CDLL("libcuda.so.1")
    done = 0
    for entry in jit_fn.device_caches.values():
        for kernel in entry[0].values():
            kernel._init_handles()
            rc = libcuda.cuFuncSetAttribute(ctypes.c_void_p(kernel.function), 9, ctypes.c_int(percent))
            if rc != 0:
                raise RuntimeError(f"cuFuncSetAttribute returned {rc}")
            done += 1
    return done


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--m", type=int, default=16)
    ap.add_argument("--shapes", default="2112x7168,1536x7168", help="comma-separated NxK")
    ap.add_argument("--gemv-codes", default=GEMV_CODES, help="codes timed on codes quantized outside the graph")
    ap.add_argument("--pair-codes", default=PAIR_CODES, help="codes timed after the quantizer (PDL late / early)")
    ap.add_argument("--qmodes", default="late,early", help="PDL triggers of the quantizer launch in the pairs")
    ap.add_argument("--kernel-codes", default="11116", help="in-kernel-quantization codes to time (whole op)")
    ap.add_argument("--quant-rows", default="",
                    help="comma-separated fp8_triton.QUANT_ROW_BLOCK values (the quantizer's rows per program) to "
                         "time the pairs with as well; the committed value is always timed")
    ap.add_argument("--cuda-quant", default="",
                    help="comma-separated trigger:threads[:p] of the CUDA quantizer (ops.FP8_CUDA_QUANTIZER = "
                         "'cuda'; :p = x prefetched into L2 before its PDL wait) to time the pair codes with as well, "
                         "e.g. early:128,first:128:p")
    ap.add_argument("--rotate-x", type=int, default=1,
                    help="x copies the calls rotate through (1: one x, L2-resident; 8: read from HBM as bench_linear's)")
    ap.add_argument("--triton-carveout", type=int, default=-1,
                    help="set this preferred shared-memory carveout (0-100) on the Triton quantizer's compiled kernels "
                         "after their first call (the CUDA quantizer's pairs take qlinear.ops.fp8.FP8_PAIR_CARVEOUT, "
                         "which benchmarks/with_setting.py can set)")
    ap.add_argument("--no-check", action="store_true",
                    help="time candidates without checking their output (diagnostic kernel variants)")
    args = ap.parse_args()
    C = cuda_ext.load()
    torch.manual_seed(0)
    rows = []
    m = args.m
    shapes = [tuple(int(v) for v in sh.split("x")) for sh in args.shapes.split(",")]
    gemv_codes = [int(c) for c in args.gemv_codes.split(",") if c]
    pair_codes = [int(c) for c in args.pair_codes.split(",") if c]
    qmodes = [q for q in args.qmodes.split(",") if q]
    for n, k in shapes:
        ws, ss = cold_fp8_block_weights(n, k)
        copies = len(ws)
        xs = [torch.randn(m, k, device="cuda").to(torch.bfloat16) for _ in range(max(1, args.rotate_x))]
        nx = len(xs)
        x = xs[0]
        q, s = ops.per_token_group_quant_fp8(x, 128)
        wsp = ops._cuda_workspace(x.device)
        want = ref.fp8_block_linear_ref(x, ws[0], ss[0], (128, 128)).float()

        def gemv_only(code, pdl):
            return lambda i: C.fp8_block_gemv_preq(q, s, ws[i % copies], ss[i % copies], None, wsp, x.dtype, code, pdl)

        def path(code, qmode, qrows=None, cuda_threads=None, prefetch=False):
            """the quantizer (PDL trigger qmode; qrows: its rows per program; cuda_threads: the CUDA quantizer
            with that many threads per CTA instead; set while the graph is captured) + the GEMV on its codes
            (PDL on)"""
            def fn(i):
                saved = (fp8_triton.QUANT_ROW_BLOCK, ops.FP8_CUDA_QUANTIZER, ops.FP8_CUDA_QUANT_THREADS,
                         ops.FP8_CUDA_QUANT_PREFETCH)
                if qrows is not None:
                    fp8_triton.QUANT_ROW_BLOCK = qrows
                if cuda_threads is not None:
                    ops.FP8_CUDA_QUANTIZER, ops.FP8_CUDA_QUANT_THREADS = "cuda", cuda_threads
                    ops.FP8_CUDA_QUANT_PREFETCH = prefetch
                try:
                    y = ops.fp8_block_gemv_cuda(xs[i % nx], ws[i % copies], ss[i % copies], None, config=code,
                                                pdl=True, quant_pdl=qmode)
                finally:
                    (fp8_triton.QUANT_ROW_BLOCK, ops.FP8_CUDA_QUANTIZER, ops.FP8_CUDA_QUANT_THREADS,
                     ops.FP8_CUDA_QUANT_PREFETCH) = saved
                if y is None:  # refused: timing the no-op would read as a fast kernel
                    raise RuntimeError(f"config {code} refused")
                return y
            return fn

        fns = {f"gemv only {c} pdl": gemv_only(c, True) for c in gemv_codes}
        fns["quantizer only"] = lambda i: ops.per_token_group_quant_fp8(xs[i % nx], 128, backend="triton")
        cuda_quant = [(t.split(":")[0], int(t.split(":")[1]), t.endswith(":p")) for t in args.cuda_quant.split(",")
                      if t]
        for cthreads in sorted({t for _, t, _ in cuda_quant}):
            fns[f"cuda quantizer only {cthreads}"] = (lambda ct: lambda i: ops.quant_fp8_cuda(xs[i % nx], 128,
                                                                                              threads=ct))(cthreads)
        for code in pair_codes:
            for qmode, cthreads, pf in cuda_quant:
                fns[f"cq {qmode} {cthreads}{' pf' if pf else ''} + gemv {code}"] = path(code, qmode, cuda_threads=cthreads,
                                                                                        prefetch=pf)
            for qmode in qmodes:
                fns[f"q {qmode} + gemv {code} pdl"] = path(code, qmode)
                for qr in [int(v) for v in args.quant_rows.split(",") if v]:
                    if qr != fp8_triton.QUANT_ROW_BLOCK:
                        fns[f"q {qmode} rows {qr} + gemv {code}"] = path(code, qmode, qr)
        for code in [int(c) for c in args.kernel_codes.split(",") if c]:
            fns[f"in-kernel {code}"] = path(code, None)
        for qmode in qmodes:
            fns[f"triton q {qmode}"] = (lambda qm: lambda i: fp8_triton.fp8_block_linear_triton(
                xs[i % nx], ws[i % copies], ss[i % copies], (128, 128), quant_pdl=qm))(qmode)
        fns["auto"] = lambda i: ops.fp8_block_linear(xs[i % nx], ws[i % copies], ss[i % copies])

        fns = runnable(fns, None if args.no_check else rel_err_check(want), f"PREQ M={m} {n}x{k} ")
        if args.triton_carveout >= 0:
            print(f"PREQ carveout {args.triton_carveout} set on {_set_carveout(fp8_triton._per_token_group_quant_fp8_kernel, args.triton_carveout)} Triton quantizer kernels")
        time_case_rows(fns, max(copies, nx), "PREQ", f"M={m} {n}x{k}", rows, width=34)
        del ws, ss
        torch.cuda.empty_cache()
    write_results("fp8_preq_probe", rows, {**env_info(), "weights": "cold (copies rotated past L2)"}, args.out, metric="us")


if __name__ == "__main__":
    main()
