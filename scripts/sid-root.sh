#!/usr/bin/env bash
# A root with Debian sid's glibc 2.43 and Go 1.27, for the newest runtime
# rows (tests/cli/getrandom.rs): glibc 2.43 and Go 1.27 read getrandom from
# the vDSO as 2.41 and 1.24 first did.
#
#   scripts/sid-root.sh DIR
#
# DIR/root holds libc6, golang-1.27-go and golang-1.27-src unpacked; the
# private apt state, the mirror, verification and idempotence are
# scripts/debian-root.sh's (sid, Go 1.27).
exec "$(dirname "$0")/debian-root.sh" sid 1.27 "${1:?usage: scripts/sid-root.sh DIR}"
