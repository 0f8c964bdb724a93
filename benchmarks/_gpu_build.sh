# Sourced by the per-family GPU scripts (gpu_norm.sh, gpu_rmsnorm.sh, gpu_normquant.sh,
# gpu_normslices.sh): output folder, extension build folder (a caller's QLINEAR_BUILD_DIR is reused,
# else a fresh one that gpu_cleanup removes) and a timed build.
#   source "$(dirname "$0")/_gpu_build.sh"; gpu_build NAME   -> $build_rc, $build_s, $OUT/NAME_build.log
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT="${OUT:-benchmarks/results}"
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
_own_build=0
if [ -z "${QLINEAR_BUILD_DIR:-}" ]; then QLINEAR_BUILD_DIR="$(mktemp -d)"; _own_build=1; fi
export QLINEAR_BUILD_DIR
t_all=$(date +%s)

gpu_build() {  # gpu_build NAME
    local log="$OUT/$1_build.log" t0
    echo "== build of the CUDA extension (cold unless the caller built it)"
    t0=$(date +%s.%N)
    python -c "from qlinear.kernels import cuda_ext; cuda_ext.load(verbose=True)" >"$log" 2>&1
    build_rc=$?
    build_s=$(python -c "print(f'{$(date +%s.%N) - $t0:.1f}')")
    echo "build: rc=$build_rc, ${build_s} s (first-use budget 30 s); log in $log"
    [ "$build_rc" -ne 0 ] && tail -n 30 "$log"
    return 0
}

gpu_cleanup() {
    [ "$_own_build" = 1 ] && rm -rf "$QLINEAR_BUILD_DIR"
    return 0
}
