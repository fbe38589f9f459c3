#!/bin/sh
# The kernel matrix's suite, run inside each guest by its /init (busybox sh;
# scripts/kernel-matrix.sh builds the initramfs and boots the kernels).
#
#   guest-suite.sh cases ARCH        the cases this suite has for ARCH (x86_64,
#                                    aarch64): "trace CASE" lines, run once per
#                                    engine, and "- CASE" lines, run once
#   guest-suite.sh run ARCH PLAN     run each "ENGINE CASE" line of PLAN
#   guest-suite.sh accounted ARCH WANT GOT   the `accounted` outcome's test
#                                    of two sorted row files (see judge)
#
# It measures and says what it saw; the host compares that with
# scripts/kernel-matrix/expect. One line per case on the console:
#   MATRIX <engine> <case> <outcome> <seconds> <detail>
# Trace cases' outcomes: exact (exit 0, the engine asked for, lost 0 and
# exactly the rows below, no more and no fewer), exact-nocomm (the same but
# for the processes' names), accounted (exit 0, rows short of the expected
# only by what the report says it may be short by: no row over, none
# unexpected, and the shortfall at most its `lost`, which counts the runs
# the kernel skipped), inexact (ran, other rows), refused (exit 4: the
# engine is not available), usage (exit 2: the engine does not take the
# case's options), error (any other exit). The others: ok, or what differed
# (warn:CHECKS, fail:CHECKS, differs, error).
# Everything a case printed goes to the console between MATRIX-LOG lines, and
# the vDSO images dump read leave base64-encoded between MATRIX-IMAGE lines,
# for the host to compare with objdump -T.
#
# Workloads (static, in /bin): clock_loop and clock_loop32 are
# fixtures/clock_loop.c built for the guest's 64-bit and 32-bit ABIs,
# wait_ready and wait_ready32 fixtures/wait_ready.c, getrandom_loop and
# getrandom_loop32 fixtures/getrandom_loop.c; on x86_64 robust_unlock and
# robust_unlock32 fixtures/robust_unlock.c.

arch=$2
case $arch in
x86_64) abi64=x86_64 abi32=i386 ;;
aarch64) abi64=aarch64 abi32=arm ;;
# 64-bit only: Debian's riscv64, ppc64el and s390x have no 32-bit ABI.
riscv64) abi64=riscv64 abi32= ;;
ppc64le) abi64=ppc64 abi32= ;;
s390x) abi64=s390x abi32= ;;
*) echo "guest-suite: unknown arch '$arch'" >&2; exit 2 ;;
esac
# 100,000 raw calls take about half a second under TCG.
N=100000
# clock_loop times itself with two clock_gettime(MONOTONIC) through libc:
# syscalls too where the clocksource has no vDSO mode (x86_64 on hpet).
own=0
[ "$arch" = x86_64 ] && [ "$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null)" != tsc ] && own=2

trace_cases="raw64 raw32 tree pid all threads sites random"
host_cases="check check-cmd bench maps maps32 dump dump32"
# Without a 32-bit ABI: the cases of the 64-bit one (raw64, pid, threads).
if [ -z "$abi32" ]; then
	trace_cases="raw64 pid threads"
	host_cases="check check-cmd bench maps dump"
fi
[ "$arch" = x86_64 ] && trace_cases="$trace_cases vsyscall robust robust32 libc64"
[ "$arch" = x86_64 ] && host_cases="$host_cases vsyscall-mode"
[ "$arch" = aarch64 ] && host_cases="$host_cases unit"

now() { cut -d' ' -f1 /proc/uptime; }

# result ENGINE CASE OUTCOME T0 DETAIL..
result() {
	e=$1 c=$2 o=$3 t0=$4
	shift 4
	echo "MATRIX $e $c $o $(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }') $*"
}

# log_file TITLE FILE: a file's text on the console, fenced.
log_file() {
	echo "MATRIX-LOG begin $1"
	cat "$2"
	echo "MATRIX-LOG end $1"
}

# wait_for FILE TEXT SECONDS: until FILE holds TEXT (0), or not in time (1).
wait_for() {
	i=0
	while [ $i -lt $(($3 * 20)) ]; do
		grep -q "$2" "$1" 2>/dev/null && return 0
		usleep 50000
		i=$((i + 1))
	done
	return 1
}

# rows JSON [PID]: trace --json's report as sorted lines: "engine E",
# "lost N", "unfollowed N", and per row "row COMM ABI SYSCALL CLOCK COUNT
# [thread]", "vsyscall COMM FUNCTION COUNT", "unattributed COMM COUNT" (only
# PID's rows when given; a getrandom row's CLOCK is its kind and whether it
# is expected: "served:bypass"). Pretty-printed JSON: top-level keys at 2 spaces,
# a row's fields at 6.
rows() {
	awk -v want="$2" '
		/^  "[a-z_]+": / {
			k = $1; gsub(/[":]/, "", k); sect = k
			v = $2; sub(/,$/, "", v); gsub(/"/, "", v)
			if (k == "engine" || k == "lost" || k == "unfollowed") print k, v
			next
		}
		sect ~ /^(counts|vsyscall_emulations|unattributed)$/ && /^      "[a-z_]+": / {
			k = $1; gsub(/[":]/, "", k)
			v = $0; sub(/^ *"[a-z_]+": */, "", v); sub(/,$/, "", v); gsub(/"/, "", v)
			f[k] = v
			next
		}
		sect ~ /^(counts|vsyscall_emulations|unattributed)$/ && /^    }/ {
			if (want == "" || f["pid"] == want) {
				if (sect == "counts" && f["syscall"] == "getrandom")
					print "row", f["comm"], f["abi"], f["syscall"], f["random"] (f["expected"] == "true" ? ":expected" : ":bypass"), f["count"], (f["tid"] == "null" ? "" : "thread")
				else if (sect == "counts")
					print "row", f["comm"], f["abi"], f["syscall"], f["clock"], f["count"], (f["tid"] == "null" ? "" : "thread")
				else if (sect == "vsyscall_emulations")
					print "vsyscall", f["comm"], f["function"], f["count"]
				else
					print "unattributed", f["comm"], f["count"]
			}
			for (k in f) delete f[k]
		}
	' "$1" | sed 's/ *$//' | sort
}

# nocomm FILE: rows with the process names left out, sorted.
nocomm() {
	awk '$1 == "row" || $1 == "vsyscall" || $1 == "unattributed" { $2 = "-" } { print }' "$1" | sort
}

# accounted WANT GOT: the shortfall of GOT's rows against WANT's when it is
# no more than GOT's `lost` (no row over, none WANT lacks, as many rows or
# fewer of each, the engine and unfollowed as wanted); fails otherwise. A
# row's count is its last numeric field, made a number (busybox awk
# compares a returned field as a string).
accounted() {
	awk '
		function count(   i, c) {
			for (i = NF; i > 1; i--) if ($i ~ /^[0-9]+$/) { c = $i + 0; $i = "#"; return c }
			return -1
		}
		$1 == "engine" || $1 == "unfollowed" { v[FILENAME == want ? "w" $1 : "g" $1] = $2; next }
		$1 == "lost" { if (FILENAME != want) lost = $2 + 0; next }
		FILENAME == want { c = count(); ws[$0] += c; wn[$0]++; wmax[$0] = c; next }
		{ c = count(); if (!($0 in wmax) || c > wmax[$0]) bad = 1; gs[$0] += c; gn[$0]++ }
		END {
			if (v["wengine"] != v["gengine"] || v["gunfollowed"] != 0) bad = 1
			for (k in gn) if (gn[k] > wn[k]) bad = 1
			for (k in ws) short += ws[k] - gs[k]
			if (bad || short > lost) exit 1
			print short, lost
		}
	' want="$1" "$1" "$2"
}

# judge ENGINE CASE T0 RC PID: compare the trace in /tmp/out.json (only
# PID's rows when PID is given) with the rows in /tmp/want, print the result.
judge() {
	e=$1 c=$2 t0=$3 rc=$4
	{ echo "engine $e"; echo "lost 0"; echo "unfollowed 0"; cat /tmp/want; } | sort >/tmp/want.sorted
	rows /tmp/out.json "$5" >/tmp/got
	if [ "$rc" = 4 ]; then
		log_file "$e $c stderr" /tmp/err
		# A verifier's refusal names its whole log: its tail to the console.
		vlog=$(grep -o '/tmp/vdsoctl-verifier-[^ ]*\.log' /tmp/err | head -n 1)
		[ -n "$vlog" ] && tail -n 40 "$vlog" >/tmp/vlog && log_file "$e $c verifier" /tmp/vlog
		result "$e" "$c" refused "$t0" "exit 4: $(tail -n 1 /tmp/err)"
	elif [ "$rc" = 2 ]; then
		result "$e" "$c" usage "$t0" "exit 2: $(grep -m1 . /tmp/err)"
	elif [ "$rc" != 0 ]; then
		log_file "$e $c stderr" /tmp/err
		result "$e" "$c" error "$t0" "exit $rc: $(tail -n 1 /tmp/err)"
	elif cmp -s /tmp/want.sorted /tmp/got; then
		result "$e" "$c" exact "$t0" "$(grep -c '^row\|^vsyscall' /tmp/want) rows as expected"
	elif [ "$(nocomm /tmp/want.sorted)" = "$(nocomm /tmp/got)" ]; then
		log_file "$e $c rows" /tmp/got
		result "$e" "$c" exact-nocomm "$t0" "$(grep -c '^row\|^vsyscall' /tmp/want) rows as expected but for the names: $(awk '$1 == "row" { print $2 }' /tmp/got | sort -u | tr '\n' ' ')"
	elif short=$(accounted /tmp/want.sorted /tmp/got); then
		log_file "$e $c rows" /tmp/got
		set -- $short
		result "$e" "$c" accounted "$t0" "short by $1 calls, within the $2 the report says may be missing (lost: program runs the kernel skipped)"
	else
		log_file "$e $c report" /tmp/out.json
		diff /tmp/want.sorted /tmp/got >/tmp/diff
		log_file "$e $c want-got" /tmp/diff
		result "$e" "$c" inexact "$t0" "$(grep '^[-+][a-z]' /tmp/diff | tr '\n' ';' | cut -c1-300)"
	fi
}

# trace_cmd ENGINE CASE [trace options] -- CMD..: trace a command, judge it.
trace_cmd() {
	e=$1 c=$2
	shift 2
	t0=$(now)
	rm -f /tmp/out.json /tmp/err
	timeout 300 vdsoctl --json trace --engine "$e" "$@" >/tmp/out.json 2>/tmp/err
	judge "$e" "$c" "$t0" $?
}

# trace_target ENGINE CASE MODE WORKLOAD ARGS..: start WORKLOAD ARGS.. wait,
# trace it with -p PID (MODE pid: ends when it is killed) or -a (MODE all:
# ends on SIGINT), let it run, and judge its rows.
trace_target() {
	e=$1 c=$2 mode=$3
	shift 3
	t0=$(now)
	: >/tmp/wl.out
	"$@" wait >/tmp/wl.out 2>/dev/null &
	wl=$!
	if ! wait_for /tmp/wl.out ready 30; then
		kill -KILL $wl 2>/dev/null
		result "$e" "$c" error "$t0" "the workload never said ready"
		return
	fi
	# A fresh stderr: the "tracing" line below must be this trace's.
	rm -f /tmp/out.json /tmp/err
	if [ "$mode" = pid ]; then
		timeout 300 vdsoctl --json trace --engine "$e" -p "$wl" -d 300s >/tmp/out.json 2>/tmp/err &
	else
		timeout 300 vdsoctl --json trace --engine "$e" -a -d 300s >/tmp/out.json 2>/tmp/err &
	fi
	tr=$!
	# "tracing ..." is said once the engine is attached.
	i=0
	while ! grep -q '^vdsoctl: tracing' /tmp/err && kill -0 $tr 2>/dev/null && [ $i -lt 600 ]; do
		usleep 50000
		i=$((i + 1))
	done
	# Not armed: a trace that ended is judged by its exit (refused,
	# usage); one still running after 30 s is an error, not "inexact".
	if ! grep -q '^vdsoctl: tracing' /tmp/err; then
		if kill -0 $tr 2>/dev/null; then
			kill -KILL $wl $tr 2>/dev/null
			wait $tr 2>/dev/null
			log_file "$e $c stderr" /tmp/err
			result "$e" "$c" error "$t0" "the trace did not say it was tracing within 30 s"
			return
		fi
		wait $tr
		rc=$?
		kill -KILL $wl 2>/dev/null
		wait $wl 2>/dev/null
		judge "$e" "$c" "$t0" $rc "$wl"
		return
	fi
	kill -USR1 $wl
	if ! wait_for /tmp/wl.out done 120; then
		kill -KILL $wl $tr 2>/dev/null
		wait $tr 2>/dev/null
		result "$e" "$c" error "$t0" "the workload never said done"
		return
	fi
	if [ "$mode" = pid ]; then
		kill -KILL $wl
	else
		kill -INT $tr 2>/dev/null
	fi
	wait $tr
	rc=$?
	kill -KILL $wl 2>/dev/null
	wait $wl 2>/dev/null
	judge "$e" "$c" "$t0" $rc "$wl"
}

# want LINES..: the rows a case must give, one argument a line.
want() {
	: >/tmp/want
	for l in "$@"; do echo "$l" >>/tmp/want; done
}

run_trace_case() {
	e=$1
	case $2 in
	raw64)
		want "row clock_loop $abi64 clock_gettime CLOCK_MONOTONIC $((N + own))"
		trace_cmd "$e" raw64 -- clock_loop raw 1 $N
		;;
	raw32)
		want "row clock_loop32 $abi32 clock_gettime CLOCK_MONOTONIC $N"
		trace_cmd "$e" raw32 -- clock_loop32 raw 1 $N
		;;
	tree)
		# A shell's children and a grandchild, both ABIs, every clock
		# function the arch has as a syscall (x86_64 and i386 have time
		# too): each process is its own row.
		want "row clock_loop $abi64 clock_gettime CLOCK_TAI 20000" \
			"row clock_loop32 $abi32 clock_gettime CLOCK_MONOTONIC_RAW 10000" \
			"row clock_loop $abi64 gettimeofday null 5000" \
			"row clock_loop $abi64 clock_getres CLOCK_MONOTONIC 3000" \
			"row clock_loop $abi64 getcpu null 700" \
			"row clock_loop32 $abi32 gettimeofday null 2000" \
			"row clock_loop32 $abi32 clock_gettime64 CLOCK_BOOTTIME 4000" \
			"row clock_loop32 $abi32 clock_getres_time64 CLOCK_REALTIME 1000" \
			"row clock_loop32 $abi32 getcpu null 900"
		time_calls=""
		if [ "$arch" = x86_64 ]; then
			echo "row clock_loop $abi64 time null 600" >>/tmp/want
			echo "row clock_loop32 $abi32 time null 800" >>/tmp/want
			time_calls="clock_loop time 0 600; clock_loop32 time 0 800"
		fi
		trace_cmd "$e" tree -- sh -c "exec >/dev/null 2>&1
			clock_loop raw 11 20000
			clock_loop32 raw 4 10000
			clock_loop gtod 0 5000
			sh -c 'clock_loop getres 1 3000; clock_loop32 gtod 0 2000; clock_loop32 raw64 7 4000; clock_loop32 getres64 0 1000'
			clock_loop getcpu 0 700; clock_loop32 getcpu 0 900; $time_calls"
		;;
	pid)
		# Two threads of a process that was running before the trace.
		want "row clock_loop $abi64 clock_gettime CLOCK_MONOTONIC 40000"
		trace_target "$e" pid pid clock_loop raw 1 20000 2
		;;
	all)
		want "row clock_loop32 $abi32 clock_gettime CLOCK_MONOTONIC 20000"
		trace_target "$e" all all clock_loop32 raw 1 20000 1
		;;
	threads)
		want "row clock_loop $abi64 clock_gettime CLOCK_REALTIME 10000 thread" \
			"row clock_loop $abi64 clock_gettime CLOCK_REALTIME 10000 thread" \
			"row clock_loop $abi64 clock_gettime CLOCK_REALTIME 10000 thread" \
			"row clock_loop $abi64 clock_gettime CLOCK_REALTIME 10000 thread"
		trace_cmd "$e" threads --per-thread -- clock_loop raw 0 10000 4
		;;
	vsyscall)
		# Booted with vsyscall=xonly (Debian's default is none).
		want "vsyscall clock_loop time 10000"
		trace_cmd "$e" vsyscall -- clock_loop vsyscall 0 10000
		;;
	robust | robust32)
		# The robust-futex unlock's fallback (Linux 7.2): futex calls with
		# FUTEX_ROBUST_UNLOCK in the op, list64 and list32, each its row;
		# the FUTEX_WAKE_PRIVATE calls beside them in none. Before 7.2 the
		# calls fail (ENOSYS) and are counted all the same.
		p=robust_unlock abi=$abi64
		[ "$2" = robust ] || p=robust_unlock32 abi=$abi32
		want "row $p $abi futex_robust_list64_try_unlock null 30000" \
			"row $p $abi futex_robust_list32_try_unlock null 20000"
		trace_cmd "$e" "$2" -- sh -c "exec >/dev/null 2>&1; $p 30000 20000 10000"
		;;
	libc64)
		# clock_gettime through the C library: no syscall where the
		# clocksource has a vDSO mode (tsc), every call one where it has
		# none (hpet: the vDSO's own fallback, counted all the same).
		: >/tmp/want
		cs=$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)
		[ "$cs" = tsc ] || want "row clock_loop $abi64 clock_gettime CLOCK_MONOTONIC $((N + own))"
		trace_cmd "$e" libc64 -- clock_loop libc 1 $N
		;;
	sites)
		# --sites (issue 21; x86_64's registers: elsewhere exit 2): a row's
		# count is the sum of its site rows. A site whose stack word is data (read
		# until judged, then not), a leaf (syscall(): read every call) and
		# a 32-bit task (always read).
		want "row clock_loop $abi64 clock_gettime CLOCK_MONOTONIC $N" \
			"row clock_loop $abi64 clock_gettime CLOCK_REALTIME $N" \
			"row clock_loop32 $abi32 clock_gettime CLOCK_MONOTONIC 20000"
		trace_cmd "$e" sites --sites -- sh -c "exec >/dev/null 2>&1
			clock_loop inline 1 $N
			clock_loop raw 0 $N
			clock_loop32 raw 1 20000"
		;;
	random)
		# getrandom (static glibc 2.36: a syscall every call, and malloc's
		# start-up key): served calls are a bypass where the kernel's vDSO
		# has getrandom (x86_64 >= 6.11, arm64 >= 6.12) and expected
		# before; 32-bit ones always (no compat vDSO has it).
		served=expected
		rel=$(uname -r)
		major=${rel%%.*}
		rest=${rel#*.}
		minor=${rest%%[.-]*}
		since=11
		[ "$arch" = aarch64 ] && since=12
		if [ "$major" -gt 6 ] || { [ "$major" = 6 ] && [ "$minor" -ge $since ]; }; then
			served=bypass
		fi
		# (malloc's start-up keys are summed in startup_keys, no rows; the
		# kernel keeps 15 bytes of a name: getrandom_loop3.)
		want "row getrandom_loop $abi64 getrandom served:$served 20000" \
			"row getrandom_loop3 $abi32 getrandom served:expected 10000"
		trace_cmd "$e" random -- sh -c "exec >/dev/null 2>&1
			getrandom_loop libc 20000
			getrandom_loop32 libc 10000"
		;;
	*) result "$e" "$2" error "$(now)" "no such case" ;;
	esac
}

# check: the host audit, its table on the console. ok: exit 0 and no WARN
# row; warn:CHECKS: exit 0, these rows WARN (comma-separated, as named in
# the CHECK column); fail:CHECKS: exit 1, these rows FAIL.
# rows_with STATUS: the check rows with STATUS, comma-separated.
rows_with() {
	awk -v s="$1" '$2 == s && $1 ~ /^[a-z_:A-Z0-9]+$/ && $1 !~ /:$/ { printf "%s%s", (n++ ? "," : ""), $1 }' /tmp/check.txt
}

case_check() {
	t0=$(now)
	timeout 300 vdsoctl check >/tmp/check.txt 2>&1
	rc=$?
	log_file check /tmp/check.txt
	warns=$(rows_with WARN)
	if [ $rc = 1 ]; then
		result - check "fail:$(rows_with FAIL)" "$t0" "$(awk '$2 == "FAIL" { print; exit }' /tmp/check.txt | tr -s ' ')"
	elif [ $rc != 0 ]; then
		result - check error "$t0" "exit $rc"
	elif [ -n "$warns" ]; then
		result - check "warn:$warns" "$t0" "$(awk '$2 == "WARN" { print; exit }' /tmp/check.txt | tr -s ' ')"
	else
		result - check ok "$t0" "$(grep '^verdict' /tmp/check.txt)"
	fi
}

# check-cmd: check -- CMD fails a raw CLOCK_MONOTONIC loop (exit 1) and
# passes one through the vDSO (exit 0), with whichever engine auto picks.
case_check_cmd() {
	t0=$(now)
	timeout 300 vdsoctl check -- clock_loop raw 1 1000 >/tmp/cc-raw.txt 2>&1
	raw=$?
	timeout 300 vdsoctl check -- clock_loop libc 1 1000 >/tmp/cc-libc.txt 2>&1
	libc=$?
	if [ $raw = 1 ] && [ $libc = 0 ]; then
		result - check-cmd ok "$t0" "raw loop exit 1, vDSO loop exit 0"
	else
		log_file "check -- raw" /tmp/cc-raw.txt
		log_file "check -- libc" /tmp/cc-libc.txt
		result - check-cmd differs "$t0" "raw loop exit $raw (want 1), vDSO loop exit $libc (want 0)"
	fi
}

# bench: the clocks every vDSO serves are fast, with 0 syscalls/call
# counted through libc (perf counts them as root).
case_bench() {
	t0=$(now)
	timeout 300 vdsoctl bench --quick >/tmp/bench.txt 2>&1
	rc=$?
	log_file bench /tmp/bench.txt
	bad=""
	for f in "clock_gettime +REALTIME " "clock_gettime +MONOTONIC " "gettimeofday +- "; do
		grep -Eq "^$f.* fast; .*syscalls/call: libc 0," /tmp/bench.txt || bad="$bad$(echo "$f" | tr -d '+ ')"
	done
	if [ $rc != 0 ]; then
		result - bench error "$t0" "exit $rc"
	elif [ -n "$bad" ]; then
		result - bench differs "$t0" "not fast with 0 syscalls counted: $bad"
	else
		result - bench ok "$t0" "REALTIME, MONOTONIC, gettimeofday fast, 0 syscalls/call counted"
	fi
}

# start_waiter PROG: a process that waits, in $wl.
start_waiter() {
	: >/tmp/wl.out
	"$1" >/tmp/wl.out 2>/dev/null &
	wl=$!
	wait_for /tmp/wl.out ready 30
}

stop_waiter() {
	kill -KILL $wl
	wait $wl 2>/dev/null
}

# maps CASE PROG: vdsoctl maps -p of PROG's process lists its special
# mappings ([name]) as /proc/PID/maps has them.
case_maps() {
	t0=$(now)
	start_waiter "$2"
	grep '\[' /proc/$wl/maps | awk '{ split($1, r, "-"); print $NF, r[1], r[2], $2 }' | sort >/tmp/maps.want
	timeout 60 vdsoctl --json maps -p $wl >/tmp/maps.json 2>/tmp/err
	rc=$?
	stop_waiter
	awk '
		/"mappings": \[/ { in_m = 1; next }
		in_m && /^  \]/ { in_m = 0 }
		in_m && /"(name|start|end|perms)":/ { v = $2; gsub(/[",]/, "", v); sub(/^0x/, "", v); f[$1] = v }
		in_m && /^    }/ { print f["\"name\":"], f["\"start\":"], f["\"end\":"], f["\"perms\":"] }
	' /tmp/maps.json | grep '^\[' | sort >/tmp/maps.got
	# /proc pads addresses to 8 digits or more; vdsoctl prints them bare.
	sed -i 's/ 0*\([0-9a-f]\)/ \1/g' /tmp/maps.want /tmp/maps.got
	if [ $rc != 0 ]; then
		result - "$1" error "$t0" "exit $rc: $(tail -n 1 /tmp/err)"
	elif cmp -s /tmp/maps.want /tmp/maps.got; then
		result - "$1" ok "$t0" "$(tr '\n' ' ' </tmp/maps.got | sed 's/ \[/; [/g')"
	else
		log_file "$1 /proc/PID/maps" /tmp/maps.want
		log_file "$1 vdsoctl maps" /tmp/maps.got
		result - "$1" differs "$t0" "vdsoctl maps differs from /proc/PID/maps"
	fi
}

# dump CASE PROG: vdsoctl dump -p -o writes PROG's [vdso] byte for byte as
# dd reads it from /proc/PID/mem; the image and dump's symbols go to the
# console for the host's objdump -T.
case_dump() {
	t0=$(now)
	start_waiter "$2"
	range=$(awk '$NF == "[vdso]" { print $1 }' /proc/$wl/maps)
	start=$(printf '%d' "0x${range%-*}")
	end=$(printf '%d' "0x${range#*-}")
	dd if=/proc/$wl/mem of=/tmp/ref.so bs=4096 skip=$((start / 4096)) count=$(((end - start) / 4096)) 2>/dev/null
	rm -f /tmp/dump.so
	timeout 60 vdsoctl --json dump -p $wl -o /tmp/dump.so >/tmp/dump.json 2>/tmp/err
	rc=$?
	stop_waiter
	awk '
		/"symbols": \[/ { in_s = 1; next }
		in_s && /^  \]/ { in_s = 0 }
		in_s && /"(name|version)":/ { v = $2; gsub(/[",]/, "", v); f[$1] = v }
		in_s && /^    }/ { print f["\"name\":"], f["\"version\":"] }
	' /tmp/dump.json | sort >/tmp/syms
	echo "MATRIX-IMAGE begin $1"
	base64 /tmp/dump.so
	echo "MATRIX-IMAGE end $1"
	log_file "$1 symbols" /tmp/syms
	if [ $rc != 0 ]; then
		result - "$1" error "$t0" "exit $rc: $(tail -n 1 /tmp/err)"
	elif ! cmp -s /tmp/ref.so /tmp/dump.so; then
		result - "$1" differs "$t0" "dump -o differs from /proc/PID/mem ($(wc -c </tmp/dump.so) vs $(wc -c </tmp/ref.so) bytes)"
	else
		result - "$1" ok "$t0" "$(wc -c </tmp/dump.so) bytes as in /proc/PID/mem, $(wc -l </tmp/syms) symbols"
	fi
}

# unit (aarch64): the library's unit tests, cross-built (scripts/
# kernel-matrix.sh), as root on this kernel: among them the ones that only
# an arm64 kernel answers (its BTF's syscall entry, its vDSO's names, the
# BPF verifier's refusal). Without CI: there is no gcc here, so the tests
# that build C skip, as they do on any host without it. ok: exit 0;
# fail:TESTS: the tests that failed.
case_unit() {
	t0=$(now)
	# serve's tests listen on 127.0.0.1: the loopback is down at boot.
	ip link set lo up
	timeout 600 env -u CI unit-tests --test-threads 1 >/tmp/unit.txt 2>&1
	rc=$?
	summary=$(grep -m1 '^test result' /tmp/unit.txt)
	if [ $rc = 0 ]; then
		result - unit ok "$t0" "$summary"
	else
		log_file unit /tmp/unit.txt
		failed=$(awk '/^test .* FAILED$/ { printf "%s%s", (n++ ? "," : ""), $2 }' /tmp/unit.txt)
		result - unit "fail:${failed:-exit$rc}" "$t0" "${summary:-exit $rc}"
	fi
}

# vsyscall-mode: the mode `maps` reads (from the [vsyscall] mapping or the
# command line): mode:xonly, mode:emulate, mode:none, each as booted.
case_vsyscall_mode() {
	t0=$(now)
	timeout 60 vdsoctl --json maps >/tmp/vs.json 2>/tmp/err
	rc=$?
	mode=$(awk '/"vsyscall": \{/ { on = 1 } on && /"mode":/ { v = $2; gsub(/[",]/, "", v); print v; exit }' /tmp/vs.json)
	have=absent
	grep -q '\[vsyscall\]' /proc/self/maps && have=mapped
	if [ $rc != 0 ]; then
		result - vsyscall-mode error "$t0" "exit $rc: $(tail -n 1 /tmp/err)"
	else
		result - vsyscall-mode "mode:${mode:-null}" "$t0" "[vsyscall] $have; cmdline: $(tr ' ' '\n' </proc/cmdline | grep '^vsyscall=' | tr '\n' ' ')"
	fi
}

run_host_case() {
	case $1 in
	vsyscall-mode) case_vsyscall_mode ;;
	check) case_check ;;
	check-cmd) case_check_cmd ;;
	bench) case_bench ;;
	maps) case_maps maps wait_ready ;;
	maps32) case_maps maps32 wait_ready32 ;;
	dump) case_dump dump wait_ready ;;
	dump32) case_dump dump32 wait_ready32 ;;
	unit) case_unit ;;
	*) result - "$1" error "$(now)" "no such case" ;;
	esac
}

case $1 in
cases)
	for c in $trace_cases; do echo "trace $c"; done
	for c in $host_cases; do echo "- $c"; done
	;;
accounted)
	# The judge's accounting alone (tests/cli/matrix.rs): WANT GOT as rows
	# prints: the shortfall and the lost, or fails.
	accounted "$3" "$4"
	;;
run)
	export NO_COLOR=1 COLUMNS=0
	while read -r engine name; do
		case $engine in
		'' | '#'*) continue ;;
		-) run_host_case "$name" </dev/null ;;
		*) run_trace_case "$engine" "$name" </dev/null ;;
		esac
	done <"$3"
	;;
*)
	echo "usage: guest-suite.sh cases|run|accounted ARCH [PLAN | WANT GOT]" >&2
	exit 2
	;;
esac
