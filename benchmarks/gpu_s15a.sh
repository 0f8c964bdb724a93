#!/usr/bin/env bash
# Session 15, first run: the issue-5 acceptance benchmark on the harness layers as a GPTQ checkpoint
# gives them (bench_linear --format w4a16: fp16 scales, no zero points; --format w4a16-asym: fp16
# scales, random zero points), then the two probes on the symmetric fp16-scale layer: the wgmma GEMM
# at M = 64 / 128 / 1024, automatic config only (probe_w4a16_gemm.py, op level) and the register decode kernel's configs
# (bench_w4reg.py, whose tables were tuned on asymmetric bf16-scale layers).
#   OUT=/some/dir bash benchmarks/gpu_s15a.sh
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s15a
timeout ${W4_LIMIT:-150} python benchmarks/bench_linear.py --format w4a16 --out "$OUT/sym" 2>&1 | tail -n 30
timeout ${W4_LIMIT:-150} python benchmarks/bench_linear.py --format w4a16-asym --out "$OUT/asym" 2>&1 | tail -n 30
gpu_probe wg 90 "GEMM|auto|rror" benchmarks/probe_w4a16_gemm.py --family wgmma --tokens 999 --ms 64 128 1024 --layer sym-fp16 --shapes 7168x16384,2112x7168,24576x1536
timeout ${REG_LIMIT:-170} python benchmarks/bench_w4reg.py --layer sym-fp16 --out "$OUT/w4reg" > "$OUT/w4reg_bench.txt" 2>&1
echo "w4reg rc=$?"
grep -E "BEST|CLASS|SET|skipped|Error" "$OUT/w4reg_bench.txt" | head -40
gpu_cleanup
