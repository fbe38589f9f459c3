#!/usr/bin/env bash
# getrandom(16 bytes) per call through the C library, a direct call of the
# vDSO's __vdso_getrandom (one per-thread state, its key fetched before
# timing) and the raw syscall, as `vdsoctl bench --functions getrandom`
# measures them. Each round runs one bench per path, the order rotated
# round to round (interleaved: a busy host weighs on every path alike);
# prints the median ns/call of each path over the rounds, the syscalls
# per call counted (when perf can count), and vdso/syscall — the issue's
# budget is vdso ≤ 0.3× syscall.
# Usage: scripts/bench-getrandom.sh [ROUNDS]   (VDSOCTL=path to skip the build)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-7}
if [[ -z "${VDSOCTL:-}" ]]; then
  cargo build --release --quiet
  VDSOCTL=$PWD/target/release/vdsoctl
fi
python3 - "$VDSOCTL" "$rounds" <<'PY'
import json, statistics, subprocess, sys
bin, rounds = sys.argv[1], int(sys.argv[2])
paths = ["libc", "vdso", "syscall"]
ns = {p: [] for p in paths}
sc = {p: [] for p in paths}
verdicts = set()
for i in range(rounds):
    for p in paths[i % 3:] + paths[:i % 3]:
        out = subprocess.run([bin, "--json", "bench", "--functions", "getrandom", "--paths", p],
                             capture_output=True, text=True)
        if out.returncode not in (0, 1):
            sys.exit(f"vdsoctl bench --paths {p}: exit {out.returncode}: {out.stderr}")
        (r,) = [r for r in json.loads(out.stdout)["results"] if r["path"] == p]
        if r["ns_per_call"] is None:
            sys.exit(f"{p}: not measured ({r['verdict']}, {r['error']})")
        ns[p].append(r["ns_per_call"])
        if r["syscalls_per_call"] is not None:
            sc[p].append(r["syscalls_per_call"])
        verdicts.add(r["verdict"])
med = {p: statistics.median(v) for p, v in ns.items()}
print(f"getrandom(16 bytes), {rounds} rounds interleaved, median of each bench's median ns/call:")
for p in paths:
    calls = f"{statistics.median(sc[p]):.2f} syscalls/call" if sc[p] else "syscalls not counted"
    print(f"  {p:8} {med[p]:8.1f} ns  (min {min(ns[p]):.1f}, max {max(ns[p]):.1f}; {calls})")
ratio = med["vdso"] / med["syscall"]
print(f"  vdso/syscall {ratio:.3f}x ({'within' if ratio <= 0.3 else 'OVER'} the 0.3x budget); "
      f"libc/vdso {med['libc'] / med['vdso']:.1f}x; verdict {', '.join(sorted(v for v in verdicts if v))}")
PY
