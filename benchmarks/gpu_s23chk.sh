#!/usr/bin/env bash
# Session 23 run 10: the layer GPU tests through the automatic dispatch (the run-9 test stage hit its
# time limit in test_w4a16_gpu.py): every shape x scheme x M with backend "auto", the CUDA-graph and
# backend-choice tests.
#   OUT=/some/dir bash benchmarks/gpu_s23chk.sh
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s23chk
gpu_pytest w4_auto 200 tests/gpu/test_w4a16_gpu.py -k "auto or graph or backend_choice or w8a16 or per_channel"
gpu_cleanup
