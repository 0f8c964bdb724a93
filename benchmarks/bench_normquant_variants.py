"""rms_norm_quant_fp8 CUDA kernels and launch variants, CUDA-graph timing (issue 7's target:
32768 strided 1536-wide bf16 rows >= 0.85 of the copy ceiling measured in the same run).

    python benchmarks/bench_normquant_variants.py [OUT_DIR] [--quick]
    python benchmarks/bench_normquant_variants.py --sass SASS_FILE   (no GPU needed)

--sass: per-opcode histogram of the row kernels' main loops, from ``cuobjdump -sass`` of the built
extension (or ``nvdisasm -c`` of a cubin): the loop is the longest backward branch of the kernel,
the rows it handles are its 16-byte x loads / NV, and "per row" is the loop's static instruction
count / rows (per lane, i.e. warp-instructions per row; the slow-path call sites of sqrt / rcp
count too, a few instructions, never executed).

Cases: the MLA slices of a [M, 2112] bf16 projection output, q_c = [:, :1536] and
kv_c = [:, 1536:2048], M = 32768 (plain and fused add) and M = 4096. Per case: the committed
default (variant 0: row_default in csrc/norm_quant_launch.cu, marked DEFAULT), the row kernel's
explicit launch variants (``rms_norm_quant_fp8_variant``'s ``variant``: 1, 6 the register form,
4 the bulk-copy form with 3 row slots per warp, 11 / 12 nq_slim_kernel (one row ahead at 16 warps
per SM / none at 24); see row_kernel_nv), a few launch shapes, the register kernel (path=1) and
the Triton kernel as anchors. Bytes = x (+ residual read and written) in bf16 + e4m3 codes + fp32
scales. One line per measurement; JSON in OUT_DIR/normquant_variants.json.
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

# (label, a substring of the mangled name, NV, fused add): the row kernels the benchmark compares
SASS_KERNELS = [
    ("v6  row_compute q_c plain", "nq_row_kernelI13__nv_bfloat16Li6ELi1ELb0ELb1ELi2ELi0E", 6, False),
    ("v11 slim q_c plain", "nq_slim_kernelI13__nv_bfloat16Li6ELb0ELb1ELi2E", 6, False),
    ("v12 slim q_c plain no prefetch", "nq_slim_kernelI13__nv_bfloat16Li6ELb0ELb0ELi3E", 6, False),
    ("v6  row_compute q_c +add", "nq_row_kernelI13__nv_bfloat16Li6ELi1ELb1ELb0ELi3ELi0E", 6, True),
    ("v11 slim q_c +add", "nq_slim_kernelI13__nv_bfloat16Li6ELb1ELb0ELi2E", 6, True),
    ("v1  row_compute kv_c plain", "nq_row_kernelI13__nv_bfloat16Li2ELi1ELb0ELb1ELi4ELi0E", 2, False),
    ("v11 slim kv_c plain", "nq_slim_kernelI13__nv_bfloat16Li2ELb0ELb1ELi2E", 2, False),
]


def _sass_functions(text: str) -> dict[str, list[str]]:
    """{mangled name: lines} from cuobjdump -sass ("Function : NAME") or nvdisasm (".text.NAME:")."""
    import re

    funcs: dict[str, list[str]] = {}
    cur = None
    for line in text.splitlines():
        m = re.match(r"\s*Function : (\S+)", line) or re.match(r"\s*\.text\.(\S+):", line)
        if m:
            cur = funcs.setdefault(m.group(1), [])
            continue
        if cur is not None:
            cur.append(line)
    return funcs


def _sass_loop(lines: list[str]) -> list[str]:
    """The instructions of the longest backward-branch loop (opcode text, predicates kept)."""
    import re

    ins, addr, labels = [], [], {}
    for line in lines:
        m = re.match(r"\s*(\.L_x_\d+):", line)
        if m:
            labels[m.group(1)] = len(ins)
            continue
        m = re.match(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;", line)
        if m:
            addr.append(int(m.group(1), 16))
            ins.append(m.group(2))
    at = {a: i for i, a in enumerate(addr)}
    best = None
    for i, s in enumerate(ins):
        m = re.search(r"\bBRA\b.*?(?:`\((\.L_x_\d+)\)|\b(0x[0-9a-f]+)\b)", s)
        if not m:
            continue
        tgt = labels.get(m.group(1)) if m.group(1) else at.get(int(m.group(2), 16))
        if tgt is not None and tgt <= i and (best is None or i - tgt > best[1] - best[0]):
            best = (tgt, i)
    return ins[best[0]:best[1] + 1] if best else []


def sass_report(path: str) -> None:
    import collections
    import re

    funcs = _sass_functions(Path(path).read_text(errors="replace"))
    print(f"sass: {len(funcs)} functions in {path}")
    for label, key, nv, res in SASS_KERNELS:
        name = next((n for n in funcs if key in n), None)
        if name is None:
            print(f"sass {label:31s}: not found ({key})")
            continue
        body = _sass_loop(funcs[name])
        ops = collections.Counter(re.sub(r"^@!?U?P[T0-9]+\s+", "", s).split()[0].split(".")[0] for s in body)
        # 16-byte loads of x (and residual) in the loop / the row's vectors per lane
        n128 = sum(1 for s in body if re.search(r"\bLDG\.E\b[.\w]*\.128\b", s))
        rows = max(1, n128 // (nv * (2 if res else 1)))
        hist = " ".join(f"{k} {v / rows:.1f}" for k, v in ops.most_common())
        print(f"sass {label:31s}: loop {len(body)} / {rows} rows = {len(body) / rows:.0f} per row-lane | {hist}")


def main() -> None:
    if "--sass" in sys.argv:
        sass_report(sys.argv[sys.argv.index("--sass") + 1])
        return
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
         D + [dict(variant=6), dict(variant=1), dict(variant=11), dict(variant=11, blocks_per_sm=-1),
              dict(variant=11, warps=4), dict(variant=12), dict(variant=12, blocks_per_sm=-1),
              dict(variant=12, blocks_per_sm=2), dict(variant=4)] + old + [dict(triton=1)]),
        ("q_c s2112 +add 32768x1536", 32768, 1536, 0, True,
         D + [dict(variant=6), dict(variant=6, blocks_per_sm=-1), dict(variant=11), dict(variant=11, blocks_per_sm=-1),
              dict(variant=12), dict(variant=12, blocks_per_sm=-1)]),
        ("kv_c s2112 32768x512", 32768, 512, 1536, False,
         D + [dict(variant=1), dict(variant=6), dict(variant=11), dict(variant=12)]),
        ("kv_c s2112 +add 32768x512", 32768, 512, 1536, True,
         D + [dict(variant=1), dict(variant=6), dict(variant=11), dict(variant=12)]),
        ("q_c s2112 4096x1536", 4096, 1536, 0, False,
         D + [dict(variant=1), dict(variant=6), dict(variant=11), dict(variant=12)]),
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
