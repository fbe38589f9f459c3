#!/usr/bin/env bash
# Whether vdsoctl is its own finding (issue 40): two `serve --interval 1s`
# from BINARY and one `check` between two scrapes of the first serve.
# Prints what the first exports of the second (its raw CLOCK_REALTIME and
# [vsyscall] series, 10 s apart), the exited-process series left under the
# check's name (its comm: BINARY's first 15 characters, so other vdsoctl
# builds on a shared host do not mix in), the first's
# vdsoctl_trace_own_calls_total, and a `check`'s host_trace row while a
# serve runs. Needs root (or CAP_BPF + CAP_PERFMON). Takes the tests'
# system-wide lock, as a system-wide trace must.
# Usage: scripts/bench-own.sh [BINARY]   (default: target/debug/vdsoctl)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(realpath "${1:-target/debug/vdsoctl}")
exec 9>>"${TMPDIR:-/tmp}/vdsoctl-tests-system-wide.lock"
flock 9
out=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$out"' EXIT
start() {
  "$bin" serve --listen 127.0.0.1:0 --interval 1s --max-series 1000 2>"$out/$1.err" &
  pids+=($!)
  echo $! >"$out/$1.pid"
}
addr() {
  for _ in $(seq 100); do
    a=$(sed -n 's|.*serving http://\([^/]*\)/metrics.*|\1|p' "$out/$1.err")
    [ -n "$a" ] && { echo "$a"; return; }
    sleep 0.2
  done
  echo "serve $1 did not start: $(cat "$out/$1.err")" >&2
  exit 1
}
start a
start b
A=$(addr a)
addr b >/dev/null
PB=$(cat "$out/b.pid")
sleep 5
curl -s "http://$A/metrics" >"$out/a0"
sleep 10
curl -s "http://$A/metrics" >"$out/a1"
"$bin" check >/dev/null 2>&1 || true
sleep 4
curl -s "http://$A/metrics" >"$out/a2"
comm=$(basename "$bin" | cut -c1-15)
echo "serve A=$(cat "$out/a.pid") B=$PB"
for f in a0 a1; do
  echo "--- B's series in A ($f, 10 s apart):"
  lines=$(grep "pid=\"$PB\"" "$out/$f" | grep -E '^vdsoctl_(clock_syscalls|vsyscall_emulations)_total' |
    grep -E 'clock="CLOCK_REALTIME"|vsyscall' || true)
  echo "${lines:-(none)}"
done
echo "--- exited series under the check's comm ($comm) in A:"
{ grep "^vdsoctl_exited_clock_syscalls_total{comm=\"$comm\"" "$out/a2" || true; } |
  awk '{s += $NF; n++} END {printf "%d series, %d calls\n", n, s}'
echo "--- A's own calls left out (before, after the check):"
grep -h '^vdsoctl_trace_own_calls_total' "$out/a1" "$out/a2" || echo "(no such series)"
echo "--- a check's host_trace beside the serves:"
"$bin" --json check 2>/dev/null |
  python3 -c 'import json, sys; print([c["detail"] for c in json.load(sys.stdin)["checks"] if c["name"] == "host_trace"][0])'
