// Pure parsers and conversions of the capture layer and the wait causes'
// names, exposed for its tests (the host-facing API is coldstart.h). All
// async-signal-safe. What only a test may run is in Tests/CTestOnly, which
// no host links.
#ifndef COLDSTART_TESTING_H
#define COLDSTART_TESTING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Parses field 22 (starttime, clock ticks since boot) of a /proc/<pid>/stat
/// line. Fields are counted after the *last* ')' because the command name may
/// contain spaces and parentheses. Returns 0 on success, -1 on malformed input.
int cs_parse_proc_stat_starttime(const char *buf, size_t len, uint64_t *ticks);

/// Converts clock ticks since boot to CLOCK_BOOTTIME nanoseconds.
uint64_t cs_ticks_to_ns(uint64_t ticks, uint64_t ticks_per_second);

/// Converts a CLOCK_BOOTTIME time to CLOCK_MONOTONIC given
/// (CLOCK_BOOTTIME − CLOCK_MONOTONIC) now; saturates at 0.
uint64_t cs_boottime_to_monotonic(uint64_t boottime_ns, uint64_t boot_minus_mono_ns);

/// The start Coldstart records without a launcher, from the /proc tick start
/// (CLOCK_MONOTONIC; the truth lies in [tick_ns, tick_ns + tick_len_ns)) and
/// the estimate "now − thread CPU time − run-queue wait" taken in
/// .preinit_array (0: none) with the main thread's voluntary context switches
/// then. true: the estimate, clamped to the tick, with its stated precision;
/// false: the thread slept, so the estimate is only an upper bound: the tick,
/// with how early it may be narrowed by the estimate.
bool cs_start_from_estimate(uint64_t tick_ns, uint64_t tick_len_ns, uint64_t estimate_ns,
                            uint64_t voluntary_switches, uint64_t *start_ns, uint64_t *precision_ns);

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

/// A string as the timeline writer writes it (quoted, escaped, always
/// UTF-8: a byte that is not part of a well-formed sequence becomes U+FFFD)
/// into `out` (cap bytes, NUL-terminated, at most 64 KiB); returns its
/// length, and in *replaced how many bytes became U+FFFD.
size_t cs_json_string(const char *s, size_t n, char *out, size_t cap, uint64_t *replaced);

/// The length of s[0, n) less a UTF-8 sequence the end cuts short.
size_t cs_utf8_cut(const char *s, size_t n);

/// The timeline's name of wait cause number `cause` (enum cs_cause, the
/// number the watcher records), or NULL past the last. Async-signal-safe.
const char *cs_watch_cause_name(int cause);

/// The descriptor to use for the file (dev, ino) this thread just opened as
/// `fd`, moved high when the launch asked for it; -1 when the number is no
/// longer that file (a host took it: left open, its file untouched).
/// Declared in sys.h; here for its tests. Async-signal-safe.
int cs_fd_high(int fd, uint64_t dev, uint64_t ino);

/// Packs a stack copy for the timeline's `rawStacks.packed`
/// (docs/timeline-format.md): `len` bytes of `copy` into `out`, eliding
/// zero words and/or the words equal to `ref`'s at the same address
/// (`ref_len` bytes, its row `dist` rows back; the copy's word j is at the
/// address of `ref`'s word j + `off`), whichever is smaller. `ref` NULL: no
/// reference. `out` holds at least CS_RAW_PACK_MAX(len) bytes. Returns the
/// bytes written. The timeline writer's; here for its tests.
/// Async-signal-safe.
#define CS_RAW_PACK_MAX(len) (31 + 2 * (((len) / 8 + 7) / 8) + (len))
size_t cs_raw_pack(const unsigned char *copy, uint32_t len, const unsigned char *ref, uint32_t ref_len,
                   uint32_t dist, int64_t off, unsigned char *out);

#ifdef __cplusplus
}
#endif
#endif
