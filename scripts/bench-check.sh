#!/usr/bin/env bash
# Wall time and peak memory of `vdsoctl check` with its default 1 s
# observation window (budget: ≤ 1.5 s, ≤ 10 MiB), of `check --trace 0`
# (the audit alone, budget ≤ 1 s: the window runs beside it, so the two
# differ by about the window less the audit), and of `vdsoctl bench` /
# `bench --quick` (budgets: ≤ 2 s, a few hundred ms). The two `check` forms
# are also timed interleaved (one of each per round, medians and their
# ratio), so a busy host weighs on both alike. Without root the window is
# "not observed" and both check figures are the audit alone. A FAIL verdict
# (exit 1: another process bypasses the vDSO) is timed like any other.
# Usage: scripts/bench-check.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-20}
command -v hyperfine >/dev/null || { echo "needs hyperfine (apt-get install hyperfine)" >&2; exit 1; }
cargo build --release --quiet
bin=$PWD/target/release/vdsoctl
out=$(mktemp)
hyperfine -N -i --warmup 2 --runs "$runs" --export-json "$out" \
  "$bin check" "$bin check --trace 0" "$bin bench --quick" "$bin bench" >/dev/null 2>&1
python3 - "$out" <<'PY'
import json, sys
print(f"{'command':40} {'median':>10} {'min':>10} {'max':>10}")
for r in json.load(open(sys.argv[1]))["results"]:
    print(f"{r['command'].split('/')[-1]:40} {r['median']*1e3:8.1f}ms {r['min']*1e3:8.1f}ms {r['max']*1e3:8.1f}ms")
PY
for args in check "check --trace 0" "bench --quick" bench; do
  rss=$( { /usr/bin/time -f '%M' "$bin" $args >/dev/null; } 2>&1 | tail -1)
  echo "peak RSS vdsoctl $args: ${rss} KiB"
done
python3 - "$bin" "$runs" <<'PY'
import statistics, subprocess, sys, time
bin, runs = sys.argv[1], int(sys.argv[2])
forms = {"check": [bin, "check"], "check --trace 0": [bin, "check", "--trace", "0"]}
walls = {k: [] for k in forms}
for _ in range(runs):
    for k, argv in forms.items():
        t = time.monotonic()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        walls[k].append(time.monotonic() - t)
med = {k: statistics.median(v) for k, v in walls.items()}
print(f"interleaved, {runs} rounds: " + ", ".join(f"{k} {m*1e3:.0f} ms" for k, m in med.items())
      + f"; the window adds {(med['check'] - med['check --trace 0'])*1e3:.0f} ms (x{med['check'] / med['check --trace 0']:.2f})")
PY
