#!/usr/bin/env bash
# Wall time of `vdsoctl dump` (release build) on a live process and on a file,
# against the pipeline it replaces: dump the image with `-o`, then
# `objdump -T` it. Prints the median of each, many runs.
# Uses hyperfine when installed (-N: no shell between runs; the pipeline
# needs one, so it runs as `bash -c` and `bash -c true` is measured beside it
# as the shell's own share); otherwise a loop timed with `date +%s%N` around
# `bash -c` for every command (so every figure includes bash).
# Usage: scripts/bench-dump.sh [RUNS]   (NO_HYPERFINE=1 forces the date loop)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-300}
cargo build --release --quiet
bin=$PWD/target/release/vdsoctl
fixture=$PWD/fixtures/vdso/x86_64.so
sleep 600 & target=$!
tmp=$(mktemp -d)
trap 'kill $target 2>/dev/null; rm -rf "$tmp"' EXIT

cmds=(
  "$bin dump -p $target"
  "$bin --json dump -p $target"
  "$bin dump --file $fixture"
  "$bin dump -p $target -o $tmp/vdso.so >/dev/null && objdump -T $tmp/vdso.so"
  "objdump -T $fixture"
  "true"
)

if [[ -z ${NO_HYPERFINE:-} ]] && command -v hyperfine >/dev/null; then
  hcmds=()
  for c in "${cmds[@]}"; do
    case $c in
      *"&&"* | true) hcmds+=("bash -c '$c'") ;;
      *) hcmds+=("$c") ;;
    esac
  done
  hyperfine -N --warmup 20 --runs "$runs" --export-json "$tmp/h.json" "${hcmds[@]}" >/dev/null 2>"$tmp/warnings"
  python3 - "$tmp/h.json" "$tmp" <<'PY'
import json, sys
res = json.load(open(sys.argv[1]))["results"]
base = res[0]["median"]
print(f"{'command (hyperfine)':72} {'median':>9} {'min':>9} {'ratio':>6}")
for r in res:
    cmd = r["command"].replace(sys.argv[2], "$TMP")
    ratio = r["median"] / base if base > 0 else float("nan")
    print(f"{cmd[-72:]:72} {r['median']*1e3:7.2f}ms {r['min']*1e3:7.2f}ms {ratio:5.2f}x")
PY
else
  printf '%-72s %9s\n' "command (date loop, includes bash -c)" median
  for c in "${cmds[@]}"; do
    times=()
    for ((i = 0; i < runs; i++)); do
      t0=$(date +%s%N)
      bash -c "$c" >/dev/null
      t1=$(date +%s%N)
      times+=($((t1 - t0)))
    done
    median=$(printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {printf "%.2f", a[int((NR+1)/2)] / 1e6}')
    printf '%-72s %7sms\n' "${c//$tmp/\$TMP}" "$median"
  done
fi
