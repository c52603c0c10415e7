#!/usr/bin/env python3
"""How long a SIGTERM takes to end a launch, profiled and not (docs/performance.md,
"Exit, kill and the host's signals"). Release builds of HostPatterns `busy N`
(N threads burning CPU, never ready()): each run waits for its "busy" line,
lets it run a little, sends SIGTERM and times kill → reaped (CLOCK_MONOTONIC,
µs). Runs alternate between COLDSTART unset and COLDSTART set (1 kHz and
10 kHz), so the machine's load falls on both alike. Prints medians, quartiles
and the ratio of medians to the unprofiled run; checks every profiled run
ended with status 143 and left a complete timeline.
Usage: scripts/bench-kill.py HOSTPATTERNS [RUNS] [THREADS]   (defaults 20, 8)"""
import json, os, random, select, signal, statistics, subprocess, sys, tempfile, time

host = sys.argv[1]
runs = int(sys.argv[2]) if len(sys.argv) > 2 else 20
threads = sys.argv[3] if len(sys.argv) > 3 else "8"
work = tempfile.mkdtemp()
modes = {"unprofiled": None, "1 kHz": "1000", "10 kHz": "10000"}
times = {mode: [] for mode in modes}
rng = random.Random(1)


def one(mode, hz, run):
    env = {k: v for k, v in os.environ.items() if not k.startswith("COLDSTART")}
    path = os.path.join(work, f"{run}-{hz}.json")
    if hz:
        env.update(COLDSTART=path, COLDSTART_HZ=hz)
    proc = subprocess.Popen([host, "busy", threads], env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    ready, _, _ = select.select([proc.stdout], [], [], 30)
    if not ready or not proc.stdout.readline().startswith(b"busy"):
        proc.kill()
        sys.exit(f"{mode}: the host did not start")
    time.sleep(rng.uniform(0.05, 0.25))   # mid-launch: sampled, watched
    start = time.monotonic_ns()
    proc.send_signal(signal.SIGTERM)
    status = proc.wait()
    elapsed = (time.monotonic_ns() - start) / 1e6
    if status != -signal.SIGTERM:
        sys.exit(f"{mode}: status {status}, not killed by SIGTERM (143)")
    if hz:
        with open(path) as f:
            launch = json.load(f)["coldstart"]["launch"]
        if launch.get("endReason") != "signal" or launch.get("completed") is not False:
            sys.exit(f"{mode}: timeline does not record the abandoned launch: {launch}")
        os.remove(path)
    times[mode].append(elapsed)


for run in range(runs):
    order = list(modes.items())
    rng.shuffle(order)
    for mode, hz in order:
        one(mode, hz, run)

base = statistics.median(times["unprofiled"])
print(f"SIGTERM → reaped, HostPatterns busy {threads}, {runs} interleaved runs each, ms (CLOCK_MONOTONIC):")
for mode, values in times.items():
    q = statistics.quantiles(values, n=4)
    median = statistics.median(values)
    print(f"  {mode:>10}: median {median:6.2f}  quartiles {q[0]:6.2f}–{q[2]:6.2f}  max {max(values):6.2f}"
          f"  ratio {median / base:5.2f}")
