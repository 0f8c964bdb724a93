#!/usr/bin/env bash
# Session 10: the W4A16 register decode kernel with L2 prefetches of its chunks ahead (M = 1)
# (benchmarks/probe_w4a16_loads.py --ahead on the micro-benchmark library csrc/probe/w4a16_probe.cu).
#   OUT=/some/dir bash benchmarks/gpu_s10ahead.sh   # ~60 s after the build
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
probe_so="$QLINEAR_BUILD_DIR/w4a16_probe.so"
( nvcc -O3 -std=c++17 -gencode=arch=compute_90,code=sm_90 -Xcompiler -fPIC -shared \
    csrc/probe/w4a16_probe.cu -o "$probe_so" >"$OUT/s10ahead_probe_build.log" 2>&1 ) &
probe_pid=$!
gpu_build s10ahead
wait "$probe_pid"; echo "probe build rc=$?"
gpu_probe ahead 120 "LOADS|rror" benchmarks/probe_w4a16_loads.py --probe-lib "$probe_so" --ahead --no-modes
gpu_cleanup
