#!/usr/bin/env bash
# One device call that runs several helper GPU scripts in sequence, each under its own timeout:
#   PARTS="build rmsnorm normquant w4a16gemv fp8gemv w4a16mma" bash benchmarks/gpu_session.sh
# "build" times a cold build of the CUDA extension (issue 3: <= 30 s) into a fresh
# QLINEAR_BUILD_DIR that the later parts reuse. Every part writes into $R/<part>/ and a log;
# everything is packed into $OUT/gpu_session.tgz (the device tool returns at most 8 files).
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1
R=${R:-/tmp/qlinear_session}
rm -rf "$R"; mkdir -p "$R"
OUT=${OUT:-benchmarks/results}
PARTS=${PARTS:-"build rmsnorm normquant w4a16gemv fp8gemv w4a16mma"}
export QLINEAR_BUILD_DIR=${QLINEAR_BUILD_DIR:-$R/ext_build}
t_all=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader | tee "$R/gpu.txt"
python -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, 'cuda', torch.version.cuda)" | tee -a "$R/gpu.txt"

part() {  # part NAME TIMEOUT CMD...
    local name=$1 limit=$2; shift 2
    mkdir -p "$R/$name"
    local t0=$(date +%s)
    OUT="$R/$name" timeout "$limit" "$@" >"$R/$name.log" 2>&1
    local rc=$?
    echo "== $name: rc=$rc in $(( $(date +%s) - t0 )) s" | tee -a "$R/status.txt"
}

for p in $PARTS; do
    case $p in
        build) part build ${BUILD_T:-120} python -c "
import time; t=time.time()
from qlinear.kernels import cuda_ext
cuda_ext.load(verbose=True)
print(f'first build {time.time()-t:.1f} s')" ;;
        linear) part linear ${T_linear:-300} bash -c 'python benchmarks/bench_linear.py --format fp8-block --out $OUT ${LINEAR_ARGS:-}; a=$?; python benchmarks/bench_linear.py --format w4a16 --out $OUT ${LINEAR_ARGS:-}; b=$?; exit $((a|b))' ;;
        mla) part mla ${T_mla:-200} python benchmarks/bench_mla.py --out "$R/mla" ;;
        normbench) part normbench ${T_normbench:-200} python benchmarks/bench_rms_norm.py --out "$R/normbench" ;;
        *) part "$p" "$(eval echo \${T_$p:-150})" bash "benchmarks/gpu_$p.sh" ;;
    esac
done
tar czf "$OUT/gpu_session.tgz" -C "$R" .
echo
echo "================ summary ($(( $(date +%s) - t_all )) s) ================"
cat "$R/status.txt"
for p in $PARTS; do
    echo "---- $p (tail)"
    grep -vE "^\s*$" "$R/$p.log" | tail -n "${TAIL:-25}" | cut -c1-200
done
