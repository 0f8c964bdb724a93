"""rms_norm_quant_fp8 CUDA kernels and launch variants, CUDA-graph timing (issue 7's target:
32768 strided 1536-wide bf16 rows >= 0.85 of the copy ceiling measured in the same run).

    python benchmarks/bench_normquant_variants.py [OUT_DIR] [--quick]

Cases: the MLA slices of a [M, 2112] bf16 projection output, q_c = [:, :1536] and
kv_c = [:, 1536:2048], M = 32768 (plain and fused add) and M = 4096. Per case: the committed
default (variant 0: row_default in csrc/norm_quant_launch.cu, marked DEFAULT), the row kernel's
explicit launch variants (``rms_norm_quant_fp8_variant``'s ``variant``: 1, 6 the register form,
4 the bulk-copy form with 3 row slots per warp, 7 .. 10 the round-3 q_c plain candidates: packed
rows at 20 / 32 warps per SM, two rows per step; see row_kernel_nv), a few launch
shapes, the register kernel (path=1) and the Triton kernel as anchors. Bytes = x (+ residual read and written) in bf16 + e4m3
codes + fp32 scales. One line per measurement; JSON in OUT_DIR/normquant_variants.json.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import torch

# runnable from a checkout without pip install: the repo root (qlinear) and benchmarks/ (_timing)
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import bench_graph, buffers_to_defeat_l2, copy_ceiling_gbps, env_info, write_results  # noqa: E402

from qlinear._utils import FP8_E4M3, cdiv, empty_group_scales  # noqa: E402

EPS, SCALE_EPS, GS, WIDTH = 1e-6, 1e-10, 128, 2112


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    quick = "--quick" in sys.argv
    out_dir = args[0] if args else None
    from qlinear.kernels import cuda_ext, fp8_triton

    ext = cuda_ext.load()
    t0 = time.time()
    ceiling = copy_ceiling_gbps()
    print(f"copy ceiling {ceiling:8.1f} GB/s (read + write counted)")
    g = torch.Generator(device="cuda").manual_seed(0)
    rows: list[dict] = []

    # (case name, M, K, column offset, residual, launch configs)
    D = [dict(variant=0)]
    old = [dict(path=1)]
    cases = [
        ("q_c s2112 32768x1536", 32768, 1536, 0, False,
         D + [dict(variant=6), dict(variant=6, blocks_per_sm=3, warps=5), dict(variant=1),
              dict(variant=7), dict(variant=7, blocks_per_sm=3), dict(variant=7, warps=4),
              dict(variant=8), dict(variant=8, blocks_per_sm=-1), dict(variant=8, warps=4),
              dict(variant=9), dict(variant=9, blocks_per_sm=-1), dict(variant=9, blocks_per_sm=3),
              dict(variant=10), dict(variant=10, blocks_per_sm=-1), dict(variant=4)] + old + [dict(triton=1)]),
        ("q_c s2112 +add 32768x1536", 32768, 1536, 0, True,
         D + [dict(variant=6), dict(variant=6, blocks_per_sm=-1), dict(variant=4)] + old),
        ("kv_c s2112 32768x512", 32768, 512, 1536, False,
         D + [dict(variant=1), dict(variant=6)]),
        ("kv_c s2112 +add 32768x512", 32768, 512, 1536, True,
         D + [dict(variant=1), dict(variant=6)]),
        ("q_c s2112 4096x1536", 4096, 1536, 0, False,
         D + [dict(variant=1), dict(variant=6), dict(variant=7), dict(variant=8), dict(variant=9),
              dict(variant=10)]),
    ]
    if quick:
        cases = [(c[0], c[1], c[2], c[3], c[4], c[5][:3] + old[:1]) for c in cases[:2]]

    for case, M, K, off, residual, configs in cases:
        G = cdiv(K, GS)
        nbytes = M * K * (2 * (3 if residual else 1) + 1) + M * G * 4
        n = buffers_to_defeat_l2(nbytes)
        w = (torch.rand(K, device="cuda", generator=g) + 0.5).to(torch.bfloat16)
        sets = []
        for _ in range(n):
            base = torch.randn(M, WIDTH, device="cuda", generator=g).to(torch.bfloat16)
            res = torch.randn(M, K, device="cuda", generator=g).to(torch.bfloat16) if residual else None
            sets.append((base[:, off:off + K], res))
        q = torch.empty(M, K, dtype=FP8_E4M3, device="cuda")
        s = empty_group_scales(M, G, True, "cuda")
        for cfg in configs:
            if cfg.get("triton"):
                name = "triton (default warps)"
                fn = lambda i: fp8_triton.rms_norm_quant_fp8(sets[i][0], w, EPS, GS, residual=sets[i][1],  # noqa: E731
                                                            column_major_scales=True, scale_eps=SCALE_EPS)
                used = "triton"
            else:
                a = (cfg.get("warps", 0), cfg.get("blocks_per_sm", 0), cfg.get("path", 0), 0, cfg.get("variant", 0))
                used = ext.rms_norm_quant_fp8_variant(q, s, sets[0][0], sets[0][1], w, EPS, SCALE_EPS, GS, *a)
                kname = {2: "row", 3: "bulk", 8: "reg8", 16: "reg16", 1: "two-pass", 0: "generic"}.get(used, str(used))
                name = f"{kname} " + ",".join(f"{k}={v}" for k, v in cfg.items())
                if cfg == dict(variant=0):
                    name = f"DEFAULT {kname} variant=0"

                def fn(i, a=a):
                    x, r = sets[i]
                    ext.rms_norm_quant_fp8_variant(q, s, x, r, w, EPS, SCALE_EPS, GS, *a)

            t = bench_graph(fn, n_buffers=n)
            us = t["median_us"]
            gbps = nbytes / (us * 1e-6) / 1e9
            rows.append(dict(case=case, impl=name, kernel=used, cfg=str(cfg), us=us, p20_us=t["p20_us"],
                             p80_us=t["p80_us"], gbps=gbps, frac_copy=gbps / ceiling, method=t["method"]))
            print(f"{case:26s} {name:36s} {us:8.2f} us {gbps:7.0f} GB/s {gbps / ceiling:6.3f} of copy", flush=True)
        del sets
        torch.cuda.empty_cache()

    meta = env_info()
    meta.update(copy_ceiling_gbps=ceiling, width=WIDTH, group_size=GS, wall_s=time.time() - t0,
                bytes="x (+ residual read + write) bf16 + e4m3 codes + fp32 scales")
    print("json:", write_results("normquant_variants", rows, meta, out_dir, metric="gbps", label="impl",
                                 group="case")[0])
    for case in dict.fromkeys(r["case"] for r in rows):
        cuda = [r for r in rows if r["case"] == case and r["kernel"] != "triton"]
        best = max(cuda, key=lambda r: r["gbps"])
        dflt = next((r for r in cuda if r["cfg"] == str(dict(variant=0))), None)
        print(f"best {case:26s}: {best['impl']:36s} {best['frac_copy']:.3f} of copy"
              + (f" | committed DEFAULT {dflt['frac_copy']:.3f} ({dflt['us']:.2f} us)" if dflt else ""))


if __name__ == "__main__":
    main()
