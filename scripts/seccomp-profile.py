#!/usr/bin/env python3
"""Write deploy/seccomp-vdsoctl.json: a container engine's default seccomp
profile plus exactly the syscalls `vdsoctl serve` needs that it refuses.

    scripts/seccomp-profile.py [DEFAULT] > deploy/seccomp-vdsoctl.json

DEFAULT is the engine's own profile (podman and CRI-O read
/usr/share/containers/seccomp.json, containers-common; Docker's and
containerd's defaults are the same moby profile with other comments). The
syscalls added are the ones measured (deploy/README.md, "The seccomp
profile"): `strace -f -c` of a `serve` run lists what serve calls, and of
those only bpf(2) and perf_event_open(2) are refused by the default to a
process without CAP_SYS_ADMIN. Each is taken out of every rule of the
default (the CAP_SYS_ADMIN-only allow and the EPERM for everyone else) and
allowed by one rule of its own, unconditionally: a process still needs
CAP_BPF/CAP_PERFMON for the kernel to accept them, so the profile adds no
power the capabilities do not grant. Everything else is the default's,
byte for byte after json.dumps.
"""
import json
import sys

ADDED = ["bpf", "perf_event_open"]
COMMENT = (
    "vdsoctl serve: the trace engines (bpf for the BPF engine, perf_event_open for its attach and "
    "the perf engine); the kernel still asks for CAP_BPF and CAP_PERFMON. See deploy/README.md."
)


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "/usr/share/containers/seccomp.json"
    with open(path) as f:
        profile = json.load(f)
    rules = []
    for rule in profile["syscalls"]:
        names = [n for n in rule["names"] if n not in ADDED]
        if names:
            rules.append(dict(rule, names=names))
    rules.append({"names": ADDED, "action": "SCMP_ACT_ALLOW", "args": [], "comment": COMMENT, "includes": {}, "excludes": {}})
    profile["syscalls"] = rules
    json.dump(profile, sys.stdout, indent=2)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
