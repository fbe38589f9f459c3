#!/usr/bin/env bash
# Fuzz `vdsoctl dump --file` over mutations of every committed vDSO image
# (fixtures/vdso/*.so, 14 images of 9 architectures), in two ways:
#
# 1. In process: the proptest `inspect::elf::tests::mutated_fixtures_never_panic`
#    with VDSOCTL_FUZZ_CASES cases; each mutated image that parses is walked
#    through every accessor (symbol/bind/type names, objdump flags, version
#    display, flag text, note decoding, the dump report, its findings, the
#    JSON document and the table). A panic fails the run.
# 2. Through the release binary, one process per mutation, so crashes,
#    hangs and memory are measured from outside: each run gets 5 s
#    (`timeout -s KILL 5`: killed = hang) and its max RSS comes from
#    `/usr/bin/time -f %M` (not from wait4 in Python: Linux carries the
#    forking parent's RSS high-water mark across exec); table and --json
#    alternate, so both renderers walk every image. Counted: exit codes
#    other than 0/1/3 or a "panicked" on stderr (crash), timeouts (hang),
#    max RSS over 10 MiB (over budget), and an error that is not exactly one
#    stderr line.
#
# Mutations (seeded, reproducible): 1-24 byte writes (mostly 1-4, so that
# about half the mutants still parse and reach the accessors), most of them into the
# ELF header, the program/section header tables and the dynamic section;
# "interesting" 2/4/8-byte values (0, 1, all-ones, 2^31-1, the file size,
# 0x10000...) at aligned field offsets; truncation; growth to up to the
# 4 MiB --file limit so that stretched tables point at real bytes.
#
# Usage: scripts/fuzz-dump.sh [CASES_PER_WAY] [SEED]   (default 10000, 1)
set -euo pipefail
cd "$(dirname "$0")/.."
cases=${1:-10000}
seed=${2:-1}
cargo build --release --quiet

echo "== in process: proptest, $cases cases"
VDSOCTL_FUZZ_CASES=$cases cargo test --release --quiet --lib inspect::elf::tests::mutated_fixtures_never_panic 2>&1 |
  grep -E "test result|panicked|FAILED" || true

echo "== through the binary: $cases mutations, one process each"
python3 - "$PWD/target/release/vdsoctl" "$cases" "$seed" fixtures/vdso/*.so <<'PY'
import os, random, struct, subprocess, sys, tempfile, time, collections
binary, cases, seed, fixtures = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
rng = random.Random(seed)
LIMIT = 4 << 20
BUDGET_KIB = 10 * 1024

def regions(b):
    """Structural byte ranges: ELF header, phdrs, shdrs, PT_DYNAMIC."""
    out = [(0, min(len(b), 64))]
    try:
        is64, e = b[4] == 2, "<" if b[5] == 1 else ">"
        if is64:
            phoff, shoff = struct.unpack_from(e + "QQ", b, 32)
            phent, phnum, shent, shnum = struct.unpack_from(e + "HHHH", b, 54)
        else:
            phoff, shoff = struct.unpack_from(e + "II", b, 28)
            phent, phnum, shent, shnum = struct.unpack_from(e + "HHHH", b, 42)
        out.append((phoff, phoff + phent * phnum))
        out.append((shoff, shoff + shent * shnum))
        for i in range(phnum):
            o = phoff + i * phent
            if struct.unpack_from(e + "I", b, o)[0] == 2:
                off, size = (struct.unpack_from(e + "Q", b, o + 8)[0], struct.unpack_from(e + "Q", b, o + 32)[0]) if is64 \
                    else (struct.unpack_from(e + "I", b, o + 4)[0], struct.unpack_from(e + "I", b, o + 16)[0])
                out.append((off, off + size))
    except Exception:
        pass
    return [(a, min(z, len(b))) for a, z in out if a < z <= len(b) + 0]

images = [open(f, "rb").read() for f in fixtures]
structure = [regions(b) for b in images]

def mutate(i):
    b = bytearray(images[i])
    regs = structure[i]
    le = b[5] == 1
    if rng.random() < 0.05:
        b.extend(b"\0" * rng.randrange(0, LIMIT - len(b)))
    for _ in range(rng.choice([1, 1, 1, 1, 2, 2, 3, 4, 8, 16, 24])):
        if rng.random() < 0.75 and regs:
            a, z = rng.choice(regs)
            at = rng.randrange(a, z)
        else:
            at = rng.randrange(0, len(b))
        r = rng.random()
        if r < 0.5:
            b[at] = rng.randrange(256)
        else:
            width = rng.choice([2, 4, 8])
            at -= at % width
            if at + width > len(b):
                continue
            v = rng.choice([0, 1, 2, 0x7f, 0x80, 0xff, 0x7fff_ffff, 0x8000_0000, (1 << (8 * width)) - 1,
                            len(b), len(b) - 1, len(b) + 1, 0x10000, rng.randrange(1 << (8 * width))])
            v &= (1 << (8 * width)) - 1
            b[at:at + width] = v.to_bytes(width, "little" if le else "big")
    if rng.random() < 0.1:
        del b[rng.randrange(0, len(b)):]
    return bytes(b)

counts = collections.Counter()
worst_rss, worst_name = 0, ""
examples = collections.defaultdict(list)
tmpdir = tempfile.mkdtemp(prefix="vdsoctl-fuzz-")
path = os.path.join(tmpdir, "m.so")
rssfile = os.path.join(tmpdir, "rss")
start = time.time()
for n in range(cases):
    i = rng.randrange(len(images))
    data = mutate(i)
    with open(path, "wb") as f:
        f.write(data)
    args = ["/usr/bin/time", "-f", "%M", "-o", rssfile, "timeout", "-s", "KILL", "5", binary]
    args += (["--json"] if n % 2 else []) + ["dump", "--file", path]
    p = subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                       env={"NO_COLOR": "1", "PATH": "/usr/bin:/bin"})
    code = p.returncode
    text = p.stderr.decode("utf-8", "replace")
    rss = int(open(rssfile).read().split()[-1])
    kind = "ok"
    if code == 137:
        kind = "hang (killed after 5 s)"
    elif code not in (0, 1, 3) or "panicked" in text:
        kind = "crash"
    elif code == 3 and (text.count("\n") != 1 or not text.startswith("vdsoctl: ")):
        kind = "error not one line"
    if rss > BUDGET_KIB:
        counts["over 10 MiB"] += 1
        examples["over 10 MiB"].append(n)
    if rss > worst_rss:
        worst_rss, worst_name = rss, os.path.basename(fixtures[i])
    counts[f"exit {code}"] += 1
    counts[kind] += 1
    if kind != "ok":
        keep = os.path.join(tmpdir, f"case-{n}.so")
        with open(keep, "wb") as f:
            f.write(data)
        examples[kind].append(keep)
elapsed = time.time() - start
print(f"{cases} mutations of {len(images)} images in {elapsed:.0f} s (seed {seed})")
for k in sorted(counts):
    print(f"  {k:28} {counts[k]}")
print(f"  {'largest max RSS':28} {worst_rss} KiB (a mutation of {worst_name})")
for k in ("crash", "hang (killed after 5 s)", "error not one line", "over 10 MiB"):
    print(f"  {k + ':':28} {counts.get(k, 0)}" + (f"  e.g. {examples[k][:3]}" if examples.get(k) else ""))
bad = sum(counts.get(k, 0) for k in ("crash", "hang (killed after 5 s)", "error not one line", "over 10 MiB"))
if not bad:
    os.remove(path)
    os.remove(rssfile)
    os.rmdir(tmpdir)
sys.exit(1 if bad else 0)
PY
