#!/usr/bin/env bash
# Alternating runs of cotangent and PyTorch on the same workloads, for ratios on a shared,
# noisy machine, then the table of scripts/bench_paired_table.py. Each round runs every op
# in both libraries, one op at a time, one library right after the other (cotangent first
# in odd rounds, PyTorch first in even ones), so that each pair of runs sees the same load:
# the host's load comes in bursts of seconds to minutes, and with all of one library's ops
# before all of the other's, one op's two runs were up to a minute apart.
#
#   scripts/bench_paired.sh OUT_DIR ROUNDS OP [OP ...]
#
# Each round writes OUT_DIR/c_<round>_<op>.json (`cotangent-bench`) and
# OUT_DIR/t_<round>_<op>.json (`torch_linalg.py`), f64, 2 threads, square size 4 and the
# batched shapes (4096x4x4, 1024x16x16); SIZES="64 256 1024" (square sizes, default 4)
# and BATCHED=0 (no batched shapes) pair other rows the same way. Needs
# `cargo build --release -p cotangent-bench` first (which builds the core_roundtrip probe too;
# its result before each pair goes to OUT_DIR/r_<round>_<op>.txt), and PyTorch in $PYTHON (default python3); the PyTorch script is found at
# $TORCH_BENCH (default ../shared/bench/torch_linalg.py).
set -euo pipefail
cd "$(dirname "$0")/.."
out=$1
rounds=$2
shift 2
py=${PYTHON:-python3}
torch_bench=${TORCH_BENCH:-../shared/bench/torch_linalg.py}
read -r -a sizes <<< "${SIZES:-4}"
nob=()
if [ "${BATCHED:-1}" = 0 ]; then nob=(--no-batched); fi
mkdir -p "$out"
ours() {
  ./target/release/cotangent-bench --ops "$1" --dtypes float64 --sizes "${sizes[@]}" "${nob[@]}" \
    --threads 2 --out "$out/c_$2_$1.json" > /dev/null
}
theirs() {
  "$py" "$torch_bench" --ops "$1" --dtypes float64 --sizes "${sizes[@]}" "${nob[@]}" \
    --threads 2 --max-wait-s 60 \
    --out-json "$out/t_$2_$1.json" --out-md /dev/null > /dev/null
}
# how far apart the host has put the cores, before each pair of runs (see
# crates/cotangent-bench/src/bin/core_roundtrip.rs); absent if the probe was not built
probe() {
  if [ -x ./target/release/core_roundtrip ]; then
    ./target/release/core_roundtrip > "$out/r_$2_$1.txt"
  fi
}
for r in $(seq 1 "$rounds"); do
  for op in "$@"; do
    probe "$op" "$r"
    if [ $((r % 2)) -eq 1 ]; then
      ours "$op" "$r"
      theirs "$op" "$r"
    else
      theirs "$op" "$r"
      ours "$op" "$r"
    fi
  done
done
python3 scripts/bench_paired_table.py "$out"
