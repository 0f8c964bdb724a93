#!/usr/bin/env bash
# RECORD ONLY: ran in session 41 run 1 at 6f5de0a (its bench_linear step later became gpu_bench_format: the same steps).
# (its probe loop later became gpu_probe_layers in _gpu_build.sh: the same commands.)
# Session 41 run 1: what the 64-row W4A16 wgmma CTAs' stage ring costs without arithmetic (csrc/probe/ingress_probe.cu:
# the same TMA boxes, stages and grid, a clock standing in for the wgmmas, two release policies), beside the real
# kernel's row config at M = 1024 (probe, both layer kinds); then bench_linear --format w4a16 on the tree as committed.
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s41a.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
nvcc -O3 -std=c++17 -arch=sm_90a csrc/probe/ingress_probe.cu -o /tmp/ingress_probe > /tmp/ingress_build.log 2>&1 &
ing_pid=$!
gpu_run_start s41a
wait "$ing_pid"; echo "ingress probe build rc=$?"; cat /tmp/ingress_build.log | head -20
timeout 60 /tmp/ingress_probe 2>&1 | tee "$OUT/ingress.txt"
gpu_probe_layers row 90 1024 "256,0,3,0,64"
gpu_bench_format w4a16 230
gpu_cleanup
