#!/usr/bin/env bash
# Paired runs of two cotangent-bench binaries (before, after) on the same ops, alternating
# their order each round, then the table of medians and minimums (markdown).
#
#   scripts/bench_pair_quick.sh BEFORE_BENCH AFTER_BENCH OUT_DIR ROUNDS [cotangent-bench args]
#   e.g. scripts/bench_pair_quick.sh /tmp/before-target/release/cotangent-bench \
#          target/release/cotangent-bench /tmp/pair 5 --ops matmul linear solve lu_factor \
#          lstsq det --dtypes float64 float32 --sizes 4 16 256 --threads 2
set -euo pipefail
before=$1 after=$2 out=$3 rounds=$4
shift 4
rm -rf "$out"; mkdir -p "$out"
for r in $(seq 1 "$rounds"); do
  if [ $((r % 2)) = 1 ]; then order="b a"; else order="a b"; fi
  for who in $order; do
    bin=$([ "$who" = b ] && echo "$before" || echo "$after")
    "$bin" "$@" --out "$out/${who}_$r.json" > /dev/null
  done
done
python3 - "$out" <<'PY'
import collections, glob, json, statistics as st, sys
med = collections.defaultdict(lambda: {"a": [], "b": []})
mn = collections.defaultdict(lambda: {"a": [], "b": []})
for f in glob.glob(sys.argv[1] + "/*.json"):
    who = f.split("/")[-1][0]
    for x in json.load(open(f))["results"]:
        k = (x["op"], x["dtype"].replace("float", "f"), x["shape"], x["mode"])
        med[k][who].append(x["median"])
        mn[k][who].append(x["min"])
print("| op | dtype | shape | mode | before (µs) | after (µs) | after / before, medians | after / before, minimums |")
print("|---|---|---|---|---|---|---|---|")
for k in sorted(med):
    v = med[k]
    if v["a"] and v["b"]:
        b, a = st.median(v["b"]), st.median(v["a"])
        q = min(mn[k]["a"]) / min(mn[k]["b"])
        print(f"| {k[0]} | {k[1]} | {k[2]} | {k[3]} | {b*1e6:.2f} | {a*1e6:.2f} | {a/b:.2f} | {q:.2f} |")
PY
