#!/usr/bin/env bash
# Contiguous 32768 x 7168 bf16 RMSNorm, three alternated passes of the Triton loop configs, the
# public op and torch.compile of the reference (issue 3's closest case).   <= ~90 s
set -uo pipefail
cd "$(dirname "$0")/.."
python benchmarks/probe_rms_contig.py --rows 32768 --passes 3 --out "$OUT" 2>&1 | grep -E "RMSC|Error"
