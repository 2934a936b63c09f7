#!/usr/bin/env bash
# Paired runs of two cotangent builds and PyTorch on the same single-matrix workloads (f64,
# 2 threads): each round runs every op with the build before, the build after and
# PyTorch one right after the other, the order rotated each round, so that the three runs
# of an op see the same load on a shared host. Then prints the table of medians.
#
#   scripts/bench_before_after.sh BEFORE_BENCH AFTER_BENCH OUT_DIR ROUNDS "OP:SIZES" ...
#
# BEFORE_BENCH and AFTER_BENCH are cotangent-bench binaries (build the older commit in a
# worktree with its own CARGO_TARGET_DIR); e.g.
#   scripts/bench_before_after.sh /tmp/before-target/release/cotangent-bench \
#     target/release/cotangent-bench /tmp/ba 3 "qr:16 64 256 1024" "svd:16 64"
set -euo pipefail
cd "$(dirname "$0")/.."
before=$1 after=$2 out=$3 rounds=$4
shift 4
py=${PYTHON:-python3}
torch_bench=${TORCH_BENCH:-../shared/bench/torch_linalg.py}
mkdir -p "$out"
run() { # who op sizes round
  local who=$1 op=$2 sizes=$3 r=$4
  case $who in
    b) "$before" --ops "$op" --dtypes float64 --sizes $sizes --no-batched --threads 2 \
         --out "$out/b_${r}_$op.json" > /dev/null ;;
    a) "$after" --ops "$op" --dtypes float64 --sizes $sizes --no-batched --threads 2 \
         --out "$out/a_${r}_$op.json" > /dev/null ;;
    t) "$py" "$torch_bench" --ops "$op" --dtypes float64 --sizes $sizes --no-batched \
         --threads 2 --max-wait-s 20 --out-json "$out/t_${r}_$op.json" --out-md /dev/null \
         > /dev/null 2>&1 ;;
  esac
}
for r in $(seq 1 "$rounds"); do
  for spec in "$@"; do
    op=${spec%%:*} sizes=${spec#*:}
    case $((r % 3)) in
      1) order="b a t" ;;
      2) order="a t b" ;;
      *) order="t b a" ;;
    esac
    for who in $order; do run "$who" "$op" "$sizes" "$r"; done
  done
done
python3 - "$out" <<'PY'
import collections, glob, json, os, statistics, sys
d = collections.defaultdict(list)
for f in glob.glob(os.path.join(sys.argv[1], "*.json")):
    who = os.path.basename(f).split("_")[0]
    for r in json.load(open(f))["results"]:
        d[(r["op"], r["shape"], r["mode"], who)].append(r["median"])
keys = sorted({k[:3] for k in d}, key=lambda k: (k[0], int(k[1]), k[2]))
fmt = lambda x: f"{x * 1e6:.1f} us" if x < 1e-3 else f"{x * 1e3:.2f} ms"
print("| op | n | mode | before | after | PyTorch | after / before | before / PyTorch | after / PyTorch |")
print("|---|---|---|---|---|---|---|---|---|")
for k in keys:
    b, a, t = (statistics.median(d[k + (w,)]) for w in "bat")
    print(f"| {k[0]} | {k[1]} | {k[2]} | {fmt(b)} | {fmt(a)} | {fmt(t)} | {a / b:.2f} | {b / t:.2f} | {a / t:.2f} |")
PY
