#!/usr/bin/env bash
# A bookworm image root from Debian's own packages, for the gate tests
# (tests/cli/gate.rs): the C library, a shell and coreutils as Debian 12
# ships them (glibc 2.36: getrandom takes the syscall; every clock read the
# vDSO's), unpacked with dpkg-deb -x as an image build lays them out.
#
#   scripts/bookworm-root.sh DIR
#
# DIR/debs  the .debs, downloaded with the host's own apt (bookworm is the
#           host: its sources, lists and keys; reused when there)
# DIR/root  the packages unpacked (DIR/root/.complete names the .debs)
#
# Idempotent: a complete DIR/root downloads nothing. Needs apt-get (with
# lists: `apt-get update` once, as .ci/run does) and dpkg-deb. Exits 1 with
# one line on stderr when it can't make the root.
set -euo pipefail
dir=${1:?usage: scripts/bookworm-root.sh DIR}
die() { echo "bookworm-root: $*" >&2; exit 1; }
. /etc/os-release
[ "${VERSION_CODENAME:-}" = bookworm ] || die "the host is ${VERSION_CODENAME:-unknown}, not bookworm: its apt serves no bookworm packages"
mkdir -p "$dir/debs"
dir=$(cd "$dir" && pwd)
root=$dir/root
pkgs=(libc6 libgcc-s1 dash coreutils libacl1 libattr1 libgmp10 libselinux1 libpcre2-8-0)
complete() {
  [ -s "$root/.complete" ] && [ -x "$root/usr/bin/ls" ] || return 1
  local d
  while read -r d; do [ -s "$dir/debs/$d" ] || return 1; done <"$root/.complete"
}
if ! complete; then
  (cd "$dir/debs" && apt-get download -qq "${pkgs[@]}" >/dev/null 2>"$dir/apt.err") ||
    die "apt-get download ${pkgs[*]} failed: $(tail -1 "$dir/apt.err")"
  rm -rf "$root"
  mkdir -p "$root"
  : >"$root/.complete.new"
  for p in "${pkgs[@]}"; do
    deb=$(cd "$dir/debs" && ls -1 "${p}"_*.deb | sort -V | tail -1) || die "no .deb for $p"
    dpkg-deb -x "$dir/debs/$deb" "$root"
    echo "$deb" >>"$root/.complete.new"
  done
  # usrmerge, as a bookworm image has it (/lib64 -> usr/lib64, /bin -> usr/bin).
  for d in bin lib lib64 sbin; do
    if [ -d "$root/$d" ] && [ ! -L "$root/$d" ]; then
      mkdir -p "$root/usr/$d" && cp -a "$root/$d/." "$root/usr/$d/" && rm -rf "${root:?}/$d"
    fi
    [ -e "$root/$d" ] || ln -s "usr/$d" "$root/$d"
  done
  mv "$root/.complete.new" "$root/.complete"
fi
echo "bookworm root: $root ($(wc -l <"$root/.complete") packages; $(ls "$root"/usr/lib/x86_64-linux-gnu/libc.so.6 2>/dev/null || echo 'no libc'))"
