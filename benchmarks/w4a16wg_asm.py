"""Compile the W4A16 tensor-core Triton kernels for sm_90 WITHOUT a GPU and report what the
compiler made of them: wgmma or mma.sync, where the dot's A operand lives (registers or shared
memory), which loads the software pipeliner turned into cp.async (weights / x), the wgmma wait
depths, and registers / spills of the cubin.

Arguments are specialized as the JIT specializes a real launch (ints equal to 1 become
constants, ints and 16-byte-aligned pointers divisible by 16 get ``tt.divisibility``), so the
result matches what the GPU compiles for the same shape.

    python benchmarks/w4a16wg_asm.py                       # default "wg" configs on 3 shapes
    python benchmarks/w4a16wg_asm.py --kernel mma_sb --block-m 128 --dump /tmp/asm
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SHAPES = [(2112, 7168), (24576, 1536), (7168, 16384)]


def _specialize(fn, args: dict, constexprs: dict):
    from triton._C.libtriton import native_specialize_impl
    from triton.backends.compiler import BaseBackend

    sig, consts, attrs = {}, {}, {}
    for i, name in enumerate(fn.arg_names):
        if name in constexprs:
            sig[name] = "constexpr"
            consts[name] = constexprs[name]
            continue
        v = args[name]
        if isinstance(v, str):  # pointer: "*bf16" etc., buffers are 16-byte aligned
            sig[name] = v
            attrs[(i,)] = [["tt.divisibility", 16]]
            continue
        ty, spec = native_specialize_impl(BaseBackend, v, False, True, True)
        if ty == "constexpr":
            sig[name] = "constexpr"
            consts[name] = spec
        else:
            sig[name] = ty
            if spec == "D":
                attrs[(i,)] = [["tt.divisibility", 16]]
    return sig, consts, attrs


def compile_sm90(fn, args: dict, constexprs: dict, num_warps: int, num_stages: int):
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    sig, consts, attrs = _specialize(fn, args, constexprs)
    src = ASTSource(fn, sig, constexprs=consts, attrs=attrs)
    return triton.compile(src, target=GPUTarget("cuda", 90, 32),
                          options=dict(num_warps=num_warps, num_stages=num_stages))


def _resources(cubin: bytes) -> dict:
    import triton

    tool = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"
    if not tool.exists():
        return {}
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        out = subprocess.run([str(tool), "--dump-resource-usage", f.name], capture_output=True, text=True).stdout
    m = re.search(r"REG:(\d+).*?STACK:(\d+).*?SHARED:(\d+)", out)
    return {"regs": int(m.group(1)), "stack": int(m.group(2)), "smem": int(m.group(3))} if m else {}


def summarize(ttgir: str, ptx: str, cubin: bytes | None = None) -> dict:
    """Counts that say whether the dot became a pipelined register-A wgmma."""
    dots = [ln for ln in ttgir.splitlines() if "ttng.warp_group_dot " in ln]
    a_regs = sum(1 for ln in dots if re.search(r"warp_group_dot %\S+, %\S+, %\S+.*?: tensor<[^>]*dot_op<\{opIdx = 0", ln))
    copies = [ln for ln in ttgir.splitlines() if "async_copy_global_to_local" in ln]
    waits = sorted({int(p) for p in re.findall(r"warp_group_dot_wait .*?pendings = (\d+)", ttgir)})
    out = {
        "wgmma_ptx": len(re.findall(r"wgmma\.mma_async", ptx)),
        "mma_sync_ptx": len(re.findall(r"\bmma\.sync", ptx)),
        "warp_group_dot": len(dots),
        "a_from_registers": a_regs,
        "cp_async_x": sum(1 for ln in copies if re.search(r"x(bf16|f16)\b.*->", ln) or "!tt.ptr<bf16>" in ln or "!tt.ptr<f16>" in ln),
        "cp_async_w": sum(1 for ln in copies if "!tt.ptr<i32>" in ln),
        "wgmma_wait_pendings": waits,
        "mma_layout": (re.findall(r"#ttg\.nvidia_mma<\{[^}]*\}>", ttgir) or [""])[0],
    }
    if cubin:
        out.update(_resources(cubin))
    return out


def compile_w4a16(kernel: str, n: int, k: int, m: int, cfg, bits: int = 4, group: int = 128,
                  zeros: bool = False, dtype: str = "bf16"):
    """Compile ``kernel`` ("wg" / "mma_sb") as :func:`w4a16_gemm` would launch it for this layer."""
    from qlinear.kernels import w4a16_triton as wt

    fields = 32 // bits
    sb_cols = 16 * fields
    kp = -(-k // sb_cols) * sb_cols
    num_sb = kp // sb_cols
    n_tiles = -(-n // cfg.block_n)
    ptrs = dict(Out_ptr=f"*{dtype}", X_ptr=f"*{dtype}", QW_ptr="*i32", S_ptr=f"*{dtype}", Z_ptr="*u8",
                Bias_ptr=f"*{dtype}", WS_ptr="*fp32", Lock_ptr="*i32", Bounds_ptr="*i32")
    ints = dict(M=m, N=n, K=k, G=k // group, num_sb=num_sb, n_tiles=n_tiles, X_row_stride=k, X_shard_stride=0,
                Out_row_stride=n, QW_row_stride=kp // fields)
    ce = dict(BITS=bits, GROUP_SIZE=0 if group == k else group, HAS_ZEROS=zeros, HAS_BIAS=False, NUM_SHARDS=1,
              BLOCK_N=cfg.block_n, BLOCK_M=cfg.block_m, SB_PER_ITER=cfg.sb_per_iter, SPLIT_K=cfg.split_k or 1,
              GROUP_M=cfg.group_m, USE_PDL=False, PDL_EARLY=False)
    if kernel == "wg":
        fn = wt._w4a16_wg_kernel
        ce["HALF_DEQUANT"] = bits == 4 or dtype == "fp16"
    elif kernel == "mma_sb":
        fn = wt._w4a16_mma_sb_kernel
        ce.update(SCALE_AFTER=cfg.scale_after, HALF_MAGIC=bits == 4 or dtype == "fp16")
    else:
        raise ValueError(f"kernel: expected 'wg' or 'mma_sb', got {kernel!r}")
    args = dict(ptrs, **ints)
    return compile_sm90(fn, args, ce, cfg.num_warps, cfg.num_stages)


def main() -> int:
    import triton

    from qlinear.kernels import w4a16_triton as wt

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kernel", default="wg")
    ap.add_argument("--m", type=int, nargs="*", default=[64, 128])
    ap.add_argument("--block-n", type=int)
    ap.add_argument("--block-m", type=int)
    ap.add_argument("--sb", type=int)
    ap.add_argument("--warps", type=int)
    ap.add_argument("--stages", type=int)
    ap.add_argument("--split", type=int)
    ap.add_argument("--group", type=int, default=128)
    ap.add_argument("--zeros", action="store_true")
    ap.add_argument("--shapes", default="all", help="all or NxK[,NxK]")
    ap.add_argument("--dump", help="write .ttgir / .ptx here")
    ap.add_argument("--json", help="write the summaries here")
    a = ap.parse_args()
    shapes = SHAPES if a.shapes == "all" else [tuple(int(v) for v in s.split("x")) for s in a.shapes.split(",")]
    print(f"triton {triton.__version__}, target sm_90 (offline compile)")
    rows, ok = [], True
    for n, k in shapes:
        for m in a.m:
            cfg = wt.wg_config(m)
            cfg = wt.W4A16Config(a.kernel, block_n=a.block_n or cfg.block_n, block_m=a.block_m or cfg.block_m,
                                 sb_per_iter=a.sb or cfg.sb_per_iter, split_k=a.split or 1,
                                 num_warps=a.warps or cfg.num_warps, num_stages=a.stages or cfg.num_stages,
                                 scale_after=True)
            ck = compile_w4a16(a.kernel, n, k, m, cfg, group=a.group if a.group > 0 else k, zeros=a.zeros)
            summ = summarize(ck.asm["ttgir"], ck.asm["ptx"], ck.asm.get("cubin"))
            good = summ["wgmma_ptx"] > 0 and summ["a_from_registers"] > 0 and summ["cp_async_x"] > 0
            ok &= good
            tag = f"{a.kernel} {n}x{k} M={m} bn{cfg.block_n} bm{cfg.block_m} sb{cfg.sb_per_iter} w{cfg.num_warps} s{cfg.num_stages}"
            print(f"ASM {tag}: {'OK' if good else 'NOT'} wgmma-regA-pipelined-x  {json.dumps(summ)}")
            rows.append(dict(tag=tag, **summ))
            if a.dump:
                os.makedirs(a.dump, exist_ok=True)
                base = os.path.join(a.dump, tag.replace(" ", "_").replace("=", ""))
                Path(base + ".ttgir").write_text(ck.asm["ttgir"])
                Path(base + ".ptx").write_text(ck.asm["ptx"])
    if a.json:
        Path(a.json).write_text(json.dumps(dict(triton=triton.__version__, rows=rows), indent=1))
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
