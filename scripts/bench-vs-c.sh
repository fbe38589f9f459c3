#!/usr/bin/env bash
# Accuracy of `vdsoctl bench` (DESIGN budget: ns/call within 0.8–1.25x of a
# gcc -O2 C loop of the same call, same run). Builds fixtures/bench_harness.c,
# then runs `vdsoctl bench --json` and the harness alternately RUNS times and
# prints, per call and path, the median over runs of vdsoctl ns / C ns, and
# per path (libc, vdso, syscall) the median of those ratios.
# Usage: scripts/bench-vs-c.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
cargo build --release --quiet
bin=${CARGO_TARGET_DIR:-$PWD/target}/release/vdsoctl
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
gcc -O2 -Wall -o "$work/bench_harness" fixtures/bench_harness.c -ldl
for i in $(seq 1 "$runs"); do
  "$bin" --json bench --paths libc,vdso,syscall \
    --clocks realtime,monotonic,monotonic_raw,monotonic_coarse,boottime,thread_cputime_id >"$work/vdsoctl.$i.json"
  "$work/bench_harness" >"$work/c.$i.jsonl"
done
python3 - "$work" "$runs" <<'PY'
import json, statistics, sys
work, runs = sys.argv[1], int(sys.argv[2])
ratios, v_ns, c_ns = {}, {}, {}
for i in range(1, runs + 1):
    v = {(r["function"], r["clock"], r["path"]): r["ns_per_call"]
         for r in json.load(open(f"{work}/vdsoctl.{i}.json"))["results"] if r["ns_per_call"] is not None}
    for line in open(f"{work}/c.{i}.jsonl"):
        r = json.loads(line)
        key = (r["function"], r["clock"], r["path"])
        if key in v:
            ratios.setdefault(key, []).append(v[key] / r["ns_per_call"])
            v_ns.setdefault(key, []).append(v[key])
            c_ns.setdefault(key, []).append(r["ns_per_call"])
print(f"{'call':44} {'path':8} {'vdsoctl ns':>10} {'C ns':>8} {'ratio':>6}")
per_path = {}
for key in sorted(ratios, key=lambda k: (["libc", "vdso", "syscall"].index(k[2]), k[0], k[1] or "")):
    f, c, p = key
    r = statistics.median(ratios[key])
    per_path.setdefault(p, []).append(r)
    call = f"{f}({c})" if c else f
    print(f"{call:44} {p:8} {statistics.median(v_ns[key]):10.1f} {statistics.median(c_ns[key]):8.1f} {r:6.2f}")
print(f"\nmedian ratio vdsoctl/C over {runs} alternating runs (goal 0.80–1.25):")
ok = True
for p in ["libc", "vdso", "syscall"]:
    if p in per_path:
        m = statistics.median(per_path[p])
        good = 0.8 <= m <= 1.25
        ok &= good
        print(f"  {p:8} {m:5.2f}  {'ok' if good else 'OUT OF RANGE'}  (calls: {len(per_path[p])}, range {min(per_path[p]):.2f}–{max(per_path[p]):.2f})")
sys.exit(0 if ok else 1)
PY
