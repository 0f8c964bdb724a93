#!/usr/bin/env bash
set -uo pipefail
cd "$(dirname "$0")/.."
python benchmarks/probe_binding_errors.py
python benchmarks/probe_rms_contig.py --rows 32768 --out "$OUT"
