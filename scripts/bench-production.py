#!/usr/bin/env python3
"""What production mode costs a launch (docs/fleet.md, "Recording in production").

Runs PROGRAM in interleaved rounds, the order rotated each round, as
  off      COLDSTART unset
  fixed    COLDSTART=1, COLDSTART_SAMPLE=0 (phases and marks only), no rotation
  phases   the same in a rotating directory (COLDSTART_KEEP=20)
  sampled  COLDSTART=1, COLDSTART_SAMPLE=1 (stack sampling and the off-CPU watcher)
and prints, per arm, the median wall time from spawn to exit (CLOCK_MONOTONIC
via time.perf_counter_ns, ns precision; includes fork/exec and the exit) and
the median CPU time of the process (user + system, wait4's rusage,
microsecond units, tick-accounted by the kernel), each with the median of the
per-round ratios to "off" and its interquartile range. CPU time is the figure
to trust on a loaded machine: wall time there mostly measures the neighbours.

    scripts/bench-production.py --runs 40 /tmp/app/ServiceStartup [ARGS...]
"""
import argparse, os, statistics, subprocess, tempfile, time

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("program", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    base = {k: v for k, v in os.environ.items() if not k.startswith("COLDSTART")}
    with tempfile.TemporaryDirectory() as d:
        arms = {
            "off": base,
            "fixed": dict(base, COLDSTART="1", COLDSTART_DIR=d, COLDSTART_SAMPLE="0"),
            "phases": dict(base, COLDSTART="1", COLDSTART_DIR=d, COLDSTART_SAMPLE="0", COLDSTART_KEEP="20"),
            "sampled": dict(base, COLDSTART="1", COLDSTART_DIR=d, COLDSTART_SAMPLE="1", COLDSTART_KEEP="20"),
        }
        names = list(arms)
        times = {n: [] for n in names}
        cpu = {n: [] for n in names}
        for _ in range(25):   # warm the page cache and fill the rotating directory
            for n in names: subprocess.run(a.program, env=arms[n], stdout=subprocess.DEVNULL, check=True)
        for r in range(a.runs):
            order = names[r % len(names):] + names[:r % len(names)]
            for n in order:
                t0 = time.perf_counter_ns()
                child = subprocess.Popen(a.program, env=arms[n], stdout=subprocess.DEVNULL)
                _, status, ru = os.wait4(child.pid, 0)
                times[n].append(time.perf_counter_ns() - t0)
                child.returncode = os.waitstatus_to_exitcode(status)
                if child.returncode != 0: raise SystemExit(f"{n}: exit status {child.returncode}")
                cpu[n].append((ru.ru_utime + ru.ru_stime) * 1e9)
        left = len([f for f in os.listdir(d) if f.startswith("coldstart-")])
    print(f"{a.runs} interleaved rounds of {os.path.basename(a.program[0])}; timelines left in the rotating directory: {left}")
    for label, data in (("wall", times), ("cpu", cpu)):
        for n in names:
            ratios = sorted(t / o for t, o in zip(data[n], data["off"]))
            q = statistics.quantiles(ratios, n=4)
            print(f"{label:4} {n:8} median {statistics.median(data[n]) / 1e6:8.2f} ms   ratio to off: median {statistics.median(ratios):.3f} (IQR {q[0]:.3f}–{q[2]:.3f})")

if __name__ == "__main__":
    main()
