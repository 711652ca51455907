#!/usr/bin/env python3
"""Summarizes alternating runs of two lab builds (bench/labs/*.cu): the input holds each run's output
after a line '== <build> <run>'; each output line that names a case and ends its timing as
'<ms> ms' is keyed by the text before the time. Prints, per case, each build's times, their minimum
and median, and the second build's median over the first's. Allocation placement moves a whole run's
times by up to 8% on the H200 (bench/NOTES.md, "Vectors a thread by the op's cost"), hence several
alternating runs. Usage: ab_medians.py runs.txt"""
import collections
import re
import statistics
import sys

times = collections.defaultdict(lambda: collections.defaultdict(list))
builds = []
build = None
for line in open(sys.argv[1]):
    if line.startswith("=="):
        build = line.split()[1]
        if build not in builds:
            builds.append(build)
        continue
    m = re.match(r"(.*?)\s+(\d+\.\d+) ms", line)
    if m and build:
        key = re.sub(r"\s+", " ", re.sub(r"(cost|vectors a thread)\s+-?\d+", "", m.group(1))).strip()
        times[key][build].append(float(m.group(2)))
for key, per in times.items():
    cells = []
    for b in builds:
        t = per.get(b, [])
        cells.append(f"{b}: min {min(t):.4f} med {statistics.median(t):.4f}" if t else f"{b}: -")
    ratio = ""
    if len(builds) == 2 and all(per.get(b) for b in builds):
        ratio = f"  {statistics.median(per[builds[1]]) / statistics.median(per[builds[0]]):.3f}x"
    print(f"{key:45s} " + " | ".join(cells) + ratio)
