#!/usr/bin/env bash
# Fused RMSNorm -> FP8 (issue 7), CUDA backend, on the GPU machine in one command (~90 s):
#   1. a cold build of the CUDA extension (fresh QLINEAR_BUILD_DIR), timed;
#   2. pytest tests/gpu/test_norm_quant_cuda_gpu.py;
#   3. benchmark, CUDA-graph timing, 32768 rows x 1536 bf16: the strided q_c slice of a
#      [32768, 2112] tensor (the issue's target) and contiguous rows, plain and fused add, the
#      CUDA kernel's default and a few launch configurations, the Triton kernel as anchor.
#      Bytes = x (+ residual read and written) in x.dtype + e4m3 codes + fp32 scales; fraction of
#      the copy ceiling measured in the same run. JSON: "$OUT/normquant.json".
# Usage:  OUT=/some/dir bash benchmarks/gpu_normquant.sh      (OUT defaults to benchmarks/results)
source "$(dirname "$0")/_gpu_build.sh"
gpu_build normquant

echo "== 2. GPU tests"
timeout 60 python -m pytest -q -p no:cacheprovider tests/gpu/test_norm_quant_cuda_gpu.py \
    >"$OUT/normquant_pytest.txt" 2>&1
test_rc=$?
tail -n 15 "$OUT/normquant_pytest.txt"

echo "== 3. benchmark"
timeout 70 python - "$OUT" "$build_s" <<'EOF' 2>&1 | tee "$OUT/normquant_bench.txt"
import sys, time
import torch
sys.path.insert(0, "benchmarks")
from _timing import bench_graph, buffers_to_defeat_l2, copy_ceiling_gbps, env_info, write_results
from qlinear._utils import FP8_E4M3, cdiv, empty_group_scales
from qlinear.kernels import cuda_ext, fp8_triton
from qlinear.ops import fp8 as ops

out_dir, build_s = sys.argv[1], float(sys.argv[2])
t_start = time.time()
ext = cuda_ext.load()
M, K, STRIDE, GS, EPS = 32768, 1536, 2112, 128, 1e-6
G = cdiv(K, GS)
ceiling = copy_ceiling_gbps()
print(f"copy ceiling {ceiling:8.1f} GB/s")
rows = []
g = torch.Generator(device="cuda").manual_seed(0)
w = (torch.rand(K, device="cuda", generator=g) + 0.5).to(torch.bfloat16)


def inputs(strided, residual):
    nbytes = M * K * (2 * (3 if residual else 1) + 1) + M * G * 4
    n = buffers_to_defeat_l2(nbytes)
    sets = []
    for _ in range(n):
        base = torch.randn(M, STRIDE if strided else K, device="cuda", generator=g).to(torch.bfloat16)
        res = torch.randn(M, K, device="cuda", generator=g).to(torch.bfloat16) if residual else None
        sets.append((base[:, :K], res))
    return sets, nbytes


def measure(case, impl, fn, n, nbytes, **extra):
    t = bench_graph(fn, n_buffers=n)
    us = t["median_us"]
    gbps = nbytes / (us * 1e-6) / 1e9
    row = dict(case=case, impl=impl, us=us, p20_us=t["p20_us"], p80_us=t["p80_us"], gbps=gbps,
               frac_copy=gbps / ceiling, method=t["method"], **extra)
    rows.append(row)
    print(f"{case:24s} {impl:34s} {us:8.1f} us {gbps:7.0f} GB/s {gbps / ceiling:6.3f} of copy")


for strided in (True, False):
    for residual in (False, True):
        case = ("q_c s2112" if strided else "contig") + (" +add" if residual else "") + f" {M}x{K}"
        sets, nbytes = inputs(strided, residual)
        n = len(sets)
        q = torch.empty(M, K, dtype=FP8_E4M3, device="cuda")
        s_cm = empty_group_scales(M, G, True, "cuda")
        s_rm = empty_group_scales(M, G, False, "cuda")

        def raw(cfg, s=s_cm):
            def fn(i):
                x, r = sets[i]
                ext.rms_norm_quant_fp8(q, s, x, r, w, EPS, 1e-10, GS, cfg.get("warps", 0),
                                       cfg.get("blocks_per_sm", 0), cfg.get("path", 0), cfg.get("prefetch", 0))
            return fn

        x0, r0 = sets[0]
        used = ext.rms_norm_quant_fp8(q, s_cm, x0, r0, w, EPS, 1e-10, GS)
        measure(case, f"cuda default (public op) k{used}",
                lambda i: ops.rms_norm_quant_fp8(sets[i][0], w, EPS, GS, residual=sets[i][1],
                                                 column_major_scales=True, backend="cuda"),
                n, nbytes, kernel=used, cfg="default")
        configs = [dict(), dict(warps=4), dict(warps=16), dict(blocks_per_sm=-1)]
        if not residual:
            configs += [dict(prefetch=-1), dict(prefetch=-1, warps=4), dict(prefetch=-1, warps=16),
                        dict(prefetch=-1, blocks_per_sm=-1)]
        if strided and not residual:
            configs += [dict(warps=2), dict(warps=4, blocks_per_sm=-1), dict(path=-1)]
        for cfg in configs:
            name = "cuda " + (",".join(f"{k}={v}" for k, v in cfg.items()) or "default cfg")
            measure(case, name, raw(cfg), n, nbytes, cfg=str(cfg))
        if strided:
            measure(case, "cuda default, row-major scales", raw({}, s_rm), n, nbytes, cfg="row-major scales")
            measure(case, "triton (default warps)",
                    lambda i: fp8_triton.rms_norm_quant_fp8(sets[i][0], w, EPS, GS, residual=sets[i][1],
                                                            column_major_scales=True), n, nbytes)
        del sets
        torch.cuda.empty_cache()

meta = env_info()
meta.update(copy_ceiling_gbps=ceiling, first_build_s=build_s, shape=f"{M}x{K} bf16, strided rows: stride {STRIDE}",
            bytes="x (+ residual read + write) bf16 + e4m3 codes + fp32 scales", wall_s=time.time() - t_start)
print("json:", write_results("normquant", rows, meta, out_dir, metric="gbps", label="impl", group="case")[0])
best = max((r for r in rows if r["case"].startswith("q_c") and "+add" not in r["case"] and r["impl"].startswith("cuda")),
           key=lambda r: r["gbps"])
print(f"best CUDA on q_c plain: {best['impl']} {best['frac_copy']:.3f} of copy (target >= 0.85)")
EOF
bench_rc=${PIPESTATUS[0]}

echo
echo "================ rms_norm_quant_fp8 CUDA summary ================"
echo "first build : ${build_s} s (rc=$build_rc)"
echo "gpu tests   : $(grep -E '(passed|failed|error)' "$OUT/normquant_pytest.txt" | tail -n 1) (rc=$test_rc)"
echo "benchmark   : rc=$bench_rc"
echo "total wall  : $(( $(date +%s) - t_all )) s"
gpu_cleanup
[ "$build_rc" -eq 0 ] && [ "$test_rc" -eq 0 ] && [ "$bench_rc" -eq 0 ]
