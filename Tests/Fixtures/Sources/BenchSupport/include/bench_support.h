#ifndef BENCH_SUPPORT_H
#define BENCH_SUPPORT_H
#include <stdint.h>

/// Spawns `path` with `argv`/`envp`, its stdout on a pseudo-terminal (so the
/// child's stdio flushes each line) and its stderr on /dev/null; returns the
/// CLOCK_MONOTONIC nanoseconds from just before the spawn until the child is
/// reaped, and in *line_ns those until a line containing `marker` arrived.
/// Negative on failure (no marker, spawn error, non-zero exit).
int64_t bench_run(const char *path, char *const argv[], char *const envp[], const char *marker, int64_t *line_ns);

/// bench_run's time until the marker line only (it still waits for the child).
int64_t bench_time_to_line(const char *path, char *const argv[], char *const envp[], const char *marker);

/// What the kernel charges per sample, without any unwinding: runs a fixed
/// CPU loop on this thread twice, without and with a perf task-clock event at
/// `hz` whose overflow signals this thread (as the sampler's does) into an
/// empty handler, and returns the extra thread CPU time per signal in ns
/// (negative on failure), the signal count and the loop's CPU ms without
/// sampling. Uses SIGPROF; call it before anything else does.
double bench_signal_cost_ns(int hz, long *signals, double *loop_ms);

/// The same loop with the sampler's kernel-side sample instead of a signal:
/// the event writes {tid, time, frame-pointer chain} and, when `stack_bytes`
/// > 0, the user registers and that much of the user stack into a ring that
/// another thread empties. Returns the extra thread CPU time per sample in
/// ns (negative on failure), the sample count and the loop's CPU ms.
double bench_ring_cost_ns(int hz, int stack_bytes, long *samples, double *loop_ms);

/// How many processes of the machine hold a perf event open now (descriptors
/// that are "anon_inode:[perf_event]" under /proc/<pid>/fd; only the
/// processes this user may inspect), -1 if /proc cannot be read. Zero for
/// long enough means the kernel's perf scheduler hooks are off again.
/// `except_pid` (0 for none) is not counted: a keep-warm the bench runs.
int bench_perf_event_holders(int except_pid);

/// A pipe ping-pong between this process and a forked child, both on CPU
/// `cpu`: `rounds` round trips of one byte (two context switches each);
/// CLOCK_MONOTONIC ns per round trip, negative on failure. What a context
/// switch costs, with the kernel's perf scheduler hooks on or off.
double bench_pingpong_ns(long rounds, int cpu);

/// Opens counting perf events and closes them: with `cpu_wide` a CPU-clock
/// event per online CPU (pid -1; needs CAP_PERFMON or perf_event_paranoid
/// <= 0), else a task-clock event on this process; returns the ms the opens
/// took (CLOCK_MONOTONIC) and in *opened how many opened.
double bench_open_ms(int cpu_wide, int *opened);

#endif
