#!/usr/bin/env python3
"""The cost of what `coldstart run` adds before main, and the kernel share it
reports, in one interleaved run (docs/before-main.md, "Measured").

usage: bench-before-main.py RUNS COLDSTART[,COLDSTART...] -- PROGRAM [ARGS...]

Each round runs, in turn: the program alone (fork + exec, its CPU from
wait4); the program with LD_DEBUG=statistics written to a file; and the
program under each `coldstart run` binary given (its CPU from the end
snapshot the launcher took with wait4). Prints each variant's median CPU and
its ratio to the program alone, then the whole launch's kernel share three
ways: getrusage's system/(user+system) of the plain runs (tick-based, so
only the mean over many runs means anything), and per coldstart variant
1 − user samples × period / CPU and, when the launcher sampled kernel mode,
kernel samples / all samples.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile


def cpu_of_child(argv, env):
    pid = os.fork()
    if pid == 0:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        os.execve(argv[0], argv, env)
    _, status, usage = os.wait4(pid, 0)
    if status != 0:
        sys.exit(f"{argv[0]} failed: status {status}")
    return usage.ru_utime + usage.ru_stime, usage.ru_stime


def coldstart_run(coldstart, program, out):
    subprocess.run([coldstart, "run", "-n", "1", "--warmup", "0", "--out", out, "--"] + program,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    document = json.load(open(os.path.join(out, "run-1.json")))["coldstart"]
    end = next(s for s in document["rusage"] if s["at"] in ("end", "ready"))
    cpu = (end["userNs"] + end["systemNs"]) / 1e9
    period = 1 / document["sampling"]["requestedHz"]
    user = len(document["samples"]) * period
    kernel_rows = document.get("launcher", {}).get("kernelSamples")
    sampled_kernel = len(kernel_rows) / (len(kernel_rows) + len(document["samples"])) if kernel_rows is not None else None
    return cpu, max(0.0, 1 - user / cpu), sampled_kernel


def main():
    if len(sys.argv) < 5 or "--" not in sys.argv:
        sys.exit(__doc__)
    runs = int(sys.argv[1])
    coldstarts = sys.argv[2].split(",")
    program = sys.argv[sys.argv.index("--") + 1:]
    env = dict(os.environ)
    scratch = tempfile.mkdtemp(prefix="bench-before-main-")
    debug_env = dict(env, LD_DEBUG="statistics", LD_DEBUG_OUTPUT=os.path.join(scratch, "ld"))
    names = ["plain fork + exec", "LD_DEBUG=statistics"] + [f"coldstart run ({os.path.basename(c)})" for c in coldstarts]
    cpu = {name: [] for name in names}
    system_share, rusage_share = [], {c: [] for c in coldstarts}
    sample_share = {c: [] for c in coldstarts}
    for _ in range(runs):
        total, system = cpu_of_child(program, env)
        cpu[names[0]].append(total)
        system_share.append(system / total)
        cpu[names[1]].append(cpu_of_child(program, debug_env)[0])
        for name, coldstart in zip(names[2:], coldstarts):
            out = tempfile.mkdtemp(dir=scratch)
            total, share, sampled = coldstart_run(coldstart, program, out)
            cpu[name].append(total)
            rusage_share[coldstart].append(share)
            if sampled is not None:
                sample_share[coldstart].append(sampled)
    base = statistics.median(cpu[names[0]])
    print(f"{os.path.basename(program[0])} {' '.join(program[1:])}: {runs} interleaved rounds, CPU of the program (user + system)")
    for name in names:
        median = statistics.median(cpu[name])
        print(f"  {name:45} median {median * 1000:7.2f} ms  ratio {median / base:.3f}")
    print("kernel share of the whole launch's CPU:")
    print(f"  getrusage system/(user+system), plain runs: mean {statistics.mean(system_share) * 100:.1f}%")
    for coldstart in coldstarts:
        line = f"  {os.path.basename(coldstart)}: 1 - user samples x period / CPU: median {statistics.median(rusage_share[coldstart]) * 100:.1f}%"
        if sample_share[coldstart]:
            line += f"; kernel samples / all samples: median {statistics.median(sample_share[coldstart]) * 100:.1f}%"
        print(line)
    subprocess.run(["rm", "-rf", scratch])


if __name__ == "__main__":
    main()
