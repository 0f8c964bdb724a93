#!/usr/bin/env bash
# FP8 block decode GEMV (backend "cuda", csrc/fp8_gemv.cuh) on the GPU machine: its GPU tests, then
# CUDA-graph timings at M = 1, 2, 4 on the three DeepSeek-V3 shapes (weights from HBM: enough weight
# copies rotated to defeat L2), plus a Triton config sweep at M = 16. JSON lands in $OUT.
#   OUT=/some/dir bash benchmarks/gpu_fp8gemv.sh
# One line per measurement: case, impl, us, weight GB/s, fraction of the copy ceiling.
#   layer_*   whole op from bf16 x (quantization included): layer_cuda = fp8_block_linear's "cuda"
#             backend as dispatched (fused or not per FP8_BLOCK_GEMV_FUSE_MAX_WORK),
#             layer_cuda_fused / layer_cuda_quant+gemv force each variant, layer_triton = backend
#             "triton", bf16_linear = F.linear on a bf16 weight (anchor, 2x the bytes)
#   gemv_*    the GEMV alone on pre-quantized x: gemv_default, gemv_wk{W}_t{T} (warps_k, tiles sweep)
#   triton_gemm_*  the Triton GEMM alone (pre-quantized x), default config and sweep candidates
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-benchmarks/results}"
mkdir -p "$OUT"
start=$(date +%s)
python -c "from qlinear.kernels import cuda_ext; cuda_ext.load(); print('extension ready')" 2>&1 | tail -n 5
echo "build: $(( $(date +%s) - start )) s"
timeout 45 python -m pytest tests/gpu/test_fp8_gemv_cuda_gpu.py -q -x -p no:cacheprovider 2>&1 | tail -n 15 \
    | tee "$OUT/fp8gemv_tests.txt"
tests_rc=${PIPESTATUS[0]}
echo "tests: $(( $(date +%s) - start )) s"
timeout 60 python - "$OUT" <<'PY'
import sys, time
sys.path.insert(0, "benchmarks")
import torch
import torch.nn.functional as F
from _timing import bench_graph, buffers_to_defeat_l2, copy_ceiling_gbps, env_info, write_results
from qlinear._utils import FP8_E4M3, cdiv
from qlinear.kernels import cuda_ext, fp8_triton as kt
from qlinear.ops import fp8 as ops

out_dir = sys.argv[1]
t0 = time.time()
ext = cuda_ext.load()
ceiling = copy_ceiling_gbps(1 << 29)
print(f"copy ceiling {ceiling:.0f} GB/s")
SHAPES = [(2112, 7168), (24576, 1536), (7168, 16384)]
rows = []
EPS = 1e-10
meta = dict(env_info(), copy_ceiling_gbps=ceiling, note="weight GB/s = N*K bytes / time (bf16_linear: 2*N*K)")


def record(case, impl, nbytes, fn, nbuf):
    r = bench_graph(fn, n_buffers=nbuf, reps=15, target_replay_us=1000.0)
    us = r["median_us"]
    gbps = nbytes / (us * 1e-6) / 1e9
    rows.append({"case": case, "impl": impl, "us": us, "p20_us": r["p20_us"], "p80_us": r["p80_us"],
                 "gbps": gbps, "of_ceiling": gbps / ceiling, "method": r["method"]})
    print(f"{case:22s} {impl:26s} {us:8.2f} us {gbps:7.0f} GB/s {gbps / ceiling:5.2f}", flush=True)


for N, K in SHAPES:
    wbytes = N * K
    nbuf = buffers_to_defeat_l2(wbytes)
    ws = [(torch.randn(N, K, device="cuda") * 60).to(FP8_E4M3) for _ in range(nbuf)]
    ss = [torch.rand(cdiv(N, 128), cdiv(K, 128), device="cuda") * 1e-3 + 1e-4 for _ in range(nbuf)]
    for M in (1, 2, 4, 16):
        case = f"{N}x{K} M={M}"
        x = torch.randn(M, K, device="cuda").to(torch.bfloat16)
        q, s = kt.per_token_group_quant_fp8(x, 128, scale_eps=EPS)
        qc, sc = kt.per_token_group_quant_fp8(x, 128, column_major_scales=True, scale_eps=EPS)
        out = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
        if M <= 4:
            record(case, "layer_cuda", wbytes, lambda i: ops.fp8_block_linear(x, ws[i], ss[i], backend="cuda"), nbuf)
            if M * K <= 36 * 1024:
                record(case, "layer_cuda_fused", wbytes,
                       lambda i: ext.fp8_block_gemv(out, x, None, ws[i], ss[i], None, 128, 128, EPS), nbuf)

            def quant_gemv(i):
                q2, s2 = kt.per_token_group_quant_fp8(x, 128, scale_eps=EPS)
                ext.fp8_block_gemv(out, q2, s2, ws[i], ss[i], None, 128, 128, EPS)

            record(case, "layer_cuda_quant+gemv", wbytes, quant_gemv, nbuf)
            record(case, "gemv_default", wbytes,
                   lambda i: ext.fp8_block_gemv(out, q, s, ws[i], ss[i], None, 128, 128, EPS), nbuf)
            if M in (1, 4):
                for wk, tl in ((16, 1), (8, 1), (4, 2), (2, 4), (14, 1), (8, 2)):
                    if wk > cdiv(K, 64):
                        continue
                    record(case, f"gemv_wk{wk}_t{tl}", wbytes,
                           lambda i, wk=wk, tl=tl: ext.fp8_block_gemv(out, q, s, ws[i], ss[i], None, 128, 128, EPS, wk, tl),
                           nbuf)
        record(case, "layer_triton", wbytes, lambda i: ops.fp8_block_linear(x, ws[i], ss[i], backend="triton"), nbuf)
        record(case, "triton_gemm_default", wbytes,
               lambda i: kt.fp8_block_gemm(qc, sc, ws[i], ss[i], (128, 128), torch.bfloat16), nbuf)
        if M == 16:
            G = kt.GemmConfig
            # candidates for GEMM_CONFIGS at M = 16 (7168x16384: 40.4 us whole op vs the 36 us target)
            for cfg in (G(16, 64, 3, 4, 5), G(16, 128, 4, 4, 4), G(16, 128, 8, 4, 4), G(16, 64, 6, 4, 5),
                        G(16, 256, 4, 8, 3)):
                tag = f"triton_gemm_{cfg.block_m}x{cfg.block_n}_s{cfg.split_k}_w{cfg.num_warps}_st{cfg.num_stages}"
                record(case, tag, wbytes,
                       lambda i, cfg=cfg: kt.fp8_block_gemm(qc, sc, ws[i], ss[i], (128, 128), torch.bfloat16, config=cfg),
                       nbuf)
        if M in (1, 16):
            wb = [torch.randn(N, K, device="cuda", dtype=torch.bfloat16) for _ in range(max(1, nbuf // 2))]
            record(case, "bf16_linear", 2 * wbytes, lambda i: F.linear(x, wb[i % len(wb)]), len(wb))
            del wb
    del ws, ss
    torch.cuda.empty_cache()
    # written after every shape, so a timeout still leaves the finished shapes
    write_results("fp8gemv", rows, meta, out_dir, metric="us")
    print(f"-- {N}x{K} done at {time.time() - t0:.0f} s", flush=True)
PY
bench_rc=$?
echo "total: $(( $(date +%s) - start )) s  tests rc=$tests_rc bench rc=$bench_rc"
exit $(( tests_rc != 0 || bench_rc != 0 ))
