#!/usr/bin/env bash
# Odds and ends of a final GPU run (<= ~90 s): the measured-config FP8 test, the
# compressed-tensors GPU tests on fixtures the producer wrote on a CPU machine
# (python -m qlinear.testing.compressed_tensors build/ct_fixtures), and the harness floor for a
# one-row RMSNorm launch next to the 16x7168 latency case (what an empty-ish kernel costs in a
# CUDA graph of back-to-back calls with PDL).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-benchmarks/results}"
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH="${PYTHONPATH:-$PWD}"
timeout 40 python -m pytest -q -p no:cacheprovider tests/gpu/test_fp8_gpu.py -k measured_config 2>&1 | tail -n 2
a=${PIPESTATUS[0]}
QLINEAR_CT_FIXTURES=build/ct_fixtures QLINEAR_GPU_RESULTS=$OUT/ct_gpu.json timeout 60 \
    python -m pytest -q -p no:cacheprovider -m gpu -rs tests/quantization/test_compressed_tensors_format.py 2>&1 | tail -n 4
b=${PIPESTATUS[0]}
timeout 30 python - <<'PY'
import sys, torch
sys.path.insert(0, "benchmarks")
from _timing import bench_graph
from qlinear.ops import rms_norm
for rows, h in ((1, 8), (1, 7168), (16, 7168)):
    xs = [torch.randn(rows, h, device="cuda", dtype=torch.bfloat16) for _ in range(8)]
    w = torch.randn(h, device="cuda", dtype=torch.bfloat16)
    t = bench_graph(lambda i: rms_norm(xs[i], w), n_buffers=8)
    print(f"FLOOR rms_norm {rows}x{h}: {t['median_us']:.2f} us (p20 {t['p20_us']:.2f})", flush=True)
PY
c=$?
echo "fp8 test rc=$a ct rc=$b floor rc=$c"
exit $(( a != 0 || b != 0 || c != 0 ))
