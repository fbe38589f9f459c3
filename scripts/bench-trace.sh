#!/usr/bin/env bash
# What `vdsoctl trace` costs the traced program, against the peers, measured
# as the workload loop's own wall time (clock_loop prints loop_ns on stderr),
# so no tool's start-up or report is counted. Rounds are interleaved across
# the ways of counting; each figure is the median of RUNS rounds.
#
#   syscall-heavy  1,000,000 raw clock_gettime(CLOCK_MONOTONIC) syscalls
#   vdso-only      50,000,000 clock_gettime(CLOCK_MONOTONIC) through libc (the vDSO)
#   fixed cost     wall time of `-- /bin/true` (whole run)
#   tax            1,000,000 getppid syscalls (no clock syscall) while each way of
#                  tracing is attached system-wide, interleaved in rounds: none,
#                  an empty BPF program on sys_enter (examples/empty_sys_enter:
#                  the floor of any sys_enter program), vdsoctl's sys_enter
#                  program (trace --engine bpf -a), perf stat's clock_gettime
#                  tracepoint (-a), and vdsoctl's fentry programs where the
#                  kernel allows them (trace --engine fentry -a).
#                  Budget (issue 22): vdsoctl's sys_enter tax ≤ 1.5 × the
#                  empty program's.
#
# Budgets (issue 10): syscall-heavy ≤ 1.10 × perf stat's ratio; vdso-only
# ≤ ×1.05 of bare; fixed cost ≤ 1.5 × perf stat's.
#
# The unprivileged part (issue 18), the seccomp engine against its peer
# `strace -f -c --seccomp-bpf -e trace=clock_gettime` (ptrace stops only at
# the filtered calls), same rounds, interleaved:
#   per notified call  100,000 raw clock_gettime: (loop - bare) / calls
#   vdso-only          50,000,000 libc clock_gettime (budget ≤ ×1.02 of bare)
#   other syscalls     1,000,000 getppid: what the filter adds to a syscall it passes
# Budget: cost per notified call ≤ 0.25 × strace's (issue 31; 0.5 in issue 18).
# BASE=/path/to/vdsoctl runs that build as a third peer (A/B of a change).
#
# `--stacks` (issue 21) in the same rounds as the default trace: what the
# in-kernel stack walk adds per syscall (syscall-heavy, a binary without
# frame pointers: a short walk). `--stacks-only` runs just that, and the
# same loop built with -fno-omit-frame-pointer (the walk to main and libc).
#
# Call sites (issue 21): `trace --sites` against the default trace, BPF
# engine, same rounds, interleaved, on 1,000,000 clock_gettime syscalls made
# two ways: inline in a function with a stack frame (clock_loop inline: the
# word at the stack pointer is data, so once the site is judged its calls
# skip the read), and through libc's syscall() (a leaf: the word is its
# caller, read on every call). Budget: the per-syscall cost of the traced
# program with --sites ≤ 1.10 × with the default trace. The peer floor of
# the one read a leaf needs, in the same rounds: an empty sys_enter program
# against the same with one bpf_probe_read_user of the word at sp
# (examples/empty_sys_enter --read-stack-word).
# The first sighting (issue 32): a site row's first call also captures the
# mappings of its addresses (bpf_find_vma) and a stack row's its frames'.
# fixtures/short_clock times its own first call and the mean of the
# others; over 10 × RUNS processes per way, interleaved: the default
# trace, --sites and --stacks, median first call and median later call.
# Needs root (the privileged engines), gcc, strace, perf (linux-perf).
# `--overhead-only`: the syscall-heavy row alone (bare, the BPF engine with
# and without --stacks, perf stat; no strace, no perf engine) and the fixed
# cost: the budget's figures in seconds, not minutes.
# Usage: scripts/bench-trace.sh [RUNS] [--seccomp-only | --sites-only | --stacks-only | --first-only | --overhead-only]
set -euo pipefail
RUNS=${1:-7}
ONLY=${2:-}
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$PWD/target}
cargo build --release --quiet
V=$CARGO_TARGET_DIR/release/vdsoctl
WORK=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$WORK"' EXIT
gcc -O2 -Wall -pthread -o "$WORK/clock_loop" fixtures/clock_loop.c
PERF_EVENT=syscalls:sys_enter_clock_gettime
PERF_FILTER='which_clock == 1'

loop_ms() { "$@" 2>&1 >/dev/null | awk '/^loop_ns/ { printf "%.2f\n", $2 / 1e6 }' | tail -1; }
wall_ms() { local t0 t1; t0=$(date +%s%N); "$@" >/dev/null 2>&1; t1=$(date +%s%N); awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f\n", (b - a) / 1e6 }'; }
median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }

declare -A WAYS=(
    [bare]=""
    [vdsoctl-bpf]="$V trace --engine bpf --"
    [bpf-stacks]="$V trace --engine bpf --stacks --"
    [vdsoctl-perf]="$V trace --engine perf --"
    [perf-stat]="perf stat -x, -o /dev/null -e $PERF_EVENT --filter"
    [strace]="strace -c -f -o /dev/null"
)
ORDER=(bare vdsoctl-bpf bpf-stacks vdsoctl-perf perf-stat strace)
run_way() { # way, workload args...
    local way=$1; shift
    case $way in
        bare) loop_ms "$@" ;;
        perf-stat) loop_ms perf stat -x, -o /dev/null -e "$PERF_EVENT" --filter "$PERF_FILTER" "$@" ;;
        *) read -r -a P <<<"${WAYS[$way]}"; loop_ms "${P[@]}" "$@" ;;
    esac
}

seccomp_part() {
    local N=100000 name w
    declare -A SW=(
        [bare]=""
        [vdsoctl-seccomp]="$V trace --engine seccomp --"
        [strace-seccomp]="strace -f -c --seccomp-bpf -e trace=clock_gettime,gettimeofday,time,clock_getres,getcpu -o /dev/null"
    )
    local SORDER=(bare vdsoctl-seccomp strace-seccomp) PEERS=(vdsoctl-seccomp strace-seccomp)
    # BASE=/path/to/an/older/vdsoctl: that build too, in the same rounds (A/B).
    if [ -n "${BASE:-}" ]; then
        SW[base-seccomp]="$BASE trace --engine seccomp --"
        SORDER+=(base-seccomp)
        PEERS+=(base-seccomp)
    fi
    echo "# the unprivileged engines, median of $RUNS interleaved rounds ($(uname -r), $(nproc) CPUs)"
    for name in notified vdso-only other-syscalls; do
        case $name in
            notified) W=("$WORK/clock_loop" raw 1 "$N") ;;
            vdso-only) W=("$WORK/clock_loop" libc 1 50000000) ;;
            other-syscalls) W=("$WORK/clock_loop" getppid 0 1000000) ;;
        esac
        for w in "${SORDER[@]}"; do : >"$WORK/s.$name.$w"; done
        for _ in $(seq "$RUNS"); do
            for w in "${SORDER[@]}"; do
                read -r -a P <<<"${SW[$w]}"
                loop_ms "${P[@]}" "${W[@]}" >>"$WORK/s.$name.$w"
            done
        done
    done
    for name in notified vdso-only other-syscalls; do
        b=$(median <"$WORK/s.$name.bare")
        printf '%-15s bare %9sms' "$name" "$b"
        for w in "${PEERS[@]}"; do
            m=$(median <"$WORK/s.$name.$w")
            case $name in
                notified) printf '  %s %sms (+%s µs/call)' "$w" "$m" "$(awk -v a="$m" -v b="$b" -v n="$N" 'BEGIN{printf "%.2f", (a-b)*1000/n}')" ;;
                other-syscalls) printf '  %s %sms (+%s ns/call)' "$w" "$m" "$(awk -v a="$m" -v b="$b" 'BEGIN{printf "%.1f", a-b}')" ;;
                *) printf '  %s %sms ×%s' "$w" "$m" "$(ratio "$m" "$b")" ;;
            esac
        done
        echo
    done
    local b v s
    b=$(median <"$WORK/s.notified.bare"); v=$(median <"$WORK/s.notified.vdsoctl-seccomp"); s=$(median <"$WORK/s.notified.strace-seccomp")
    if [ -n "${BASE:-}" ]; then
        v=$(median <"$WORK/s.notified.base-seccomp")
        echo "base: per notified call base/strace = $(awk -v b="$b" -v v="$v" -v s="$s" 'BEGIN{printf "%.3f", (v-b)/(s-b)}')"
        v=$(median <"$WORK/s.notified.vdsoctl-seccomp")
    fi
    echo "budget: per notified call vdsoctl/strace = $(awk -v b="$b" -v v="$v" -v s="$s" 'BEGIN{printf "%.3f", (v-b)/(s-b)}') ≤ 0.25; vdso-only ×$(ratio "$(median <"$WORK/s.vdso-only.vdsoctl-seccomp")" "$(median <"$WORK/s.vdso-only.bare")") ≤ 1.02"
}
stacks_part() {
    local N=1000000 name w b d s
    gcc -O2 -Wall -pthread -fno-omit-frame-pointer -o "$WORK/clock_loop_fp" fixtures/clock_loop.c
    echo "# --stacks against the default trace, median of $RUNS interleaved rounds ($(uname -r), $(nproc) CPUs)"
    for name in no-fp fp; do
        local bin=$WORK/clock_loop
        [ "$name" = fp ] && bin=$WORK/clock_loop_fp
        for w in bare vdsoctl-bpf bpf-stacks; do : >"$WORK/k.$name.$w"; done
        for _ in $(seq "$RUNS"); do
            for w in bare vdsoctl-bpf bpf-stacks; do run_way "$w" "$bin" raw 1 "$N" >>"$WORK/k.$name.$w"; done
        done
        b=$(median <"$WORK/k.$name.bare"); d=$(median <"$WORK/k.$name.vdsoctl-bpf"); s=$(median <"$WORK/k.$name.bpf-stacks")
        awk -v n="$name" -v b="$b" -v d="$d" -v s="$s" -v c="$N" 'BEGIN { printf "%-6s bare %.0f ns/syscall; default trace +%.0f ns; --stacks +%.0f ns more (×%.2f the default trace'"'"'s cost)\n", n, b * 1e6 / c, (d - b) * 1e6 / c, (s - d) * 1e6 / c, (s - b) / (d - b) }'
    done
}
sites_part() {
    cargo build --release --quiet --example empty_sys_enter
    local N=1000000 E=$CARGO_TARGET_DIR/release/examples/empty_sys_enter loop w pid
    local SORDER=(bare default sites)
    for loop in inline raw; do
        for w in "${SORDER[@]}"; do : >"$WORK/sites.$loop.$w"; done
    done
    for w in empty read-word; do : >"$WORK/sites.peer.$w"; done
    for _ in $(seq "$RUNS"); do
        for loop in inline raw; do
            loop_ms "$WORK/clock_loop" "$loop" 1 "$N" >>"$WORK/sites.$loop.bare"
            loop_ms "$V" trace --engine bpf -- "$WORK/clock_loop" "$loop" 1 "$N" >>"$WORK/sites.$loop.default"
            loop_ms "$V" trace --engine bpf --sites -- "$WORK/clock_loop" "$loop" 1 "$N" >>"$WORK/sites.$loop.sites"
        done
        # The peer floor: an empty sys_enter program, and the same with the
        # one read of the word at the stack pointer, on the raw loop.
        for w in empty read-word; do
            : >"$WORK/peer.out"
            if [ "$w" = empty ]; then "$E" >"$WORK/peer.out" 2>&1 & pid=$!; else "$E" --read-stack-word >"$WORK/peer.out" 2>&1 & pid=$!; fi
            for _ in $(seq 1500); do grep -q attached "$WORK/peer.out" 2>/dev/null && break; sleep 0.02; done
            if ! grep -q attached "$WORK/peer.out"; then
                echo "bench-trace: the peer program did not attach: $(cat "$WORK/peer.out")" >&2
                exit 1
            fi
            loop_ms "$WORK/clock_loop" raw 1 "$N" >>"$WORK/sites.peer.$w"
            kill -TERM "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true
        done
    done
    echo "# --sites, median of $RUNS interleaved rounds ($(uname -r), $(nproc) CPUs), 1M clock_gettime syscalls"
    # 1M calls: 1 ms is 1 ns a call.
    local b d t
    for loop in inline raw; do
        b=$(median <"$WORK/sites.$loop.bare"); d=$(median <"$WORK/sites.$loop.default"); t=$(median <"$WORK/sites.$loop.sites")
        case $loop in
            inline) printf '%-40s' "inline (no caller: the word is not read)" ;;
            raw) printf '%-40s' "syscall() (a leaf: its caller is read)" ;;
        esac
        echo " bare $(awk -v a="$b" 'BEGIN{printf "%.1f", a}')ns; trace +$(awk -v a="$d" -v b="$b" 'BEGIN{printf "%.1f", a-b}')ns; --sites +$(awk -v a="$t" -v b="$d" 'BEGIN{printf "%.1f", a-b}')ns more: ×$(ratio "$t" "$d") the default trace's per-syscall cost"
    done
    local pe pr
    pe=$(median <"$WORK/sites.peer.empty"); pr=$(median <"$WORK/sites.peer.read-word")
    echo "the read's floor: an empty sys_enter program with one bpf_probe_read_user of the word at sp: +$(awk -v a="$pr" -v b="$pe" 'BEGIN{printf "%.1f", a-b}')ns a call over the empty program"
    echo "budget: inline --sites / default = $(ratio "$(median <"$WORK/sites.inline.sites")" "$(median <"$WORK/sites.inline.default")") ≤ 1.10; syscall(): --sites adds the read (its floor above) and $(awk -v t="$(median <"$WORK/sites.raw.sites")" -v d="$(median <"$WORK/sites.raw.default")" -v pr="$pr" -v pe="$pe" 'BEGIN{printf "%+.1f", (t-d)-(pr-pe)}')ns besides"
}
first_part() {
    gcc -O2 -Wall -fno-omit-frame-pointer -o "$WORK/short_clock" fixtures/short_clock.c
    local w
    for w in default sites stacks; do : >"$WORK/first.$w"; : >"$WORK/rest.$w"; done
    for _ in $(seq $((RUNS * 10))); do
        for w in default sites stacks; do
            local flag=()
            [ "$w" = sites ] && flag=(--sites)
            [ "$w" = stacks ] && flag=(--stacks)
            "$V" trace --engine bpf "${flag[@]}" -- "$WORK/short_clock" raw 1000 time 2>&1 >/dev/null \
                | awk -v f="$WORK/first.$w" -v r="$WORK/rest.$w" '/^first_ns/ { print $2 >>f } /^rest_ns/ { print $2 >>r }'
        done
    done
    echo "# the first sighting, median of $((RUNS * 10)) processes per way, interleaved ($(uname -r), $(nproc) CPUs)"
    local d
    d=$(median <"$WORK/first.default")
    for w in default sites stacks; do
        printf '%-8s first call %6s ns (+%s ns over the default trace); a later call %s ns\n' "$w" \
            "$(median <"$WORK/first.$w")" "$(awk -v a="$(median <"$WORK/first.$w")" -v b="$d" 'BEGIN{print a-b}')" \
            "$(median <"$WORK/rest.$w")"
    done
}
if [ "$ONLY" = --sites-only ]; then
    first_part
    sites_part
    exit 0
fi
if [ "$ONLY" = --first-only ]; then
    first_part
    exit 0
fi
# The tax on an unrelated syscall while each way of tracing is attached
# system-wide; every round runs each way in turn (interleaved), each way's
# figure is the median of its 3 × RUNS loops. 1M calls: 1 ms is 1 ns a call.
tax_part() {
    cargo build --release --quiet --example empty_sys_enter
    local E=$CARGO_TARGET_DIR/release/examples/empty_sys_enter w pid
    local ways=(bare empty sys_enter perf-stat fentry)
    if ! "$V" trace --engine fentry -a -d 10ms >/dev/null 2>"$WORK/fentry.err"; then
        ways=(bare empty sys_enter perf-stat)
        echo "# fentry: not here ($(head -1 "$WORK/fentry.err" | sed 's/^vdsoctl: //; s/ — .*//'))"
    fi
    armed() { # file, word: wait until the file has it (at most 30 s), else stop: an unarmed tracer would be measured as none
        for _ in $(seq 1500); do grep -q "$2" "$1" 2>/dev/null && return; sleep 0.02; done
        echo "bench-trace: no \"$2\" in 30 s: $(head -c 300 "$1")" >&2
        exit 1
    }
    for w in "${ways[@]}"; do : >"$WORK/tax.$w"; done
    for _ in $(seq "$RUNS"); do
        for w in "${ways[@]}"; do
            : >"$WORK/tracer.out"
            case $w in
                bare) pid= ;;
                empty) "$E" >"$WORK/tracer.out" 2>&1 & pid=$!; armed "$WORK/tracer.out" attached ;;
                sys_enter) "$V" trace --engine bpf -a -d 1h >/dev/null 2>"$WORK/tracer.out" & pid=$!; armed "$WORK/tracer.out" tracing ;;
                fentry) "$V" trace --engine fentry -a -d 1h >/dev/null 2>"$WORK/tracer.out" & pid=$!; armed "$WORK/tracer.out" tracing ;;
                perf-stat) perf stat -a -e "$PERF_EVENT" -o /dev/null -- sleep 3600 & pid=$!; sleep 1 ;;
            esac
            for _ in 1 2 3; do loop_ms "$WORK/clock_loop" getppid 0 1000000 >>"$WORK/tax.$w"; done
            if [ -n "$pid" ]; then
                # perf stat's sleep first (else it outlives perf); the
                # example ignores SIGINT in a background job: TERM ends it.
                pkill -P "$pid" 2>/dev/null || true
                kill -INT "$pid" 2>/dev/null; sleep 0.2; kill -TERM "$pid" 2>/dev/null || true
                wait "$pid" 2>/dev/null || true
            fi
        done
    done
    local tb te tv
    tb=$(median <"$WORK/tax.bare"); te=$(median <"$WORK/tax.empty"); tv=$(median <"$WORK/tax.sys_enter")
    echo "# the tax on 1M getppid while attached (-a), median of $((3 * RUNS)) loops in $RUNS interleaved rounds ($(uname -r), $(nproc) CPUs)"
    printf '%-12s %10s %14s\n' way loop "ns/call added"
    for w in "${ways[@]}"; do
        m=$(median <"$WORK/tax.$w")
        printf '%-12s %8sms %14s\n' "$w" "$m" "$(awk -v a="$m" -v b="$tb" 'BEGIN{printf "%+.1f", a-b}')"
    done
    echo "budget: sys_enter's tax / the empty program's = $(awk -v v="$tv" -v e="$te" -v b="$tb" 'BEGIN{ if (e - b <= 0) print "n/a (the empty program measured no tax)"; else printf "%.2f", (v-b)/(e-b) }') ≤ 1.5"
}
if [ "$ONLY" = --tax-only ]; then
    tax_part
    exit 0
fi
if [ "$ONLY" = --seccomp-only ]; then
    seccomp_part
    exit 0
fi
if [ "$ONLY" = --stacks-only ]; then
    stacks_part
    exit 0
fi

NAMES=(syscall-heavy vdso-only)
if [ "$ONLY" = --overhead-only ]; then
    ORDER=(bare vdsoctl-bpf bpf-stacks perf-stat)
    NAMES=(syscall-heavy)
    # BASE=/path/to/vdsoctl: that build's BPF engine in the same rounds.
    if [ -n "${BASE:-}" ]; then
        WAYS[base-bpf]="$BASE trace --engine bpf --"
        ORDER+=(base-bpf)
    fi
fi
echo "# trace overhead, median of $RUNS interleaved rounds ($(uname -r), $(nproc) CPUs; load $(cut -d' ' -f1-3 /proc/loadavg))"
printf '%-14s' workload; for w in "${ORDER[@]}"; do printf ' %13s' "$w"; done; echo
for name in "${NAMES[@]}"; do
    case $name in
        syscall-heavy) W=("$WORK/clock_loop" raw 1 1000000) ;;
        vdso-only) W=("$WORK/clock_loop" libc 1 50000000) ;;
    esac
    for w in "${ORDER[@]}"; do : >"$WORK/$name.$w"; done
    for _ in $(seq "$RUNS"); do
        for w in "${ORDER[@]}"; do run_way "$w" "${W[@]}" >>"$WORK/$name.$w"; done
    done
    printf '%-14s' "$name"
    b=$(median <"$WORK/$name.bare")
    for w in "${ORDER[@]}"; do m=$(median <"$WORK/$name.$w"); printf ' %7sms ×%s' "$m" "$(ratio "$m" "$b")"; done; echo
    eval "R_$(echo "$name" | tr - _)_bpf=$(ratio "$(median <"$WORK/$name.vdsoctl-bpf")" "$b")"
    eval "R_$(echo "$name" | tr - _)_perf=$(ratio "$(median <"$WORK/$name.perf-stat")" "$b")"
    if [ "$name" = syscall-heavy ]; then
        # --stacks: what the stack walk adds per syscall to the default trace (1,000,000 calls).
        echo "--stacks: $(awk -v s="$(median <"$WORK/$name.bpf-stacks")" -v d="$(median <"$WORK/$name.vdsoctl-bpf")" -v b="$b" \
            'BEGIN { printf "%.0f ns per syscall over the default trace (default trace %.0f ns over bare)", (s - d) * 1e6 / 1e6, (d - b) * 1e6 / 1e6 }')"
    fi
done

: >"$WORK/fix.v" >"$WORK/fix.p"
for _ in $(seq "$RUNS"); do
    wall_ms "$V" trace -- /bin/true >>"$WORK/fix.v"
    wall_ms perf stat -x, -o /dev/null -e "$PERF_EVENT" -- /bin/true >>"$WORK/fix.p"
done
fv=$(median <"$WORK/fix.v"); fp=$(median <"$WORK/fix.p")
echo "fixed cost (-- /bin/true, wall): vdsoctl ${fv}ms, perf stat ${fp}ms: ×$(ratio "$fv" "$fp") of perf stat"
if [ "$ONLY" = --overhead-only ]; then
    echo "budget: syscall-heavy vdsoctl(bpf) ×$R_syscall_heavy_bpf ≤ 1.05 × perf stat ×$R_syscall_heavy_perf ($(ratio "$R_syscall_heavy_bpf" "$R_syscall_heavy_perf")); load after $(cut -d' ' -f1-3 /proc/loadavg)"
    exit 0
fi

tax_part
echo "budgets: syscall-heavy vdsoctl(bpf) ×$R_syscall_heavy_bpf ≤ 1.10 × perf stat ×$R_syscall_heavy_perf ($(ratio "$R_syscall_heavy_bpf" "$R_syscall_heavy_perf")); vdso-only ×$R_vdso_only_bpf ≤ 1.05; fixed cost ×$(ratio "$fv" "$fp") ≤ 1.5"
echo
seccomp_part
echo
sites_part
