#!/usr/bin/env python3
"""Which syscalls of a `strace -f -c` summary a seccomp profile refuses to
a container holding only CAPS (default CAP_BPF, CAP_PERFMON: the
DaemonSet's), on x86_64:

    strace -f -c -o serve.strace vdsoctl serve --interval 1s   # a while, then Ctrl-C
    scripts/seccomp-needs.py serve.strace [PROFILE] [CAP_X,...]

prints one line per refused syscall (the measurement behind
deploy/seccomp-vdsoctl.json, scripts/seccomp-profile.py). A rule with
argument conditions counts as allowing its syscall (the default's are
clone's namespace flags and personality's values, which serve does not
use).
"""
import json
import sys


def allowed(profile, caps, arch="amd64"):
    ok = set()
    for rule in profile["syscalls"]:
        if rule["action"] != "SCMP_ACT_ALLOW":
            continue
        inc, exc = rule.get("includes") or {}, rule.get("excludes") or {}
        if not set(inc.get("caps") or []) <= caps or set(exc.get("caps") or []) & caps:
            continue
        if inc.get("arches") and arch not in inc["arches"]:
            continue
        if exc.get("arches") and arch in exc["arches"]:
            continue
        ok.update(rule["names"])
    return ok


def main():
    summary = sys.argv[1]
    path = sys.argv[2] if len(sys.argv) > 2 else "/usr/share/containers/seccomp.json"
    caps = set((sys.argv[3] if len(sys.argv) > 3 else "CAP_BPF,CAP_PERFMON").split(","))
    called = []
    for line in open(summary):
        fields = line.split()
        if len(fields) >= 5 and fields[0][0].isdigit() and fields[-1] != "total":
            called.append(fields[-1])
    ok = allowed(json.load(open(path)), caps)
    for name in sorted(set(called) - ok):
        print(name)


if __name__ == "__main__":
    main()
