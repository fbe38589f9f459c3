#!/usr/bin/env bash
# Foreign image roots from Debian's own packages, for check --image's
# foreign-architecture test (tests/cli/check/image.rs, foreign_roots_*):
#   DEST/arm64  libc6:arm64 and busybox-static:arm64 unpacked, plus
#               /usr/local/bin/hello_go      fixtures/go/hello, GOARCH=arm64 CGO_ENABLED=0
#               /usr/local/bin/raw_libc      fixtures/call_sites.c -DRAW_LIBC: syscall(SYS_clock_gettime,
#                                            CLOCK_MONOTONIC, &ts) in main (bl syscall through the PLT)
#               /usr/local/bin/raw_libc_static  the same, -static (bl syscall, direct)
#               /usr/local/bin/svc_static    fixtures/call_sites.c -DASM -static: inline `svc #0` in read_clock
#   DEST/armhf  libc6:armhf and busybox-static:armhf unpacked
# Needs root (dpkg --add-architecture, apt-get update), apt, dpkg-deb, go and
# an arm64 C compiler: aarch64-linux-gnu-gcc when installed, else clang
# --target=aarch64-linux-gnu with Debian's arm64 cross libraries
# (libc6-dev-arm64-cross, libgcc-12-dev-arm64-cross, binutils-aarch64-linux-gnu).
# .ci/run installs the clang set: gcc-aarch64-linux-gnu conflicts with
# gcc-multilib, which the -m32 tests need. Idempotent: DEST is rebuilt.
#
#   scripts/foreign-roots.sh target/foreign-roots
set -euo pipefail
dest=${1:?usage: scripts/foreign-roots.sh DEST}
here=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$dest"
dest=$(cd "$dest" && pwd)
apt_opts=(-o DPkg::Lock::Timeout=300 -qq)

for a in arm64 armhf; do
  dpkg --print-foreign-architectures | grep -qx "$a" || dpkg --add-architecture "$a"
done
# A mirror caught mid-sync fails one index (seen: bookworm-security armhf);
# the downloads below say whether what is needed was indexed.
apt-get "${apt_opts[@]}" update || echo "foreign-roots: apt-get update reported errors; trying the downloads" >&2

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for a in arm64 armhf; do
  rm -rf "${dest:?}/$a"
  mkdir -p "$work/$a" "$dest/$a"
  (cd "$work/$a" && apt-get "${apt_opts[@]}" download "libc6:$a" "busybox-static:$a")
  for deb in "$work/$a"/*.deb; do
    dpkg-deb -x "$deb" "$dest/$a"
  done
done

bin="$dest/arm64/usr/local/bin"
mkdir -p "$bin"
# Go: a private cache, no toolchain download, no cgo.
(cd "$here/fixtures/go/hello" &&
  GOCACHE="$work/gocache" GOPATH="$work/gopath" GOTOOLCHAIN=local GOFLAGS= \
    GOOS=linux GOARCH=arm64 CGO_ENABLED=0 go build -o "$bin/hello_go" .)
if command -v aarch64-linux-gnu-gcc >/dev/null; then
  cc=(aarch64-linux-gnu-gcc)
else
  cc=(clang --target=aarch64-linux-gnu)
fi
src="$here/fixtures/call_sites.c"
"${cc[@]}" -O2 -Wall -DRAW_LIBC -o "$bin/raw_libc" "$src"
"${cc[@]}" -O2 -Wall -DRAW_LIBC -static -o "$bin/raw_libc_static" "$src"
"${cc[@]}" -O2 -Wall -DASM -static -o "$bin/svc_static" "$src"
echo "foreign roots in $dest: $(find "$dest" -type f | wc -l) files"
