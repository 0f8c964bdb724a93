#!/usr/bin/env bash
# RECORD ONLY: ran in session 34 run 5 at 52f4e97 (branch s34-streamk).
# Session 34 run 5 (branch s34-streamk; its kernel and probe_sk_trace.py are in notes/s34_streamk.patch): where the stream-K grid's time goes: per-CTA %globaltimer stamps
# (benchmarks/probe_sk_trace.py) at M = 256 and 1024 on 2112x7168.
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s34e.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s34e
timeout 200 python benchmarks/probe_sk_trace.py --ms 256 1024 2>&1 | tee "$OUT/trace.log"
gpu_cleanup
