#!/usr/bin/env bash
# Session 17 run 8 (91412b2): session 16's final stage unchanged (gpu_s16final.sh: the CUDA W4A16
# decode GPU tests, the fold and layer tests, then bench_linear --format w4a16, the issue-5
# acceptance file); this name keeps its output folder apart. Run 4 (e0743f2) also ran
# tests/gpu/test_w4a16_xs.py (removed since) in the same pytest call.
#   OUT=/some/dir bash benchmarks/gpu_s17final.sh
exec bash "$(dirname "$0")/gpu_s16final.sh" "$@"
