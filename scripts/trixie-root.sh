#!/usr/bin/env bash
# A root with Debian trixie's glibc 2.41 and Go 1.24, for the vDSO getrandom
# fixtures (fixtures/GETRANDOM.md): glibc 2.41 is the first whose getrandom
# goes through __vdso_getrandom, Go 1.24 the first Go whose crypto/rand does.
#
#   scripts/trixie-root.sh DIR
#
# DIR/apt   a private apt state for trixie main, amd64 (its own sources.list,
#           lists and cache; the host's apt config and lists are left alone)
# DIR/debs  the downloaded .debs (reused when there)
# DIR/root  libc6, golang-1.24-go and golang-1.24-src unpacked (dpkg-deb -x):
#             glibc's loader  DIR/root/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2
#             run a program   LOADER --library-path DIR/root/usr/lib/x86_64-linux-gnu PROG ARGS
#             Go              GOROOT=DIR/root/usr/lib/go-1.24 GOTOOLCHAIN=local DIR/root/usr/lib/go-1.24/bin/go
#
# The mirror is the one the host's own apt sources use for its main archive
# (the deb822 .sources or one-line .list entry whose suite is the host's
# codename, e.g. bookworm), asked for suite trixie. Releases are checked with
# /usr/share/keyrings/debian-archive-keyring.gpg, which holds trixie's keys
# from bookworm's 2023.3+deb12u2 on. When apt finds no key for trixie's
# Release, the host's own apt (its lists, checked with the host's keys)
# downloads the candidate debian-archive-keyring of the host's release and
# its keyring is used instead (DIR/apt/keyring.gpg; the script says so);
# when that can't verify trixie either, it stops. Verification is never off.
#
# Idempotent: when DIR/root is complete (DIR/root/.complete names the .debs
# it was unpacked from and they are in DIR/debs) nothing is downloaded, not
# even the package lists; remove DIR to start again. Needs root (as .ci/run),
# apt-get, dpkg-deb. Prints the glibc and Go versions found at the end; exits
# 1 with one line on stderr when it can't make the root.
#
# The work is scripts/debian-root.sh's (trixie, Go 1.24).
exec "$(dirname "$0")/debian-root.sh" trixie 1.24 "${1:?usage: scripts/trixie-root.sh DIR}"
