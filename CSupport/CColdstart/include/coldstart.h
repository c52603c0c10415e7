// Coldstart capture layer: the C functions the Swift runtime library calls.
// Knows nothing of Swift. Every function here is safe to call from any thread;
// each says whether it is also async-signal-safe.
#ifndef COLDSTART_H
#define COLDSTART_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// True while a launch is being recorded (profiling on, launch not over).
/// One relaxed atomic load. Async-signal-safe.
bool cs_is_recording(void);

/// True when profiling is on for this process (even after the launch ended).
/// Async-signal-safe.
bool cs_is_enabled(void);

/// CLOCK_MONOTONIC in nanoseconds. Async-signal-safe (vDSO).
uint64_t cs_monotonic_ns(void);

/// Records an instant mark. After ready() it is recorded as "extended" and is
/// never a phase boundary. Copies `name`. Lock-free; async-signal-safe.
void cs_mark(const char *name, bool phase_boundary);

/// Records the start of a span and returns its id (0 when not recording or
/// out of room). Lock-free; async-signal-safe.
uint32_t cs_span_begin(const char *name);

/// Ends the span `id` (0 is ignored). Lock-free; async-signal-safe.
void cs_span_end(uint32_t id);

/// The launch is complete. The first call wins; later calls are ignored.
/// Removes the abandonment signal handlers, then writes the timeline on a
/// background thread (after COLDSTART_EXTEND_MS). Not async-signal-safe.
void cs_ready(void);

/// Records the Swift version the recording library was compiled with.
/// Not async-signal-safe (first caller wins, later calls are cheap).
void cs_set_swift_version(const char *version);

// ---- Pure helpers, exposed for tests. All async-signal-safe. ----

/// Parses field 22 (starttime, clock ticks since boot) of a /proc/<pid>/stat
/// line. Fields are counted after the *last* ')' because the command name may
/// contain spaces and parentheses. Returns 0 on success, -1 on malformed input.
int cs_parse_proc_stat_starttime(const char *buf, size_t len, uint64_t *ticks);

/// Converts clock ticks since boot to CLOCK_BOOTTIME nanoseconds.
uint64_t cs_ticks_to_ns(uint64_t ticks, uint64_t ticks_per_second);

/// Converts a CLOCK_BOOTTIME time to CLOCK_MONOTONIC given
/// (CLOCK_BOOTTIME − CLOCK_MONOTONIC) now; saturates at 0.
uint64_t cs_boottime_to_monotonic(uint64_t boottime_ns, uint64_t boot_minus_mono_ns);

/// Parses a decimal unsigned integer that fills the whole string; -1 if not.
int cs_parse_u64(const char *s, uint64_t *out);

/// What /proc/<pid>/task/<tid>/syscall says about a thread.
struct cs_task_syscall {
    int64_t nr;          // the syscall; -1 blocked outside one; -2 running
    uint64_t args[6];    // its arguments (unset unless nr >= 0)
    uint64_t sp, pc;     // user stack pointer and program counter
    bool running;        // the file said "running" (runnable or on a CPU)
};

/// Parses a task's syscall file: "running", "-1 0xSP 0xPC" or
/// "NR 0xA0 … 0xA5 0xSP 0xPC". Returns 0, or -1 on malformed input.
int cs_parse_task_syscall(const char *buf, size_t len, struct cs_task_syscall *out);

/// Parses a task's schedstat: "RUN_NS WAIT_NS TIMESLICES". 0 or -1.
int cs_parse_schedstat(const char *buf, size_t len, uint64_t *run_ns, uint64_t *wait_ns, uint64_t *slices);

/// Parses a task's stat line: the state letter (field 3) and the minor and
/// major fault counts (fields 10 and 12), counting after the last ')'. 0 or -1.
int cs_parse_task_stat(const char *buf, size_t len, char *state, uint64_t *minflt, uint64_t *majflt);

#ifdef __cplusplus
}
#endif
#endif
