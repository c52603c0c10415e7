#ifndef BENCH_SUPPORT_H
#define BENCH_SUPPORT_H
#include <stdint.h>

/// Spawns `path` with `argv`/`envp`, its stdout on a pseudo-terminal (so the
/// child's stdio flushes each line) and its stderr on /dev/null, and returns
/// the CLOCK_MONOTONIC nanoseconds from just before the spawn until a line
/// containing `marker` arrives; then waits for the child. Negative on failure
/// (no marker, spawn error, non-zero exit).
int64_t bench_time_to_line(const char *path, char *const argv[], char *const envp[], const char *marker);

#endif
