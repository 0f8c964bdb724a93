#!/usr/bin/env bash
# RECORD ONLY: ran in session 35 run 2 at b7700fc; a stamping build: notes/s35_wg_trace.patch.
# Session 35 run 2 (branch s35-trace): the split configs of 2112x7168 at M = 128 traced per CTA and timed
# against each other (replays alternated, bf16 F.linear beside them): the dispatch's 128 rows x 128 tokens
# with 7 spread splits against fewer splits, 64-row CTAs (4 / 3 splits: 132 / 99 CTAs), 192-row CTAs (12 / 8
# splits) and 64-token CTAs (3 splits).
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s35c.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s35c
S=2112x7168:128
timeout 300 python benchmarks/probe_wg_trace.py --variants 0 --compare --case $S --case $S:128,5,4,0,0 \
    --case $S:128,6,4,0,0 --case $S:128,4,4,0,64 --case $S:128,3,4,0,64 --case $S:128,12,4,0,192 \
    --case $S:128,8,4,0,192 --case $S:64,3,4,0,0 2>&1 | tee "$OUT/probe_wg_trace.txt" | grep -E "TRACE|TIME|Error|error" | head -60
gpu_cleanup
