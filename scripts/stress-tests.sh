#!/usr/bin/env bash
# Run the whole suite N times in a fresh clone of this repository's HEAD,
# as CI does (CI=true), optionally beside a background process making raw
# clock_gettime syscalls non-stop (--busy). One line per run; exits 1 if any
# run failed. Needs what .ci/run installs.
#   scripts/stress-tests.sh N [--busy]
set -euo pipefail
N=${1:?usage: scripts/stress-tests.sh N [--busy]}
BUSY=${2:-}
REPO=${STRESS_REPO:-$(cd "$(dirname "$0")/.." && pwd)}
WORK=$(mktemp -d)
# Tests run vdsoctl and fixtures as `nobody`: the tree must be traversable.
chmod 755 "$WORK"
LOGS=${STRESS_LOGS:-/tmp/stress-logs}
mkdir -p "$LOGS"
BUSY_PID=
cleanup() { [ -n "$BUSY_PID" ] && kill "$BUSY_PID" 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT
git clone -q "$REPO" "$WORK/vdsoctl"
# shared/ beside the clone, as CI has it (DESIGN.md and friends)
[ -d "$REPO/../shared" ] && ln -s "$REPO/../shared" "$WORK/shared"
cd "$WORK/vdsoctl"
export CARGO_TARGET_DIR="$WORK/target"
if [ "$BUSY" = --busy ]; then
    gcc -O2 -pthread -o "$WORK/busy" fixtures/clock_loop.c
    "$WORK/busy" raw 1 100000000000 >/dev/null 2>&1 &
    BUSY_PID=$!
fi
# The foreign roots .ci/run makes before the tests, once for every run.
scripts/foreign-roots.sh "$WORK/vdsoctl/target/foreign-roots" >"$LOGS/foreign-roots.log" 2>&1 ||
    { echo "scripts/foreign-roots.sh failed (log: $LOGS/foreign-roots.log)" >&2; exit 1; }
# trixie's glibc 2.41 and Go 1.24, as .ci/run fetches them (tests/cli/getrandom.rs).
scripts/trixie-root.sh "$WORK/vdsoctl/target/trixie" >"$LOGS/trixie-root.log" 2>&1 ||
    { echo "scripts/trixie-root.sh failed (log: $LOGS/trixie-root.log)" >&2; exit 1; }
scripts/sid-root.sh "$WORK/vdsoctl/target/sid" >"$LOGS/sid-root.log" 2>&1 ||
    { echo "scripts/sid-root.sh failed (log: $LOGS/sid-root.log)" >&2; exit 1; }
# .NET's System.Native.so (tests/cli/runtimes.rs), as .ci/run fetches it.
scripts/dotnet-native.sh "$WORK/vdsoctl/target/dotnet" >"$LOGS/dotnet-native.log" 2>&1 ||
    { echo "scripts/dotnet-native.sh failed (log: $LOGS/dotnet-native.log)" >&2; exit 1; }
# The bookworm image root of the gate tests (tests/cli/gate.rs).
scripts/bookworm-root.sh "$WORK/vdsoctl/target/bookworm" >"$LOGS/bookworm-root.log" 2>&1 ||
    { echo "scripts/bookworm-root.sh failed (log: $LOGS/bookworm-root.log)" >&2; exit 1; }
start=$(date +%s)
cargo test --no-run -q >/dev/null 2>&1
# The static binaries .ci/run (and its kernel matrix) builds before the
# tests, where the suite looks for them: the target directory it is built
# in (the deploy and multi-arch image tests).
host=$(rustc -vV | sed -n 's/^host: //p')
RUSTFLAGS='-C target-feature=+crt-static' cargo build -q --release --target "$host" >"$LOGS/static-build.log" 2>&1 ||
    { echo "the static build failed (log: $LOGS/static-build.log)" >&2; exit 1; }
if [ "$host" = x86_64-unknown-linux-gnu ]; then
    CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=clang \
        RUSTFLAGS='-C target-feature=+crt-static -C link-arg=--target=aarch64-linux-gnu' \
        cargo build -q --release --target aarch64-unknown-linux-gnu >>"$LOGS/static-build.log" 2>&1 ||
        { echo "the aarch64 static build failed (log: $LOGS/static-build.log)" >&2; exit 1; }
fi
echo "build from clean: $(( $(date +%s) - start ))s${BUSY:+ (beside a raw clock loop)}"
failed=0
for i in $(seq "$N"); do
    t0=$(date +%s)
    if CI=true cargo test -q >"$WORK/run.log" 2>&1; then status=green; else status=RED; failed=$((failed + 1)); fi
    summary=$(grep -E '^test result:' "$WORK/run.log" | awk '{p += $4; f += $6} END {printf "%d passed, %d failed", p, f}')
    echo "run $i/$N: $status in $(( $(date +%s) - t0 ))s — $summary${BUSY:+ (busy)}"
    if [ "$status" = RED ]; then
        cp "$WORK/run.log" "$LOGS/run-$i.log"
        grep -E '^    [a-z_:]+$|panicked' "$WORK/run.log" | head -20 | sed 's/^/    /'
        echo "    (whole log: $LOGS/run-$i.log)"
    fi
done
[ "$failed" -eq 0 ]
