"""Op-level W4A16 benchmark (H200 target): qlinear's Triton kernels (a small config sweep per M
bucket), the dequantize + cuBLAS path and the auto dispatch, against bf16 ``F.linear`` and torch's
tinygemm ``_weight_int4pack_mm``, for M in {1, 2, 4, 16, 64, 128, 1024, 4096} x the three
DeepSeek-V3 shapes (asymmetric int4, group 128); act-order (merged shards) and W8A16 at a few M.

Times are medians over CUDA-graph replays (``benchmarks/_timing.py``) with the weights rotated over
enough copies that every call reads them from HBM, not from the 50 MB L2. GB/s counts the packed
weight bytes (qweight + scales + zeros) per call; ``frac_of_copy`` divides by the copy ceiling
measured in the same run (read + write counted, i.e. the HBM rate).

    python benchmarks/bench_w4a16.py --out "$OUT"     # writes bench_w4a16.json; < 4 min on an H200

``make_tinygemm(n, k)`` is also imported by ``bench_linear.py``.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time
from dataclasses import asdict

import torch
import torch.nn.functional as F

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _timing import bench_graph, copy_ceiling_gbps, env_info, l2_bytes, write_results  # noqa: E402

from qlinear.kernels import w4a16_triton as kern  # noqa: E402
from qlinear.ops import w4a16 as ops  # noqa: E402
from qlinear.reference import w4a16 as ref  # noqa: E402

MS = [1, 2, 4, 16, 64, 128, 1024, 4096]
SHAPES = [(2112, 7168), (24576, 1536), (7168, 16384)]  # (N, K)
GROUP = 128
C = kern.W4A16Config

# Candidates per M (split_k 0 = auto). Every distinct config (split included, it is a constexpr)
# is one Triton compile, so the lists stay short.
SWEEP: dict[int, list[kern.W4A16Config]] = {
    1: [C("gemv", 16, sb_per_iter=2), C("gemv", 32, sb_per_iter=2), C("gemv", 32, sb_per_iter=4),
        C("gemv", 64, sb_per_iter=1), C("gemv", 64, sb_per_iter=2, num_warps=8),
        C("gemv", 32, sb_per_iter=2, num_stages=3), C("mma", 64, 16, num_stages=3)],
    2: [C("gemv", 32, sb_per_iter=2), C("mma", 64, 16, num_stages=3), C("mma", 32, 16, sb_per_iter=2, num_stages=3)],
    4: [C("gemv", 32, sb_per_iter=2), C("mma", 64, 16, num_stages=3), C("mma", 128, 16, num_warps=8, num_stages=3)],
    16: [C("mma", 64, 16, num_stages=3), C("mma", 32, 16, sb_per_iter=2, num_stages=3),
         C("mma", 128, 16, num_warps=8, num_stages=3), C("mma", 64, 16, sb_per_iter=2, num_stages=2)],
    64: [C("mma", 64, 64, num_stages=3), C("mma", 128, 64, num_warps=8, num_stages=3), C("mma", 64, 32, num_stages=3)],
    128: [C("mma", 128, 64, split_k=1, num_warps=8, num_stages=3), C("mma", 128, 128, split_k=1, num_warps=8, num_stages=3),
          C("mma", 64, 128, num_warps=4, num_stages=3)],
    1024: [C("mma", 128, 128, split_k=1, num_warps=8, num_stages=3), C("mma", 256, 128, split_k=1, num_warps=8, num_stages=3),
           C("mma", 128, 256, split_k=1, num_warps=8, num_stages=3)],
    4096: [C("mma", 128, 128, split_k=1, num_warps=8, num_stages=3), C("mma", 256, 128, split_k=1, num_warps=8, num_stages=3)],
}


def weight_bytes(p: ops.W4A16Weights) -> int:
    return sum(t.numel() * t.element_size() for t in (p.qweight, p.scales, p.zeros) if t is not None)


def make_canonical(n: int, k: int, bits: int = 4, group: int = GROUP, act_order_bounds=None, seed: int = 0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    q = torch.randint(0, 1 << bits, (n, k), device="cuda", generator=g, dtype=torch.int32)
    z = torch.randint(0, 1 << bits, (n, k // group), device="cuda", generator=g, dtype=torch.int32)
    s = (torch.rand(n, k // group, device="cuda", generator=g) * 0.02 + 1e-3).to(torch.bfloat16)
    g_idx = None
    if act_order_bounds is not None:
        labels = torch.arange(k, device="cuda") // group
        g_idx = [(r0, r1, labels[torch.randperm(k, device="cuda", generator=g)])
                 for r0, r1 in zip(act_order_bounds[:-1], act_order_bounds[1:])]
    return q, z, s, group, g_idx


def make_tinygemm(n: int, k: int, group: int = GROUP):
    """``fn(x)`` running torch's tinygemm int4 kernel on a random asymmetric int4 weight.

    torch >= 2.5 (CUDA) takes the weight as uint8 ``[N, K/2]`` with column 2i in the high nibble and
    2i+1 in the low one, ``_convert_weight_to_int4pack(w, inner_k_tiles)``, and
    ``scales_and_zeros`` bf16 ``[K/g, N, 2]`` with ``W = (q - 8) * scale + zero``.
    """
    q, z, s, _, _ = make_canonical(n, k, 4, group, seed=1)
    w_u8 = ((q[:, ::2] << 4) | q[:, 1::2]).to(torch.uint8)
    last = None
    for tiles in (8, 4, 2):
        try:
            packed = torch._convert_weight_to_int4pack(w_u8, tiles)
            break
        except RuntimeError as exc:
            last = exc
    else:
        raise RuntimeError(f"_convert_weight_to_int4pack refused every inner_k_tiles: {last}")
    scale = s.float()
    zero = (8 - z.float()) * scale  # (q - z) * s == (q - 8) * s + (8 - z) * s
    sz = torch.stack([scale.t(), zero.t()], dim=2).contiguous().to(torch.bfloat16)

    def fn(x):
        return torch._weight_int4pack_mm(x, packed, group, sz)

    fn.reference = ref.dequantize_canonical(q, z, s, group)  # for an error check
    return fn


def rotated(packed: ops.W4A16Weights, copies: int) -> list[ops.W4A16Weights]:
    out = [packed]
    for _ in range(copies - 1):
        t = {name: v.clone() for name, v in packed.tensors().items()}
        out.append(ops.W4A16Weights.from_tensors(t))
    return out


def time_fn(fn, m: int, k: int, nbuf: int) -> dict:
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    return bench_graph(lambda i: fn(x, i), n_buffers=nbuf)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--quick", action="store_true", help="M in {1, 16, 128, 4096}, no act-order / W8")
    args = ap.parse_args()
    t_start = time.time()
    ms = [1, 16, 128, 4096] if args.quick else MS
    ceiling = copy_ceiling_gbps()
    l2 = l2_bytes()
    rows: list[dict] = []
    best: dict[str, dict] = {}

    def record(base, impl, res, nbytes, **extra):
        row = {**base, "impl": impl, **res, **extra}
        if "median_us" in res:
            gbps = nbytes / (res["median_us"] * 1e-6) / 1e9
            row.update(gbps=gbps, frac_of_copy=gbps / ceiling)
        rows.append(row)
        print(f"{base['case']:>22} {impl:<48} {res.get('median_us', float('nan')):9.2f} us", flush=True)
        return row

    for n, k in SHAPES:
        q, z, s, g, _ = make_canonical(n, k)
        packed = ops.pack_w4a16(q, z, s, g)
        w_ref = ref.dequantize_canonical(q, z, s, g)
        wb = weight_bytes(packed)
        copies = max(1, min(64, -(-3 * l2 // wb)))
        packs = rotated(packed, copies)
        w_bf16 = [w_ref.to(torch.bfloat16)]
        for _ in range(max(1, min(16, -(-3 * l2 // (2 * n * k)))) - 1):
            w_bf16.append(w_bf16[0].clone())
        try:
            tg = make_tinygemm(n, k)
            tg_err = None
        except Exception as exc:  # recorded, not fatal: the issue asks to say why
            tg, tg_err = None, repr(exc)[:300]
        for m in ms:
            case = f"M={m} {n}x{k}"
            base = dict(case=case, m=m, n=n, k=k, weight_bytes=wb,
                        weight_floor_us=wb / (ceiling * 1e3))
            r = time_fn(lambda x, i: F.linear(x, w_bf16[i]), m, k, len(w_bf16))
            bf16_us = r["median_us"]
            record(base, "bf16 F.linear", r, 2 * n * k)
            if tg is not None:
                x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
                err = ((tg(x).float() - x.float() @ tg.reference.T).norm() / (x.float() @ tg.reference.T).norm()).item()
                record(base, "tinygemm _weight_int4pack_mm", time_fn(lambda x, i: tg(x), m, k, 1), wb, rel_err=err)
            else:
                rows.append({**base, "impl": "tinygemm _weight_int4pack_mm", "error": tg_err})
            xchk = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
            want = xchk.float() @ w_ref.T
            auto_backend = ops.w4a16_backend(xchk, packed)
            r = time_fn(lambda x, i: ops.w4a16_linear(x, packs[i]), m, k, len(packs))
            record(base, "qlinear auto", r, wb, backend=auto_backend, vs_bf16=r["median_us"] / bf16_us)
            if m >= 64:
                r = time_fn(lambda x, i: ops.w4a16_linear(x, packs[i], backend="dequant_cublas"), m, k, len(packs))
                record(base, "qlinear dequant_cublas", r, wb, vs_bf16=r["median_us"] / bf16_us)
            cand = SWEEP.get(m, [])
            default = kern.resolve_config(m, packed, None, xchk.device)
            for cfg in [default] + cand:
                rc = kern.resolve_config(m, packed, cfg, xchk.device)
                try:
                    y = kern.w4a16_gemm(xchk, packed, None, rc)
                    err = ((y.float() - want).norm() / want.norm()).item()
                    r = time_fn(lambda x, i: kern.w4a16_gemm(x, packs[i], None, rc), m, k, len(packs))
                except Exception as exc:  # a config the compiler refuses (smem, registers)
                    rows.append({**base, "impl": "qlinear triton", "config": asdict(rc), "error": repr(exc)[:300]})
                    continue
                row = record(base, f"qlinear triton {rc.kernel} bn{rc.block_n} bm{rc.block_m} sb{rc.sb_per_iter} "
                             f"sk{rc.split_k} w{rc.num_warps} s{rc.num_stages}", r, wb,
                             config=asdict(rc), rel_err=err, is_default=cfg is default, vs_bf16=r["median_us"] / bf16_us)
                if err <= 1e-2 and (case not in best or r["median_us"] < best[case]["median_us"]):
                    best[case] = {"median_us": r["median_us"], "config": asdict(rc), "bf16_us": bf16_us}
        del packs, w_bf16, packed, w_ref
        torch.cuda.empty_cache()

    if not args.quick:
        # act-order (merged shards, different g_idx) and W8A16 at a few M, auto dispatch.
        n, k = 2112, 7168
        for label, bits, bounds in [("act_order 1536+576", 4, [0, 1536, n]), ("w8a16", 8, None)]:
            q, z, s, g, g_idx = make_canonical(n, k, bits=bits, act_order_bounds=bounds, seed=3)
            packed = ops.pack_w4a16(q, z, s, g, bits=bits, g_idx=g_idx)
            wb = weight_bytes(packed)
            packs = rotated(packed, max(1, min(64, -(-3 * l2 // wb))))
            for m in (1, 16, 128):
                base = dict(case=f"M={m} {n}x{k} {label}", m=m, n=n, k=k, weight_bytes=wb,
                            weight_floor_us=wb / (ceiling * 1e3))
                r = time_fn(lambda x, i: ops.w4a16_linear(x, packs[i]), m, k, len(packs))
                record(base, f"qlinear auto ({label})", r, wb)
            del packs

    meta = {"env": env_info(), "copy_ceiling_gbps": ceiling, "group_size": GROUP,
            "best_configs": best, "wall_s": time.time() - t_start,
            "targets_us": {"M=1 2112x7168": 6, "M=1 24576x1536": 9, "M=1 7168x16384": 20}}
    json_path, png = write_results("bench_w4a16", rows, meta, args.out, metric="median_us")
    print(f"wrote {json_path} {png or ''}; {time.time() - t_start:.0f} s")
    for case, b in best.items():
        print(f"best {case:>22}: {b['median_us']:8.2f} us (bf16 {b['bf16_us']:8.2f}) {b['config']}")


if __name__ == "__main__":
    main()
