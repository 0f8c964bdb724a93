#!/usr/bin/env bash
# Issue 3: contiguous 7168-wide RMSNorm launch configs vs torch.compile, replays alternated.
set -uo pipefail
cd "$(dirname "$0")/.."
python benchmarks/probe_rms_contig.py --out "$OUT"
