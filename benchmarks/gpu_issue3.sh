#!/usr/bin/env bash
# Issue 3 follow-ups and the session-5 binding-message check, one stage (<= ~150 s):
# the binding error probe (does a failing check raise, or kill the process?), the FP8 decode raw-op
# error test, the 16 x 7168 latency probe (launch variants, floors, hot / cold inputs) and the
# contiguous 32768 x 7168 probe (Triton loop configs vs torch.compile, alternated replays).
#   OUT=/some/dir bash benchmarks/gpu_issue3.sh
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build issue3
echo "== binding error probe"
timeout 60 python benchmarks/probe_binding_errors.py 2>&1 | tail -n 25
echo "== raw-op error test"
timeout 60 python -m pytest -q -p no:cacheprovider tests/gpu/test_fp8_cuda_gemv.py -k raw_op_errors 2>&1 | tail -n 3
echo "== latency"
timeout 70 python benchmarks/probe_latency.py --out "$OUT" --passes 2 2>&1 | grep -E "^LAT|dispatch|Error" 
echo "== contiguous"
TORCHINDUCTOR_CACHE_DIR="$OUT/inductor_cache" timeout 80 python benchmarks/probe_rms_contig.py --rows 32768 --out "$OUT" 2>&1 | grep -E "RMSC|Error" | head -n 30
echo "== inductor's chosen configs"
find "$OUT/inductor_cache" -name "*.best_config" -exec cat {} \; -exec echo \; 2>/dev/null | head -n 10
echo "total $(( $(date +%s) - t_all )) s"
gpu_cleanup
