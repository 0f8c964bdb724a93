#!/usr/bin/env bash
# kv_c 4096 x 512 (stride 2112) RMSNorm launch variants vs torch.compile, 3 alternated passes (~40 s).
set -uo pipefail
cd "$(dirname "$0")/.."
python benchmarks/probe_rms_kvc.py --passes 3 --out "$OUT" 2>&1 | grep -E "KVC|Error"
