#!/usr/bin/env python3
"""measure.py — the course's timings: a command run N times, each figure given
as its median and range, with the date, the machine and its load.

    tools/course/measure.py --runs 9 --pick 'mtp=^ *1 mtp .* ([0-9.]+)x$' -- \
        build/specula bench --batch 1 --runs 5 --tokens 96

Every --pick NAME=REGEX is searched in each run's output (stdout and stderr,
line by line, Python re, MULTILINE); its first group must be a number. A
pick that does not match in a run fails the whole measurement. The report is
Markdown: a header (UTC date, host CPU, cores, load average before and
after, the command) and a table NAME | median | min | max | runs. The lessons
quote it as printed, so a timing there always carries its spread, its
command and its date.
"""
import argparse
import os
import platform
import re
import shlex
import statistics
import subprocess
import sys
import time


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=9, help="runs of the command (default 9)")
    ap.add_argument("--pick", action="append", default=[], metavar="NAME=REGEX", help="a figure to collect")
    ap.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command")
    a = ap.parse_args()
    cmd = a.command[1:] if a.command[:1] == ["--"] else a.command
    if not cmd or not a.pick or a.runs < 1:
        ap.error("give --runs N >= 1, at least one --pick NAME=REGEX, then -- COMMAND")
    picks = []
    for p in a.pick:
        name, sep, rx = p.partition("=")
        if not sep or not name:
            ap.error(f"--pick {p!r}: write NAME=REGEX")
        picks.append((name, re.compile(rx, re.MULTILINE)))

    load0 = os.getloadavg()[0]
    start = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    values = {name: [] for name, _ in picks}
    for r in range(a.runs):
        out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if out.returncode != 0:
            sys.exit(f"measure: run {r + 1} exited {out.returncode}:\n{out.stdout[-2000:]}")
        for name, rx in picks:
            m = rx.search(out.stdout)
            if not m:
                sys.exit(f"measure: run {r + 1}: --pick {name} found nothing in:\n{out.stdout[-2000:]}")
            values[name].append(float(m.group(1)))
    load1 = os.getloadavg()[0]

    print(f"measured {start}, {a.runs} runs, on {cpu_name()} ({os.cpu_count()} cores), "
          f"load average {load0:.1f} before and {load1:.1f} after")
    print(f"command: {' '.join(shlex.quote(c) for c in cmd)}")
    print()
    print("| figure | median | min | max | runs |")
    print("|---|---|---|---|---|")
    for name, _ in picks:
        v = values[name]
        print(f"| {name} | {statistics.median(v):.4g} | {min(v):.4g} | {max(v):.4g} | {len(v)} |")


if __name__ == "__main__":
    main()
