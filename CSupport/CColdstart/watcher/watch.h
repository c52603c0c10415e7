// Internal to the capture layer: the off-CPU watcher's state (`cs_g.watch`)
// and the functions watcher.c, watchseg.c, watchcauses.c, watchfd.c, watchunwind.c
// and watchjson.c share.
//
// The watcher is one thread that, at the sampling rate (at most 1 kHz), reads each thread's
// kernel view (/proc/self/task/<tid>/{stat,schedstat,syscall}) and records it
// run-length encoded: a *segment* is a stretch of one thread's time in which
// every tick saw the same thing (runnable, or blocked in the same syscall with
// the same arguments, stack pointer and program counter). It never signals,
// ptraces or otherwise touches the threads it watches.
#ifndef COLDSTART_WATCH_H
#define COLDSTART_WATCH_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "remoteunwind.h"

#define CS_WATCH_MAX_LIVE 64          // threads watched at once (3 fds each)
#define CS_WATCH_MAX_THREADS 1024     // threads recorded over the launch
#define CS_WATCH_MAX_SEGMENTS 65536
#define CS_WATCH_MAX_STACKS 8192
#define CS_WATCH_MAX_FRAMES 131072
#define CS_WATCH_MAX_DEPTH 64
#define CS_WATCH_MAX_PATHS 4096
#define CS_WATCH_PATH_BYTES (256 * 1024)
#define CS_WATCH_MAX_PATH 240         // longest path kept (longer ones are cut)
#define CS_WATCH_MAX_RUNNABLE 65536
#define CS_WATCH_FD_CACHE 1024        // fd → path cache, direct-mapped by fd
#define CS_WATCH_UNWIND_PAGES 16      // own-memory page cache of the unwinder
#define CS_WATCH_TICK_BUCKETS 512     // tick cost histogram, 1 µs buckets
#define CS_WATCH_MAX_HZ 1000          // the sampler may go faster; the watcher not
#define CS_WATCH_MAX_PERIOD_NS 4000000ull   // looks that find nothing new back off to this
#define CS_WATCH_RESCAN_NS 5000000ull        // /proc/self/task is listed at least this often (when it holds others than main)
#define CS_WATCH_RENAME_NS 5000000ull        // a thread's name is re-read this often, 10 times
#define CS_WATCH_BUSY_SLACK_NS 20000ull     // "busy all along": run + wait within this of the interval

// Syscall number of a runnable thread (its syscall file said "running").
#define CS_NR_RUNNING (-2)
// Blocked in a call we cannot know: the syscall file is not readable.
#define CS_NR_UNKNOWN 1023

/// Why a thread was not running. Its number is what the watcher records; the
/// timeline has its name (cs_watch_cause_name, include/coldstart_testing.h).
enum cs_cause {
    CS_CAUSE_RUNNING,      // runnable: on a CPU or waiting for one
    CS_CAUSE_FILE_READ,
    CS_CAUSE_FILE_WRITE,
    CS_CAUSE_FILE_SYSTEM,  // open, stat, fsync, getdents, …
    CS_CAUSE_LOCK,         // futex, flock, fcntl(F_SETLKW)
    CS_CAUSE_EVENTS,       // poll, epoll, select, eventfd, io_uring
    CS_CAUSE_NETWORK,
    CS_CAUSE_PIPE,
    CS_CAUSE_SLEEP,
    CS_CAUSE_PAGE_FAULT,   // blocked outside any syscall
    CS_CAUSE_CHILD,        // wait4, waitid
    CS_CAUSE_MEMORY,       // mmap, munmap, mprotect, madvise, brk
    CS_CAUSE_STOPPED,      // T or t: stopped by a signal or a debugger
    CS_CAUSE_OTHER,
    CS_CAUSE_COUNT
};

/// A stretch of one thread's time with one observation. Times are absolute
/// CLOCK_MONOTONIC; run/wait are schedstat deltas inside it, so a segment's
/// blocked time is (end − start) − run − wait, exact to the schedstat clock.
struct cs_watch_seg {
    uint64_t start_ns, end_ns;
    uint64_t run_ns, wait_ns;
    uint64_t args[6];          // the blocked syscall's arguments
    uint32_t minflt, majflt;   // faults inside (from stat, at segment edges)
    int32_t tid;
    int16_t nr;                // syscall; -1 blocked outside one; CS_NR_RUNNING
    uint8_t state;             // stat's letter: 'R', 'S', 'D', 'T', …
    uint8_t cause;             // enum cs_cause
    int32_t path;              // index into the path table, -1 none
    int32_t stack;             // index into the stack table, -1 none
};

/// A thread seen during the launch. Schedstat totals are since its creation.
struct cs_watch_thread {
    int32_t tid;
    bool exited;
    bool unwatched;            // no live slot was free: totals only at discovery
    char name[16];
    uint64_t first_ns, last_ns;
    uint64_t run0_ns, wait0_ns; // CPU and run-queue time before it was first seen
    uint64_t run_ns, wait_ns;  // at the last read
    uint32_t switches;         // schedstat timeslices at the last read
};

/// A thread being watched now: its open files and its open segment.
struct cs_watch_live {
    int thread;                // index into threads; -1 when the slot is free
    int fd_stat, fd_schedstat, fd_syscall;
    uint64_t ino_stat, ino_schedstat, ino_syscall;   // to close only our own files
    uint64_t last_ns;          // when it was last read
    uint64_t run, wait, slices;
    uint64_t sched_run;        // schedstat's own (lagging) runtime, to see "unchanged"
    uint32_t quiet;            // looks in a row that found it blocked and unscheduled
    uint64_t minflt, majflt;   // at the open segment's start
    struct cs_watch_seg cur;
    uint16_t text_len;         // its syscall file at the open segment's start
    char text[200];
    uint8_t name_reads;        // name re-reads left (names are often set late)
    bool syscall_tried;        // its syscall file was opened (or tried): when first found off the CPU
    uint64_t name_ns;          // when its stat (and so its name) was last read
};

/// The watcher's preallocated buffers: one anonymous mapping made at start,
/// touched only as it fills. The recording path never allocates.
struct cs_watch_buffers {
    struct cs_watch_seg segs[CS_WATCH_MAX_SEGMENTS];
    struct cs_watch_thread threads[CS_WATCH_MAX_THREADS];
    struct cs_watch_live live[CS_WATCH_MAX_LIVE];
    uint64_t frames[CS_WATCH_MAX_FRAMES];
    struct { uint32_t off, len; } stacks[CS_WATCH_MAX_STACKS];
    uint32_t stack_hash[2 * CS_WATCH_MAX_STACKS];   // index + 1, 0 empty
    struct { uint32_t off, len; } paths[CS_WATCH_MAX_PATHS];
    uint32_t path_hash[2 * CS_WATCH_MAX_PATHS];     // index + 1, 0 empty
    char path_bytes[CS_WATCH_PATH_BYTES];
    struct { uint64_t dev, ino; int32_t path; int32_t kind; } fd_cache[CS_WATCH_FD_CACHE];
    struct { uint64_t ns; uint32_t n; } runnable[CS_WATCH_MAX_RUNNABLE];
    uint32_t tick_hist[CS_WATCH_TICK_BUCKETS];
    struct cs_unw_page pages[CS_WATCH_UNWIND_PAGES];
    char dents[16384];
};

/// All of the watcher's state, a member of cs_g. Zero (off) unless profiling
/// is on and COLDSTART_WATCH is not 0.
struct cs_watch {
    _Atomic int running;       // the thread exists (or is to: `deferred`) and has not stopped
    _Atomic int deferred;      // set up, its thread to be started by the sampler's (cs_watch_start_thread)
    _Atomic int looking;       // it set itself up and took its first look
    _Atomic int stop;          // the writer asks it to stop
    // Who may look: 0 nobody (the watcher sleeps between looks), 1 the
    // watcher, 2 the stopper, which takes the last look itself.
    _Atomic int busy;
    int tid;                   // the watcher thread
    _Atomic int main_started;  // cs_before_main ran: dlopen is safe now
    // Its thread prepares the timeline's write once main runs
    // (cs_timeline_prepare): set by the arming thread (core.c) when no
    // sampler's thread runs to do it. Read by the watcher's thread only after
    // it starts.
    bool prepares_write;
    uint64_t period_ns;                  // the base look period (COLDSTART_HZ, at most 1 kHz)
    uint64_t max_period_ns;              // what it backs off to while nothing changes
    bool changed;                        // this look began or ended a segment or a thread
    int cpus;                            // CPUs the process may run on
    uint64_t requested_hz;
    uint64_t start_ns, stop_ns;          // absolute CLOCK_MONOTONIC
    const char *stop_reason;             // "writer", "time-limit" or "buffer-full"
    uint64_t cpu_ns;                     // the watcher thread's CPU time
    uint64_t cpu0_ns;                    // its CPU clock when it began to look
    uint64_t ticks, missed_ticks, next_rescan_ns;
    uint64_t unwinds, torn_stacks, unwind_ns;
    int task_dirfd;                      // /proc/self/task, for getdents64
    uint64_t task_dir_ino;
    uint64_t task_nlink;                 // its link count at the last look (2 + threads)
    int nlive;                           // live slots ever used: those above are untouched
    int max_live;                        // slots it may use: CS_WATCH_MAX_LIVE, or 3 files each within cs_fd_allowance
    bool syscall_readable;               // /proc/<tid>/syscall could be opened
    struct cs_watch_buffers *buf;
    // Published counts: the writer reads entries below them (acquire).
    _Atomic uint32_t nsegs, nthreads, nstacks, npaths, nrunnable;
    uint32_t nframes, path_bytes;
    _Atomic uint32_t dropped_segments, dropped_stacks, dropped_threads, dropped_paths, dropped_runnable;
    uint32_t last_runnable;
    // Off-CPU unwinding (watchunwind.c): libunwind's remote API over own memory.
    int unwind_state;                    // 0 not tried, 1 ready, -1 unavailable
    struct cs_unw_space unw;
    uint64_t frame_pointer_guesses;      // stacks completed with a guessed rbp
};


/// Which argument of a system call names what it waits on.
enum cs_arg_kind { CS_ARG_NONE, CS_ARG_FD0, CS_ARG_PATH0, CS_ARG_PATH1 };

struct cs_syscall_info {
    int16_t nr;
    uint8_t cause;      // for fd calls: the cause on a regular file
    uint8_t arg;        // enum cs_arg_kind
    const char *name;
};

/// What a descriptor is, as far as the cause of a wait goes.
enum cs_fd_kind { CS_FD_FILE, CS_FD_FIFO, CS_FD_PIPE, CS_FD_SOCKET, CS_FD_EVENTS };

// ---- watcher.c ----
/// Sets the watcher up if cs_g.cfg allows (may run from .preinit_array);
/// cs_watch_start_thread starts its thread. Not async-signal-safe. Failure:
/// one warning, no watch.
void cs_watch_start(void);
/// Starts the thread of a watcher set up by cs_watch_start, unless a stop
/// came first (or it was started already): the sampler's thread does, first
/// thing, or the arming thread when there is none. Not async-signal-safe.
void cs_watch_start_thread(void);
/// Tells the watcher that library initializers are done (dlopen is safe).
/// Async-signal-safe.
void cs_watch_main_started(void);
/// Stops the watcher and closes its segments: between two of its looks, by
/// taking the last look on the calling thread; in a look, by waiting for it
/// (woken by a futex, 50 ms at most). Async-signal-safe (atomics, futex, the
/// last look's reads); the watcher blocks every signal the writer can run
/// in, so this never runs on the watcher thread.
void cs_watch_stop(void);
/// In a child the host forked (pthread_atfork): closes the files the parent's
/// watcher held open (its threads' /proc files, /proc/self/task), which
/// name the parent's threads, and forgets the watcher. Async-signal-safe.
void cs_watch_fork_child(void);

// ---- watchfind.c (whoever holds the looks: cs_watch.busy) ----
/// Starts watching `tid`: its live slot, or NULL when it is not watched (it
/// ended meanwhile, or no slot was free: then its totals are kept).
struct cs_watch_live *cs_watch_add_thread(int tid, uint64_t now, int *unwind_budget);
/// Watches the threads that appeared since the last listing (see the
/// function's comment for when it lists at all).
void cs_watch_rescan(uint64_t now, int *unwind_budget);
/// Re-reads new threads' names, a few times, 5 ms apart.
void cs_watch_reread_names(uint64_t now);

// ---- watchseg.c (whoever holds the looks: cs_watch.busy) ----
/// Appends a finished segment (counted in dropped_segments when full).
void cs_watch_close_segment(const struct cs_watch_seg *seg);
/// The interned stack of a thread blocked as `sc` says, kept only if its
/// syscall file is unchanged after the unwind; -1 if none.
int32_t cs_watch_blocked_stack(struct cs_watch_live *slot, const struct cs_task_syscall *sc);
/// Ends the watch of a thread that has exited: its segment, its files.
void cs_watch_thread_gone(struct cs_watch_live *slot);
/// Reads the thread's stat: state letter and fault counts, and its name
/// (the thread's `name`, refreshed). False if unreadable.
bool cs_watch_read_stat(struct cs_watch_live *slot, char *state, uint64_t *minflt, uint64_t *majflt);
/// Starts the open segment from an observation `sc` made at `at` (unwinding
/// a blocked main thread always, others while *unwind_budget lasts; nothing
/// when it is negative).
void cs_watch_begin_segment(struct cs_watch_live *slot, const struct cs_task_syscall *sc, char state, uint64_t at,
                            uint64_t now, int *unwind_budget);

// ---- watchcauses.c ----
/// Unmaps the watcher's buffers if its thread has ended. Call after the
/// timeline is written. Async-signal-safe.
void cs_watch_unmap(void);
/// The syscall's name, or NULL when unknown. Async-signal-safe.
const char *cs_watch_syscall_name(int nr);
/// Sets a blocked segment's cause and the path it waits on (watcher thread).
void cs_watch_classify(struct cs_watch_seg *seg);

// ---- watchfd.c (watcher thread only) ----
/// pread from offset 0 into buf (NUL-terminated, at most cap − 1 bytes),
/// retried on EINTR. Returns what pread returned.
ssize_t cs_watch_pread_all(int fd, char *buf, size_t cap);
/// The inode of `fd`, 0 if it is not open.
uint64_t cs_watch_inode_of(int fd);
/// Closes `fd` only if it is still the file with inode `ino`: a host that
/// closes every descriptor (daemons do) may have reused the number.
void cs_watch_close_own(int fd, uint64_t ino);
/// Closes a live slot's three files (cs_watch_close_own).
void cs_watch_close_slot_files(struct cs_watch_live *slot);
/// The thread's syscall file, opened the first time it is needed (most
/// threads of a short launch never leave the CPU for long); -1 when it cannot
/// be read. A thread alive without a readable one turns syscall_readable
/// off, with one line on stderr.
int cs_watch_syscall_fd(struct cs_watch_live *slot);
/// /proc/self/task's descriptor, opened again if the host closed it (a
/// number reused by the host is left alone); -1 if it cannot be.
int cs_watch_task_dir(void);
/// Opens /proc/self/task/<tid>/<file> read-only, moved high; -1 on failure.
/// *ino: its inode as opened (cs_fd_high), 0 on failure.
int cs_watch_open_task_file(int tid, const char *file, uint64_t *ino);
/// After a failed read: opens the slot's files again if the host closed
/// them (true when that worked), false when they are still ours (the read
/// failed because the thread ended).
bool cs_watch_reopen_slot_files(struct cs_watch_live *slot);
/// Reads the thread's name into `name` (kept as is when unreadable).
void cs_watch_read_comm(int tid, char name[16]);
/// FNV-1a of `n` bytes, continuing from `h`.
uint32_t cs_watch_fnv1a(const void *data, size_t n, uint32_t h);
/// The interned path (or socket peer) of descriptor `fd` and its kind; -1 if none.
int32_t cs_watch_fd_path(int fd, enum cs_fd_kind *kind);
/// The interned NUL-terminated string at `addr` of this process's memory,
/// read without faulting; -1 if unreadable.
int32_t cs_watch_user_path(uint64_t addr);

// ---- watchunwind.c (watcher thread only) ----
/// Loads libunwind's remote unwinder; false (once, quietly) if unavailable.
bool cs_offcpu_ready(void);
/// Unwinds a blocked thread's user stack from the pc and sp its syscall file
/// gave, reading own memory only through process_vm_readv. Returns the number
/// of frames (leaf first: pc, then return addresses).
int cs_offcpu_unwind(uint64_t pc, uint64_t sp, uint64_t *frames, int max);

// ---- watchjson.c (the timeline writer; async-signal-safe) ----
struct cs_jw;
/// Writes the state track of every watched thread and the runnable-threads
/// counter as trace events (each preceded by ",\n"). `start` is the process
/// start (absolute CLOCK_MONOTONIC).
void cs_watch_write_trace_events(struct cs_jw *w, int pid, uint64_t start);
/// Writes `,"watch":{…}` into the coldstart section when the watcher ran.
void cs_watch_write_section(struct cs_jw *w, uint64_t start);

#endif
