#!/usr/bin/env python3
"""Fits the loader's relocation time to its counts, for `coldstart inspect`'s
estimate (docs/inspect.md, "Estimates"): runs each program N times with
LD_DEBUG=statistics, takes the median "time needed for relocation" (TSC
cycles, converted with the TSC frequency the kernel detected), and fits
ms = a * look-ups + b * relative relocations by least squares through zero.

Usage: scripts/calibrate-loader.py [-n RUNS] PROGRAM [ARG...] [-- PROGRAM ...]
"""
import os, re, statistics, subprocess, sys


def tsc_mhz():
    try:
        text = subprocess.run(["dmesg"], capture_output=True, text=True).stdout
        m = re.search(r"tsc: (?:Refined TSC clocksource calibration|Detected): ([0-9.]+) MHz", text)
        if m:
            return float(m.group(1))
    except OSError:
        pass
    with open("/proc/cpuinfo") as f:
        return float(re.search(r"cpu MHz\s*:\s*([0-9.]+)", f.read()).group(1))


def run(argv):
    env = dict(os.environ, LD_DEBUG="statistics")
    err = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True).stderr
    def first(pattern):
        m = re.search(pattern, err)
        return int(m.group(1)) if m else None
    return (first(r"time needed for relocation: (\d+) cycles"), first(r"number of relocations: (\d+)"),
            first(r"number of relative relocations: (\d+)"))


def main():
    args = sys.argv[1:]
    runs = 15
    if args[:1] == ["-n"]:
        runs, args = int(args[1]), args[2:]
    programs, current = [], []
    for a in args:
        if a == "--":
            programs.append(current); current = []
        else:
            current.append(a)
    if current:
        programs.append(current)
    mhz = tsc_mhz()
    rows = []
    for argv in programs:
        samples = [run(argv) for _ in range(runs)]
        samples = [s for s in samples if None not in s]
        if not samples:
            print(f"{argv[0]}: no statistics", file=sys.stderr); continue
        ms = statistics.median(s[0] for s in samples) / (mhz * 1000)
        lookups, relative = samples[0][1], samples[0][2]
        rows.append((os.path.basename(argv[0]), ms, lookups, relative))
    # Least squares through zero for two unknowns: solve the 2x2 normal equations.
    sll = sum(l * l for _, _, l, _ in rows); srr = sum(r * r for _, _, _, r in rows)
    slr = sum(l * r for _, _, l, r in rows)
    sty = sum(t * l for _, t, l, _ in rows); sry = sum(t * r for _, t, _, r in rows)
    det = sll * srr - slr * slr
    a = (sty * srr - sry * slr) / det; b = (sry * sll - sty * slr) / det
    print(f"TSC {mhz:.2f} MHz, {runs} runs each, medians")
    print(f"{'program':24} {'reloc ms':>9} {'look-ups':>9} {'relative':>9} {'fit ms':>8}")
    for name, t, l, r in rows:
        print(f"{name:24} {t:9.3f} {l:9d} {r:9d} {a * l + b * r:8.3f}")
    print(f"fit: {a * 1e6:.1f} ns per look-up, {b * 1e6:.2f} ns per relative relocation")


main()
