#!/usr/bin/env bash
# Session 10: which loads of the W4A16 register decode kernel cost the time at M = 1
# (benchmarks/probe_w4a16_loads.py on the micro-benchmark library csrc/probe/w4a16_probe.cu).
#   OUT=/some/dir bash benchmarks/gpu_s10loads.sh   # ~60 s after the build
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_probe_lib_start s10loads
gpu_build s10loads
gpu_probe_lib_wait
gpu_probe loads 120 "LOADS|rror" benchmarks/probe_w4a16_loads.py --probe-lib "$probe_so"
gpu_cleanup
