#!/usr/bin/env python3
"""Turn two real scrapes of `vdsoctl serve` into promtool input_series.

    scripts/healthy-series.py deploy/testdata/healthy-first.prom \
        deploy/testdata/healthy-last.prom [--drop-comm REGEX]

prints the input_series of the "healthy host for an hour" case in
deploy/vdsoctl.rules.test.yml, for the families the alerts read. Each
series gets the labels Prometheus adds (instance, job) and an hour of
samples, one a minute:

- a gauge holds its first scraped value for the first half hour and its
  last for the second (two real refreshes of the audit and the bench), or
  the one it has;
- a counter starts at its first scraped value (0 for a process that
  appeared between the scrapes) and grows at the rate measured between
  them, rounded up, for an hour;
- `up` is 1: the scrape that produced the files succeeded;
- `--drop-comm` leaves out the per-process and exited series of commands
  that are no part of the host being described (on a shared build machine:
  other builders' test loops and benches, which the alerts exist to catch).

The scrape time is each file's `vdsoctl_audit_timestamp_seconds`.
"""
import argparse
import math
import re
import sys

FAMILIES = (
    "vdsoctl_bench_seconds_per_call",
    "vdsoctl_vdso_serves",
    "vdsoctl_check_status",
    "vdsoctl_check_failed",
    "vdsoctl_check_observed",
    "vdsoctl_clocksource_info",
    "vdsoctl_trace_up",
    "vdsoctl_clock_syscalls_total",
    "vdsoctl_exited_clock_syscalls_total",
    "vdsoctl_vsyscall_emulations_total",
)
COUNTERS = ("_total",)
EXTRA = 'instance="h:10411",job="vdsoctl"'
MINUTES = 60
LINE = re.compile(r"^([a-z_]+)(\{.*\})? (\S+)$")


def read(path, drop):
    samples, stamp = {}, None
    for line in open(path, encoding="utf-8"):
        m = LINE.match(line.rstrip("\n"))
        if not m:
            continue
        name, labels, value = m.group(1), m.group(2) or "", float(m.group(3))
        if name == "vdsoctl_audit_timestamp_seconds":
            stamp = value
        comm = re.search(r'[{,]comm="([^"]*)"', labels)
        if drop and comm and re.fullmatch(drop, comm.group(1)):
            continue
        if name in FAMILIES:
            samples[(name, labels)] = value
    if stamp is None:
        sys.exit(f"{path}: no vdsoctl_audit_timestamp_seconds")
    return samples, stamp


def series(name, labels):
    inner = labels[1:-1]
    return f"{name}{{{inner + ',' if inner else ''}{EXTRA}}}"


def fmt(v):
    return repr(int(v)) if v == int(v) else repr(v)


def main():
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("first")
    args.add_argument("last")
    args.add_argument("--drop-comm", help="a regex a whole comm matches")
    opt = args.parse_args()
    (a, ta), (b, tb) = read(opt.first, opt.drop_comm), read(opt.last, opt.drop_comm)
    minutes = (tb - ta) / 60
    if minutes <= 0:
        sys.exit("the second scrape must be the later one")
    drop = f", --drop-comm '{opt.drop_comm}'" if opt.drop_comm else ""
    print(f"      # scripts/healthy-series.py: two scrapes {minutes:.1f} min apart{drop}.")
    print("      - series: 'up{" + EXTRA + "}'")
    print(f"        values: '1x{MINUTES}'")
    for key in sorted(set(a) | set(b), key=lambda k: (FAMILIES.index(k[0]), k[1])):
        name, labels = key
        if name.endswith(COUNTERS):
            start = a.get(key, 0.0)
            step = math.ceil(max(b.get(key, start) - start, 0) / minutes)
            values = f"{fmt(start)}+{step}x{MINUTES}"
        elif key in a and key in b and a[key] != b[key]:
            half = MINUTES // 2
            values = f"{fmt(a[key])}x{half - 1} {fmt(b[key])}x{MINUTES - half}"
        else:
            values = f"{fmt(b.get(key, a.get(key)))}x{MINUTES}"
        print(f"      - series: '{series(name, labels)}'")
        print(f"        values: '{values}'")


if __name__ == "__main__":
    main()
