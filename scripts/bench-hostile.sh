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
#                          calls, loop wall time, while `trace -a` is attached
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

loop_ms() { "$@" 2>&1 >/dev/null | awk '/^loop_ns/ { printf "%.2f\n", $2 / 1e6 }' | tail -1; }
median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

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

echo "# cost while trace -a is attached, median of $RUNS interleaved rounds (ms per 1M calls = ns per call)"
for w in clock getppid; do for b in bare "${BUILDS[@]}"; do : >"$WORK/$w.$b"; done; done
for _ in $(seq "$RUNS"); do
    for b in bare "${BUILDS[@]}"; do
        if [ "$b" != bare ]; then
            "${BIN[$b]}" trace --engine bpf -a -d 1h >/dev/null 2>&1 &
            tracer=$!
            sleep 1
        fi
        loop_ms "$WORK/clock_loop" raw 1 1000000 >>"$WORK/clock.$b"
        loop_ms "$WORK/clock_loop" getppid 0 1000000 >>"$WORK/getppid.$b"
        if [ "$b" != bare ]; then kill -INT $tracer; wait $tracer 2>/dev/null || true; fi
    done
done
for w in clock getppid; do
    printf '%-8s' "$w"
    for b in bare "${BUILDS[@]}"; do printf '  %s %sms' "$b" "$(median <"$WORK/$w.$b")"; done
    echo
done
