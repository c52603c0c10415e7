#!/usr/bin/env python3
"""What profiling costs where perf_event_open is refused, against where it is
allowed, in one interleaved run (docs/containers.md, docs/performance.md).

usage: bench-traced.py RUNS NOPERF COLDSTART -- PROGRAM [ARGS...]

NOPERF is Tests/Fixtures' NoPerf (a seccomp filter refusing perf_event_open
with EPERM, as a container's default profile does). PROGRAM links Coldstart.
Each round runs, in turn:

  plain                 the program alone (fork + exec; CPU from wait4)
  plain, refused        the same under NoPerf (the refused variants' baseline)
  lone, allowed         COLDSTART=FILE: the in-process perf sampler
  lone, refused         COLDSTART=FILE under NoPerf: the POSIX-timer fallback
  run, allowed          coldstart run -n 1 (perf events from exec + the app's sampler)
  run, refused          coldstart run -n 1 under NoPerf: the ptrace launcher (default rate)
  run, refused, 1 kHz   the same with --hz 1000 (with the default, the cost per sample)

and prints per variant the median CPU time of the program (wait4: the
launcher's, written into the timeline, for `coldstart run`), its ratio to
its baseline, the median samples per launch, and for the ptrace launcher the
time the program's threads spent stopped per sample and the cost per sample
(extra CPU between the two rates / extra samples).
"""
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile

# The program alone, its CPU from wait4: bench-before-main.py's.
_spec = importlib.util.spec_from_file_location("bench_before_main", os.path.join(os.path.dirname(__file__), "bench-before-main.py"))
_before_main = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_before_main)


def spawn(argv, env):
    return _before_main.cpu_of_child(argv, env)[0] * 1000


def samples_in(path):
    document = json.load(open(path))["coldstart"]
    return len(document.get("samples", [])), document


def run_variant(prefix, coldstart, program, out, extra, env):
    subprocess.run(prefix + [coldstart, "run", "-n", "1", "--warmup", "0", "--out", out] + extra + ["--"] + program,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, env=env)
    count, document = samples_in(os.path.join(out, "run-1.json"))
    end = next(s for s in document["rusage"] if s["at"] in ("end", "ready"))
    cpu = (end["userNs"] + end["systemNs"]) / 1e6
    tracer = document.get("launcher", {}).get("tracer")
    stopped = tracer["stoppedNs"] / 1e6 if tracer else None
    wall = (document["launch"]["endNs"]) / 1e6
    return cpu, count, stopped, wall


def main():
    if len(sys.argv) < 6 or "--" not in sys.argv:
        sys.exit(__doc__)
    runs = int(sys.argv[1])
    noperf, coldstart = sys.argv[2], sys.argv[3]
    program = sys.argv[sys.argv.index("--") + 1:]
    env = {k: v for k, v in os.environ.items() if not k.startswith("COLDSTART")}
    scratch = tempfile.mkdtemp(prefix="bench-traced-")
    names = ["plain", "plain, refused", "lone, allowed", "lone, refused", "run, allowed", "run, refused", "run, refused, 1 kHz"]
    cpu = {n: [] for n in names}
    samples = {n: [] for n in names}
    stopped = {n: [] for n in names}
    wall = {n: [] for n in names}
    for round_index in range(runs):
        file = os.path.join(scratch, "lone.json")
        cpu["plain"].append(spawn(program, env))
        cpu["plain, refused"].append(spawn([noperf] + program, env))
        for name, prefix in [("lone, allowed", []), ("lone, refused", [noperf])]:
            if os.path.exists(file):
                os.remove(file)
            cpu[name].append(spawn(prefix + program, dict(env, COLDSTART=file)))
            samples[name].append(samples_in(file)[0])
        for name, prefix, extra in [("run, allowed", [], []), ("run, refused", [noperf], []),
                                    ("run, refused, 1 kHz", [noperf], ["--hz", "1000"])]:
            out = os.path.join(scratch, f"r{round_index}-{len(cpu[name])}-{name.replace(' ', '').replace(',', '')}")
            c, n, s, w = run_variant(prefix, coldstart, program, out, extra, env)
            cpu[name].append(c)
            samples[name].append(n)
            wall[name].append(w)
            if s is not None:
                stopped[name].append(s / max(n, 1) * 1000)
    median = statistics.median
    print(f"{os.path.basename(program[0])}: {runs} interleaved rounds; CPU of the program, medians (ms)")
    print(f"{'variant':24} {'CPU ms':>8} {'ratio':>7} {'samples':>8} {'run wall ms':>12} {'stopped µs/sample':>18}")
    for name in names:
        base = "plain, refused" if "refused" in name else "plain"
        ratio = median(cpu[name]) / median(cpu[base])
        line = f"{name:24} {median(cpu[name]):8.2f} {ratio:7.3f}"
        line += f" {median(samples[name]):8.1f}" if samples[name] else f" {'':>8}"
        line += f" {median(wall[name]):12.2f}" if wall[name] else f" {'':>12}"
        line += f" {median(stopped[name]):18.1f}" if stopped[name] else ""
        print(line)
    extra_cpu = median(cpu["run, refused"]) - median(cpu["run, refused, 1 kHz"])
    extra_samples = median(samples["run, refused"]) - median(samples["run, refused, 1 kHz"])
    if extra_samples > 0:
        print(f"cost per traced sample (CPU of the program): {extra_cpu / extra_samples * 1000:.1f} µs "
              f"({extra_cpu:.2f} ms for {extra_samples:.1f} more samples)")


if __name__ == "__main__":
    main()
