#!/usr/bin/env python3
"""Writes a symbolized timeline with N synthetic samples (default 100,000) for
the HTML and export benchmarks: a call tree of ~2,000 functions in 20 modules,
walked in time order so the main thread's flame chart has realistic runs, and
three worker threads. With --distinct, every sample is on a thread of its own
and its leaf frame at an address no other sample has (unnamed: not in the
symbol table), the worst case for per-thread and per-address work in the CLI.
Usage: make-big-timeline.py [--distinct] OUT [SAMPLES]"""
import json, random, sys

args = [a for a in sys.argv[1:] if a != "--distinct"]
distinct = len(args) < len(sys.argv) - 1
out = args[0]
count = int(args[1]) if len(args) > 1 else 100_000
rng = random.Random(42)
pid, hz = 4242, 10_000
period = 1_000_000_000 // hz
modules = [{"path": f"/usr/lib/x86_64-linux-gnu/libmod{i}.so", "buildId": f"{i:040x}",
            "base": 0x7f0000000000 + i * 0x1000000, "start": 0x7f0000000000 + i * 0x1000000,
            "end": 0x7f0000000000 + i * 0x1000000 + 0x800000} for i in range(20)]
modules[0]["path"] = "/opt/app/App"
symbols = {}
functions = []
for i in range(2000):
    m = rng.randrange(20)
    address = 0x1000 + i * 0x40
    name = f"static App.Module{m}.function{i}(argument: Int, other: String) -> [Int]"
    symbols[f"{m}:{address}"] = {"name": name, "system": f"$s3App7Module{m}C8function{i}yyF"}
    functions.append([m, address])

children = {i: rng.sample(range(2000), 4) for i in range(2000)}
def walk(length):
    stack = [0]
    while len(stack) < length:
        stack.append(rng.choice(children[stack[-1]]))
    return stack

end_ns = count * period // 1 + 20_000_000
samples = []
t = 20_000_000
stack = walk(12)
for n in range(count):
    # Mostly the same stack with the leaf varying; sometimes a new branch.
    r = rng.random()
    if r < 0.02:
        stack = walk(rng.randrange(8, 40))
    elif r < 0.3:
        cut = rng.randrange(1, len(stack))
        stack = stack[:cut] + walk(rng.randrange(2, 8))[1:]
    tid = pid if n % 4 else pid + 1 + (n // 4) % 3
    frames = []
    if distinct:
        tid = pid + 1 + n
        frames += [n % 20, 0x200000 + n * 16]
    for f in reversed(stack):
        frames += functions[f]
    samples.append([t, tid, frames])
    t += period // 4 if tid != pid else period

end_ns = t + 1_000_000
phases = [("kernel exec + loader", "loader", 0, 10_000_000),
          ("library initializers", "initializers", 10_000_000, 20_000_000),
          ("main → config loaded", "app", 20_000_000, end_ns // 2),
          ("config loaded → ready", "app", end_ns // 2, end_ns)]
doc = {"displayTimeUnit": "ms", "otherData": {"coldstartFormat": 1}, "traceEvents": [],
       "coldstart": {"version": 1,
         "launch": {"startNs": 1_000_000_000, "startSource": "spawn-env", "startPrecisionNs": 0, "startRealtimeUs": 1_700_000_000_000_000,
                    "earliestInitNs": 10_000_000, "mainNs": 20_000_000, "readyNs": end_ns, "endNs": end_ns,
                    "completed": True, "endReason": "ready"},
         "process": {"pid": pid, "executable": "/opt/app/App", "kernelRelease": "6.1.0", "swiftVersion": "6.3"},
         "rusage": [], "marks": [{"name": "config loaded", "ns": end_ns // 2, "tid": pid, "phaseBoundary": True, "extended": False}],
         "spans": [{"name": "open store", "beginNs": 30_000_000, "endNs": end_ns - 5_000_000, "tid": pid, "endTid": pid, "unfinished": False}],
         "phases": [{"name": a, "kind": b, "startNs": c, "endNs": d, "rusage": None} for a, b, c, d in phases],
         "threads": [{"tid": pid, "name": "main"}] + [{"tid": pid + 1 + i, "name": f"worker {i}"}
                                                       for i in range(count if distinct else 3)],
         "sampling": {"clock": "perf-task-clock", "unwinder": "libunwind", "requestedHz": hz, "effectiveHz": hz,
                      "loweredHz": None, "startNs": 10_000_000, "stopNs": end_ns, "samples": count, "dropped": 0},
         "modules": modules, "samples": samples, "symbols": symbols, "symbolized": True}}
with open(out, "w") as f:
    json.dump(doc, f, separators=(",", ":"), ensure_ascii=False)
