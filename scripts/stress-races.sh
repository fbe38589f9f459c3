#!/usr/bin/env bash
# Races, counted: `maps`, `auxv` and `dump` against a process that execs a
# 64-bit and a 32-bit build of fixtures/exec_flip.c in turn as fast as it
# can, and `check --image` over a tree whose names flip between an ELF file,
# a FIFO and a link to a FIFO. Prints, per command, how many runs exited
# 0 (ok), 1 (FAIL: a false one), 3 saying the process exec'd while being
# read (raced), 3 for another reason (other3), or hung (HUNG: killed). PEER=/path/to/older/vdsoctl
# runs the same loops with that binary too, interleaved run by run, for a
# before/after in one go.
# Usage: scripts/stress-races.sh [RUNS]   (needs gcc-multilib; run as root
# or as the owner of the processes, like the commands themselves).
# TIMEOUT=S changes the 20 s after which a run counts as hung.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-300}
cargo build --release --quiet
bins=("$PWD/target/release/vdsoctl")
labels=(this)
if [ -n "${PEER:-}" ]; then bins+=("$PEER"); labels+=(peer); fi
limit=${TIMEOUT:-20}
work=$(mktemp -d)
flip=
swapper=
cleanup() {
  for p in $flip $swapper; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
gcc -O2 -o "$work/exec_flip" fixtures/exec_flip.c
gcc -O2 -m32 -o "$work/exec_flip-m32" fixtures/exec_flip.c
"$work/exec_flip" "$work/exec_flip-m32" "$work/exec_flip" >/dev/null &
flip=$!
sleep 0.2

# tally BIN ARGS...: one run, its outcome as a word.
tally() {
  local rc=0 err
  err=$(timeout -s KILL "$limit" "$@" 2>&1 >/dev/null) || rc=$?
  case $rc in
    0) echo ok ;;
    1) echo FAIL ;;
    3) if [[ $err == *"exec'd while being read"* ]]; then echo raced; else echo "other3"; fi ;;
    137) echo HUNG ;;
    *) echo "rc$rc" ;;
  esac
}

report() { # LABEL FILE
  printf '%-44s %s\n' "$1" "$(sort "$2" | uniq -c | awk '{printf "%s=%s ", $2, $1}')"
}

for cmd in maps auxv dump; do
  for b in "${!bins[@]}"; do : >"$work/$cmd.$b"; done
  start=$(date +%s%N)
  for _ in $(seq "$runs"); do
    for b in "${!bins[@]}"; do tally "${bins[$b]}" "$cmd" -p "$flip" >>"$work/$cmd.$b"; done
  done
  for b in "${!bins[@]}"; do report "$cmd -p PID (exec race), ${labels[$b]}" "$work/$cmd.$b"; done
  echo "  ($(( ($(date +%s%N) - start) / 1000000 )) ms for $runs × ${#bins[@]} runs)"
done
kill "$flip"; wait "$flip" 2>/dev/null || true; flip=

# The FIFO swap: four names flip between a hard link to an ELF file, a FIFO
# and a symlink to a FIFO, renamed over atomically, as fast as C can.
mkdir -p "$work/root/usr/bin" "$work/spare"
cp "$work/exec_flip" "$work/spare/elf"
cp "$work/exec_flip" "$work/root/usr/bin/steady"
mkfifo "$work/spare/fifo"
cat >"$work/swapper.c" <<'C'
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>
int main(int argc, char **argv)
{
	char tmp[4096], name[4096];
	for (unsigned long i = 0;; i++)
		for (int n = 0; n < 4; n++) {
			snprintf(tmp, sizeof tmp, "%s/tmp%d", argv[1], n);
			snprintf(name, sizeof name, "%s/swap%d", argv[2], n);
			unlink(tmp);
			if (i % 3 == 0)
				link(argv[3], tmp);
			else if (i % 3 == 1)
				mkfifo(tmp, 0600);
			else
				symlink(argv[4], tmp);
			rename(tmp, name);
		}
}
C
gcc -O2 -o "$work/swapper" "$work/swapper.c"
"$work/swapper" "$work/spare" "$work/root/usr/bin" "$work/spare/elf" "$work/spare/fifo" &
swapper=$!
for b in "${!bins[@]}"; do : >"$work/image.$b"; done
for _ in $(seq "$runs"); do
  for b in "${!bins[@]}"; do tally "${bins[$b]}" check --image "$work/root" >>"$work/image.$b"; done
done
for b in "${!bins[@]}"; do report "check --image (FIFO swap), ${labels[$b]}" "$work/image.$b"; done
