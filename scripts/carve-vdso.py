#!/usr/bin/env python3
"""Carve the vDSO images out of a Linux kernel image.

Usage: scripts/carve-vdso.py KERNEL_IMAGE OUTDIR

The kernel links each vDSO it serves (vdso.so, vdso32.so, ...) into its own
.rodata as a complete, stripped ELF shared object. This script looks for them
in the image and in every compressed stream inside it (gzip, xz, zstd: a
zImage, bzImage or EFI zboot payload), and writes each ELF whose DT_SONAME is
linux-vdso*.so.1 or linux-gate.so.1 to OUTDIR/<soname>-<class>-<machine>.so.

A candidate is the bytes from an ELF magic to the end of its section header
table (where the linker puts it, last, in every vDSO), checked by reading its
program headers, PT_DYNAMIC and DT_SONAME with bounds checks.
"""
import lzma
import os
import struct
import subprocess
import sys
import zlib


def streams(blob):
    """The blob itself, then whatever every compressed stream in it decompresses to."""
    yield "raw", blob
    seen = set()
    for magic, kind in ((b"\x1f\x8b\x08", "gzip"), (b"\xfd7zXZ\x00", "xz"), (b"\x28\xb5\x2f\xfd", "zstd")):
        at = blob.find(magic)
        while at != -1:
            out = b""
            try:
                if kind == "gzip":
                    out = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(blob[at:], 256 << 20)
                elif kind == "xz":
                    out = lzma.LZMADecompressor().decompress(blob[at:], 256 << 20)
                else:
                    p = subprocess.run(["zstd", "-dc"], input=blob[at:], capture_output=True)
                    out = p.stdout
            except Exception:
                out = b""
            if len(out) > (1 << 20) and out[:4096] not in seen:
                seen.add(out[:4096])
                yield f"{kind}@{at:#x}", out
            at = blob.find(magic, at + 1)


def parse(blob, at):
    """(soname, class, machine, size) of an ELF shared object at `at`, or None."""
    ident = blob[at : at + 16]
    if len(ident) < 16 or ident[4] not in (1, 2) or ident[5] not in (1, 2):
        return None
    is64, e = ident[4] == 2, "<" if ident[5] == 1 else ">"
    try:
        if is64:
            (e_type, machine, _, _, phoff, shoff, _, _, phentsize, phnum, shentsize, shnum, _) = struct.unpack_from(
                e + "HHIQQQIHHHHHH", blob, at + 16
            )
        else:
            (e_type, machine, _, _, phoff, shoff, _, _, phentsize, phnum, shentsize, shnum, _) = struct.unpack_from(
                e + "HHIIIIIHHHHHH", blob, at + 16
            )
    except struct.error:
        return None
    if e_type != 3 or phnum == 0 or phnum > 16 or shnum > 64 or phentsize != (56 if is64 else 32):
        return None
    size = shoff + shnum * shentsize
    if size > (1 << 20) or at + size > len(blob):
        return None
    img = blob[at : at + size]
    loads, dyn = [], None
    for i in range(phnum):
        o = phoff + i * phentsize
        if is64:
            p_type, _, off, vaddr, _, filesz, _, _ = struct.unpack_from(e + "IIQQQQQQ", img, o)
        else:
            p_type, off, vaddr, _, filesz, _, _, _ = struct.unpack_from(e + "IIIIIIII", img, o)
        if p_type == 1:
            loads.append((vaddr, off, filesz))
        elif p_type == 2:
            dyn = (off, filesz)
    if dyn is None:
        return None
    tags = {}
    step = 16 if is64 else 8
    for o in range(dyn[0], min(dyn[0] + dyn[1], len(img)) - step + 1, step):
        tag, val = struct.unpack_from(e + ("qQ" if is64 else "iI"), img, o)
        if tag == 0:
            break
        tags.setdefault(tag, val)
    if 5 not in tags or 14 not in tags:
        return None
    strtab = next((off + tags[5] - va for va, off, sz in loads if va <= tags[5] < va + sz), None)
    if strtab is None:
        return None
    name_at = strtab + tags[14]
    end = img.find(b"\0", name_at)
    if end == -1:
        return None
    soname = img[name_at:end].decode("ascii", "replace")
    if not (soname.startswith("linux-vdso") or soname == "linux-gate.so.1"):
        return None
    return soname, ("elf64" if is64 else "elf32"), machine, size


def main():
    kernel, outdir = sys.argv[1], sys.argv[2]
    os.makedirs(outdir, exist_ok=True)
    blob = open(kernel, "rb").read()
    found = {}
    for where, data in streams(blob):
        at = data.find(b"\x7fELF")
        while at != -1:
            got = parse(data, at)
            if got:
                soname, cls, machine, size = got
                image = data[at : at + size]
                name = f"{soname.removesuffix('.so.1')}-{cls}-em{machine}.so"
                n = 2
                while name in found and found[name] != image:
                    name = f"{soname.removesuffix('.so.1')}-{cls}-em{machine}-{n}.so"
                    n += 1
                if image not in found.values():
                    found[name] = image
                    with open(os.path.join(outdir, name), "wb") as f:
                        f.write(image)
                    print(f"{name}: {size} bytes at {where} offset {at:#x}")
            at = data.find(b"\x7fELF", at + 1)
    if not found:
        sys.exit(f"no vDSO found in {kernel}")


if __name__ == "__main__":
    main()
