#!/usr/bin/env bash
# Peak memory (max RSS, /usr/bin/time -v) of `vdsoctl dump --file` on
# crafted images whose tables claim far more than a vDSO holds, against
# DESIGN's budget of 10 MiB "whatever the input file claims".
# Each image is fixtures/vdso/x86_64.so grown to the 4 MiB --file limit with
# one table (or all of them) stretched over the whole file:
#   dynsym     .dynsym over 4 MiB: 174,421 symbols, every name a 3 MiB string
#   verdef     .gnu.version_d: a 209,715-entry chain, sh_info 2^32-1
#   notes      .note: 349,525 empty notes
#   note-desc  .note: one note with a 4 MiB descriptor
#   dynamic    PT_DYNAMIC over 4 MiB with no DT_NULL
#   sections   e_shnum 0 with section 0 claiming 65,000 sections (extended numbering)
#   all        dynsym + verdef + notes at once
#   sparse-1g  a 1 GiB sparse file (refused by size, never read)
#   fifo       a FIFO nobody writes to (refused by type, never opened for reading)
# Prints, per image and format, the exit code and the largest max-RSS of
# RUNS runs (max, not median: the budget is a ceiling).
# Usage: scripts/bench-dump-memory.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
cargo build --release --quiet
bin=$PWD/target/release/vdsoctl
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

python3 - "$PWD/fixtures/vdso/x86_64.so" "$tmp" <<'PY'
import struct, sys, os
src, out = sys.argv[1], sys.argv[2]
base = open(src, "rb").read()
LEN = 4 << 20
shoff = struct.unpack_from("<Q", base, 40)[0]
phoff = struct.unpack_from("<Q", base, 32)[0]
phnum = struct.unpack_from("<H", base, 56)[0]

def grown():
    b = bytearray(base)
    b.extend(b"\0" * (LEN - len(b)))
    return b

def sh(b, idx, field, fmt, v):
    struct.pack_into(fmt, b, shoff + idx * 64 + field, v)

def dynsym(b):
    # names: 3 MiB of 'A' at 1 MiB, NUL after; .dynstr (4) widened over it
    b[1 << 20:(4 << 20) - 64] = b"A" * ((3 << 20) - 64)
    sh(b, 4, 24, "<Q", 0)
    sh(b, 4, 32, "<Q", LEN)
    sh(b, 3, 24, "<Q", 0x2000)
    n = (LEN - 0x2000) // 24
    sh(b, 3, 32, "<Q", n * 24)
    for i in range(1, n):
        struct.pack_into("<I", b, 0x2000 + 24 * i, 1 << 20)

def verdef(b):
    at = 0x2000
    n = (LEN - at) // 20
    for i in range(n):
        struct.pack_into("<HHHHIII", b, at + 20 * i, 1, 0, (i + 1) & 0xffff, 0, 0, 0, 20)
    sh(b, 6, 24, "<Q", at)
    sh(b, 6, 32, "<Q", n * 20)
    sh(b, 6, 44, "<I", 0xFFFFFFFF)

def notes(b):
    sh(b, 9, 24, "<Q", 0x2000)
    sh(b, 9, 32, "<Q", (LEN - 0x2000) // 12 * 12)

def note_desc(b):
    struct.pack_into("<III", b, 0x2000, 4, LEN - 0x2000 - 16, 1)
    b[0x200c:0x2010] = b"GNU\0"
    sh(b, 9, 24, "<Q", 0x2000)
    sh(b, 9, 32, "<Q", LEN - 0x2000)

def dynamic(b):
    for i in range(phnum):
        if struct.unpack_from("<I", b, phoff + 56 * i)[0] == 2:
            # keep the real entries first, then DT_DEBUG to the end
            off = struct.unpack_from("<Q", b, phoff + 56 * i + 8)[0]
            real = b""
            while struct.unpack_from("<Q", b, off + len(real))[0] != 0:
                real += bytes(b[off + len(real):off + len(real) + 16])
            b[0x2000:0x2000 + len(real)] = real
            for at in range(0x2000 + len(real), LEN - 16, 16):
                struct.pack_into("<QQ", b, at, 21, 0)
            struct.pack_into("<QQ", b, phoff + 56 * i + 8, 0x2000, 0x2000)
            struct.pack_into("<QQ", b, phoff + 56 * i + 32, LEN - 0x2000, LEN - 0x2000)

def sections(b):
    # move the table to 0x2000, 65,000 entries, e_shnum 0 (count in section 0)
    table = bytes(b[shoff:shoff + 17 * 64])
    b[0x2000:0x2000 + len(table)] = table
    struct.pack_into("<Q", b, 40, 0x2000)
    struct.pack_into("<H", b, 60, 0)
    struct.pack_into("<Q", b, 0x2000 + 32, 65000)

for name, fns in [("dynsym", [dynsym]), ("verdef", [verdef]), ("notes", [notes]), ("note-desc", [note_desc]),
                  ("dynamic", [dynamic]), ("sections", [sections])]:
    b = grown()
    for f in fns:
        f(b)
    open(os.path.join(out, name + ".so"), "wb").write(b)
# all: dynsym names in the top 3 MiB, verdef chain below 1 MiB, notes after it
b = grown()
dynsym(b)
at = 0x2000
n = 40000
for i in range(n):
    struct.pack_into("<HHHHIII", b, at + 20 * i, 1, 0, (i + 1) & 0xffff, 0, 0, 0, 20)
sh(b, 6, 24, "<Q", at); sh(b, 6, 32, "<Q", n * 20); sh(b, 6, 44, "<I", 0xFFFFFFFF)
sh(b, 9, 24, "<Q", 0xd0000); sh(b, 9, 32, "<Q", 0x20000)
open(os.path.join(out, "all.so"), "wb").write(b)
PY
truncate -s 1G "$tmp/sparse-1g.so"
mkfifo "$tmp/fifo"
cp fixtures/vdso/x86_64.so "$tmp/pristine.so"

printf '%-12s %-6s %5s %14s %10s\n' image format exit "max RSS (KiB)" "vs 10 MiB"
for img in pristine dynsym verdef notes note-desc dynamic sections all sparse-1g fifo; do
  f=$tmp/$img.so
  [[ $img == fifo ]] && f=$tmp/fifo
  for fmt in table json; do
    flag=()
    [[ $fmt == json ]] && flag=(--json)
    max=0 code=0
    for ((i = 0; i < runs; i++)); do
      set +e
      /usr/bin/time -v -o "$tmp/time" timeout 20 "$bin" "${flag[@]}" dump --file "$f" >/dev/null 2>"$tmp/err"
      code=$?
      set -e
      rss=$(awk -F: '/Maximum resident set size/ {gsub(/ /, "", $2); print $2}' "$tmp/time")
      ((rss > max)) && max=$rss
    done
    verdict=ok
    ((max > 10240)) && verdict=OVER
    printf '%-12s %-6s %5s %14s %10s\n' "$img" "$fmt" "$code" "$max" "$verdict"
  done
done
