#!/usr/bin/env bash
# Wall time and peak memory of `vdsoctl check` (budget: ≤ 1 s, ≤ 10 MiB) and
# `vdsoctl bench` / `bench --quick` (budgets: ≤ 2 s, a few hundred ms).
# Usage: scripts/bench-check.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-20}
command -v hyperfine >/dev/null || { echo "needs hyperfine (apt-get install hyperfine)" >&2; exit 1; }
cargo build --release --quiet
bin=$PWD/target/release/vdsoctl
out=$(mktemp)
hyperfine -N --warmup 2 --runs "$runs" --export-json "$out" \
  "$bin check" "$bin bench --quick" "$bin bench" >/dev/null 2>&1
python3 - "$out" <<'PY'
import json, sys
print(f"{'command':40} {'median':>10} {'min':>10} {'max':>10}")
for r in json.load(open(sys.argv[1]))["results"]:
    print(f"{r['command'].split('/')[-1]:40} {r['median']*1e3:8.1f}ms {r['min']*1e3:8.1f}ms {r['max']*1e3:8.1f}ms")
PY
for args in check "bench --quick" bench; do
  rss=$( { /usr/bin/time -f '%M' "$bin" $args >/dev/null; } 2>&1 | tail -1)
  echo "peak RSS vdsoctl $args: ${rss} KiB"
done
