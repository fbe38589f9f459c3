#!/usr/bin/env bash
# CPU and memory of `vdsoctl serve` while scraped once a second.
# Budget, at the default --interval 15s, tracing system-wide: ≤ 1% of one
# core for the exporter itself (audit + HTTP threads), plus the trace
# engine's drain, which grows with the host's clock-syscall rate (~1% of a
# core per 100,000 clock syscalls/s with the perf engine); ≤ 16 MiB VmHWM.
#
# Each run: start the exporter on a loopback port, let its first refresh
# finish, then for DURATION seconds scrape /metrics with curl once a second;
# CPU is utime+stime from /proc/PID/stat over that window, memory VmHWM and
# VmRSS from /proc/PID/status at the end. Runs alternate between an idle
# host and one with the load; medians per case are printed.
#
# Then the attacks (scripts/serve-attack.py, loopback only, each bounded):
# a fresh exporter under `prlimit --nofile=1024:1024` per case, an attack
# started (none: the idle baseline; rst: connect+GET+RST in a loop; idle:
# 2,000 idle connections; pipeline: two clients pipelining 2,000 GETs that
# never read; header: 64 MiB header lines), SCRAPES well-behaved scrapes
# 20 ms apart while it goes on (latency median, p99, max; failures), the
# exporter's VmHWM and fds, and the time from SIGTERM to its exit (under
# the attack). Cases interleave across runs; medians when RUNS > 1.
# Needs root (system-wide tracing) and curl, gcc, python3 and prlimit.
# Usage: scripts/bench-serve.sh [RUNS] [DURATION_SECS] [INTERVAL] [SCRAPES]
#   DURATION_SECS 0 skips the CPU and memory section.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-1}
duration=${2:-60}
interval=${3:-15s}
scrapes=${4:-200}
command -v curl >/dev/null || { echo "needs curl" >&2; exit 1; }
cargo build --release --quiet
bin=$PWD/target/release/vdsoctl
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
gcc -O2 -Wall -o "$work/clock_ticker" fixtures/clock_ticker.c
tck=$(getconf CLK_TCK)

# cpu_ticks PID: utime+stime (fields 14, 15 of /proc/PID/stat, after the comm).
cpu_ticks() { sed 's/.*) //' "/proc/$1/stat" | awk '{print $12 + $13}'; }
# thread_ticks PID: "name ticks" per thread name (serve names its threads:
# audit, rates, http (the HTTP runtime, every connection), signals).
thread_ticks() {
  for t in /proc/"$1"/task/*; do
    printf '%s %s\n' "$(cat "$t/comm")" "$(sed 's/.*) //' "$t/stat" | awk '{print $12 + $13}')"
  done | awk '{a[$1] += $2} END {for (k in a) print k, a[k]}' | sort
}
# traced ADDR: every clock syscall the exporter has counted (its exported series).
traced() { curl -s "http://$1/metrics" | awk '/^vdsoctl_clock_syscalls_total\{/ {s += $NF} END {printf "%d", s}'; }

one_run() { # $1 = load: none | ticker
  local load=$1 ticker_pid=""
  if [ "$load" = ticker ]; then
    "$work/clock_ticker" 4 100 >/dev/null & ticker_pid=$!
  fi
  "$bin" serve --listen 127.0.0.1:0 --interval "$interval" 2>"$work/serve.err" &
  local pid=$! addr="" i
  for i in $(seq 100); do
    addr=$(grep -o 'http://[0-9.:]*' "$work/serve.err" | head -1 | sed 's|http://||') || true
    [ -n "$addr" ] && curl -sf "http://$addr/metrics" | grep -q 'vdsoctl_check_status' && break
    sleep 0.1
  done
  [ -n "$addr" ] || { echo "serve did not start: $(cat "$work/serve.err")" >&2; exit 1; }
  local t0 c0 t1 c1 lat=()
  local n0 n1
  n0=$(traced "$addr")
  t0=$(date +%s.%N); c0=$(cpu_ticks "$pid"); thread_ticks "$pid" >"$work/th0"
  for i in $(seq "$duration"); do
    lat+=("$(curl -s -o /dev/null -w '%{time_total}' "http://$addr/metrics")")
    sleep 1
  done
  t1=$(date +%s.%N); c1=$(cpu_ticks "$pid"); thread_ticks "$pid" >"$work/th1"
  n1=$(traced "$addr")
  local hwm rss threads
  hwm=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status")
  rss=$(awk '/VmRSS/ {print $2}' "/proc/$pid/status")
  threads=$(awk '/Threads/ {print $2}' "/proc/$pid/status")
  local split
  split=$(join "$work/th0" "$work/th1" |
    awk -v tck="$tck" -v w="$(python3 -c "print($t1-$t0)")" '{printf "%s %.2f%%  ", $1, 100*($3-$2)/tck/w}')
  kill -TERM "$pid"; wait "$pid" || { echo "serve exited $? on SIGTERM" >&2; exit 1; }
  [ -n "$ticker_pid" ] && { kill "$ticker_pid"; wait "$ticker_pid" 2>/dev/null || true; }
  local lat_ms
  lat_ms=$(printf '%s\n' "${lat[@]}" | sort -n | awk '{a[NR]=$1} END {printf "%.2f", a[int((NR+1)/2)]*1000}')
  python3 -c "print(f'{\"$load\":8} cpu {100*($c1-$c0)/$tck/($t1-$t0):6.2f}% of a core  VmHWM {$hwm/1024:5.1f} MiB  VmRSS {$rss/1024:5.1f} MiB  threads $threads  scrape median ${lat_ms} ms  host clock syscalls traced {($n1-$n0)/($t1-$t0):,.0f}/s')"
  echo "         by thread: $split"
}

if [ "$duration" -gt 0 ]; then
echo "vdsoctl serve --interval $interval, scraped 1/s for ${duration}s, $runs run(s) per case"
for r in $(seq "$runs"); do
  for load in none ticker; do
    one_run "$load" | tee -a "$work/results"
  done
done
fi
if [ "$duration" -gt 0 ] && [ "$runs" -gt 1 ]; then
  echo "medians:"
  for load in none ticker; do
    grep "^$load " "$work/results" | awk '{print $3}' | tr -d '%' | sort -n |
      awk -v l="$load" '{a[NR]=$1} END {printf "%-8s cpu %.2f%% of a core\n", l, a[int((NR+1)/2)]}'
  done
fi

# ------------------------------------------------------------------ attacks

attack_run() { # $1 = attack: none | rst | idle | pipeline | header
  local attack=$1
  prlimit --nofile=1024:1024 -- "$bin" serve --listen 127.0.0.1:0 --interval "$interval" 2>"$work/serve.err" &
  local pid=$! addr="" i
  for i in $(seq 100); do
    addr=$(grep -o 'http://[0-9.:]*' "$work/serve.err" | head -1 | sed 's|http://||') || true
    [ -n "$addr" ] && curl -sf "http://$addr/metrics" | grep -q 'vdsoctl_check_status' && break
    sleep 0.1
  done
  [ -n "$addr" ] || { echo "serve did not start: $(cat "$work/serve.err")" >&2; exit 1; }
  : >"$work/attack.out"
  python3 scripts/serve-attack.py "$addr" "$attack" "$scrapes" >"$work/attack.out" &
  local apid=$!
  for i in $(seq 1200); do
    [ -s "$work/attack.out" ] && break
    sleep 0.1
  done
  local line hwm fds t0 t1 rc=0
  line=$(cat "$work/attack.out")
  [ -n "$line" ] || { echo "$attack: no result" >&2; exit 1; }
  if [ ! -d "/proc/$pid" ]; then
    echo "$attack: serve DIED: $(tail -3 "$work/serve.err")" >&2; exit 1
  fi
  hwm=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status")
  fds=$(ls "/proc/$pid/fd" | wc -l)
  t0=$(date +%s%N)
  kill -TERM "$pid"
  wait "$pid" || rc=$?
  t1=$(date +%s%N)
  kill "$apid" 2>/dev/null || true
  wait "$apid" 2>/dev/null || true
  set -- $line
  printf '%-9s scrape median %7.2f ms  p99 %7.2f ms  max %7.2f ms  failed %s/%s  VmHWM %5.1f MiB  fds %4s  SIGTERM→exit %4d ms (rc %s)  attack: %s\n' \
    "$1" "$2" "$3" "$4" "$5" "$scrapes" "$(awk -v k="$hwm" 'BEGIN {print k / 1024}')" "$fds" $(((t1 - t0) / 1000000)) "$rc" "${*:6}"
  [ "$rc" = 0 ] || { echo "$attack: serve exited $rc on SIGTERM: $(tail -3 "$work/serve.err")" >&2; exit 1; }
}

echo "attacks: serve under prlimit --nofile=1024:1024, $scrapes scrapes per case (python client, Connection: close), $runs run(s)"
for r in $(seq "$runs"); do
  for attack in none rst idle pipeline header; do
    attack_run "$attack" | tee -a "$work/attacks"
  done
done
if [ "$runs" -gt 1 ]; then
  echo "medians of the per-run figures:"
  python3 - "$work/attacks" <<'PY'
import re, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    a = line.split()[0]
    m = re.search(r"median +([\d.]+) ms +p99 +([\d.]+) ms .*SIGTERM→exit +(\d+) ms", line)
    rows.setdefault(a, []).append(tuple(float(x) for x in m.groups()))
for a, v in rows.items():
    med = lambda i: statistics.median(r[i] for r in v)
    print(f"{a:9} scrape median {med(0):7.2f} ms  p99 {med(1):7.2f} ms  SIGTERM→exit {med(2):4.0f} ms")
PY
fi
