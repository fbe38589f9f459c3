#!/usr/bin/env bash
# The start of `vdsoctl trace` (issue 43): the whole run of
# `vdsoctl trace [--sites | --stacks] -- /bin/true` (release build, wall
# time), against `perf stat -e syscalls:sys_enter_clock_gettime -- /bin/true`
# in the same rounds, interleaved; each figure is the median of RUNS rounds.
# What costs is the kernel's verification of the programs at BPF_PROG_LOAD:
# each program's own verification time, instructions processed and states,
# as the verifier reports them (BPF_LOG_STATS, VDSOCTL_VERIFIER_STATS=1), are
# the medians over the rounds too. BASE=/path/to/vdsoctl runs that build in
# the same rounds (an A/B of a change). The load average is printed before
# and after: read the ratios against perf stat on a busy host.
# Budget (issue 43): --sites and --stacks start ≤ 0.15 s on a quiet host.
# Needs root (the BPF engine) and perf (linux-perf).
# Usage: scripts/bench-start.sh [RUNS]
set -euo pipefail
RUNS=${1:-7}
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$PWD/target}
cargo build --release --quiet
V=$CARGO_TARGET_DIR/release/vdsoctl
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

wall_ms() {
    local t0 t1
    t0=$(date +%s%N)
    "$@" >/dev/null 2>"$WORK/err" || { echo "failed: $*" >&2; cat "$WORK/err" >&2; exit 1; }
    t1=$(date +%s%N)
    awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f\n", (b - a) / 1e6 }'
}
median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

declare -A WAYS=(
    [perf-stat]="perf stat -x, -o /dev/null -e syscalls:sys_enter_clock_gettime --"
    [default]="$V trace --engine bpf --"
    [sites]="$V trace --engine bpf --sites --"
    [stacks]="$V trace --engine bpf --stacks --"
)
ORDER=(perf-stat default sites stacks)
if [ -n "${BASE:-}" ]; then
    WAYS[base-default]="$BASE trace --engine bpf --"
    WAYS[base-sites]="$BASE trace --engine bpf --sites --"
    WAYS[base-stacks]="$BASE trace --engine bpf --stacks --"
    ORDER+=(base-default base-sites base-stacks)
fi

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for _ in $(seq "$RUNS"); do
    for way in "${ORDER[@]}"; do
        # shellcheck disable=SC2086
        VDSOCTL_VERIFIER_STATS=1 wall_ms ${WAYS[$way]} /bin/true >>"$WORK/$way.ms"
        # One line per program: "vdsoctl: verifier: NAME (N insns): verification time U usec ... processed P insns ..."
        grep -a "^vdsoctl: verifier:" "$WORK/err" | sed 's/^vdsoctl: verifier: //' >>"$WORK/$way.progs" || true
    done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

printf '\n%-14s %10s %10s\n' way "wall ms" "×perf stat"
peer=$(median <"$WORK/perf-stat.ms")
for way in "${ORDER[@]}"; do
    m=$(median <"$WORK/$way.ms")
    printf '%-14s %10s %10s\n' "$way" "$m" "$(awk -v a="$m" -v b="$peer" 'BEGIN { printf "%.2f", a / b }')"
done

printf '\n%-14s %-16s %7s %12s %12s %8s\n' way program insns "verify µs" processed states
for way in "${ORDER[@]}"; do
    [ -s "$WORK/$way.progs" ] || continue
    for prog in $(awk '{ print $1 }' "$WORK/$way.progs" | sort -u); do
        grep "^$prog " "$WORK/$way.progs" >"$WORK/one"
        insns=$(sed -n 's/^[^(]*(\([0-9]*\) insns).*/\1/p' "$WORK/one" | head -1)
        us=$(sed -n 's/.*verification time \([0-9]*\) usec.*/\1/p' "$WORK/one" | median)
        processed=$(sed -n 's/.*processed \([0-9]*\) insns.*/\1/p' "$WORK/one" | median)
        states=$(sed -n 's/.*total_states \([0-9]*\).*/\1/p' "$WORK/one" | median)
        printf '%-14s %-16s %7s %12s %12s %8s\n' "$way" "$prog" "$insns" "$us" "$processed" "$states"
    done
done
