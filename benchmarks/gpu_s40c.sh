#!/usr/bin/env bash
# RECORD ONLY: ran in session 40 runs 3-4 at 670badc (csrc, qlinear and tests as at the session start, df74988); its
# test lists later became gpu_test_suite in _gpu_build.sh (the same steps).
# Session 40 runs 3-4: every GPU test file on the final tree (the FP8 and norm files had last run whole in session
# 28; shared headers such as tensor_map.h changed since), one pytest per file with its own time limit. PART=1: the
# norm and FP8 files, PART=2: the W4A16 files and the streams test. A build folder under /tmp/s40_build is kept
# between the two parts (a warm machine reuses it; a fresh one builds again).
#   (device, carry build/snap) cd build/snap && PART=1 OUT=$OUT bash benchmarks/gpu_s40c.sh
: "${OUT:?}" "${PART:?}"
export QLINEAR_BUILD_DIR=/tmp/s40_build
mkdir -p "$QLINEAR_BUILD_DIR"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start "s40c_part$PART"
t0=$(date +%s)
gpu_test_suite "$PART"
echo "part $PART tests: $(( $(date +%s) - t0 )) s"
