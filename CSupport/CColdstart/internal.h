// Internal to the capture layer: the one struct that holds all of Coldstart's
// mutable state (`cs_g`), and the functions its files share. Which file may
// call which: docs/ARCHITECTURE.md, "Allowed calls" (CallGraphTests checks
// the built objects against it).
#ifndef COLDSTART_INTERNAL_H
#define COLDSTART_INTERNAL_H

#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/utsname.h>

#include "include/coldstart.h"
#include "include/coldstart_startup.h"
#include "config.h"
#include "jsonw.h"
#include "procparse.h"
#include "sys.h"
#include "arch.h"
#include "watch.h"
#include "smp.h"

#define CS_MAX_EVENTS 4096
#define CS_NAME_BYTES (64 * 1024)
#define CS_MAX_NAME 255
#define CS_MAX_BOUNDARIES 64
#define CS_OWN_MAX 8
// The stacks of Coldstart's threads (cs_start_thread): sized for what each
// runs, never glibc's default (8 MiB, or RLIMIT_STACK), since each is
// address space the host may be short of (core.c, address_space_suffices).
#define CS_SCAN_STACK (64 * 1024)      // the sampler's scan thread (libunwind's DWARF unwinding runs on it)
#define CS_WATCH_STACK (512 * 1024)    // the watcher's thread (libunwind's, over live stacks)
#define CS_WRITER_STACK (256 * 1024)   // the writer's thread after ready()
// Points of each of Coldstart's threads' CPU clock (cs_own_tick): a new one
// once the thread's CPU has grown by CS_OWN_STEP_NS, the step doubling every
// CS_OWN_POINTS / 8 points, so 2048 cover ~3 s of its CPU.
#define CS_OWN_POINTS 2048
#define CS_OWN_STEP_NS 50000u
#define CS_CPU_MOVE_MAX 256

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
    // The recording thread's CPU time (CLOCK_THREAD_CPUTIME_ID): between two
    // events of one thread it is that thread's exact CPU, which the
    // watcher's segments only give to one look.
    uint64_t thread_cpu_ns;
    struct cs_rusage ru;
};
#define CS_FLAG_BOUNDARY 1u
#define CS_FLAG_EXTENDED 2u

// A timeline the rotation may remove (outfile.c).
#define CS_ROTATE_BATCH 64
struct cs_rotate_entry {
    uint64_t mtime_ns, size;
    char name[256];
};

/// A process start: CLOCK_MONOTONIC ns, how far from the truth it may be, and
/// where it came from ("spawn-env", "thread-cpu", "proc-stat").
struct cs_start {
    uint64_t ns, precision_ns;
    const char *source;
};

enum cs_state_value {
    CS_OFF = 0,        // profiling off: every entry point returns at once
    CS_RECORDING = 1,  // launch in progress
    CS_ENDED = 2,      // ready() called or end observed; the timeline is pending
};

// CS_END_ASIDE: the program made a call that needs it to be its only thread
// (unshare, setns: end.c); Coldstart stopped there and ended its threads.
enum cs_end_reason { CS_END_NONE, CS_END_READY, CS_END_EXIT, CS_END_ERROR_EXIT, CS_END_SIGNAL, CS_END_ASIDE };

// When one of Coldstart's threads had used how much CPU (CLOCK_MONOTONIC,
// its CPU clock): the analysis places its CPU on the phases from these.
struct cs_own_point {
    uint64_t ns, cpu_ns;
};

// One of Coldstart's own threads (cs_start_thread): never sampled, never
// watched, its CPU time not the host's.
struct cs_own_thread {
    _Atomic int tid;            // 0 until the thread runs
    _Atomic int done;           // its body returned (or it never started)
    _Atomic uint64_t cpu_ns;    // its CPU time when its body returned
    void *(*body)(void *);
    // Written by the thread itself only; `npoints` published with release,
    // so the writer reads whole points while the thread still runs.
    _Atomic uint32_t npoints;
    struct cs_own_point points[CS_OWN_POINTS];
};

// A point that separates two phases (timeline.c).
struct cs_boundary {
    uint64_t ns;
    const char *name;
    size_t name_len;
    const struct cs_rusage *ru;   // NULL: unknown
    const char *phase;            // the phase starting here: a fixed name, or NULL for "<from> → <to>"
    const char *kind;             // that phase's kind: loader, profiler, initializers, app
};

// Everything the timeline writer derives before it emits a byte (timeline.c).
struct cs_plan {
    uint64_t start, precision, boot_off;
    uint64_t start_realtime_us;  // 0 when CLOCK_REALTIME could not be read
    const char *source;
    struct cs_start without_launcher;
    bool has_earliest, completed;
    bool detail;                 // sampling and watch data fit under max_bytes
    bool raw;                    // ... and the offline unwinder's stack copies (`rawStacks`)
    // The file's size bound: COLDSTART_MAX_BYTES, or RLIMIT_FSIZE where that
    // is lower (`fsize_bound`): a write past it would raise SIGXFSZ, which
    // ends the whole process.
    uint64_t max_bytes;
    bool fsize_bound;
    uint32_t nev;
    struct cs_boundary b[CS_MAX_BOUNDARIES + 5];   // + start, earliest, set-up, main, end
    size_t nb, nthreads;
    char label[32];
    char exe[PATH_MAX];
    struct utsname uts;
};

// All mutable state of the capture layer, grouped by concern. Zero-initialised
// (BSS), so nothing runs and nothing is touched when profiling is off beyond
// `state`.
struct cs_global {
    // The one field every entry point loads first (enum cs_state_value).
    _Atomic int state;

    // The process (core.c): who we are, and which start-up hooks ran.
    struct {
        int pid;
        uid_t euid;                     // at start-up: a daemon may drop root before its launch ends
        int high_fd;                    // where our descriptors go (cs_fd_high); 0: left where opened
        uint64_t fd_limit;              // RLIMIT_NOFILE at start-up (cs_fd_share)
        uint64_t vm_room;               // address space RLIMIT_AS left at start-up (cs_vm_share); UINT64_MAX: no limit
        // Set by arming when that share holds less than everything
        // (core.c, address_space_suffices): no libunwind, so no malloc
        // arena on Coldstart's threads, and the watcher's thread started
        // from the arming thread, whose arena is the host's own.
        bool vm_no_arena;
        uint32_t vm_max_rings;          // the sampler's per-thread rings (and the bridge's) the share holds; 0: no bound
        uint64_t ticks_per_second;      // _SC_CLK_TCK, read before main
        bool preinit_ran;
        _Atomic bool before_main_ran;   // read by the sampler's thread
        bool can_read_safely;           // process_vm_readv works on this process (cs_safe_read_init)
        // /proc is an outer pid namespace's view (cs_proc_note_ns): its task
        // ids are not the ones system calls take. Set once, never cleared.
        _Atomic bool proc_foreign;
        _Atomic bool ns_checked;        // cs_proc_check_levels ran (once, on the first of our threads)
        char swift_version[32];
    } proc;

    // Every COLDSTART_* setting, read once (config.c).
    struct cs_config cfg;

    // The launch's fixed points (core.c, end.c). Absolute CLOCK_MONOTONIC.
    // t_setup_end: Coldstart's own set-up in .preinit_array (watcher, sampler)
    // is done; it is a phase of its own so that its cost (the first perf event
    // of a quiet system can take 15+ ms in the kernel) is not mistaken for the
    // host's library initializers.
    struct {
        uint64_t t_earliest, t_setup_end, t_main, t_ready, t_end;
        int ready_tid;                  // the thread that called ready(): where the launch ended
        struct cs_rusage ru_earliest, ru_setup_end, ru_main, ru_end;
        enum cs_end_reason end_reason;
        int end_status;                 // exit status or signal number
        const char *aside_for;          // CS_END_ASIDE: the call, "unshare(CLONE_NEWUSER)" …
        _Atomic int end_known;          // the end's fields above are set (release; end.c)
        // The start estimated in .preinit_array (procstat.c; 0: none), and the
        // main thread's voluntary context switches then: 0 means it never
        // slept, so the estimate misses no time.
        uint64_t start_estimate;
        uint64_t start_estimate_nvcsw;
    } launch;

    // The marks and spans the host records (core.c): an append-only log.
    struct {
        struct cs_event *events;        // CS_MAX_EVENTS slots, mmap'd when armed
        _Atomic uint32_t next_event;
        _Atomic uint32_t dropped_events;
        char *names;                    // CS_NAME_BYTES, mmap'd when armed
        _Atomic uint32_t names_used;
        _Atomic uint32_t dropped_name_bytes;
        _Atomic int busy;               // callers between enter() and leave() (core.c)
    } log;

    // The abandonment handlers (end.c): which signals we own (installed over
    // SIG_DFL only).
    struct {
        bool owns_signal[NSIG];
    } abandon;

    // Coldstart's own threads (sys.c): the sampler and the watcher leave them
    // alone without reading each other's state.
    struct {
        _Atomic uint32_t count;
        _Atomic int starting;           // created, tid not yet published
        struct cs_own_thread threads[CS_OWN_MAX];
        // Started off the creating host thread's CPU (cs_start_thread): the
        // host's affinity then, which each of ours takes back (cs_own_unplace).
        _Atomic bool placed;
        cpu_set_t home;
        // Whether the host's threads have all ended (cs_own_exit_if_host_ended):
        // when it last looked, the main thread's CPU then, and the one exit.
        _Atomic uint64_t host_look_ns;
        uint64_t host_main_cpu;
        _Atomic bool host_exit;
    } own;

    // The stack sampler (sampler.c, smpstop.c, smpclock.c, smpthreads.c,
    // smpring.c, smpunwind.c, smpjson.c, modules.c): clock sources, preallocated sample buffers, per-thread
    // slots, libunwind. All zero and untouched unless sampling started.
    struct cs_sampler smp;

    // The off-CPU watcher thread (watcher.c, watchseg.c, watchfd.c, watchunwind.c, watchjson.c):
    // per-thread states, causes and blocked stacks, read from /proc without
    // signalling anyone.
    struct cs_watch watch;

    // The timeline and its single writer (end.c, timeline.c): who writes it
    // (0 free, else the writer's tid; exactly one writer ever wins; `written`
    // says it finished), where, and its scratch space, so it never allocates.
    struct {
        _Atomic int writer_tid;
        _Atomic int written;
        char dest[PATH_MAX];            // final path of the timeline
        char dir[PATH_MAX];             // its directory
        char base[256];                 // its file name
        int dirfd;                      // the directory, opened once at start-up (O_PATH)
        // The file made ahead of the end (outfile.c): state, descriptor, identity.
        _Atomic int early;
        int early_fd;
        uint64_t early_dev, early_ino;
        uid_t early_euid;               // who made it: only they can link it (place_new)
        uint64_t dir_dev, dir_ino;      // what dirfd must still be
        struct cs_jw jw;
        // Not on the writer's stack (~8 KiB): the writer is whichever thread
        // calls exit() or takes the signal, with whatever stack it has left.
        struct cs_plan plan;
        uint32_t span_end_of[CS_MAX_EVENTS];     // begin slot → end slot + 1
        uint32_t boundary_slots[CS_MAX_BOUNDARIES];
        int thread_ids[64];
        char thread_names[64][64];      // their names, read once per write
        // What the plan needs that is final before the end, read by one of
        // Coldstart's threads (cs_timeline_prepare) and published by facts_ready.
        _Atomic int facts_claimed;
        _Atomic bool facts_ready;
        struct cs_out_early_facts {
            int start_rc;
            struct cs_start start, without_launcher;
            uint64_t boot_off;
            char exe[PATH_MAX];
            struct utsname uts;
        } facts;
        char dents[8192];               // directory entries, for the rotation
        struct cs_rotate_entry oldest[CS_ROTATE_BATCH];   // its candidates, oldest first
        // While the process's last writer writes (writecpu.c): the host's
        // threads moved off its CPU with their own affinity, and its own;
        // and /proc/self/task, opened ahead (state 0 nothing, 1 being
        // opened, 2 open, 3 taken or given up), with its identity.
        struct {
            _Atomic int task_state;
            int task_fd;
            uint64_t task_dev, task_ino;
            int n;
            int tids[CS_CPU_MOVE_MAX];
            cpu_set_t masks[CS_CPU_MOVE_MAX];
            cpu_set_t writer;
            bool writer_pinned;
        } cpus;
    } out;
};

extern struct cs_global cs_g;

// ---- hostexit.c ----
/// Called by Coldstart's threads between their turns: when every thread of
/// the host has ended (the main thread a zombie after pthread_exit, no other
/// thread but Coldstart's), glibc's last thread would have called exit(0),
/// which Coldstart's threads, counted among glibc's, hold back; the first of
/// them to see it calls exit(0) in its place, once. Looks at most every
/// 5 ms (the main thread's CPU clock; /proc only when it stood still). Not
/// async-signal-safe (exit).
void cs_own_exit_if_host_ended(void);

// ---- core.c (cs_preinit, cs_before_main: include/coldstart_startup.h) ----

// ---- end.c: how a launch ends; the one owner of stopping ----
/// Installs the abandonment handlers (SIGINT, SIGTERM, SIGHUP over SIG_DFL)
/// and the exit handler. Runs from cs_before_main. Not async-signal-safe.
void cs_end_arm(void);

// ---- timeline.c ----
/// Serialises the whole timeline to cs_g.out.tmp and renames it to
/// cs_g.out.dest; capture has stopped (end.c). Uses only open/write/rename/
/// close and the preallocated buffer, so it is async-signal-safe. 0, -1, or
/// CS_WRITE_TOO_BIG when even the timeline without sampling and watch data is
/// over COLDSTART_MAX_BYTES (nothing is written then).
int cs_write_timeline(void);
#define CS_WRITE_TOO_BIG (-2)

// ---- prepare.c ----
/// Makes the timeline's file (cs_out_prepare), opens /proc/self/task for
/// the writer's isolation (cs_cpu_prepare), reads what the plan needs that
/// is final (process start, executable, uname) and faults in the
/// writer's scratch space (plan, span table, thread names, output buffer,
/// saved affinities) ahead of the end, from one of
/// Coldstart's threads. Async-signal-safe (madvise).
void cs_timeline_prepare(void);

// ---- writecpu.c (async-signal-safe: raw system calls) ----
/// Moves the process's other threads (up to CS_CPU_MOVE_MAX; never one
/// pinned to that CPU alone) off the CPU the calling thread (the writer at
/// the process's end) is on, and pins the caller to that CPU if one of them
/// was the host's. Nothing on a single-CPU affinity.
void cs_cpu_isolate(void);
/// Gives every thread cs_cpu_isolate moved, and the writer, its affinity back.
void cs_cpu_restore(void);
/// Opens /proc/self/task for cs_cpu_isolate ahead of the end, from one of
/// Coldstart's threads (cs_timeline_prepare).
void cs_cpu_prepare(void);
/// Closes what cs_cpu_prepare opened if the writer did not take it (after
/// ready(), whose writer moves no thread).
void cs_cpu_release(void);

// ---- outfile.c (async-signal-safe) ----
/// Fills cs_g.out (destination, directory, its descriptor and identity,
/// file name) from COLDSTART / COLDSTART_DIR; false, with one warning, when
/// the value is invalid or the directory is not writable. At arming only
/// (cs_preinit or the first constructor); system calls only.
bool cs_out_choose(const char *value, const char *dir_env);
/// The timeline's directory: the descriptor opened at start-up if it still is
/// that directory, else the directory reopened by path if it is the very same
/// one (device and inode); -1 if neither. *opened: the caller closes it.
int cs_out_dir(bool *opened);
/// Creates "<base>.tmp.<pid>.<16 random hex digits>" in `dir` (O_EXCL,
/// O_NOFOLLOW, mode 0600) and returns its descriptor; its name in `name`.
int cs_out_create_temp(int dir, char *name, size_t cap);
/// Closes the descriptor of the timeline's directory if it still is ours.
void cs_out_close_dir(void);
/// Makes the timeline's file ahead of the end, unnamed (O_TMPFILE, 0600, in
/// the timeline's directory), from one of Coldstart's threads; nothing where
/// the file system cannot. Async-signal-safe.
void cs_out_prepare(void);
/// The writer's side: the file cs_out_prepare made, if it is ready and still
/// ours (a host may have closed and reused the number), else -1; either way
/// no file is made after this. Async-signal-safe.
int cs_out_take_prepared(void);
/// Gives the written timeline its name: the temporary file `tmp` renamed, or
/// the unnamed file `fd` linked (`tmp` NULL); "<stem>-N.json" when a file
/// there was written after this process started (its start between the two
/// CLOCK_REALTIME bounds, µs). 0 or -1.
int cs_out_publish(int dir, const char *tmp, int fd, uint64_t start_rt_us, uint64_t latest_start_rt_us);
/// Removes the file at the destination if it is a regular file written before
/// `start_rt_us` (CLOCK_REALTIME µs: the process start, at its earliest), the
/// timeline of a previous run that the end would replace. Scan thread, during
/// the launch. Async-signal-safe.
void cs_out_remove_previous(uint64_t start_rt_us);
/// With COLDSTART_KEEP / COLDSTART_KEEP_BYTES, removes the oldest timelines
/// of Coldstart's naming ("coldstart-<executable>-<pid>[-<n>].json", regular
/// files of this user, never the one just written) from `dir` until the
/// count and total size are within bounds (at most CS_ROTATE_BATCH per call,
/// from one listing). unlinkat relative to `dir`; symlinks are never followed.
void cs_out_rotate(int dir);

// ---- labels.c ----
/// Writes the "sample" and "labels" members of the coldstart section: the
/// sampling draw, COLDSTART_LABELS and the default labels (host, kernel,
/// buildId) the user did not set. Async-signal-safe.
struct utsname;
void cs_labels_write(struct cs_jw *w, const struct utsname *uts);
/// ownjson.c: `,"ownThreads":[…]`, each of Coldstart's threads' CPU points
/// (cs_own_tick), times as offsets from `start`. Async-signal-safe (reads
/// the points the threads published; writes only to `w`).
void cs_own_write(struct cs_jw *w, uint64_t start);

// ---- procstat.c ----
/// Estimates the start from the calling (main) thread's CPU time and
/// run-queue wait into cs_g.launch; from .preinit_array, where the main
/// thread has done nothing but load. Async-signal-safe (raw syscalls).
void cs_estimate_start(void);
/// The process start; when a launcher gave it, *without_launcher is what
/// Coldstart would have found on its own (source NULL if nothing), else
/// source NULL. -1 if no start at all. Async-signal-safe
/// (open/read/close/clock_gettime).
int cs_process_start(struct cs_start *start, struct cs_start *without_launcher, uint64_t *boot_minus_mono_ns);
/// Compares the pid the link /proc/self names with `pid` (getpid's): a
/// difference marks /proc foreign (cs_proc_foreign), and the first to find
/// it says so in one line on stderr, naming what is left on: `sampling`
/// (the main thread's). A link that cannot be read (no /proc) proves
/// nothing. Returns cs_proc_foreign(). Async-signal-safe (readlink).
bool cs_proc_note_ns(int pid, bool sampling);
/// The exact test, which a pid with the same number in both namespaces
/// passes too: /proc/thread-self/status's NSpid line holds more than one id
/// when /proc is an ancestor namespace's. Once a launch, on the first of
/// Coldstart's threads (the sampler's scan thread, else the watcher's),
/// before either lists a thread (~13 µs of that thread's CPU). Marks
/// /proc foreign as above. Async-signal-safe (open, read).
void cs_proc_check_levels(bool sampling);
/// Thread `tid`'s name as the kernel keeps it (15 bytes, cut on a
/// character), else "thread <tid>"; `mine`: `tid` is the calling thread,
/// named without a read of /proc. Async-signal-safe.
void cs_thread_name(int tid, bool mine, char *out, size_t cap);

#endif
