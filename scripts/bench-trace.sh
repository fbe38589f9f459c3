#!/usr/bin/env bash
# Target slowdown under `vdsoctl trace` (DESIGN budgets): a vDSO-only
# workload (no clock syscalls: goal ≤ ×1.05 of bare) and a syscall-heavy one
# (1M clock_gettime(CLOCK_THREAD_CPUTIME_ID) through libc — a real syscall:
# goal within 10% of perf stat's filtered in-kernel counting), each bare,
# under `vdsoctl trace -- …` (release), `strace -c -f …` and
# `perf stat -e raw_syscalls:sys_enter --filter 'id == 228' …`.
# The figure is the workload loop's own wall time (clock_loop prints
# loop_ns on stderr), so tool start-up and reporting are not counted.
# Runs are interleaved across the four ways; the median of RUNS is shown.
# Needs root (tracefs), gcc, strace, perf. Usage: scripts/bench-trace.sh [RUNS]
set -euo pipefail
RUNS=${1:-7}
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$PWD/target}
cargo build --release --quiet
VDSOCTL=$CARGO_TARGET_DIR/release/vdsoctl
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
gcc -O2 -Wall -pthread -o "$WORK/clock_loop" fixtures/clock_loop.c

# loop_ns of one run of "$@" (the workload's stderr line), in ms
loop_ms() {
    "$@" 2>&1 >/dev/null | awk '/^loop_ns/ { printf "%.1f\n", $2 / 1e6 }' | tail -1
}
median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

declare -A WORKLOADS=(
    [vdso-only]="libc 1 50000000"
    [syscall-heavy]="libc 3 1000000"
)
printf '%-14s %10s %10s %10s %10s %10s %10s   %s\n' workload bare vdsoctl native-only cheapest strace perf-stat "ratios vs bare (vdsoctl/perf-stat)"
for name in vdso-only syscall-heavy; do
    read -r -a W <<<"${WORKLOADS[$name]}"
    W=("$WORK/clock_loop" "${W[@]}")
    : >"$WORK/bare" >"$WORK/vdsoctl" >"$WORK/native" >"$WORK/cheap" >"$WORK/strace" >"$WORK/perf"
    for _ in $(seq "$RUNS"); do
        loop_ms "${W[@]}" >>"$WORK/bare"
        loop_ms "$VDSOCTL" trace -- "${W[@]}" >>"$WORK/vdsoctl"
        loop_ms "$VDSOCTL" trace --native-only -- "${W[@]}" >>"$WORK/native"
        loop_ms "$VDSOCTL" trace --native-only --no-split -- "${W[@]}" >>"$WORK/cheap"
        loop_ms strace -c -f -o /dev/null "${W[@]}" >>"$WORK/strace"
        loop_ms perf stat -x, -o /dev/null -e raw_syscalls:sys_enter --filter 'id == 228' "${W[@]}" >>"$WORK/perf"
    done
    b=$(median <"$WORK/bare"); v=$(median <"$WORK/vdsoctl"); n=$(median <"$WORK/native"); c=$(median <"$WORK/cheap"); s=$(median <"$WORK/strace"); p=$(median <"$WORK/perf")
    printf '%-14s %8sms %8sms %8sms %8sms %8sms %8sms   vdsoctl ×%s, native-only ×%s, cheapest ×%s, strace ×%s, perf stat ×%s; vdsoctl/perf-stat ×%s, cheapest/perf-stat ×%s\n' \
        "$name" "$b" "$v" "$n" "$c" "$s" "$p" \
        "$(awk -v a="$v" -v b="$b" 'BEGIN { printf "%.3f", a / b }')" \
        "$(awk -v a="$n" -v b="$b" 'BEGIN { printf "%.3f", a / b }')" \
        "$(awk -v a="$c" -v b="$b" 'BEGIN { printf "%.3f", a / b }')" \
        "$(awk -v a="$s" -v b="$b" 'BEGIN { printf "%.3f", a / b }')" \
        "$(awk -v a="$p" -v b="$b" 'BEGIN { printf "%.3f", a / b }')" \
        "$(awk -v a="$v" -v b="$p" 'BEGIN { printf "%.3f", a / b }')" \
        "$(awk -v a="$c" -v b="$p" 'BEGIN { printf "%.3f", a / b }')"
done
echo "goals: vdso-only vdsoctl ≤ ×1.05 of bare; syscall-heavy vdsoctl ≤ ×1.10 of perf stat"
