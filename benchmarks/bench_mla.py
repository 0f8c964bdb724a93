"""The seed's pipeline end to end: DeepSeek MLA's fused QKV-A projection + strided norms
(+ the FP8 quantization q_b_proj needs), against the unfused path, per weight format.

    python benchmarks/bench_mla.py [--out DIR] [--formats bf16 fp8-block w4a16]

Weights: --weights cold (default) rotates copies of every layer past L2, as a decode step reads
them; --weights hot keeps one copy (L2-resident where it fits).

hidden [M, 7168] ->
  fused:   qkv = fused_qkv_a_proj(hidden)            one MergedReplicatedLinear, [M, 2112]
           q_c, kv_c = rms_norm_slices(qkv, (0, 1536, 2048), (w_q, w_kv))
                  both strided slices (row stride 2112) normalized in ONE launch, no copy
           fp8-block: (q_fp8, q_scales), kv_c = rms_norm_slices(..., quant_fp8=(True, False)):
                  q_c straight to e4m3 + per-token-group scales for q_b_proj, kv_c bf16, ONE
                  launch (per-slice kernels from SLICES_QUANT_ONE_LAUNCH_MAX_ROWS rows)
  unfused: q = q_a_proj(hidden); kv = kv_a_proj_with_mqa(hidden)     two ReplicatedLinear GEMMs
           q_c = rms_norm(q); kv_c = rms_norm(kv[:, :512].contiguous())
                  (fp8-block: then per_token_group_quant_fp8(q_c))
Both paths use the same checkpoint tensors and qlinear's own kernels, so the difference is the
fusion alone. Times with CUDA graphs for M in {1, 16, 128, 1024, 4096}: each of --passes passes
alternates fused and unfused graph replays (--interleave replays, the default since session 5: at
M = 4096 the clocks drift by more between back-to-back measurements than the few % compared);
checks that the outputs agree within the quantization tolerance; writes mla.json + mla.png.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _layers import build_layer  # noqa: E402
from _timing import bench_graph, bench_graphs_interleaved, buffers_to_defeat_l2, env_info, write_results  # noqa: E402

from qlinear.ops import per_token_group_quant_fp8, rms_norm, rms_norm_slices  # noqa: E402

HIDDEN, Q_LORA, KV_LORA, ROPE = 7168, 1536, 512, 64
MS = [1, 16, 128, 1024, 4096]


WEIGHT_BYTES = {"bf16": 2, "fp8-block": 1, "w4a16": 0.5}


def pipelines(fmt: str, weights: str = "cold"):
    """(run_fused(i, h), run_unfused(i, h)): ``i`` picks one of the rotated weight copies."""
    nbytes = int(WEIGHT_BYTES[fmt] * (Q_LORA + KV_LORA + ROPE) * HIDDEN)
    copies = 1 if weights == "hot" else buffers_to_defeat_l2(nbytes, max_buffers=24)
    built = [build_layer(fmt, HIDDEN, [Q_LORA, KV_LORA + ROPE], device="cuda", split=True) for _ in range(copies)]
    w_q = (1 + 0.1 * torch.randn(Q_LORA, device="cuda")).to(torch.bfloat16)
    w_kv = (1 + 0.1 * torch.randn(KV_LORA, device="cuda")).to(torch.bfloat16)
    fp8 = fmt == "fp8-block"

    def run_fused(i, h):
        qkv = built[i % copies][0](h)
        if fp8:
            q, kv_c = rms_norm_slices(qkv, (0, Q_LORA, Q_LORA + KV_LORA), (w_q, w_kv), 1e-6, quant_fp8=(True, False))
        else:
            q, kv_c = rms_norm_slices(qkv, (0, Q_LORA, Q_LORA + KV_LORA), (w_q, w_kv), 1e-6)
        return q, kv_c, qkv[:, Q_LORA + KV_LORA:]

    def run_unfused(i, h):
        q_a, kv_a = built[i % copies][1]
        q = q_a(h)
        kv = kv_a(h)
        q_c = rms_norm(q, w_q, 1e-6)
        kv_c = rms_norm(kv[:, :KV_LORA].contiguous(), w_kv, 1e-6)
        if fp8:
            q_c = per_token_group_quant_fp8(q_c, 128)
        return q_c, kv_c, kv[:, KV_LORA:]

    run_fused.copies = run_unfused.copies = copies
    return run_fused, run_unfused


def _as_float(q):
    if isinstance(q, tuple):  # (e4m3 [M, K], scales [M, K/128]) -> dequantized
        x, s = q
        return x.float() * s.float().repeat_interleave(128, dim=1)[:, : x.shape[1]]
    return q.float()


def rel(a, b):
    return ((a - b).norm() / b.norm().clamp_min(1e-30)).item()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--weights", choices=["cold", "hot"], default="cold",
                    help="cold: rotate weight copies past L2 as a decode step does; hot: one copy")
    ap.add_argument("--passes", type=int, default=3, help="interleaved fused / unfused passes (median reported)")
    ap.add_argument("--formats", nargs="+", default=["bf16", "fp8-block", "w4a16"])
    ap.add_argument("--ms", type=int, nargs="+", default=MS)
    ap.add_argument("--interleave", choices=["replays", "passes"], default="replays",
                    help="replays: each pass alternates fused / unfused graph replays (same clocks); "
                         "passes: each pass times fused, then unfused (sessions 1-4)")
    args = ap.parse_args()
    torch.manual_seed(0)
    rows = []
    for fmt in args.formats:
        fused, unfused = pipelines(fmt, args.weights)
        for m in args.ms:
            nx = buffers_to_defeat_l2(2 * m * HIDDEN, max_buffers=8)
            hs = [torch.randn(m, HIDDEN, device="cuda", dtype=torch.bfloat16) for _ in range(nx)]
            nbuf = max(nx, fused.copies)
            a, b = fused(0, hs[0]), unfused(0, hs[0])
            errs = [rel(_as_float(x), _as_float(y)) for x, y in zip(a, b)]
            # Interleaved passes (fused, unfused, fused, ...): clocks drift between seconds-apart
            # measurements by more than the few % a large-M comparison is about, so each pass
            # times both back to back and the pass medians are reported.
            passes = []
            for _ in range(args.passes):
                if args.interleave == "replays":
                    t = bench_graphs_interleaved({"f": lambda i: fused(i, hs[i % nx]),
                                                  "u": lambda i: unfused(i, hs[i % nx])}, n_buffers=nbuf)
                    t_f, t_u = t["f"], t["u"]
                else:
                    t_f = bench_graph(lambda i: fused(i, hs[i % nx]), n_buffers=nbuf)
                    t_u = bench_graph(lambda i: unfused(i, hs[i % nx]), n_buffers=nbuf)
                passes.append((t_f, t_u))
            f_us = statistics.median(p[0]["median_us"] for p in passes)
            u_us = statistics.median(p[1]["median_us"] for p in passes)
            ratios = [p[1]["median_us"] / p[0]["median_us"] for p in passes]
            case = f"{fmt} M={m}"
            speedup = statistics.median(ratios)
            rows.append(dict(case=case, fmt=fmt, m=m, impl="fused", weights=args.weights, weight_copies=fused.copies,
                             us=f_us, median_us=f_us, pass_us=[p[0]["median_us"] for p in passes],
                             max_rel_err_vs_unfused=max(errs), speedup=speedup, pass_speedups=ratios))
            rows.append(dict(case=case, fmt=fmt, m=m, impl="unfused", us=u_us, median_us=u_us,
                             pass_us=[p[1]["median_us"] for p in passes]))
            print(f"{case:>18}: fused {f_us:8.1f} us  unfused {u_us:8.1f} us  speedup {speedup:5.2f}x "
                  f"[{min(ratios):.2f}-{max(ratios):.2f} over {len(ratios)} passes]  max rel err {max(errs):.2e}",
                  flush=True)
        torch.cuda.empty_cache()
    meta = {**env_info(), "timing": "CUDA graph replay, median of 30; median of --passes interleaved passes",
            "passes": args.passes, "weights": args.weights, "interleave": args.interleave}
    write_results("mla" + ("_hot" if args.weights == "hot" else ""), rows, meta, args.out, metric="us")


if __name__ == "__main__":
    main()
