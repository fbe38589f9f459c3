#!/usr/bin/env bash
# `vdsoctl --json check --image ROOT` against a PEER build (an older
# vdsoctl), interleaved: each round runs both on each root in turn, so
# both see the same load and page cache; medians per root and their
# ratio, wall and CPU (user + sys: steadier on a shared host). Also checks that the two JSON reports are byte-identical (the
# image audit has no timings in its JSON), for a refactor that must not
# change behaviour.
# Usage: PEER=/path/to/old/vdsoctl scripts/bench-image-peer.sh [ROUNDS] [ROOT...]
# (default ROOTs: /usr/bin /usr/lib/x86_64-linux-gnu; BIN defaults to
# target/release/vdsoctl, built first).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-7}
shift || true
roots=("$@")
[ ${#roots[@]} -gt 0 ] || roots=(/usr/bin /usr/lib/x86_64-linux-gnu)
: "${PEER:?PEER=/path/to/the/vdsoctl to compare with}"
if [ -z "${BIN:-}" ]; then
  cargo build --release --quiet
  BIN=$PWD/target/release/vdsoctl
fi
python3 - "$BIN" "$PEER" "$rounds" "${roots[@]}" <<'PY'
import os, statistics, subprocess, sys, tempfile, time
bin_, peer, rounds, roots = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
times, cpus, outs = {}, {}, {}
def run(exe, root):
    """Wall time, CPU time (user + sys, steadier on a loaded host) and stdout."""
    with tempfile.TemporaryFile() as f:
        t = time.perf_counter()
        p = subprocess.Popen([exe, "--json", "check", "--image", root], stdout=f, stderr=subprocess.DEVNULL)
        _, _, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t
        f.seek(0)
        return wall, ru.ru_utime + ru.ru_stime, f.read()
for r in range(rounds):
    for root in roots:
        # Alternate which goes first, so neither always meets the warmer cache.
        for name, exe in ((("this", bin_), ("peer", peer)) if r % 2 == 0 else (("peer", peer), ("this", bin_))):
            dt, cpu, out = run(exe, root)
            times.setdefault((name, root), []).append(dt)
            cpus.setdefault((name, root), []).append(cpu)
            outs.setdefault((name, root), set()).add(out)
for root in roots:
    a, b = statistics.median(times[("this", root)]), statistics.median(times[("peer", root)])
    ca, cb = statistics.median(cpus[("this", root)]), statistics.median(cpus[("peer", root)])
    same = outs[("this", root)] == outs[("peer", root)] and len(outs[("this", root)]) == 1
    print(f"{root}: wall this {a*1e3:.1f} ms, peer {b*1e3:.1f} ms (ratio {a/b:.3f}); "
          f"cpu this {ca*1e3:.1f} ms, peer {cb*1e3:.1f} ms (ratio {ca/cb:.3f}); "
          f"json {'identical' if same else 'DIFFERS'} ({rounds} interleaved rounds, medians)")
PY
