#!/usr/bin/env bash
# Session 18 run 1. Needs 4d3fb12: the stream-K FP8 decode kernel, reverted after this run (slower
# everywhere; benchmarks/results/session18/README.md). Session 17's W4A16 PDL chain test (its
# first GPU run), the stream-K GPU tests, then probe_fp8_preq.py on the wide shapes (Triton today)
# and 2112x7168: stream-K codes against the Triton path ("triton q early") and the auto dispatch,
# cold weights, alternated replays.
#   OUT=/some/dir bash benchmarks/gpu_s18sk.sh   # ~300 s after the build
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s18sk
gpu_pytest w4_pdl_chain 60 tests/gpu/test_w4a16_cuda_gpu.py -k reg_pdl_chain_in_a_graph
gpu_pytest sk_tests 150 -x tests/gpu/test_fp8_cuda_gemv.py -k "stream_k or graph_replay or two_streams"
PQ16=111011114,111011116,211011107,211011108,311011105,411011104,511011103,411011103,211011206,311011204,11011104
gpu_probe w16 110 "PREQ|rror" benchmarks/probe_fp8_preq.py --m 16 --shapes 7168x16384,24576x1536 --gemv-codes "" --qmodes early \
    --kernel-codes "" --pair-codes $PQ16
gpu_probe w4 110 "PREQ|rror" benchmarks/probe_fp8_preq.py --m 4 --shapes 7168x16384,24576x1536 --gemv-codes "" --qmodes early \
    --pair-codes 111011116,211011108,411011104,511011103,311011105 --kernel-codes 110011116,210011108,410011104,510011103,210011206
gpu_probe m16 60 "PREQ|rror" benchmarks/probe_fp8_preq.py --m 16 --shapes 2112x7168 --gemv-codes "" --qmodes early \
    --kernel-codes "" --pair-codes 11011114,111011114,211011107,111011116,211011108
gpu_probe w1 90 "PREQ|rror" benchmarks/probe_fp8_preq.py --m 1 --shapes 7168x16384,24576x1536 --gemv-codes "" --qmodes early \
    --pair-codes 111011116,411011104,511011103 --kernel-codes 110011116,410011104,510011103
gpu_cleanup
