#!/usr/bin/env bash
# Runs the engine benchmark (crates/cotangent/benches/engine.rs, criterion) and the same
# workloads in PyTorch (scripts/bench_engine_torch.py), alternating them REPEAT times so
# both see the same machine load, and prints the median over the repeats of each side's
# median time, and the ratio PyTorch / cotangent.
#
# Usage: scripts/bench_engine_compare.sh [REPEAT]      (default 3)
# Env:   PYTHON   python with torch (default /tmp/torch/bin/python)
#        THREADS  torch thread counts (default "1 2"); cotangent's tiny ops use one thread
#        CARGO_TARGET_DIR as usual (criterion writes its estimates under it)
set -euo pipefail

REPEAT="${1:-3}"
PYTHON="${PYTHON:-/tmp/torch/bin/python}"
THREADS="${THREADS:-1 2}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

TARGET="${CARGO_TARGET_DIR:-$(cargo metadata --format-version 1 --no-deps |
    "$PYTHON" -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')}"
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT

WORKLOADS="abc_sum/f64/fwd_bwd abc_sum/f32/fwd_bwd chain/f64/fwd_bwd chain/f64/fwd"

for r in $(seq 1 "$REPEAT"); do
    echo "== repeat $r/$REPEAT: cotangent (criterion)" >&2
    if ! cargo bench -q -p cotangent --bench engine >"$OUT/bench.$r.log" 2>&1; then
        cat "$OUT/bench.$r.log" >&2
        exit 1
    fi
    grep -E 'time:' "$OUT/bench.$r.log" >&2 || true
    for w in $WORKLOADS; do
        cp "$TARGET/criterion/$w/new/estimates.json" "$OUT/rust.$r.${w//\//_}.json"
    done
    echo "== repeat $r/$REPEAT: PyTorch" >&2
    # shellcheck disable=SC2086
    "$PYTHON" scripts/bench_engine_torch.py --threads $THREADS --json "$OUT/torch.$r.json" >&2
done

"$PYTHON" - "$OUT" "$REPEAT" "$WORKLOADS" "$THREADS" <<'EOF'
import json, statistics, sys

out, repeat, workloads, threads = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(), sys.argv[4].split()
CHAIN = 100

def rust(w):
    # criterion's median of its samples' mean times, in ns; the median over the repeats
    return statistics.median(
        json.load(open(f"{out}/rust.{r}.{w.replace('/', '_')}.json"))["median"]["point_estimate"] * 1e-9
        for r in range(1, repeat + 1))

def torch(w, t):
    return statistics.median(
        json.load(open(f"{out}/torch.{r}.json"))["results"][f"{w}@{t}"]["median_s"]
        for r in range(1, repeat + 1))

print(f"\nmedian over {repeat} repeats of each side's median time per iteration "
      f"(per op for the chains: /{CHAIN})")
head = f"{'workload':<22} {'cotangent':>12}"
for t in threads:
    head += f" {'torch ' + t + 'thr':>12} {'ratio':>7}"
print(head)
for w in workloads:
    n = CHAIN if w.startswith("chain") else 1
    r = rust(w)
    line = f"{w:<22} {r / n * 1e6:9.3f} us"
    for t in threads:
        p = torch(w, t)
        line += f" {p / n * 1e6:9.3f} us {p / r:6.1f}x"
    print(line)
EOF
