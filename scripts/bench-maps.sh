#!/usr/bin/env bash
# Wall time of `vdsoctl maps` and `vdsoctl auxv` on a live process, against
# `grep -E 'vdso|vvar|vsyscall' /proc/PID/maps` measured in the same run.
# Prints the median of each (hyperfine, many runs, no shell in between).
# Usage: scripts/bench-maps.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-300}
command -v hyperfine >/dev/null || { echo "needs hyperfine (apt-get install hyperfine)" >&2; exit 1; }
cargo build --release --quiet
bin=$PWD/target/release/vdsoctl
sleep 600 & target=$!
trap 'kill $target 2>/dev/null' EXIT
out=$(mktemp)
hyperfine -N --warmup 30 --runs "$runs" --export-json "$out" \
  "$bin maps -p $target" \
  "$bin auxv -p $target" \
  "$bin --json maps -p $target" \
  "grep -E 'vdso|vvar|vsyscall' /proc/$target/maps" >/dev/null
python3 - "$out" <<'PY'
import json, sys
res = json.load(open(sys.argv[1]))["results"]
base = res[-1]["median"]
print(f"{'command':60} {'median':>10} {'min':>10} {'ratio':>7}")
for r in res:
    cmd = r["command"].replace(sys.argv[1], "")
    print(f"{cmd[-60:]:60} {r['median']*1e3:8.2f}ms {r['min']*1e3:8.2f}ms {r['median']/base:6.2f}x")
PY
