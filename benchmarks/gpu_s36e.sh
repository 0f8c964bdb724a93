#!/usr/bin/env bash
# RECORD ONLY: ran in session 36 run 3 at 4bc792b.
# Session 36 run 3: gpu_s36d.sh (Nsight Compute of the TMA ring at one and two token tiles), then every GPU
# test file (gpu_s36c.sh's loop) in the time left, one cold start for both.
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s36e.sh
: "${OUT:?}"
cd "$(dirname "$0")/.."
export QLINEAR_BUILD_DIR=/tmp/qb_s36e
t_run=$(date +%s)
OUT=$OUT bash benchmarks/gpu_s36d.sh
OUT=$OUT TEST_BUDGET=$((555 - ($(date +%s) - t_run))) bash benchmarks/gpu_s36c.sh
rm -rf "$QLINEAR_BUILD_DIR"
