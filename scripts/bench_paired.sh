#!/usr/bin/env bash
# Alternating runs of cotangent and PyTorch on the same workloads, for ratios on a shared,
# noisy machine (each round runs one library right after the other, so both see the same
# load), then the table of scripts/bench_paired_table.py.
#
#   scripts/bench_paired.sh OUT_DIR ROUNDS OP [OP ...]
#
# Each round writes OUT_DIR/c_<round>.json (`cotangent-bench`) and OUT_DIR/t_<round>.json
# (`torch_linalg.py`), f64, 2 threads, square size 4 and the batched shapes (4096x4x4,
# 1024x16x16). Needs `cargo build --release -p cotangent-bench` first, and PyTorch in
# $PYTHON (default python3); the PyTorch script is found at $TORCH_BENCH (default
# ../shared/bench/torch_linalg.py).
set -euo pipefail
cd "$(dirname "$0")/.."
out=$1
rounds=$2
shift 2
py=${PYTHON:-python3}
torch_bench=${TORCH_BENCH:-../shared/bench/torch_linalg.py}
mkdir -p "$out"
for r in $(seq 1 "$rounds"); do
  ./target/release/cotangent-bench --ops "$@" --dtypes float64 --sizes 4 --threads 2 \
    --out "$out/c_$r.json" > /dev/null
  "$py" "$torch_bench" --ops "$@" --dtypes float64 --sizes 4 --threads 2 --max-wait-s 60 \
    --out-json "$out/t_$r.json" --out-md /dev/null > /dev/null
done
python3 scripts/bench_paired_table.py "$out"
