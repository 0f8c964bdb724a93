#!/usr/bin/env bash
# RECORD ONLY: ran in session 42 run 2 at 5ef7449 (old tree: the session start, a52cb4d); its test list later became
# gpu_test_suite 2 in _gpu_build.sh (the same steps).
# Session 42 run 2: every W4A16 GPU test file and the streams test on this tree (operators registered through
# define_op), then three more alternated passes of bench_host.py, this tree against the session's start
# (../snap_old, loading this build as its prebuilt library, as in gpu_s42a.sh).
#   (device, carry build/snap build/snap_old) cd build/snap && OUT=$OUT bash benchmarks/gpu_s42b.sh
: "${OUT:?}"
export QLINEAR_BUILD_DIR=/tmp/s42_build
mkdir -p "$QLINEAR_BUILD_DIR"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s42b
gpu_test_suite 2
so=$(find "$QLINEAR_BUILD_DIR" -name "qlinear_norm_C*.so" | head -n 1)
old=$(cd ../snap_old && pwd)
cp "$so" "$old/qlinear/_norm_C.so" && cp benchmarks/bench_host.py "$old/benchmarks/"
for pass in 3 4 5; do
  for v in old new; do
    dir=$PWD; [ "$v" = old ] && dir=$old
    (cd "$dir" && PYTHONPATH=$dir timeout 100 python benchmarks/bench_host.py --out "$OUT/host_${v}_$pass" --ms 1 16 \
        > "$OUT/host_${v}_$pass.log" 2>&1; echo "host $v pass $pass rc=$?")
    grep -E "M=1 .*(F.linear|layer w4a16 |fp8|rms_norm q_c)|rror" "$OUT/host_${v}_$pass.log" | head -n 10
  done
done
echo "run: $(( $(date +%s) - t_all )) s"
