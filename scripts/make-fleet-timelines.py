#!/usr/bin/env python3
"""Makes COUNT timelines of a "fleet" from one real timeline, for measuring
`coldstart aggregate` and `coldstart push` (docs/fleet.md).

Usage: scripts/make-fleet-timelines.py SOURCE.json DIR COUNT [--bad N] [--seed S]

Each copy keeps the source's phases, marks and spans but stretches every
phase by its own log-normal factor (sigma 0.3; version 1.4.2 makes the last
phase 20% slower), moving marks, spans and the launch's own times with it;
gets its own pid, start (monotonic and wall clock) and labels (version,
region, host). Samples, the watcher's section and every module but the
executable are dropped: what an always-on, phases-only launch writes.
With --bad N, N more files are broken in the ways a fleet breaks them
(empty, cut short, not JSON). Files are spread over 100 sub-directories.
"""
import argparse
import copy
import json
import os
import random


def warp_function(phases, factors):
    """Maps an old offset (ns) to the new one: piecewise linear over the
    phase boundaries, each phase scaled by its factor; past the last phase,
    shifted by the end's change."""
    old = [phases[0]["startNs"]] + [p["endNs"] for p in phases]
    new = [old[0]]
    for i, p in enumerate(phases):
        new.append(new[-1] + round((p["endNs"] - p["startNs"]) * factors[i]))

    def warp(t):
        if t <= old[0]:
            return t
        for i in range(len(phases)):
            if t <= old[i + 1]:
                span = old[i + 1] - old[i]
                return new[i] + (round((t - old[i]) * (new[i + 1] - new[i]) / span) if span else 0)
        return t + new[-1] - old[-1]
    return warp


def make(source, index, rng):
    doc = copy.deepcopy(source)
    c = doc["coldstart"]
    version = rng.choice(["1.4.1", "1.4.2"])
    factors = [rng.lognormvariate(0, 0.3) for _ in c["phases"]]
    if version == "1.4.2":
        factors[-1] *= 1.2
    warp = warp_function(c["phases"], factors)
    launch = c["launch"]
    for key in ("earliestInitNs", "setupEndNs", "mainNs", "readyNs", "endNs"):
        if key in launch:
            launch[key] = warp(launch[key])
    for phase in c["phases"]:
        phase["startNs"], phase["endNs"] = warp(phase["startNs"]), warp(phase["endNs"])
    for mark in c["marks"]:
        mark["ns"] = warp(mark["ns"])
    for span in c["spans"]:
        span["beginNs"], span["endNs"] = warp(span["beginNs"]), warp(span["endNs"])
    for snapshot in c.get("rusage", []):
        snapshot["ns"] = warp(snapshot["ns"])
    pid = 1000 + rng.randrange(4_000_000)
    launch["startNs"] += index * 1_000_003_000
    if "startRealtimeUs" in launch:
        launch["startRealtimeUs"] += index * 1_000_003
    old_pid = c["process"]["pid"]
    c["process"]["pid"] = pid
    for thread in c.get("threads", []):
        if thread["tid"] == old_pid:
            thread["tid"] = pid
    for item in c["marks"] + c["spans"]:
        for key in ("tid", "endTid"):
            if item.get(key) == old_pid:
                item[key] = pid
    c["labels"] = {"version": version, "region": rng.choice(["eu", "us"]),
                   "host": "host-%03d" % rng.randrange(300)}
    doc["otherData"]["pid"] = pid
    return doc


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("source")
    parser.add_argument("directory")
    parser.add_argument("count", type=int)
    parser.add_argument("--bad", type=int, default=0)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    with open(args.source) as f:
        source = json.load(f)
    c = source["coldstart"]
    for key in ("samples", "sampling", "watch", "symbols", "symbolized"):
        c.pop(key, None)
    c["modules"] = [m for m in c.get("modules", []) if m["path"] == c["process"]["executable"]]
    # Keep the viewers' phase, mark and span events; drop state tracks and samples.
    source["traceEvents"] = [e for e in source.get("traceEvents", [])
                             if e.get("cat") not in ("state", "samples") and e.get("ph") != "C"]
    for i in range(args.count + args.bad):
        directory = os.path.join(args.directory, "%02d" % (i % 100))
        os.makedirs(directory, exist_ok=True)
        path = os.path.join(directory, "launch-%06d.json" % i)
        if i < args.count:
            text = json.dumps(make(source, i, rng), ensure_ascii=False)
        else:
            text = rng.choice(["", '{"coldstart": {"version": 1, "launch": {', "not json"])
        with open(path, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
