#!/usr/bin/env bash
# What `vdsoctl top` costs (issue 43: ≤ 1% of a core at its default
# frequency), against its peer `perf record -a -e cpu-clock -F 999` over
# the same window, interleaved rounds, medians of RUNS:
#
#   own CPU    user + system CPU time of `vdsoctl top -d 10s --json` (from
#              rusage, GNU time's %U %S), in % of one core over the 10 s;
#              the peer's the same for `perf record ... -- sleep 10`.
#   tax        what the sampling costs the programs it samples (its BPF
#              program runs in their context, at each sample): the wall time
#              of a libc clock loop (clock_loop libc: loop_ns on stderr)
#              alone, beside `top`, beside `perf record`; the slowdown times
#              the CPUs is the cost in % of one core.
#
# Needs root (top's BPF sampler), gcc, perf (linux-perf), GNU time.
# Usage: scripts/bench-top.sh [RUNS]
set -euo pipefail
RUNS=${1:-5}
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$PWD/target}
cargo build --release --quiet
V=$CARGO_TARGET_DIR/release/vdsoctl
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
gcc -O2 -Wall -pthread -o "$T/clock_loop" fixtures/clock_loop.c
CPUS=$(nproc)
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
cpu_of() { # command... -> CPU seconds (user + system)
    /usr/bin/time -f '%U %S' -o "$T/time" "$@" >/dev/null 2>&1 || true
    awk '{print $1 + $2}' "$T/time"
}
loop_ns() { "$T/clock_loop" libc 1 50000000 2>&1 >/dev/null | awk '/loop_ns/ {print $2}'; }
: >"$T/top" ; : >"$T/perf"; : >"$T/bare"; : >"$T/under_top"; : >"$T/under_perf"
for _ in $(seq "$RUNS"); do
    cpu_of "$V" --json top -d 10s >>"$T/top"
    cpu_of perf record -q -a -e cpu-clock -F 999 -o "$T/perf.data" -- sleep 10 >>"$T/perf"
    loop_ns >>"$T/bare"
    "$V" --json top -d 60s >/dev/null 2>&1 & TOP=$!
    sleep 1
    loop_ns >>"$T/under_top"
    kill -INT $TOP; wait $TOP || true
    perf record -q -a -e cpu-clock -F 999 -o "$T/perf.data" >/dev/null 2>&1 & PERF=$!
    sleep 1
    loop_ns >>"$T/under_perf"
    kill -INT $PERF; wait $PERF || true
done
pct() { awk -v s="$1" 'BEGIN {printf "%.2f%%", 100 * s / 10}'; }
top=$(median <"$T/top"); perf=$(median <"$T/perf")
bare=$(median <"$T/bare"); ut=$(median <"$T/under_top"); up=$(median <"$T/under_perf")
echo "own CPU over 10 s (median of $RUNS): vdsoctl top $top s ($(pct "$top") of a core); perf record -F 999 -a $perf s ($(pct "$perf"))"
awk -v b="$bare" -v t="$ut" -v p="$up" -v c="$CPUS" 'BEGIN {
    printf "tax on a libc clock loop (median loop_ns): bare %d, beside top %d (x%.4f), beside perf record %d (x%.4f)\n", b, t, t / b, p, p / b
    printf "tax in %% of one core on %d CPUs: top %.2f%%, perf record %.2f%%\n", c, 100 * (t / b - 1) * c, 100 * (p / b - 1) * c
}'
