// The capture layer's system helpers: the leaf of its call graph. Nothing
// here calls any other Coldstart function; every other file may call these.
#ifndef COLDSTART_SYS_H
#define COLDSTART_SYS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdatomic.h>
#include <sys/types.h>
#include <time.h>

struct cs_rusage {
    uint64_t minflt, majflt, nvcsw, nivcsw, utime_ns, stime_ns;
};

/// The GNU build-id in the bytes of a PT_NOTE segment: copies at most `cap`
/// bytes of it to `out` and returns how many, 0 when the notes hold none.
/// Reads only notes[0, len). Async-signal-safe (pure).
size_t cs_note_build_id(const char *notes, size_t len, uint8_t *out, size_t cap);
/// Writes `n` bytes as 2n lowercase hex digits and a NUL to `out` (which
/// holds 2n + 1 bytes). Async-signal-safe (pure).
void cs_hex(const uint8_t *bytes, size_t n, char *out);
/// Appends `s` to dst (capacity cap) and keeps it NUL-terminated; false,
/// and nothing appended, if it would not fit. Async-signal-safe (pure).
bool cs_append(char *dst, size_t cap, const char *s);

/// dlopen and its kin, looked up in the loaded libc.so.6's symbol table
/// rather than referenced: a reference would make a static link of the host
/// pull in glibc's static dlopen, with a linker warning per call site.
struct cs_dl {
    void *(*open)(const char *, int);
    int (*close)(void *);
    void *(*sym)(void *, const char *);
    int (*info)(void *, int, void *);
};
/// Fills `dl`; false in a statically linked program (no loader: a library
/// dlopen'd there gets a libc of its own, so Coldstart loads none), or, with
/// one line on stderr, when libc.so.6 lacks them. Takes the loader's lock
/// (dl_iterate_phdr): not async-signal-safe.
bool cs_dl_functions(struct cs_dl *dl);

/// Prints "coldstart: <msg><detail>" on stderr with one write(2).
/// Async-signal-safe.
void cs_warn(const char *msg, const char *detail);
/// Current thread id. Async-signal-safe (raw syscall).
int cs_gettid(void);
/// The value of `name` in `envp`, or NULL. Async-signal-safe.
const char *cs_env_get(char **envp, const char *name);
/// Process-wide getrusage. Async-signal-safe (raw syscall).
void cs_rusage_now(struct cs_rusage *out);
/// `id` in nanoseconds, 0 if it cannot be read. Async-signal-safe (vDSO or
/// syscall).
uint64_t cs_clock_ns(clockid_t id);
/// CLOCK_MONOTONIC `mono_ns` on CLOCK_REALTIME, in µs: the realtime clock
/// now, less the monotonic time since. 0 when either cannot be read.
/// Async-signal-safe (vDSO or syscall).
uint64_t cs_realtime_us(uint64_t mono_ns);
/// CPU time of thread `tid` of this process, from the kernel's per-thread
/// CPU clock (glibc's MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED)); false for
/// tid ≤ 0 or a thread that has ended. Async-signal-safe.
bool cs_thread_cpu(int tid, uint64_t *ns);
/// The clock id cs_thread_cpu reads, for timers on that clock.
/// Async-signal-safe.
clockid_t cs_thread_cpu_clock(int tid);
/// Waits while *word == val, until woken (cs_futex_wake) or, when
/// `deadline_ns` is not 0, until that CLOCK_MONOTONIC time. May return early
/// (a signal, a spurious wake-up): callers re-check. Async-signal-safe.
void cs_futex_wait(_Atomic int *word, int val, uint64_t deadline_ns);
/// Wakes every thread waiting on `word`. Async-signal-safe.
void cs_futex_wake(_Atomic int *word);
/// Sleeps `ns`, resuming after signals. Async-signal-safe.
void cs_sleep_ns(uint64_t ns);
/// A private anonymous zeroed mapping of `bytes` (pages are touched only
/// when written), or NULL. Async-signal-safe (mmap).
void *cs_map_zeroed(size_t bytes);
/// Faults in the pages under [p, p + bytes) without changing their contents
/// (another thread may be writing there): MADV_POPULATE_WRITE, else, on a
/// kernel without it, an atomic add of 0 per page. A range that is not
/// mapped (any more) is left alone. Async-signal-safe.
void cs_prefault(void *p, size_t bytes);
/// Coldstart's descriptors, all of them, stay within a quarter of
/// RLIMIT_NOFILE (its soft limit at start-up), so that the host keeps three
/// quarters whatever Coldstart does. Of that share, CS_FD_RESERVE are for
/// what is not per thread, at most this many at once: the timeline's
/// directory and its unnamed file, /proc/self/task for the watcher and for
/// the writer at exit, libunwind's memory-validation pipe (2), and one file
/// or directory open for a moment on each of Coldstart's threads (the scan
/// thread 2, the watcher 1, the writer 2, a dlopen 1). The rest is halved
/// between the sampler's per-thread clocks (one perf event each) and the
/// watcher's per-thread files (3 each).
#define CS_FD_SHARE 4
#define CS_FD_RESERVE 12
/// Reads RLIMIT_NOFILE into cs_g.proc.fd_limit, once, at start-up (getrlimit:
/// a plain system call, though not on POSIX's async-signal-safe list).
void cs_fd_budget_read(void);
/// Coldstart's share of the limit: at most this many descriptors at once.
/// Async-signal-safe (pure).
uint64_t cs_fd_share(void);
/// How many descriptors each of the sampler and the watcher may hold at
/// once: half the share less the reserve (0 when the limit leaves none).
/// Async-signal-safe (pure).
uint64_t cs_fd_allowance(void);
/// Coldstart's mappings, thread stacks and malloc arenas stay within a
/// quarter of the address space RLIMIT_AS (its soft limit at start-up) leaves
/// the process at arming, so that the host keeps three quarters of its room
/// whatever Coldstart does: under the limit, every byte Coldstart reserves is
/// one the host's own mmap or malloc can no longer get (a Swift runtime that
/// did not get its memory crashed in its initializers, issue 35 item 11).
#define CS_VM_SHARE 4
/// Reads RLIMIT_AS and, where it is finite, the process's size
/// (/proc/self/statm) into cs_g.proc.vm_room, once, at start-up.
/// Async-signal-safe in practice (getrlimit, open, read, close).
void cs_vm_budget_read(void);
/// Coldstart's share of the address space left: UINT64_MAX without a limit.
/// Async-signal-safe (pure).
uint64_t cs_vm_share(void);
/// True when an open just failed because the process has no descriptor
/// left (the program holds all RLIMIT_NOFILE allows, EMFILE, or the system
/// none, ENFILE): then a warning names the limit, not the file.
/// Async-signal-safe (open, close).
bool cs_out_of_descriptors(void);
/// Opens `path` (relative to `dirfd`, or AT_FDCWD; O_CLOEXEC added) for one
/// of Coldstart's threads while the host runs, and *dev, *ino (0 on
/// failure) with the file's identity as its path gives it: -1 if the number
/// opened is not that file by the time it is checked (cs_fd_high). With
/// `high`, moved high as cs_fd_high does. errno is the open's on its
/// failure. Async-signal-safe (fstatat, openat, fstat, fcntl).
int cs_open_known(int dirfd, const char *path, int flags, bool high, uint64_t *dev, uint64_t *ino);
/// Whether descriptor `fd` is the file (dev, ino). Async-signal-safe (fstat).
bool cs_fd_is(int fd, uint64_t dev, uint64_t ino);
/// A descriptor this thread just opened of the file (dev, ino), which the
/// caller knows by its path (or, for a file with none, read where no host
/// code could run), never by the descriptor: a host that closes every
/// descriptor and opens or dup2s its own files (daemons do, at the start of
/// main) may have taken the number in between. Returns the descriptor to
/// use, moved above the range hosts usually use (select() and code that
/// expects small numbers) when cs_g.proc.high_fd says so, the same one if
/// moving failed; or -1 when the number is no longer that file: the host's
/// now, left open. A number is closed only after it was checked to be ours
/// (a host that reuses it within the microsecond between check and close
/// would lose its file: Linux has no close-if-still-this-file).
/// Async-signal-safe.
int cs_fd_high(int fd, uint64_t dev, uint64_t ino);
/// Reads up to `cap` bytes of a small file (a /proc or /sys one) from its
/// start; closes the descriptor only if it is still that file (cs_fd_high).
/// Returns what read returned, -1 if it could not be opened. Async-signal-safe.
ssize_t cs_read_small_file(const char *path, char *buf, size_t cap);
/// Puts back the default action of `sig`. Async-signal-safe.
void cs_restore_default(int sig);
/// Copies `len` bytes from `addr` of this process without faulting; false
/// if unreadable or cs_safe_read_init found it unusable. Async-signal-safe
/// (process_vm_readv on this process).
bool cs_safe_read(uintptr_t addr, void *buf, size_t len);
/// Checks that cs_safe_read works here. Not async-signal-safe.
void cs_safe_read_init(void);

/// Starts a detached thread running `body` with every signal blocked but
/// SIGPROF (the Swift crash handler's suspend signal), so the host's
/// process-directed signals (SIGINT, SIGCHLD …) stay with the host's own
/// threads, and records it in the own-threads registry (cs_g.own) before
/// it can be seen in /proc. Returns 0 or pthread_create's error.
/// Not async-signal-safe.
int cs_start_thread(void *(*body)(void *), size_t stack_size);
/// Gives the calling thread, one of Coldstart's, the host's affinity back
/// after a start away from the host's CPU (cs_start_thread).
/// Async-signal-safe (a system call).
void cs_own_unplace(void);
/// True when `tid` is one of Coldstart's own threads, or, with `or_starting`,
/// may be one that is starting (a scan then looks again later).
/// Async-signal-safe.
bool cs_own_thread(int tid, bool or_starting);
/// How many of Coldstart's own threads but `except` have not ended (nor
/// begun to end), their ids into `tids` (CS_OWN_MAX room) unless NULL; -1
/// while one is starting (its id not known yet). Async-signal-safe.
int cs_own_running(int except, int *tids);
/// Whether /proc shows another pid namespace than this process's (an
/// `unshare -p -f` without `--mount-proc`): the ids it lists in
/// /proc/self/task are that namespace's, while perf_event_open, tgkill,
/// sched_setaffinity and gettid take or give this one's, so no id read from
/// /proc may be acted on, and no /proc/self/task/<tid> path be built from
/// gettid's. Set by cs_proc_note_ns and cs_proc_check_levels (procstat.c).
/// Async-signal-safe (one load).
bool cs_proc_foreign(void);
/// CPU time of Coldstart's own threads so far (ended ones included).
/// Async-signal-safe.
uint64_t cs_own_cpu_ns(void);
/// Called by one of Coldstart's threads at each turn of its loop: adds a
/// point (now, its CPU) to its series once its CPU has grown by the step
/// since the last, so that its CPU at any phase boundary is known to within
/// a step and a turn (docs/timeline-format.md, "ownThreads"). Does nothing
/// on any other thread. Async-signal-safe (two clock reads).
void cs_own_tick(void);

#endif
