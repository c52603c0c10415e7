// The stack sampler's state (a member of `cs_g`, see internal.h) and the
// functions its C files share. Format of what it records:
// docs/timeline-format.md, "Sampling sections". Design and measurements:
// docs/performance.md.
#ifndef COLDSTART_SAMPLER_H
#define COLDSTART_SAMPLER_H

#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <link.h>
#include <linux/perf_event.h>
#include <stdint.h>
#include <time.h>

#include "jsonw.h"
#include "remoteunwind.h"

#define CS_SMP_MAX_DEPTH 128          // frames kept per sample (leaf first)
#define CS_SMP_AVG_DEPTH 32           // frame pool = max samples × this
#define CS_SMP_MAX_THREADS 1024       // power of two: open-addressed by tid
#define CS_SMP_MAX_MODULES 512
#define CS_SMP_PATH 256
#define CS_SMP_COST_BUCKETS 4096      // handler-cost histogram, 10 ns buckets
// The signal is chosen per thread (F_SETSIG per perf event, sigev_signo per
// timer). SIGURG where the thread leaves it unblocked: its default action is
// to be ignored, so a signal of ours still pending when the host resets the
// action (or blocks and unblocks it) is harmless, and the host's own SIGPROF
// profilers and timers, and the Swift crash handler's SIGPROF, never see our
// signals. libdispatch's workers block every signal but SIGPROF and the
// synchronous fault signals (so that profilers work): they get SIGPROF, only
// while our handler holds it (the host installed none).
#define CS_SMP_SIGNAL SIGURG
#define CS_SMP_ALT_SIGNAL SIGPROF

enum cs_smp_clock { CS_CLOCK_NONE, CS_CLOCK_PERF, CS_CLOCK_POSIX, CS_CLOCK_WALL };
// CS_UNW_LIBUNWIND: the kernel copies registers and the top of the user stack
// at each sample, unwound with DWARF CFI by libunwind's remote API on
// Coldstart's own threads (smpunwind.c). CS_UNW_FP: frame pointers only (the
// kernel's call chain; the signal fallback's handler walks them itself).
// CS_UNW_OFFLINE: the kernel copies the same, and nothing in the process
// unwinds it: each sample keeps the kernel's frame-pointer chain, and its
// registers and copy go into the timeline (`rawStacks`), which the CLI
// unwinds with DWARF CFI when it reads the file. libunwind is never loaded.
enum cs_smp_unwinder { CS_UNW_LIBUNWIND, CS_UNW_FP, CS_UNW_OFFLINE };

// One recorded sample. Its frames live in the shared pool at `frame_off`.
struct cs_sample {
    _Atomic uint32_t committed;       // 1 once the fields below are written
    int32_t tid;
    uint64_t ns;                      // absolute CLOCK_MONOTONIC at handler entry
    uint32_t frame_off;
    uint16_t nframes;
    uint16_t flags;                   // CS_SMP_BOOSTED, CS_SMP_KEPT
    uint32_t cost_ns;                 // handler entry → exit
    uint32_t pad2;
};

// Taken at the boosted start rate (cs_sampler.boost_*) ...
#define CS_SMP_BOOSTED 1u
// ... and one of every boost_hz / requested_hz of them: kept when the launch
// outlives the boost and the writer thins the boosted samples to one rate.
#define CS_SMP_KEPT 2u
// Recorded by the kernel into the thread's ring (smpring.c): no signal, no
// handler; cost_ns is 0.
#define CS_SMP_KERNEL 4u
// Its frames are libunwind's, from the kernel's copy of the stack (DWARF) ...
#define CS_SMP_DWARF 8u
// ... completed with the kernel's frame-pointer chain past the copy's end.
#define CS_SMP_CHAIN_TAIL 16u

// The bridge (smpbridge.c): CPU-wide cpu-clock events, one per online CPU,
// open while a quiet kernel holds the first task-bound event back.
#define CS_SMP_BRIDGE_CPUS 64
// How long the bridge waits for the helper at most (as the first task clock
// would, smpclock.c: a helper killed by someone else never says so).
#define CS_SMP_BRIDGE_WAIT_NS 2000000000ull

// What the sampler knows about one thread: its clock source and the bounds
// of its stack for the signal fallback's frame-pointer walk.
struct cs_smp_thread {
    _Atomic int tid;                  // 0: free slot
    _Atomic int armed;                // 1 while the clock source is running
    _Atomic int sampled;              // 1 once it was armed (listed in "threads")
    uint32_t seen;                    // the last scan that listed it (scan_gen)
    bool blocking;                    // it was seen blocking both signals (counted once)
    uint8_t blocked_scans;            // scans that found it so (counted from the second)
    _Atomic int boosted;              // its clock runs at the boosted period
    uint32_t boost_seq;               // boosted samples of this thread (handler only)
    int signo;                        // the signal its clock raises (set when armed)
    int fd;                           // perf event, or -1
    // Its ring buffer, or NULL: one data page whose only use is a wakeup, so a
    // signal, per sample; or, while `kernel_stacks`, the pages the kernel
    // writes whole samples into (smpring.c).
    struct perf_event_mmap_page *ring;
    uint32_t ring_bytes;              // mapped length of `ring`
    bool kernel_stacks;               // its event records stacks in the ring, and sends no signal
    bool kernel_regs;                 // ... with registers and a copy of the user stack (DWARF)
    uint64_t event_id;                // PERF_EVENT_IOC_ID: recognises our fd
    // CLOCK_MONOTONIC just before its task clock was enabled (0: never): the
    // bridge's samples of this thread from then on are the task clock's too.
    _Atomic uint64_t armed_at_ns;
    timer_t timer;                    // POSIX timer (posix/wall clocks)
    bool has_timer;
    uintptr_t stack_lo, stack_hi;     // readable [lo, hi) above the stack pointer
};

// One executable mapping of /proc/self/maps, with its ELF identity.
struct cs_module {
    uint64_t start, end, base;        // base: load bias (address − ELF vaddr)
    char path[CS_SMP_PATH];
    uint8_t build_id[32];
    uint8_t build_id_len;
};

// A kernel sample kept until the unwinder is loaded (once main runs: a
// dlopen among the host's library initializers is not safe), followed by the
// perf record itself (`size` bytes).
struct cs_smp_pending {
    uint32_t size;
    int32_t tid;
    uint16_t flags;
    uint16_t pad[3];
};
#define CS_SMP_PENDING_BYTES (4u << 20)   // ~1000 samples of 4 KiB stack, reserved, touched as used
// The stopper unwinds what the last drain left for this much of its CPU
// (on the host's exit path: a sample's DWARF unwind is 20–100 µs here), then
// keeps the kernel's frame-pointer chains.
#define CS_SMP_FINAL_UNWIND_NS 300000ull
#define CS_SMP_UNWIND_PAGES 1024          // the unwinder's page cache (unwind tables; 4 MiB reserved, touched as used)

// CS_UNW_OFFLINE: one kernel sample's registers and stack copy, kept for the
// timeline (smpjson.c, `rawStacks`), followed by `len` bytes of the copy
// (padded to 8). Appended by the drainer only, in the order of its samples'
// slots.
struct cs_smp_raw {
    uint32_t slot;                    // its sample's index in `samples`
    uint32_t len;                     // bytes of stack copied from regs[CS_PERF_SP] up
    uint64_t regs[CS_PERF_NREGS];     // perf's sample_regs_user order (arch.h)
};
// The pool's bound: ~3,900 copies of 4 KiB (a second of CPU at 3 kHz; the
// file then holds ~21 MiB of them in base64, under COLDSTART_MAX_BYTES'
// 32 MiB), reserved and touched as used. A sample past it keeps its chain
// and is counted (`kernelStacks.rawDropped`).
#define CS_SMP_RAW_BYTES (16u << 20)

struct cs_sampler {
    // ---- configuration, fixed before sampling starts ----
    enum cs_smp_clock clock;
    enum cs_smp_clock want;           // asked for (the scan thread opens it)
    // perf_event_open's refusal, when the POSIX timers replaced it (0: none),
    // and what refused it (sampler.c note_refusal; -1: unread).
    int perf_errno;
    int perf_paranoid, perf_seccomp;
    uint64_t perf_caps;               // CapEff
    enum cs_smp_unwinder unwinder;
    uint32_t requested_hz;
    uint64_t period_ns;
    uint32_t max_samples;
    uint32_t max_frames;              // frame pool size
    // A boosted start (no COLDSTART_HZ, perf clock): boost_hz until the
    // host's threads have had CS_BOOST_NS of CPU (boost_spent), then
    // requested_hz; boost_end_ns is when the scan thread switched the clocks
    // back (0: the launch ended inside the boost).
    uint32_t boost_hz;
    uint64_t boost_period_ns;
    _Atomic int boost_on;
    uint64_t boost_end_ns;
    // The kernel records every sample into the thread's ring, which the scan
    // thread empties (smpring.c): no signal, no handler. With the DWARF
    // unwinder each record holds the registers and the top stack_bytes of the
    // user stack; else only the frame-pointer chain (COLDSTART_UNWINDER=fp).
    _Atomic int kernel_stacks_on;
    uint32_t stack_bytes;
    bool window_ended;                // the scan thread ended the boost (end_window)
    _Atomic uint32_t ring_lost;       // samples the kernel lost to a full ring
    // The helper process that opens the kernel's first event (smpclock.c).
    int warm_pid;                     // 0: none started, or reaped
    void *warm_stack;
    // Its pid, written by the helper itself first thing and by the scan
    // thread once clone returns, until whoever reaps it (the scan thread, or
    // a host's wait with __WALL or __WCLONE: smpclock.c) zeroes it; the
    // reaper, the first to set warm_reaped, unmaps its stack.
    _Atomic int warm_child, warm_reaped;
    _Atomic int warm_done;            // its event is open: ours open at once now
    // The bridge (smpbridge.c): its descriptors and rings, one per CPU; all
    // of it under the scan flag (the scan thread, or the stopper).
    _Atomic uint32_t bridge_n;        // events open (0: none, or closed)
    int bridge_cpus;                  // CPUs it ran on (0: it never ran)
    int bridge_fd[CS_SMP_BRIDGE_CPUS];
    uint64_t bridge_id[CS_SMP_BRIDGE_CPUS];
    struct perf_event_mmap_page *bridge_ring[CS_SMP_BRIDGE_CPUS];
    uint32_t bridge_ring_bytes;
    bool bridge_regs, bridge_boosted;
    int host_pid;
    uint64_t bridge_open_ns, bridge_close_ns;   // CLOCK_MONOTONIC; close 0: open at the stop
    // Its records: the host's kept; the host's left to a thread's own
    // clock; other processes' dropped at the header; lost by a full ring.
    uint32_t bridge_kept, bridge_overlap, bridge_foreign, bridge_lost;
    // How much of the sample buffers the scan thread has faulted in (bytes),
    // kept ahead of what the handlers have used.
    size_t faulted_sample_bytes, faulted_frame_bytes;
    int main_tid;
    uint64_t cookie;                  // sigev_value of our POSIX timers
    // Forks (cs_smp_fork_prepare): perf events being opened and not yet
    // recorded in their slot, and forks of the host's under way.
    _Atomic int fd_opens, forks;

    // ---- recording (handler) ----
    _Atomic int active;               // 1 while samples are taken
    _Atomic int in_flight;            // handlers running now
    _Atomic uint32_t next_sample;
    _Atomic uint32_t next_frame;
    _Atomic uint32_t dropped;         // buffer full
    _Atomic uint32_t ticks;           // clock signals received while active
    _Atomic uint32_t stride;          // keep one tick in `stride` (rate lowering)
    _Atomic uint32_t window_over;     // samples over budget in the current window
    _Atomic uint32_t window_count;
    _Atomic uint32_t unwind_failures; // DWARF unwinds that fell back to the kernel's chain
    _Atomic uint32_t stack_skips;     // signal fallback: too little stack left, sample skipped
    struct cs_sample *samples;        // max_samples, mmap'd and pre-faulted
    uint64_t *frames;                 // max_frames, mmap'd and pre-faulted

    // ---- threads ----
    struct cs_smp_thread threads[CS_SMP_MAX_THREADS];
    // The slots in use (a slot, once a thread's, stays its), in the order
    // they were taken: index + 1, 0 while the taker has not written it yet.
    // Walks over the threads read these, not the 1024 slots: a walk over the
    // whole table (160 KB) cost the stop at exit ~10 µs of cache misses.
    _Atomic uint16_t used[CS_SMP_MAX_THREADS];
    _Atomic uint32_t nused;
    _Atomic int scanning;             // one thread scans, arms or drains at a time; 2: and a stopper waits
    _Atomic int opening;              // 1 while the first clock opens; 2: a stop came meanwhile (open_clocks)
    _Atomic int main_started;         // set with a wake when main begins: the scan thread prepares the write
    _Atomic uint64_t last_scan_ns;
    _Atomic uint32_t thread_overflow; // threads not sampled: table or fd limit
    _Atomic uint32_t threads_armed;   // threads whose clock source ran
    _Atomic uint32_t threads_live;    // clock sources open now (one descriptor each)
    uint32_t max_live;                // at most this many: cs_fd_allowance (sys.h)
    uint32_t scan_gen;

    const char *stop_reason;          // "launch-end", "time-limit", "buffer-full", "signal-taken"
    _Atomic uint32_t threads_blocking; // threads seen blocking the signal (not armed while they do)

    // ---- signal ownership ----
    bool owns_signal;                 // our handler is installed on CS_SMP_SIGNAL
    _Atomic bool owns_alt;            // ... and on CS_SMP_ALT_SIGNAL (cleared when the host takes it)
    void (*handler)(int, siginfo_t *, void *); // ours, to recognise it in sigaction's answer
    bool released;

    // ---- the window, for the effective rate ----
    uint64_t t_start, t_stop;         // CLOCK_MONOTONIC
    // When the main thread's clock was running (read just after it started):
    // the first perf event of a quiet kernel takes 10–18 ms to open.
    uint64_t armed_ns;
    // When the scan thread first ran: a busy machine holds it back, and with
    // it every clock, however warm the kernel.
    uint64_t scan_began_ns;
    uint64_t cpu_start, cpu_stop;     // CLOCK_PROCESS_CPUTIME_ID
    uint64_t own_cpu;                 // CPU of Coldstart's unsampled threads (watcher, scanner) at the stop
    struct cs_rusage ru_start, ru_stop; // user/system split of that CPU time
    bool started;
    _Atomic bool stopped;             // the window is closed: t_stop, cpu_stop are set

    // ---- the DWARF unwinder (smpunwind.c): used by one drainer at a time ----
    struct cs_unw_space unw;
    struct cs_unw_page *unw_pages;      // CS_SMP_UNWIND_PAGES, mapped at start
    _Atomic int unw_verified;           // unw is usable (the scan thread loaded it)
    uint64_t unw_ready_ns;              // when (CLOCK_MONOTONIC): earlier samples waited in `pending`
    int unwind_tries;                   // loads tried (scan thread)
    uint64_t *rec;                      // one perf record being read (CS_SMP_REC_BYTES)
    uint32_t dwarf_samples;             // samples whose frames are libunwind's
    uint64_t unwind_ns;                 // CPU time spent unwinding them (the drainer's thread)
    uint64_t final_until_ns;            // the stopper's thread CPU time when its DWARF budget ends (0: not stopping)
    unsigned char *pending;             // CS_SMP_PENDING_BYTES of struct cs_smp_pending + record
    size_t pending_used, pending_done;
    bool can_read_safely;               // process_vm_readv works on this process

    // ---- the offline unwinder's copies (CS_UNW_OFFLINE): the drainer appends ----
    unsigned char *raw;                 // CS_SMP_RAW_BYTES of struct cs_smp_raw + stack bytes
    _Atomic size_t raw_used;            // bytes published (release): the writer reads up to here
    uint32_t raw_kept, raw_dropped;     // copies kept; samples whose copy did not fit

    // ---- the module table (modules.c) ----
    // Taken by the scan thread once main runs (off the exit path), with the
    // loader's dlopen/dlclose counts then; the writer reuses it when they
    // have not moved, else (or in a signal handler) reads it again.
    struct cs_module modules[CS_SMP_MAX_MODULES];
    uint32_t nmodules;
    bool modules_early;
    uint64_t modules_adds, modules_subs;
    uint32_t cost_hist[CS_SMP_COST_BUCKETS + 1];
};
#define CS_SMP_REC_BYTES 65536            // a perf record's size is 16 bits
// The user registers a kernel sample carries: CS_PERF_REGS_MASK (arch.h).

// The sampler's state, in the files that work on it.
#define S (&cs_g.smp)

// ---- sampler.c (start, the handler, the scan thread) and smpstop.c ----
/// Starts sampling as cs_g.cfg says. Runs from cs_preinit (before libc's
/// constructors) or the first constructor. Not async-signal-safe; never
/// called from a handler.
void cs_sampler_start(void);
/// Wakes the scan thread as main begins, so that what the writer needs at
/// the launch's end (module table, timeline file) is made then, not up to a
/// scan period later: a launch whose main runs only a few milliseconds
/// otherwise ended first in one of five runs, and its exit made them
/// (~0.3 ms). Async-signal-safe (a futex wake).
void cs_sampler_main_started(void);
/// Stops taking samples and closes every clock source; waits (bounded) for
/// running handlers. Idempotent. Async-signal-safe.
void cs_sampler_stop(void);
/// Unmaps the sample buffers if sampling stopped and no handler runs.
/// Call after the timeline is written. Async-signal-safe.
void cs_sampler_unmap(void);
/// Gives the signal back (restores SIG_DFL, which ignores a signal of ours
/// still pending) if our handler is still installed. Call after
/// cs_sampler_stop. Async-signal-safe.
void cs_sampler_release(void);
/// Whether our handler is the action of `sig` now. Async-signal-safe.
bool cs_smp_handler_holds(int sig);
/// pthread_atfork's handlers (core.c). Prepare: waits, 10 ms at most, for
/// the events being opened to be recorded in their slots (cs_smp_open_begin).
/// Child: closes every perf event the parent's sampler held (the task
/// clocks, the bridge's CPU-wide events), so that the child can neither read
/// nor re-enable the parent's samples. All async-signal-safe.
void cs_sampler_fork_prepare(void);
void cs_sampler_fork_parent(void);
void cs_sampler_fork_child(void);

// ---- smphandler.c ----
/// The sampling signal's handler: ours (a clock's overflow or
/// timer, by its code and cookie) is sampled, another sender's is given its
/// default behaviour. Async-signal-safe.
void cs_smp_on_signal(int sig, siginfo_t *si, void *uc);
/// Makes, once, every C library call the handler's paths can make, before
/// the handler is installed. Under lazy binding the first call through a
/// PLT slot runs the loader's _dl_runtime_resolve, which saves the whole
/// vector state on the caller's stack (~3 KiB with AVX-512): in the handler,
/// on a thread with little stack left, that first call died of SIGSEGV
/// where the handler itself would have skipped the sample. Not
/// async-signal-safe (the loader's lookup); the installing thread only.
void cs_smp_bind_handler_calls(void);

// ---- smpthreads.c ----
/// Looks for threads created since the last look and starts sampling them
/// (never Coldstart's own). Async-signal-safe; skips if another thread is
/// scanning.
void cs_sampler_scan_threads(void);
/// Adds sampled threads' ids to `ids` (no duplicates); returns the new count.
/// Async-signal-safe.
size_t cs_sampler_add_threads(int *ids, size_t n, size_t cap);
/// The `k`th slot taken (k < nused), or NULL if its taker has not recorded
/// it yet. Lock-free, async-signal-safe.
struct cs_smp_thread *cs_smp_used(uint32_t k);
/// cs_smp_drain (smpring.c) for every kernel_stacks thread but `except` (a slot another
/// thread may be freeing, or NULL).
/// One caller at a time: the scan-flag holder, or the stopper.
/// Async-signal-safe.
void cs_smp_drain_all(const struct cs_smp_thread *except);
/// The thread slot for `tid`, inserting it when `insert`; NULL if full or
/// absent. Lock-free, async-signal-safe.
struct cs_smp_thread *cs_sampler_thread(int tid, bool insert);
/// Stops the clocks of the threads sampled with CS_SMP_ALT_SIGNAL (the host
/// took that signal); they count as blocking from now on, and their
/// descriptors are closed at the stop. Returns how many there were. Call with
/// the scan flag held. Async-signal-safe.
uint32_t cs_smp_drop_alt_threads(void);
/// Lets go of the scan flag, waking a stopper that waits for it.
/// Async-signal-safe.
void cs_smp_scan_release(void);

// ---- smpclock.c (all async-signal-safe: system calls only) ----
/// The signal to sample thread `tid` with, from its /proc status SigBlk:
/// CS_SMP_SIGNAL if it leaves that unblocked, else CS_SMP_ALT_SIGNAL if it
/// leaves that unblocked and our handler holds it, else 0 (a signal of ours
/// would wait for it, or be taken by its sigwait).
int cs_smp_signal_for(int tid);
/// The id of the perf event `fd` just opened, before anything else is done
/// with it; 0 if the number is no perf event any more (a host that closes
/// every descriptor closed it and may have put its own file there: neither
/// configured, mapped nor closed).
uint64_t cs_smp_event_id(int fd);
/// Closes `fd` if it still is perf event `id`.
void cs_smp_close_event(int fd, uint64_t id);
/// Starts thread `tid`'s clock source (S->clock), raising `signo`, into slot
/// `t`; 0 or an errno.
int cs_smp_arm_thread(struct cs_smp_thread *t, int tid, int signo);
/// Stops the thread's clock: no new signal after this returns.
void cs_smp_silence_thread(struct cs_smp_thread *t);
/// Closes its event and unmaps its ring: only once no handler can touch them.
void cs_smp_free_thread(struct cs_smp_thread *t);
/// Starts the helper process that opens (and closes) the kernel's first perf
/// event, so that a quiet kernel's one-time wait is its, not this process's
/// (scan thread, before the first clock). Async-signal-safe.
void cs_smp_warm_start(void);
/// Waits up to `ns` for the helper to be done; true if it is (or there is
/// none). Async-signal-safe.
bool cs_smp_warm_wait(uint64_t ns);
/// Reaps the helper (scan thread, after the first clock). Async-signal-safe.
void cs_smp_warm_reap(void);
/// Both, for a thread no handler can be running on (never enabled, or the caller).
void cs_smp_disarm_thread(struct cs_smp_thread *t);
/// Around opening perf events and recording them in their slots (arming a
/// thread, the bridge): a fork of the host's waits for the pair to finish,
/// so that a forked child knows every event it inherits (cs_sampler_fork).
/// Async-signal-safe; the caller may sleep in begin while a fork is under way.
void cs_smp_open_begin(void);
void cs_smp_open_end(void);

// ---- smpbridge.c (async-signal-safe: system calls, memory, atomics) ----
// Each with the scan flag held.
/// Opens the bridge where the kernel allows CPU-wide events (CAP_PERFMON,
/// or perf_event_paranoid <= 0); silently nothing where it refuses them.
/// Scan thread, before the first task clock.
void cs_smp_bridge_open(void);
/// Moves the host's samples from the bridge's rings into the sample
/// buffers and drops every other process's at once.
void cs_smp_bridge_drain(void);
/// Scan thread, without the flag, before the first task clock: until the
/// helper has paid the quiet kernel's wait (CS_SMP_BRIDGE_WAIT_NS at most)
/// and `hold_ns` is over, draining the bridge every millisecond.
void cs_smp_bridge_wait(uint64_t hold_ns);
/// 0 in every host (sampler.c's weak definition); the bridge's test
/// fixture links one that reads COLDSTART_BRIDGE_HOLD_MS.
uint64_t cs_test_bridge_hold_ns(void);
/// Disables, drains (with `drain`: not once the sampling window is closed)
/// and closes the bridge (the task clocks are installed, or the launch ends:
/// `exiting` leaves the descriptors and rings to the process's exit).
void cs_smp_bridge_close(bool exiting, bool drain);
// ---- smpring.c: the bridge's records ----
/// Drains one ring: a thread's (`t`, `keeps` NULL), or a bridge ring (`t`
/// NULL): `keeps` is given each sample's first three words (header, pid and
/// tid, time) and names the thread it is kept for, or NULL to drop it there.
void cs_smp_drain_ring(struct perf_event_mmap_page *pg, bool regs, struct cs_smp_thread *t,
                       struct cs_smp_thread *(*keeps)(const uint64_t *ids));
// ---- smpring.c (async-signal-safe: memory and atomics only) ----
/// Appends one sample (frames leaf first); counts it as dropped when the
/// buffers are full. Returns its slot, or UINT32_MAX when dropped. Lock-free.
uint32_t cs_smp_record(int tid, uint64_t ns, const uint64_t *frames, int n, uint16_t flags, uint32_t cost_ns);
/// CS_SMP_BOOSTED (and CS_SMP_KEPT for one in boost_hz / requested_hz) for
/// the next sample of `t` if its clock runs boosted, else 0. One caller at a
/// time per thread (its handler, or its ring's drainer).
uint16_t cs_smp_boost_flags(struct cs_smp_thread *t);
/// Moves the samples the kernel wrote into `t`'s ring (a kernel_stacks
/// thread) into the sample buffers, leaf first (unwound, or kept in
/// `pending` until the unwinder is loaded), and frees the ring's space.
/// One caller at a time: the scan-flag holder, or the stopper.
void cs_smp_drain(struct cs_smp_thread *t);
/// Unwinds the samples kept in `pending` (DWARF if the unwinder is loaded,
/// else their kernel chains, when `final`). Same callers as cs_smp_drain.
void cs_smp_drain_pending(bool final);

// ---- smpunwind.c ----
/// Loads the DWARF unwinder (scan thread, once main runs); sets unw_verified
/// and unw_ready_ns. False when unusable, having said why on stderr if
/// `last_try` (a dlopen fails when the host closes descriptors under it:
/// the caller tries again). Not async-signal-safe (dlopen).
bool cs_unwind_load(bool last_try);
/// The frames of a kernel sample: libunwind over `regs` (perf's user
/// registers, sample_regs_user order) and the stack copy `stack` (`len`
/// bytes from the sampled stack pointer), completed or replaced by the
/// kernel's frame-pointer `chain` (`nchain` addresses, PC first) where the
/// copy ran out or CFI failed. Returns the count; *flags gets CS_SMP_DWARF
/// and CS_SMP_CHAIN_TAIL as they apply. The drainer only. Async-signal-safe
/// (remoteunwind.h).
int cs_unwind_sample(const uint64_t *regs, const unsigned char *stack, uint32_t len, const uint64_t *chain, int nchain,
                     uint64_t *out, int cap, uint16_t *flags);
/// The signal fallback: fills `out` with the interrupted thread's stack by
/// its frame pointers, leaf first (the PC in `uc`); returns the frame count
/// (≥ 1). Reads only inside the thread's probed stack. Async-signal-safe.
int cs_unwind(void *uc, struct cs_smp_thread *self, uint64_t *out, int cap);
/// Whether the interrupted thread has at least `bytes` of stack below the
/// caller's frame (a probe with process_vm_readv). Async-signal-safe.
bool cs_unwind_stack_room(size_t bytes);

// ---- modules.c ----
/// Fills the module table from /proc/self/maps (writer only; also used for
/// the off-CPU watcher's stacks when sampling did not run). Async-signal-safe.
void cs_modules_load(void);
/// Fills the module table from /proc/self/maps; with `loaded_objects` (never
/// in a signal handler: dl_iterate_phdr takes the loader's lock) biases and
/// build-ids from the loader's list, else read from memory.
void cs_modules_read_maps(bool loaded_objects);
/// Fills the module table from PROCMAP_QUERY, one executable mapping at a
/// time: the table cs_modules_read_maps(true) makes. False (the table empty)
/// without the query (Linux 6.11) or for a mapping the loader did not make.
/// Not async-signal-safe (dl_iterate_phdr).
bool cs_modules_query(void);
/// Fills the module table ahead of the writer and notes the loader's
/// counts (scan thread, with the scan flag held, once main runs). Not
/// async-signal-safe (dl_iterate_phdr takes the loader's lock).
void cs_modules_preload(void);
/// The table for the writer: the early one if it still holds (the loader
/// unloaded nothing since, and what it loaded holds no recorded frame), else
/// read again. Writer only. Async-signal-safe when the writer is a signal
/// handler (end_reason CS_END_SIGNAL: then /proc/self/maps and memory reads
/// only); otherwise it takes the loader's lock (dl_iterate_phdr).
void cs_modules_for_writer(void);
/// Index of the module holding `addr` in the loaded table, or -1.
/// Async-signal-safe.
int cs_module_of(uint64_t addr);

// ---- smpjson.c ----
/// Writes `,"modules":[…]` from the loaded table. Async-signal-safe.
void cs_modules_write(struct cs_jw *w);
/// Writes `"sampling"`, `"modules"` and `"samples"` (each preceded by a comma)
/// when sampling ran, and with `raw` the offline unwinder's `"rawStacks"`.
/// `start_ns` is the process start (CLOCK_MONOTONIC).
/// Async-signal-safe: reads /proc/self/maps with open/read.
void cs_sampler_write(struct cs_jw *w, uint64_t start_ns, bool raw);
/// Whether the offline unwinder kept stack copies for the timeline.
/// Async-signal-safe.
bool cs_sampler_has_raw(void);

#endif
