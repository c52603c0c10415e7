#!/usr/bin/env python3
"""How long a SIGTERM takes to end a launch, profiled and not (docs/performance.md,
"Exit, kill and the host's signals"). Release builds of HostPatterns `busy N`
(N threads burning CPU, never ready()): each run waits for its "busy" line,
lets it run a little, sends SIGTERM and times kill → reaped (CLOCK_MONOTONIC,
µs). Runs alternate between COLDSTART unset and COLDSTART set (1 kHz and
10 kHz), so the machine's load falls on both alike. Prints medians, quartiles
and the ratio of medians to the unprofiled run; checks every profiled run
ended with status 143 and left a complete timeline.
With --before OTHER (another build's HostPatterns, e.g. of the previous
commit), its profiled runs are interleaved too, for a before/after.
Usage: scripts/bench-kill.py [--before OTHER] HOSTPATTERNS [RUNS] [THREADS]   (defaults 20, 8)"""
import json, os, random, select, signal, statistics, subprocess, sys, tempfile, time

args = sys.argv[1:]
before = None
if args[:1] == ["--before"]:
    before, args = args[1], args[2:]
host = args[0]
runs = int(args[1]) if len(args) > 1 else 20
threads = args[2] if len(args) > 2 else "8"
work = tempfile.mkdtemp()
modes = {"unprofiled": (host, None), "1 kHz": (host, "1000"), "10 kHz": (host, "10000")}
if before:
    modes.update({"before, 1 kHz": (before, "1000"), "before, 10 kHz": (before, "10000")})
times = {mode: [] for mode in modes}
rng = random.Random(1)


def one(mode, binary, hz, run):
    env = {k: v for k, v in os.environ.items() if not k.startswith("COLDSTART")}
    path = os.path.join(work, f"{run}-{hz}-{len(times[mode])}-{mode[0]}.json")
    if hz:
        env.update(COLDSTART=path, COLDSTART_HZ=hz)
    proc = subprocess.Popen([binary, "busy", threads], env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
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
    for mode, (binary, hz) in order:
        one(mode, binary, hz, run)

base = statistics.median(times["unprofiled"])
print(f"SIGTERM → reaped, HostPatterns busy {threads}, {runs} interleaved runs each, ms (CLOCK_MONOTONIC):")
for mode, values in times.items():
    q = statistics.quantiles(values, n=4)
    median = statistics.median(values)
    print(f"  {mode:>14}: median {median:6.2f}  quartiles {q[0]:6.2f}–{q[2]:6.2f}  max {max(values):6.2f}"
          f"  ratio {median / base:5.2f}")
