"""``bench_linear.py --format w4a16`` with one row of a W4A16 wgmma dispatch table replaced first, in the same process:
what committing that row would give, measured before it is committed (the GPU stage scripts run it only when the
candidate's tests passed and it beat the row in the probe).

    python benchmarks/bench_linear_row.py auto few 1024 256,0,3,0,64 OUT_DIR [bench_linear args...]
    python benchmarks/bench_linear_row.py sym few 128 128,4,6,3,64,2 OUT_DIR

``auto``: the row of ``qlinear.ops.w4a16._CUDA_WGMMA_AUTO[CLASS]`` whose max_m is MAX_M (it must exist); ``sym``:
``_CUDA_WGMMA_AUTO_SYM[CLASS][MAX_M]`` (added if absent). CONFIG is the comma-separated config tuple.
"""

from __future__ import annotations

import runpy
import sys
from pathlib import Path


def main(argv: list[str]) -> None:
    if len(argv) < 5 or argv[0] not in ("auto", "sym"):
        sys.exit(__doc__)
    table, cls, max_m, config, out = argv[0], argv[1], int(argv[2]), tuple(int(v) for v in argv[3].split(",")), argv[4]
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from qlinear.ops import w4a16 as ops

    if table == "auto":
        rows = list(ops._CUDA_WGMMA_AUTO[cls])
        at = [i for i, (m, _) in enumerate(rows) if m == max_m]
        if not at:
            sys.exit(f"_CUDA_WGMMA_AUTO[{cls!r}] has no row with max_m {max_m}: {rows}")
        rows[at[0]] = (max_m, config)
        ops._CUDA_WGMMA_AUTO[cls] = tuple(rows)
        print(f"_CUDA_WGMMA_AUTO[{cls!r}] =", ops._CUDA_WGMMA_AUTO[cls], flush=True)
    else:
        ops._CUDA_WGMMA_AUTO_SYM.setdefault(cls, {})[max_m] = config
        print(f"_CUDA_WGMMA_AUTO_SYM[{cls!r}] =", ops._CUDA_WGMMA_AUTO_SYM[cls], flush=True)
    bench = Path(__file__).resolve().parent / "bench_linear.py"
    sys.argv = [str(bench), "--format", "w4a16", "--out", out, *argv[5:]]
    runpy.run_path(str(bench), run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
