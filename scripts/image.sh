#!/usr/bin/env bash
# The multi-arch image of deploy/Containerfile: amd64 and arm64, each the
# static binary alone, joined in one manifest list NAME (podman manifest).
# Offline: FROM scratch, nothing pulled, no emulation (no RUN step).
#
#   scripts/image.sh NAME            e.g. scripts/image.sh vdsoctl:0.1.0
#   podman manifest push --all NAME docker://REGISTRY/vdsoctl:0.1.0
#
# The binaries are taken where cargo put them (CARGO_TARGET_DIR honoured),
# built as the kernel matrix builds them (scripts/kernel-matrix.sh):
#   RUSTFLAGS='-C target-feature=+crt-static' cargo build --release --target x86_64-unknown-linux-gnu
#   CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=clang \
#     RUSTFLAGS='-C target-feature=+crt-static -C link-arg=--target=aarch64-linux-gnu' \
#     cargo build --release --target aarch64-unknown-linux-gnu
# PODMAN overrides the podman command (the tests give it a private store).
set -euo pipefail
name=${1:?usage: scripts/image.sh NAME}
here=$(cd "$(dirname "$0")/.." && pwd)
target=${CARGO_TARGET_DIR:-$here/target}
case $target in /*) ;; *) target=$here/$target ;; esac
podman=${PODMAN:-podman}
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
# A manifest list of that name from an earlier run is replaced.
$podman manifest rm "$name" >/dev/null 2>&1 || true
$podman manifest create "$name" >/dev/null
for pair in amd64:x86_64 arm64:aarch64; do
  arch=${pair%%:*} triple=${pair#*:}-unknown-linux-gnu
  bin=$target/$triple/release/vdsoctl
  [ -x "$bin" ] || { echo "no $bin: build it as this script's header says" >&2; exit 1; }
  file -L "$bin" | grep -Eq 'statically linked|static-pie linked' || { echo "$bin is not statically linked" >&2; exit 1; }
  mkdir -p "$stage/$arch" && cp "$bin" "$stage/$arch/vdsoctl"
  $podman build -q --pull=never --platform "linux/$arch" --manifest "$name" \
    -f "$here/deploy/Containerfile" "$stage/$arch" >/dev/null
done
echo "$name: linux/amd64 and linux/arm64"
