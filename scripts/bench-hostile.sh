#!/usr/bin/env bash
# Hostile processes against the BPF engine's counts (issue 19), and what the
# defences cost: rows an unprivileged attacker takes in `trace -a`, whether a
# victim's exact count survives, and the cost per clock syscall (and the tax
# on an unrelated one) while `trace -a` is attached, median of RUNS
# interleaved rounds. With BASE=/path/to/an/older/vdsoctl, that build is
# measured beside this one in the same rounds (the peer).
#
#   attackers (as nobody)  20,000 raw clock_gettime, each with its own clock id;
#                          1,000 renames + a raw call, exec'd 19 times (20,000)
#   victim                 12,345 raw clock_gettime(CLOCK_MONOTONIC), after them
#   cost                   1,000,000 raw clock_gettime(MONOTONIC) / getppid
#                          calls: the loop's CPU time while `trace -a` is attached
#
# Needs root, gcc, setpriv, python3. Usage: [BASE=old-vdsoctl] scripts/bench-hostile.sh [RUNS]
set -euo pipefail
RUNS=${1:-7}
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$PWD/target}
cargo build --release --quiet
V=$CARGO_TARGET_DIR/release/vdsoctl
WORK=$(mktemp -d)
chmod 755 "$WORK"
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$WORK"' EXIT
gcc -O2 -Wall -pthread -o "$WORK/clock_loop" fixtures/clock_loop.c
gcc -O2 -Wall -pthread -o "$WORK/hostile" fixtures/hostile.c
NOBODY=(setpriv --reuid nobody --regid nogroup --clear-groups --inh-caps -all)
BUILDS=(this)
declare -A BIN=([this]=$V)
if [ -n "${BASE:-}" ]; then BUILDS+=(base); BIN[base]=$BASE; fi


echo "# hostile processes vs trace -a ($(uname -r), $(nproc) CPUs)"
for b in "${BUILDS[@]}"; do
    "${BIN[$b]}" --json trace --engine bpf -a -d 1h >"$WORK/a.json" 2>/dev/null &
    tracer=$!
    sleep 1
    "${NOBODY[@]}" "$WORK/hostile" clocks 20000 >/dev/null & c=$!
    "${NOBODY[@]}" "$WORK/hostile" rename 1000 19 >/dev/null & r=$!
    wait $c $r
    "${NOBODY[@]}" "$WORK/clock_loop" raw 1 12345 >/dev/null 2>&1 & v=$!
    wait $v
    sleep 0.5
    kill -INT $tracer; wait $tracer || true
    python3 - "$WORK/a.json" "$b" "$c" "$r" "$v" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); b, c, n, v = sys.argv[2], *map(int, sys.argv[3:])
rows = lambda pid: [x for x in r["counts"] if x["pid"] == pid]
un = {u["pid"]: u["count"] for u in r.get("unattributed", [])}
vc = sum(x["count"] for x in rows(v)) + un.get(v, 0)
print(f"{b:5} rows: {len(r['counts'])} in all, clock-id cycler {len(rows(c))}, renamer {len(rows(n))}; "
      f"lost {r['lost']}; victim {vc} of 12345 ({len(rows(v))} rows); findings {len(r['findings'])}")
PY
done

echo "# cost while trace -a is attached: the loop's CPU time (user+sys: the BPF program runs in the"
echo "# syscall, and CPU time leaves out waiting for a core on a busy host), median of $RUNS interleaved rounds"
python3 - "$RUNS" "$WORK/clock_loop" "$V" "${BASE:-}" <<'PY'
import resource, signal, statistics, subprocess, sys, time
runs, loop, this, base = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
builds = {"this": this, **({"base": base} if base else {})}
work = {"clock": [loop, "raw", "1", "1000000"], "getppid": [loop, "getppid", "0", "1000000"]}
def cpu(args):
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (r1.ru_stime + r1.ru_utime) - (r0.ru_stime + r0.ru_utime)
res = {k: {w: [] for w in work} for k in ["bare", *builds]}
for _ in range(runs):
    for k in res:
        tracer = None
        if k != "bare":
            tracer = subprocess.Popen([builds[k], "trace", "--engine", "bpf", "-a", "-d", "1h"],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(1)
        for w, args in work.items():
            res[k][w].append(cpu(args))
        if tracer:
            tracer.send_signal(signal.SIGINT)
            tracer.wait()
for w in work:
    bare = statistics.median(res["bare"][w])
    cells = [f"{k} {statistics.median(v[w]) * 1e3:.0f}ms (+{(statistics.median(v[w]) - bare) * 1e3:.0f} ns/call)"
             for k, v in res.items()]
    print(f"1M {w:8}", "  ".join(cells))
PY
