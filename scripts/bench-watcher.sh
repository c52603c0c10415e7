#!/usr/bin/env bash
# What the off-CPU watcher costs (docs/performance.md, "Off-CPU watcher").
# Release builds; each scenario launched RUNS times with the watcher on,
# interleaved with RUNS launches with COLDSTART_WATCH=0. Prints, per scenario:
# the watcher's own CPU per second it watched (its thread's CPU clock, exact),
# the cost of one look (median / p99, CLOCK_MONOTONIC, 1 µs buckets), and the
# launch's wall time on/off (medians, COLDSTART_SPAWN_NS start: exact) as a ratio.
# Usage: scripts/bench-watcher.sh [RUNS]   (default 15)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-15}
swift build -c release >/dev/null
swift build -c release --package-path Tests/Fixtures >/dev/null
bin=.build/release
fixtures=Tests/Fixtures/.build/release
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

scenario() {   # name, then the command
    local name=$1; shift
    for mode in on off; do mkdir -p "$work/$name/$mode"; done
    for ((i = 0; i < runs; i++)); do
        COLDSTART_WATCH=1 "$bin/coldstart" run -n 1 --warmup 0 --append --out "$work/$name/on" -- "$@" >/dev/null 2>&1
        COLDSTART_WATCH=0 "$bin/coldstart" run -n 1 --warmup 0 --append --out "$work/$name/off" -- "$@" >/dev/null 2>&1
    done
    python3 - "$name" "$work/$name" <<'EOF'
import json, os, statistics, sys
name, base = sys.argv[1], sys.argv[2]
def load(mode):
    out = []
    for f in sorted(os.listdir(os.path.join(base, mode))):
        if f.endswith(".json"):
            with open(os.path.join(base, mode, f)) as fh:
                out.append(json.load(fh)["coldstart"])
    return out
on, off = load("on"), load("off")
watch = [t["watch"] for t in on if "watch" in t]
per_s = [w["cpuNs"] / 1e6 / ((w["stopNs"] - w["startNs"]) / 1e9) for w in watch]
per_launch = statistics.median(w["cpuNs"] / 1e6 for w in watch)
threads = statistics.median(len(w["threads"]) for w in watch)
hz = statistics.median(w["effectiveHz"] for w in watch)
tick = statistics.median(w["tickNs"]["median"] for w in watch) / 1000
p99 = statistics.median(w["tickNs"]["p99"] for w in watch) / 1000
wall_on = statistics.median(t["launch"]["endNs"] for t in on) / 1e6
wall_off = statistics.median(t["launch"]["endNs"] for t in off) / 1e6
def phase(ts, kind):
    return statistics.median(sum(p["endNs"] - p["startNs"] for p in t["phases"] if p["kind"] == kind) for t in ts) / 1e6
print(f"{name:<28} {threads:>7.0f} {hz:>7.0f} {statistics.median(per_s):>10.2f} {per_launch:>8.2f} {tick:>7.1f} {p99:>7.1f}"
      f" {wall_off:>9.2f} {wall_on:>9.2f} {wall_on / wall_off:>6.3f}"
      f" {phase(off, 'initializers'):>8.3f} {phase(on, 'initializers'):>8.3f}")
EOF
}

echo "runs per side: $runs; rate: COLDSTART_HZ default (1000 Hz); machine: $(nproc) CPUs"
printf '%-28s %7s %7s %10s %8s %7s %7s %9s %9s %6s %8s %8s\n' scenario threads "Hz" "CPU ms/s" "CPU ms" "look µs" "p99 µs" \
    "wall off" "wall on" "on/off" "init off" "init on"
scenario "ServiceStartup (CPU-bound)" "$bin/ServiceStartup"
scenario "BlockedHost" "$fixtures/BlockedHost" "$work/fifo"
scenario "main thread only, 300 ms" "$fixtures/ParkedThreads" 0 300
scenario "ParkedThreads 16 × 300 ms" "$fixtures/ParkedThreads" 16 300
scenario "ParkedThreads 60 × 300 ms" "$fixtures/ParkedThreads" 60 300
echo "CPU ms/s: the watcher thread's CPU per second it watched; CPU ms: per launch. look: one tick's wall time (median, p99 over"
echo "the launch). wall: process start → ready() in ms (median). init: the library-initializers phase in ms,"
echo "where the watcher thread is created (median)."
