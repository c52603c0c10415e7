// Internal to the capture layer: the one struct that holds all of Coldstart's
// mutable state (`cs_g`), and the functions the C files share.
#ifndef COLDSTART_INTERNAL_H
#define COLDSTART_INTERNAL_H

#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "include/coldstart.h"
#include "jsonw.h"
#include "watch.h"

#define CS_MAX_EVENTS 4096
#define CS_NAME_BYTES (64 * 1024)
#define CS_MAX_NAME 255
#define CS_MAX_BOUNDARIES 64

struct cs_rusage {
    uint64_t minflt, majflt, nvcsw, nivcsw, utime_ns, stime_ns;
};

#include "sampler.h"   // struct cs_sampler, a member of cs_global; uses cs_rusage

enum cs_event_kind { CS_EV_MARK = 1, CS_EV_SPAN_BEGIN = 2, CS_EV_SPAN_END = 3 };

// One slot of the append-only event log. A writer reserves a slot with one
// atomic increment, fills it, then publishes it by storing `committed` with
// release order; readers skip slots not yet committed.
struct cs_event {
    _Atomic uint32_t committed;
    uint16_t kind;
    uint16_t flags;            // CS_FLAG_*
    uint32_t name_off, name_len;
    uint32_t begin_slot;       // span end: slot index + 1 of its begin
    int32_t tid;
    uint64_t ns;               // absolute CLOCK_MONOTONIC
    struct cs_rusage ru;
};
#define CS_FLAG_BOUNDARY 1u
#define CS_FLAG_EXTENDED 2u

enum cs_state_value {
    CS_OFF = 0,        // profiling off: every entry point returns at once
    CS_RECORDING = 1,  // launch in progress
    CS_ENDED = 2,      // ready() called or end observed; the timeline is pending
};

enum cs_end_reason { CS_END_NONE, CS_END_READY, CS_END_EXIT, CS_END_ERROR_EXIT, CS_END_SIGNAL };

// All mutable state of the capture layer. Zero-initialised (BSS), so nothing
// runs and nothing is touched when profiling is off beyond `state`.
struct cs_global {
    _Atomic int state;                  // enum cs_state_value
    // Who writes the timeline: 0 free, else the writer's tid. Exactly one
    // writer ever wins; `written` says it finished.
    _Atomic int writer_tid;
    _Atomic int written;

    int pid;
    uint64_t ticks_per_second;          // _SC_CLK_TCK, read before main
    uint64_t spawn_boottime_ns;         // COLDSTART_SPAWN_NS, 0 if absent
    uint64_t extend_ns;                 // COLDSTART_EXTEND_MS
    bool preinit_ran;
    bool before_main_ran;

    // Absolute CLOCK_MONOTONIC. t_setup_end: Coldstart's own set-up in
    // .preinit_array (watcher, sampler) is done; it is a phase of its own so
    // that its cost (the first perf event of a quiet system can take 15+ ms
    // in the kernel) is not mistaken for the host's library initializers.
    uint64_t t_earliest, t_setup_end, t_main, t_ready, t_end;
    struct cs_rusage ru_earliest, ru_setup_end, ru_main, ru_end;

    enum cs_end_reason end_reason;
    int end_status;                     // exit status or signal number

    char dest[PATH_MAX];                // final path of the timeline
    char tmp[PATH_MAX + 32];            // dest + ".tmp.<pid>"
    char swift_version[32];

    struct cs_event *events;            // CS_MAX_EVENTS slots, mmap'd when armed
    _Atomic uint32_t next_event;
    _Atomic uint32_t dropped_events;
    char *names;                        // CS_NAME_BYTES, mmap'd when armed
    _Atomic uint32_t names_used;
    _Atomic uint32_t dropped_name_bytes;

    // Abandonment handlers: which signals we own (installed over SIG_DFL only).
    bool owns_signal[NSIG];

    // The stack sampler (sampler.c, unwind.c, modules.c): clock sources,
    // preallocated sample buffers, per-thread slots, libunwind. All zero and
    // untouched unless sampling started.
    struct cs_sampler smp;

    // The off-CPU watcher thread (watcher.c): per-thread states, causes and
    // blocked stacks, read from /proc without signalling anyone.
    struct cs_watch watch;

    // The timeline writer's scratch space, so it never allocates.
    struct cs_jw jw;
    uint32_t span_end_of[CS_MAX_EVENTS];     // begin slot → end slot + 1
    uint32_t boundary_slots[CS_MAX_BOUNDARIES];
    int thread_ids[64];
};

extern struct cs_global cs_g;

// ---- core.c ----
/// Decides from envp whether to profile and records the earliest timestamp.
/// Runs from .preinit_array before libc's constructors: raw syscalls only.
void cs_preinit(int argc, char **argv, char **envp);
/// Records the before-main time and arms exit and signal handling.
/// Runs as the executable's first constructor. Not async-signal-safe.
void cs_before_main(void);
/// Declares the launch over (first caller wins) and writes the timeline.
/// Async-signal-safe; returns once the timeline is written, or after a bounded
/// wait if another thread is writing it.
void cs_end_launch(enum cs_end_reason reason, int status);
/// Starts a detached thread running `body` with every signal blocked, so the
/// host's process-directed signals (SIGINT, SIGCHLD …) stay with the host's
/// own threads. Returns 0 or pthread_create's error. Not async-signal-safe.
int cs_start_thread(void *(*body)(void *), size_t stack_size);
/// Prints "coldstart: <msg>" on stderr with one write(2). Async-signal-safe.
void cs_warn(const char *msg, const char *detail);
/// Process-wide getrusage. Async-signal-safe (raw syscall).
void cs_rusage_now(struct cs_rusage *out);
/// Current thread id. Async-signal-safe (raw syscall).
int cs_gettid(void);
/// The value of `name` in `envp`, or NULL. Async-signal-safe.
const char *cs_env_get(char **envp, const char *name);

// ---- timeline.c ----
/// Serialises the whole timeline to cs_g.tmp and renames it to cs_g.dest.
/// Uses only open/write/rename/close and the preallocated buffer, so it is
/// async-signal-safe. Returns 0 on success.
int cs_write_timeline(void);

// ---- procstat.c ----
/// Reads the process start (CLOCK_MONOTONIC ns) and its precision.
/// Async-signal-safe (open/read/close/clock_gettime).
int cs_process_start(uint64_t *start_mono_ns, uint64_t *precision_ns,
                     uint64_t *boot_minus_mono_ns, bool *from_spawn_env);

#endif
