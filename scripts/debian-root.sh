#!/usr/bin/env bash
# A root with one Debian suite's glibc and a Go release, unpacked from that
# suite's own packages: trixie's glibc 2.41 and Go 1.24 (the first whose
# getrandom reads __vdso_getrandom: fixtures/GETRANDOM.md; scripts/
# trixie-root.sh), sid's glibc 2.43 and Go 1.27 (scripts/sid-root.sh).
#
#   scripts/debian-root.sh SUITE GO DIR       e.g. sid 1.27 target/sid
#
# DIR/apt   a private apt state for SUITE main, amd64 (its own sources.list,
#           lists and cache; the host's apt config and lists are left alone)
# DIR/debs  the downloaded .debs (reused when there)
# DIR/root  libc6, golang-GO-go and golang-GO-src unpacked (dpkg-deb -x):
#             glibc's loader  DIR/root/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2
#             run a program   LOADER --library-path DIR/root/usr/lib/x86_64-linux-gnu PROG ARGS
#             Go              GOROOT=DIR/root/usr/lib/go-GO GOTOOLCHAIN=local DIR/root/usr/lib/go-GO/bin/go
#
# The mirror is the one the host's own apt sources use for its main archive
# (the deb822 .sources or one-line .list entry whose suite is the host's
# codename, e.g. bookworm), asked for SUITE. Releases are checked with
# /usr/share/keyrings/debian-archive-keyring.gpg; when apt finds no key for
# SUITE's Release, the host's own apt (its lists, checked with the host's
# keys) downloads the candidate debian-archive-keyring of the host's release
# and its keyring is used instead (DIR/apt/keyring.gpg; the script says so);
# when that can't verify SUITE either, it stops. Verification is never off.
#
# Idempotent: when DIR/root is complete (DIR/root/.complete names the .debs
# it was unpacked from and they are in DIR/debs) nothing is downloaded, not
# even the package lists; remove DIR to start again. Needs root (as .ci/run),
# apt-get, dpkg-deb. Prints the glibc and Go versions found at the end; exits
# 1 with one line on stderr when it can't make the root.
set -euo pipefail
suite=${1:?usage: scripts/debian-root.sh SUITE GO DIR}
go=${2:?usage: scripts/debian-root.sh SUITE GO DIR}
dir=${3:?usage: scripts/debian-root.sh SUITE GO DIR}
me="$suite-root"
die() { echo "$me: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "run it as root, as .ci/run does (its private apt state and downloads are root's)"
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
root=$dir/root
debs=$dir/debs
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
pkgs=(libc6 "golang-$go-go" "golang-$go-src")
loader=$root/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2
goroot=$root/usr/lib/go-$go

complete() {
  [ -s "$root/.complete" ] && [ -x "$loader" ] && [ -x "$goroot/bin/go" ] || return 1
  local d
  while read -r d; do [ -s "$debs/$d" ] || return 1; done <"$root/.complete"
}

# shellcheck source=scripts/lib/host-apt.sh
. "$(dirname "$0")/lib/host-apt.sh"
# host_mirror: the first http(s) URI of the host's apt sources that serves its
# own release's suite (the main archive, not -security or -updates).
host_mirror() {
  local codename
  codename=$(host_codename)
  [ -n "$codename" ] || return 1
  host_apt_uri "$codename"
}

if complete; then
  echo "$me: $root is complete (.debs in $debs); nothing downloaded"
else
  # sed, not head: reads all, so no SIGPIPE fails the pipeline under pipefail.
  mirror=$(host_mirror | sed -n 1p) || true
  [ -n "$mirror" ] || die "no http(s) URI serving the host's own suite in /etc/apt/sources.list{,.d/*.sources,.d/*.list}"
  [ -s "$keyring" ] || die "$keyring is missing (apt-get install debian-archive-keyring)"
  mkdir -p "$dir/apt/lists/partial" "$dir/apt/cache/archives/partial" "$debs"
  # ---- the private apt state: the host's sources and lists are not touched.
  apt_opts=(-qq -o Dir::Etc::SourceList="$dir/apt/sources.list" -o Dir::Etc::SourceParts=/nonexistent
    -o Dir::State::Lists="$dir/apt/lists" -o Dir::Cache="$dir/apt/cache" -o Acquire::Languages=none
    -o Dir::Cache::pkgcache="$dir/apt/pkgcache.bin" -o Dir::Cache::srcpkgcache="$dir/apt/srcpkgcache.bin"
    -o APT::Architecture=amd64 -o APT::Architectures::=amd64 -o APT::Sandbox::User=root)
  # update_lists KEYRING: 0 when indexed, 2 when KEYRING can't verify $suite.
  # A mirror caught mid-sync fails an index now and then: try again.
  update_lists() {
    echo "deb [arch=amd64 signed-by=$1] $mirror $suite main" >"$dir/apt/sources.list"
    local try
    for try in 1 2 3; do
      apt-get "${apt_opts[@]}" update >"$dir/apt/update.log" 2>&1 &&
        ! grep -q '^[WE]:' "$dir/apt/update.log" && return 0
      # A missing key is not fixed by waiting.
      grep -qE 'NO_PUBKEY|EXPKEYSIG|not signed' "$dir/apt/update.log" && return 2
      [ "$try" = 3 ] && die "apt-get update failed 3 times for $mirror $suite ($dir/apt/update.log)"
      echo "$me: apt-get update failed (try $try of 3; $dir/apt/update.log)" >&2
      sleep 15
    done
  }
  rc=0; update_lists "$keyring" || rc=$?
  if [ "$rc" = 2 ]; then
    missing=$(grep -oE '(NO_PUBKEY|EXPKEYSIG) [0-9A-F]+' "$dir/apt/update.log" | head -n 1)
    echo "$me: $keyring can't verify $suite ($missing); trying the host release's newest debian-archive-keyring" >&2
    rm -rf "$dir/apt/keyring" && mkdir -p "$dir/apt/keyring"
    (cd "$dir/apt/keyring" && apt-get -qq download debian-archive-keyring) >/dev/null 2>&1 &&
      dpkg-deb -x "$dir"/apt/keyring/debian-archive-keyring_*.deb "$dir/apt/keyring/x" &&
      cp "$dir/apt/keyring/x/usr/share/keyrings/debian-archive-keyring.gpg" "$dir/apt/keyring.gpg" ||
      die "$keyring can't verify $suite's Release ($missing) and no newer debian-archive-keyring could be had"
    rc=0; update_lists "$dir/apt/keyring.gpg" || rc=$?
    [ "$rc" = 0 ] || die "neither $keyring nor the host release's newest debian-archive-keyring verifies $suite's Release ($missing)"
    echo "$me: $suite verified with $dir/apt/keyring.gpg (debian-archive-keyring $(dpkg-deb -f "$dir"/apt/keyring/debian-archive-keyring_*.deb Version), from the host's verified apt)" >&2
  fi
  # Each package's candidate, downloaded into $debs once.
  names=()
  for p in "${pkgs[@]}"; do
    read -r ver arch < <(apt-cache "${apt_opts[@]}" show --no-all-versions "$p:amd64" 2>/dev/null |
      awk '/^Version: / { v = $2 } /^Architecture: / { a = $2 } END { print v, a }') || true
    [ -n "${ver:-}" ] && [ -n "${arch:-}" ] || die "$p is not in $mirror $suite main"
    deb=${p}_${ver//:/%3a}_$arch.deb
    if [ ! -s "$debs/$deb" ]; then
      (cd "$debs" && { apt-get "${apt_opts[@]}" download "$p:$arch=$ver" ||
        { sleep 5 && apt-get "${apt_opts[@]}" download "$p:$arch=$ver"; }; }) >/dev/null 2>&1 ||
        die "could not download $p $ver from $mirror"
    fi
    names+=("$deb")
  done
  # Unpacked afresh: no file of an older version is left behind.
  rm -rf "$root"
  mkdir -p "$root"
  for deb in "${names[@]}"; do dpkg-deb -x "$debs/$deb" "$root"; done
  printf '%s\n' "${names[@]}" >"$root/.complete"
  complete || die "unpacked $root but $loader or $goroot/bin/go is missing"
fi

# What is there: the loader prints glibc's version with --version; go runs
# with its own GOROOT and never fetches another toolchain.
glibc=$("$loader" --version | sed -n '1s/.* version \([0-9]*\.[0-9]*\).*/\1/p')
gover=$(GOROOT=$goroot GOTOOLCHAIN=local "$goroot/bin/go" version)
echo "$me: glibc $glibc ($loader)"
echo "$me: $gover (GOROOT=$goroot)"
