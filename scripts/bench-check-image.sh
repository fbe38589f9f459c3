#!/usr/bin/env bash
# Wall time and peak memory of `vdsoctl check --image ROOT` (default /usr):
# the bounded tree walk, every ELF file's headers, Go buildinfo, static-libc
# markers and the call-site scan of all executable sections (candidate bytes,
# then the candidates decoded: [vsyscall] calls, raw clock syscalls).
# PEER=/path/to/an/older/vdsoctl runs it in the same hyperfine session, for
# a ratio measured under the same load.
# hyperfine medians (warm page cache; the first run is reported apart, cold with COLD=1),
# with `find ROOT -xdev -type f | xargs file` -style peers for scale: a walk
# that only stats (find) and one that reads every file's first bytes (file).
# Usage: scripts/bench-check-image.sh [RUNS] [ROOT]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-10}
root=${2:-/usr}
command -v hyperfine >/dev/null || { echo "needs hyperfine (apt-get install hyperfine)" >&2; exit 1; }
cargo build --release --quiet
bin=$PWD/target/release/vdsoctl
out=$(mktemp)
# COLD=1 drops the page cache first (root; slows everything else on the host).
cold=no
if [ "${COLD:-0}" = 1 ]; then sync; echo 3 > /proc/sys/vm/drop_caches && cold=yes; fi
start=$(date +%s%N)
"$bin" --json check --image "$root" >/dev/null || true
echo "first run (cold cache: $cold): $(( ($(date +%s%N) - start) / 1000000 )) ms"
peer=()
if [ -n "${PEER:-}" ]; then peer=("$PEER --json check --image $root"); fi
hyperfine --warmup 1 --runs "$runs" --export-json "$out" -i \
  "$bin --json check --image $root" \
  "${peer[@]}" \
  "find $root -xdev -type f -size +51c" \
  "find $root -xdev -type f -size +51c -exec head -c4 {} + " >/dev/null 2>&1
python3 - "$out" <<'PY'
import json, sys
print(f"{'command':60} {'median':>10} {'min':>10} {'max':>10}")
for r in json.load(open(sys.argv[1]))["results"]:
    c = r['command'].split('/release/')[-1]
    print(f"{c[:60]:60} {r['median']*1e3:8.1f}ms {r['min']*1e3:8.1f}ms {r['max']*1e3:8.1f}ms")
rs = json.load(open(sys.argv[1]))["results"]
if len(rs) == 4:
    print(f"ratio vdsoctl / PEER (medians): {rs[0]['median'] / rs[1]['median']:.2f}")
PY
"$bin" --json check --image "$root" 2>/dev/null | python3 -c '
import json, sys, collections
d = json.load(sys.stdin)
b = d["binaries"]
print(len(b), "ELF files in", d["image"]["entries"], "entries:", dict(collections.Counter(x["status"] for x in b)))
' || true
rss=$( { /usr/bin/time -f '%M' "$bin" --json check --image "$root" >/dev/null; } 2>&1 | tail -1)
echo "peak RSS vdsoctl check --image $root: ${rss} KiB"
if [ -n "${PEER:-}" ]; then
  rss=$( { /usr/bin/time -f '%M' "$PEER" --json check --image "$root" >/dev/null; } 2>&1 | tail -1)
  echo "peak RSS $PEER check --image $root: ${rss} KiB"
fi

# What the 32-bit path costs (check --image's WARN): ns/call of
# clock_gettime(CLOCK_MONOTONIC) through libc (the vDSO) and as a raw
# syscall, 64-bit vs -m32 builds of fixtures/clock_loop.c, medians of
# interleaved runs (the loop's own wall time, "loop_ns" on stderr).
if gcc -m32 -O2 -pthread -o "$out.m32" fixtures/clock_loop.c 2>/dev/null; then
  gcc -O2 -pthread -o "$out.m64" fixtures/clock_loop.c
  n=2000000
  python3 - "$out" "$n" <<'PY'
import subprocess, sys, statistics
out, n = sys.argv[1], int(sys.argv[2])
res = {}
for _ in range(7):
    for mode in ("libc", "raw"):
        for abi in ("m64", "m32"):
            e = subprocess.run([f"{out}.{abi}", mode, "1", str(n)], capture_output=True, text=True).stderr
            ns = int(next(l.split()[1] for l in e.splitlines() if l.startswith("loop_ns"))) / n
            res.setdefault((mode, abi), []).append(ns)
for mode in ("libc", "raw"):
    a, b = statistics.median(res[(mode, "m64")]), statistics.median(res[(mode, "m32")])
    print(f"clock_gettime(MONOTONIC) {mode:4}: 64-bit {a:6.1f} ns/call, 32-bit {b:6.1f} ns/call (x{b/a:.2f})")
PY
  rm -f "$out.m32" "$out.m64"
fi
rm -f "$out"
