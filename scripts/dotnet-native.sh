#!/usr/bin/env bash
# .NET's System.Native.so, the runtime's own native library, from
# Microsoft's build: the dotnetcore2 3.1.23 wheel on PyPI (the one .NET
# runtime a package registry reachable here carries; Debian packages no
# .NET). tests/cli/runtimes.rs audits it: its random bytes are a read of
# /dev/urandom, whatever the C library (src/arch/runtimes.rs).
#
#   scripts/dotnet-native.sh DIR
#
# DIR/System.Native.so  the library (sha256 checked, as is the wheel's)
# DIR/wheel/            the downloaded wheel (reused when there)
#
# Idempotent: nothing is downloaded when DIR/System.Native.so is there
# with its sha256. Needs python3 and its pip; exits 1 with one line
# on stderr when it can't.
set -euo pipefail
dir=${1:?usage: scripts/dotnet-native.sh DIR}
version=3.1.23
wheel=dotnetcore2-$version-py3-none-manylinux1_x86_64.whl
wheel_sha=5f076ddc39da0c685e7de20ecb91ee81185928918ec86fbeb3bffc55dd867ab5
lib_sha=753b86fea8f46ee6e15c88b184bfb40ce169e2a7305d591d095726c7fad01e2a
member=dotnetcore2/bin/shared/Microsoft.NETCore.App/$version/System.Native.so
fail() { echo "dotnet-native.sh: $*" >&2; exit 1; }
ok() { [ -f "$1" ] && [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$2" ]; }
ok "$dir/System.Native.so" "$lib_sha" && { echo "System.Native.so ($version): $dir/System.Native.so"; exit 0; }
mkdir -p "$dir/wheel"
if ! ok "$dir/wheel/$wheel" "$wheel_sha"; then
    rm -f "$dir/wheel/$wheel"
    python3 -m pip download -q --no-deps --only-binary=:all: --platform manylinux1_x86_64 \
        --python-version 3 --implementation py -d "$dir/wheel" "dotnetcore2==$version" >/dev/null ||
        fail "pip could not download dotnetcore2 $version (is PyPI reachable?)"
    ok "$dir/wheel/$wheel" "$wheel_sha" || fail "$wheel: sha256 is not $wheel_sha"
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extract(sys.argv[2], sys.argv[3])' \
    "$dir/wheel/$wheel" "$member" "$tmp" || fail "$wheel has no $member"
ok "$tmp/$member" "$lib_sha" || fail "$member: sha256 is not $lib_sha"
mv "$tmp/$member" "$dir/System.Native.so"
echo "System.Native.so ($version): $dir/System.Native.so"
