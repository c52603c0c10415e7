#!/usr/bin/env python3
"""What the coldstart CLI's analysis costs against reading the same JSON
(`make bench-cli`, docs/performance.md, "The CLI on big inputs").

Inputs, made once and kept in DIR (default .build/bench-cli):
- symbolized timelines of 100,000 and 1,000,000 samples
  (scripts/make-big-timeline.py: 4 threads, ~2,000 functions, stacks 8-40 deep);
- fleets of 10,000 and 100,000 phases-only timelines
  (scripts/make-fleet-timelines.py from Tests/ColdstartTests/Fixtures/ready.json).

Each round runs every command once, in the same order, so the machine's load
falls on all of them alike; the figures are medians over ROUNDS rounds of CPU
time (user + system, from wait4), never wall time. The yardstick is Python's
`json.load` of the same bytes, timed inside its process (interpreter start-up
left out), in the same round: `report` and every export of the 100k file
against `json.load` of it; the 1M file against the 100k file's own time;
`aggregate` per timeline against `json.load` of every file of the fleet,
and its CPU over its wall time (how many CPUs it kept busy).

Each figure is printed with issue 25's target and whether this run met it:
`report`, `report --html` and every export of the 100k file at most ×1.5
`json.load`; at 1M samples at most ×10 the 100k time and 1 GiB peak RSS;
`aggregate` at most 0.5 ms of CPU per timeline, on every CPU.

Usage: scripts/bench-cli.py CLI [ROUNDS] [DIR]
"""
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def run(command, output=subprocess.DEVNULL):
    """(CPU seconds, peak RSS bytes, wall seconds) of one child; fails on a non-zero exit."""
    start = time.monotonic()
    child = subprocess.Popen(command, stdout=output, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.monotonic() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    error = child.stderr.read().decode(errors="replace")
    child.stderr.close()
    if child.returncode != 0:
        sys.exit(f"bench-cli: {' '.join(command)} exited {child.returncode}: {error.strip()}")
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024, wall


def json_load_cpu(paths_file):
    """CPU seconds Python's json.load takes for every file listed in paths_file."""
    code = ("import json, sys, time\n"
            "paths = open(sys.argv[1]).read().split('\\n')[:-1]\n"
            "start = time.process_time()\n"
            "for path in paths:\n"
            "    with open(path, 'rb') as f: json.load(f)\n"
            "print(time.process_time() - start)\n")
    out = subprocess.run([sys.executable, "-c", code, paths_file], check=True, capture_output=True, text=True)
    return float(out.stdout)


def ensure_big(directory, samples):
    path = os.path.join(directory, f"big-{samples}.json")
    if not os.path.exists(path):
        print(f"making {path} …", flush=True)
        subprocess.run([sys.executable, os.path.join(HERE, "make-big-timeline.py"), path + ".tmp", str(samples)], check=True)
        os.rename(path + ".tmp", path)
    return path


def ensure_fleet(directory, count):
    path = os.path.join(directory, f"fleet-{count}")
    if not os.path.exists(path):
        print(f"making {path} …", flush=True)
        source = os.path.join(ROOT, "Tests", "ColdstartTests", "Fixtures", "ready.json")
        subprocess.run([sys.executable, os.path.join(HERE, "make-fleet-timelines.py"), source, path + ".tmp", str(count)],
                       check=True, stdout=subprocess.DEVNULL)
        os.rename(path + ".tmp", path)
    listing = path + ".files"
    with open(listing, "w") as f:
        for base, _, names in sorted(os.walk(path)):
            for name in sorted(names):
                if name.endswith(".json"):
                    f.write(os.path.join(base, name) + "\n")
    return path, listing


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    cli = os.path.abspath(sys.argv[1])
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    directory = os.path.abspath(sys.argv[3]) if len(sys.argv) > 3 else os.path.join(ROOT, ".build", "bench-cli")
    os.makedirs(directory, exist_ok=True)
    out = os.path.join(directory, "out")
    big = {n: ensure_big(directory, n) for n in (100_000, 1_000_000)}
    fleets = {n: ensure_fleet(directory, n) for n in (10_000, 100_000)}
    big_listing = {}
    for n, path in big.items():
        big_listing[n] = path + ".files"
        with open(big_listing[n], "w") as f:
            f.write(path + "\n")

    def commands(path):
        return {
            "report": [cli, "report", path],
            "report --html": [cli, "report", path, "--html", out + ".html"],
            "export pprof": [cli, "export", path, "--format", "pprof", "-o", out + ".pb.gz"],
            "export folded": [cli, "export", path, "--format", "folded", "-o", out + ".folded"],
            "export speedscope": [cli, "export", path, "--format", "speedscope", "-o", out + ".speedscope.json"],
            "export otlp": [cli, "export", path, "--format", "otlp", "-o", out + ".otlp.json"],
        }

    cpu = {}
    rss = {}
    wall = {}

    def record(key, seconds, peak=0, elapsed=0.0):
        cpu.setdefault(key, []).append(seconds)
        wall.setdefault(key, []).append(elapsed)
        rss[key] = max(rss.get(key, 0), peak)

    load_at_start = os.getloadavg()[0]
    for number in range(rounds):
        print(f"round {number + 1} of {rounds}", flush=True)
        for n, path in big.items():
            if n == 100_000:
                record(("json.load", n), json_load_cpu(big_listing[n]))
            for name, command in commands(path).items():
                record((name, n), *run(command))
        for n, (path, listing) in fleets.items():
            record(("json.load fleet", n), json_load_cpu(listing))
            record(("aggregate", n), *run([cli, "aggregate", path, "--json", "-o", out + ".aggregate.json"]))

    median = {key: statistics.median(values) for key, values in cpu.items()}
    print(f"\ncoldstart CLI, CPU time (user + system), median of {rounds} interleaved rounds")
    print(f"{rounds} rounds; load average (1 min) {load_at_start:.1f} at the start, {os.getloadavg()[0]:.1f} at the end, "
          f"on {os.cpu_count()} CPUs")
    missed = []

    def verdict(met, what):
        if not met:
            missed.append(what)
        return "met" if met else "MISSED"

    load = median[("json.load", 100_000)]
    print(f"\n100,000 samples ({os.path.getsize(big[100_000]) / 1e6:.1f} MB): Python json.load {load:.3f} s. "
          "Targets: ×1.5 json.load; 1M ≤ ×10 the 100k time and ≤ 1024 MiB")
    print(f"{'command':<20} {'100k CPU':>9} {'× json.load':>12} {'':>6} {'1M CPU':>9} {'1M ÷ 100k':>10} "
          f"{'1M peak RSS':>12} {'':>6}")
    for name in commands(big[100_000]):
        small, large = median[(name, 100_000)], median[(name, 1_000_000)]
        ratio = statistics.median(c / j for c, j in zip(cpu[(name, 100_000)], cpu[("json.load", 100_000)]))
        peak = rss[(name, 1_000_000)] / 2**20
        print(f"{name:<20} {small:>8.3f}s {ratio:>11.2f}× {verdict(ratio <= 1.5, name + ' ×json.load'):>6} "
              f"{large:>8.3f}s {large / small:>9.2f}× {peak:>8.0f} MiB "
              f"{verdict(large / small <= 10 and peak <= 1024, name + ' at 1M'):>6}")
    print(f"\naggregate, target ≤ 0.5 ms of CPU per timeline on all {os.cpu_count()} CPUs")
    print(f"{'timelines':>10} {'CPU':>9} {'wall':>8} {'CPUs busy':>10} {'ms each':>8} {'':>6} {'json.load ms each':>18} "
          f"{'peak RSS':>9}")
    for n in fleets:
        seconds = median[("aggregate", n)]
        busy = seconds / statistics.median(wall[("aggregate", n)])
        print(f"{n:>10,} {seconds:>8.2f}s {statistics.median(wall[('aggregate', n)]):>7.2f}s {busy:>10.2f} "
              f"{seconds * 1000 / n:>8.3f} {verdict(seconds * 1000 / n <= 0.5, f'aggregate of {n:,}'):>6} "
              f"{median[('json.load fleet', n)] * 1000 / n:>18.3f} {rss[('aggregate', n)] / 2**20:>6.0f} MiB")
    print("\ntargets missed: " + (", ".join(missed) if missed else "none"))


if __name__ == "__main__":
    main()
