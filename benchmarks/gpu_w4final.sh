#!/usr/bin/env bash
# W4A16 after a dispatch-table change: the CUDA decode GPU tests (incl. the committed tables on the
# measured shapes, outputs checked), then bench_linear --format w4a16 (the issue-5 acceptance file).
# (tests/gpu/test_w4a16_gpu.py, the format-level file, needs more than 90 s: run it on its own.)
set -uo pipefail
cd "$(dirname "$0")/.."
timeout 60 python -m pytest -q -p no:cacheprovider tests/gpu/test_w4a16_cuda_gpu.py 2>&1 | tail -n 3
python benchmarks/bench_linear.py --format w4a16 --ms 1 4 16 128 1024 4096 --out "$OUT"
