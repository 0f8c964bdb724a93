#!/usr/bin/env bash
# RECORD ONLY: ran in session 42 run 1 at af130b7 (old tree: the session start, a52cb4d); its test list later became
# gpu_test_suite 1 in _gpu_build.sh (the same steps).
# Session 42 run 1: the host time of eager calls (benchmarks/bench_host.py) with the operators registered through
# define_op (qlinear/_utils.py; this tree) against torch.library.custom_op (the session's start, a snapshot in
# ../snap_old), two passes alternated; cProfile of this tree's layer calls; then every norm and FP8 GPU test file on
# this tree (they run torch.compile, CUDA graphs and opcheck through the re-registered operators).
#   (device, carry build/snap build/snap_old) cd build/snap && OUT=$OUT bash benchmarks/gpu_s42a.sh
: "${OUT:?}"
export QLINEAR_BUILD_DIR=/tmp/s42_build
mkdir -p "$QLINEAR_BUILD_DIR"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s42a
# csrc/ is the same in both trees: the old one loads this build as its prebuilt library (qlinear/_norm_C*.so,
# kernels/cuda_ext.py _prebuilt), and runs this tree's bench_host.py (its _layers.py and _timing.py are its own)
so=$(find "$QLINEAR_BUILD_DIR" -name "qlinear_norm_C*.so" | head -n 1)
old=$(cd ../snap_old && pwd)
cp "$so" "$old/qlinear/_norm_C.so" && cp benchmarks/bench_host.py "$old/benchmarks/"
echo "old tree: $(cat "$old/GIT_COMMIT"), library $so"
for pass in 1 2; do
  for v in new old; do
    dir=$PWD; [ "$v" = old ] && dir=$old
    prof=""; [ "$pass" = 1 ] && [ "$v" = new ] && prof=--profile
    (cd "$dir" && PYTHONPATH=$dir timeout 150 python benchmarks/bench_host.py --out "$OUT/host_${v}_$pass" $prof \
        > "$OUT/host_${v}_$pass.log" 2>&1; echo "host $v pass $pass rc=$?")
    grep -E "M=1 .*(F.linear|layer|rms)|rror" "$OUT/host_${v}_$pass.log" | head -n 20
  done
done
gpu_test_suite 1
echo "run: $(( $(date +%s) - t_all )) s"
