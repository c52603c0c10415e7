// The stack sampler: a CPU-time clock per thread raises CS_SMP_SIGNAL
// (SIGURG), or CS_SMP_ALT_SIGNAL (SIGPROF) on a thread that blocks SIGURG but
// not SIGPROF (libdispatch's workers; smp.h says why), on the thread that
// consumed the time, and the handler records that thread's stack.
//
// Clock (docs/performance.md, "Why per-thread perf events"): a software
// PERF_COUNT_SW_TASK_CLOCK event per thread (user time only), whose overflow
// is sent to that very thread (F_SETOWN_EX + F_SETSIG) and re-armed with
// PERF_EVENT_IOC_REFRESH by the handler. The single inherited event with
// `sigtrap` would need no per-thread work, but it signals SIGTRAP, which every
// Swift program's runtime claims for its crash backtracer (and debuggers use):
// a sample would be reported as a crash. New threads are found by re-reading
// /proc/self/task from the handler at most every CS_SMP_SCAN_NS. When
// perf_event_open is refused, POSIX per-thread CPU-clock timers take its place
// (the kernel tick caps them: 250 Hz here).
// A thread that starts while every sampled thread is idle (the main thread
// waiting in pthread_join) would not be found by those handlers, so a helper
// thread ("coldstart-scan", started in .preinit_array; it also opens the
// clocks, the first perf event being slow on a quiet system) looks every
// CS_SMP_SCAN_NS of wall time. A
// process-directed CPU-clock timer cannot do it: measured on Linux 6.18, its
// signal went to the sleeping main thread and cut its usleep short.
//
// Everything the handler touches is preallocated and pre-faulted; it takes no
// lock, allocates nothing and never calls into Swift.
#include "internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <pthread.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#define CS_SMP_SCAN_NS 5000000ull         // look for new threads at most every 5 ms
// Empty the kernel's rings this often: 20 samples of 10 kHz, ~90 KiB with
// 4 KiB stacks, well inside a worker's 128 KiB ring.
#define CS_SMP_DRAIN_NS 2000000ull
#define CS_SMP_UNWIND_TRIES 10
#define CS_SMP_WARM_WAIT_NS 200000ull     // a warm kernel's helper is done well within this
#define CS_SMP_AHEAD_SAMPLES 256          // buffers kept faulted in ahead of the handlers


static void *scan_loop(void *arg);

// How long the task clocks are held back as a quiet kernel holds them, for
// the bridge's test on any kernel. Every host links this 0: no environment
// variable or file reaches it. The one fixture that tests the bridge links
// a definition of its own (Tests/Fixtures/Sources/BridgeHold), which replaces
// this weak one at link time; hidden, so no library loaded later can.
__attribute__((weak, visibility("hidden"))) uint64_t cs_test_bridge_hold_ns(void) { return 0; }

// ---- small helpers ----

static const char *errno_name(int e) {
    switch (e) {
    case EACCES: return "EACCES";
    case EPERM: return "EPERM";
    case ENOSYS: return "ENOSYS";
    case ENOENT: return "ENOENT";
    case EINVAL: return "EINVAL";
    case EMFILE: return "EMFILE";
    case ENODEV: return "ENODEV";
    default: return "error";
    }
}

// Extends *faulted (bytes of `base`, page-aligned) to cover `want` bytes, at
// most `total`.
static void prefault_to(void *base, size_t *faulted, size_t want, size_t total) {
    want = (want + 4095) & ~(size_t)4095;
    if (want > total) want = total;
    if (want <= *faulted) return;
    cs_prefault((char *)base + *faulted, want - *faulted);
    *faulted = want;
}

// The scan thread keeps the buffers faulted in CS_SMP_AHEAD_SAMPLES samples
// (and as many average stacks) ahead of what the handlers have used, every
// scan period (5 ms: at most ~100 samples at 10 kHz on 2 CPUs, more with more CPUs; a sample beyond takes a page fault). Faulting in
// all 2.9 MB at once cost ~1 ms of CPU per launch, most of it for a short
// launch's nothing. (A sample that got ahead anyway takes an ordinary page
// fault on anonymous memory: slower, still safe.)
static void prefault_ahead(void) {
    size_t next = atomic_load(&S->next_sample), frame = atomic_load(&S->next_frame);
    prefault_to(S->samples, &S->faulted_sample_bytes, (next + CS_SMP_AHEAD_SAMPLES) * sizeof(struct cs_sample),
                sizeof(struct cs_sample) * S->max_samples);
    prefault_to(S->frames, &S->faulted_frame_bytes, (frame + CS_SMP_AHEAD_SAMPLES * CS_SMP_AVG_DEPTH) * sizeof(uint64_t),
                sizeof(uint64_t) * S->max_frames);
}

// ---- configuration ----

// Why perf_event_open refused the task clock, for the timeline
// ("perfRefused", written by smpjson.c from these fields): the errno,
// perf_event_paranoid, the seccomp mode and the effective capabilities, read
// now, on the scan thread, once. Not async-signal-safe in spirit (it reads
// files) and never called from a handler.
static void note_refusal(int e) {
    char buf[4096];
    S->perf_errno = e;
    S->perf_paranoid = -1;
    S->perf_seccomp = -1;
    ssize_t n = cs_read_small_file("/proc/sys/kernel/perf_event_paranoid", buf, sizeof buf - 1);
    uint64_t v;
    if (n > 0 && cs_scan_dec(buf, buf + n, &v)) S->perf_paranoid = (int)v;  // a negative setting stays -1: no restriction
    n = cs_read_small_file("/proc/self/status", buf, sizeof buf - 1);
    if (n > 0) {
        S->perf_seccomp = (int)cs_status_mask(buf, (size_t)n, "Seccomp");
        S->perf_caps = cs_status_mask(buf, (size_t)n, "CapEff");
    }
}

// 0, or why the main thread's clock could not be opened (an errno).
static int open_clock(enum cs_smp_clock clock) {
    S->clock = clock;
    struct cs_smp_thread *t = cs_sampler_thread(S->main_tid, true);
    int e = cs_smp_arm_thread(t, S->main_tid, CS_SMP_SIGNAL);
    if (e == 0) return 0;
    cs_smp_disarm_thread(t);
    t->fd = -1;
    if (e == ESRCH) {
        // Not a refusal: the main thread has ended (pthread_exit) before its
        // clock could open; no other clock would find it either.
        cs_warn("the main thread ended before its sampling clock opened (pthread_exit); no stack sampling", NULL);
    } else if (clock == CS_CLOCK_PERF && (e == EMFILE || e == ENFILE)) {
        cs_warn("no descriptor left under RLIMIT_NOFILE for the task clock; sampling with POSIX CPU timers instead (at most the kernel tick rate)", NULL);
    } else if (clock == CS_CLOCK_PERF) {
        note_refusal(e);
        cs_warn("perf_event_open refused the task clock, sampling with POSIX CPU timers instead (at most the kernel tick rate): ",
                errno_name(e));
    } else {
        cs_warn("cannot create a sampling timer; sampling off: ", errno_name(e));
    }
    S->clock = CS_CLOCK_NONE;
    return e;
}

void cs_sampler_start(void) {
#if !CS_ARCH_SUPPORTED
    if (cs_g.cfg.sampler_set) cs_warn("stack sampling supports x86_64 and aarch64 only; sampling off", NULL);
    return;
#else
    if (S->started) return;
    static const enum cs_smp_clock clocks[] = {
        [CS_SAMPLER_PERF] = CS_CLOCK_PERF, [CS_SAMPLER_POSIX] = CS_CLOCK_POSIX, [CS_SAMPLER_WALL] = CS_CLOCK_WALL,
        [CS_SAMPLER_SIGNALS] = CS_CLOCK_PERF,
    };
    if (cs_g.cfg.sampler == CS_SAMPLER_OFF) return;
    enum cs_smp_clock want = clocks[cs_g.cfg.sampler];
    S->requested_hz = cs_g.cfg.hz;
    S->max_samples = cs_g.cfg.max_samples;
    S->unwinder = cs_g.cfg.unwind_fp ? CS_UNW_FP : cs_g.cfg.unwind_offline ? CS_UNW_OFFLINE : CS_UNW_LIBUNWIND;
    S->stack_bytes = cs_g.cfg.stack_bytes;
    // A static executable (no program interpreter) has no loader to load
    // the unwinder with: the kernel's frame-pointer chains, silently.
    if (getauxval(AT_BASE) == 0) S->unwinder = CS_UNW_FP;
    S->period_ns = 1000000000ull / S->requested_hz;
    // Without COLDSTART_HZ, a short launch gets more than a handful of samples.
    if (!cs_g.cfg.hz_set && want == CS_CLOCK_PERF && CS_BOOST_HZ > S->requested_hz) {
        S->boost_hz = CS_BOOST_HZ;
        S->boost_period_ns = 1000000000ull / S->boost_hz;
    }
    S->main_tid = cs_gettid();
    atomic_store(&S->stride, 1);

    struct sigaction old;
    if (sigaction(CS_SMP_SIGNAL, NULL, &old) != 0 || (old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL) {
        cs_warn("SIGURG already has a handler in this program; stack sampling off", NULL);
        return;
    }
    // This very thread's mask: one system call, not its /proc status.
    sigset_t mask;
    if (pthread_sigmask(SIG_BLOCK, NULL, &mask) != 0 || sigismember(&mask, CS_SMP_SIGNAL)) {
        cs_warn("the main thread blocks SIGURG (inherited signal mask); stack sampling off", NULL);
        return;
    }
    // One descriptor per sampled thread, within the sampler's allowance of
    // Coldstart's share of the descriptor limit (sys.h).
    uint64_t fds = cs_fd_allowance();
    S->max_live = fds > CS_SMP_MAX_THREADS ? CS_SMP_MAX_THREADS : (uint32_t)fds;
    // And one ring each within Coldstart's share of RLIMIT_AS (core.c).
    if (cs_g.proc.vm_max_rings && S->max_live > cs_g.proc.vm_max_rings) S->max_live = cs_g.proc.vm_max_rings;
    S->max_frames = S->max_samples * CS_SMP_AVG_DEPTH;
    S->samples = cs_map_zeroed(sizeof(struct cs_sample) * S->max_samples);
    S->frames = cs_map_zeroed(sizeof(uint64_t) * S->max_frames);
    if (!S->samples || !S->frames) {
        cs_warn("cannot allocate the sample buffers; stack sampling off", NULL);
        return;
    }
    cs_safe_read_init();
    cs_sampler_thread(S->main_tid, true);
    // What the scan thread unwinds with: touched only as used, off the host's threads.
    if (S->unwinder == CS_UNW_LIBUNWIND) {
        S->rec = cs_map_zeroed(CS_SMP_REC_BYTES);
        S->unw_pages = cs_map_zeroed(sizeof(struct cs_unw_page) * CS_SMP_UNWIND_PAGES);
        S->pending = cs_map_zeroed(CS_SMP_PENDING_BYTES);
        if (!S->rec || !S->unw_pages || !S->pending) S->unwinder = CS_UNW_FP;
    }
    // The offline unwinder's copies: reserved, touched by the scan thread as it keeps them.
    if (S->unwinder == CS_UNW_OFFLINE && !(S->raw = cs_map_zeroed(CS_SMP_RAW_BYTES))) S->unwinder = CS_UNW_FP;
    if (!S->rec) S->rec = cs_map_zeroed(CS_SMP_REC_BYTES);

    S->cookie = ((uint64_t)(uintptr_t)&cs_g ^ cs_monotonic_ns()) | 1;
    cs_smp_bind_handler_calls();
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = cs_smp_on_signal;
    S->handler = cs_smp_on_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigfillset(&sa.sa_mask);   // one sample at a time per thread; no reentry
    if (sigaction(CS_SMP_SIGNAL, &sa, NULL) != 0) {
        cs_warn("cannot install the SIGURG handler; stack sampling off", NULL);
        return;
    }
    S->owns_signal = true;
    // SIGPROF too, for the threads that block SIGURG, if nothing of the
    // host's holds it: here, before any of the host's code has run, nothing
    // can race us for it. A host that installs its handler later gets it
    // back within a scan period (drop_alt).
    if (sigaction(CS_SMP_ALT_SIGNAL, NULL, &old) == 0 && !(old.sa_flags & SA_SIGINFO) && old.sa_handler == SIG_DFL
        && sigaction(CS_SMP_ALT_SIGNAL, &sa, NULL) == 0)
        atomic_store(&S->owns_alt, true);
    S->started = true;
    S->t_start = cs_monotonic_ns();
    S->cpu_start = cs_clock_ns(CLOCK_PROCESS_CPUTIME_ID);
    cs_rusage_now(&S->ru_start);
    S->want = want;
    atomic_store(&S->active, 1);
    // The clocks are opened by the scan thread, not here: the first perf
    // event of a quiet system costs 6–25 ms in the kernel (it switches its
    // scheduler hooks on), which the host's main thread, running its library
    // initializers, then does not wait for.
    if (cs_start_thread(scan_loop, CS_SCAN_STACK) != 0) {
        cs_warn("cannot start the sampler's thread; stack sampling off", NULL);
        atomic_store(&S->active, 0);
        S->started = false;
        cs_sampler_release();
    }
#endif
}

// ---- the scanning thread ----


// The host changed SIGPROF's action (its own profiler, a reset): the threads
// sampled with it are left alone from now on (at most one scan period of our
// signals reached its handler), as are those that block SIGURG.
static void drop_alt_if_taken(void) {
    if (!atomic_load(&S->owns_alt) || cs_smp_handler_holds(CS_SMP_ALT_SIGNAL)) return;
    // Not while a scan arms threads (it could arm one with SIGPROF after the
    // drop): then at the next period.
    int expected = 0;
    if (!atomic_compare_exchange_strong(&S->scanning, &expected, 1)) return;
    atomic_store(&S->owns_alt, false);
    uint32_t dropped = cs_smp_drop_alt_threads();
    cs_smp_scan_release();
    if (dropped > 0)
        cs_warn("the program changed SIGPROF's action; threads that block SIGURG (dispatch workers) are no longer sampled", NULL);
}

// Why sampling must end before the launch does, or NULL.
static const char *early_stop_reason(void) {
    // A host that never calls ready() (a server) is sampled for a bounded time.
    if (cs_monotonic_ns() - S->t_start > cs_g.cfg.limit_ns) return "time-limit";
    // Full: every further signal would cost the host and record nothing.
    if (atomic_load(&S->dropped) > 0) return "buffer-full";
    // The host took the signal over: stop at once, so that as few of our
    // signals as possible reach its handler (at most one scan period's).
    if (!cs_smp_handler_holds(CS_SMP_SIGNAL)) return "signal-taken";
    return NULL;
}

// `f` under the scan flag, which a stop waits for, while the launch is
// active; skipped if a scan or a stop holds it (the stopper drains and closes
// what is left itself).
static void with_scan_flag(void (*f)(void)) {
    int expected = 0;
    if (!atomic_compare_exchange_strong(&S->scanning, &expected, 1)) return;
    if (atomic_load(&S->active)) f();
    cs_smp_scan_release();
}

// Opens the main thread's clock (perf, else POSIX timers), then the other
// threads'. False when no clock could be opened (sampling is then off) or the
// launch ended meanwhile.
//
// Not under the scan flag, which a stop waits for: on a kernel where no perf
// event has been open for a second, the first perf_event_open waits 10–18 ms
// for an RCU grace period, and a short launch's exit would wait for it too.
// `opening` is 1 meanwhile; a stop that finds it so makes it 2 and leaves the
// main thread's slot alone, and this function, seeing 2, undoes the clock.
static bool open_clocks(void) {
    atomic_store(&S->opening, 1);
    // The boost and the kernel's stacks are for the perf clock only (POSIX
    // timers are capped at the tick, and signal).
    atomic_store(&S->boost_on, S->boost_hz > 0);
    atomic_store(&S->kernel_stacks_on, S->want == CS_CLOCK_PERF && cs_g.cfg.sampler != CS_SAMPLER_SIGNALS);
    int e = atomic_load(&S->active) ? open_clock(S->want) : EINTR;
    if (e != 0 && e != ESRCH && atomic_load(&S->active) && S->want == CS_CLOCK_PERF) {
        atomic_store(&S->boost_on, 0);
        atomic_store(&S->kernel_stacks_on, 0);
        e = open_clock(CS_CLOCK_POSIX);
    }
    bool ok = e == 0;
    if (atomic_exchange(&S->opening, 0) == 2) {
        // Stopped meanwhile: no signal after this; the descriptor and ring go
        // once no handler runs (a handler that saw `active` clear touches none).
        struct cs_smp_thread *t = cs_sampler_thread(S->main_tid, false);
        if (t) cs_smp_silence_thread(t);
        for (int i = 0; i < 4000 && atomic_load(&S->in_flight) > 0; i++) cs_sleep_ns(50000);
        if (t && atomic_load(&S->in_flight) == 0) cs_smp_free_thread(t);
        return false;
    }
    if (ok) S->armed_ns = cs_monotonic_ns();
    // The bridge's samples of the main thread, all from before its clock
    // ran, ahead of the first from its ring (which the scan drains): the
    // file's samples stay in time order per thread.
    if (ok && atomic_load(&S->bridge_n) > 0) with_scan_flag(cs_smp_bridge_drain);
    if (ok && S->clock != CS_CLOCK_WALL) cs_sampler_scan_threads();
    return ok;
}

// The module table, ahead of the writer; under the scan flag, so that a stop
// waits for it (false if a scan holds the flag: then at the next period).
static bool preload_modules(void) {
    int expected = 0;
    if (!atomic_compare_exchange_strong(&S->scanning, &expected, 1)) return false;
    if (atomic_load(&S->active)) cs_modules_preload();
    cs_smp_scan_release();
    return true;
}

// Whether the host has had CS_BOOST_NS of CPU since sampling began: the
// boost's cost and its samples go with CPU time, so a launch that a busy
// machine stretches in wall time keeps them. Coldstart's own threads' CPU is
// not the host's. Async-signal-safe (system calls only); read by the scan
// thread once a pass.
static bool boost_spent(void) {
    uint64_t cpu = cs_clock_ns(CLOCK_PROCESS_CPUTIME_ID) - S->cpu_start, own = cs_own_cpu_ns();
    return cpu > own && cpu - own >= CS_BOOST_NS;
}

// The first CS_BOOST_NS of the host's CPU are over: a boosted start's clocks go
// back to requested_hz. Holds the scan flag, so no thread is armed the old
// way meanwhile; false if a scan holds it (then at the next period).
static bool end_window(void) {
    int expected = 0;
    if (!atomic_compare_exchange_strong(&S->scanning, &expected, 1)) return false;
    bool boosted = atomic_exchange(&S->boost_on, 0);
    uint64_t period = S->period_ns;
    for (uint32_t k = 0, used = atomic_load(&S->nused); k < used; k++) {
        struct cs_smp_thread *t = cs_smp_used(k);
        if (!t || !atomic_load(&t->boosted)) continue;
        // A ring's boosted samples are taken out first: those after the
        // period changes are not.
        if (t->kernel_stacks) cs_smp_drain(t);
        if (atomic_load(&t->armed) && t->fd >= 0) ioctl(t->fd, PERF_EVENT_IOC_PERIOD, &period);
        atomic_store(&t->boosted, 0);
    }
    if (boosted) S->boost_end_ns = cs_monotonic_ns();
    S->window_ended = true;
    cs_smp_scan_release();
    return true;
}


// Every thread's task clock is in, or none will be: the bridge goes, under
// the scan flag (waited for: a stop holds it for milliseconds at most). Even
// after a stop: one that could not take the flag left it open, and a bridge
// left open would sample every CPU for the process's whole life. Its samples
// are kept only inside the sampling window.
static void close_bridge(void) {
    for (int expected = 0; !atomic_compare_exchange_strong(&S->scanning, &expected, 1); expected = 0) {
        if (atomic_load(&S->bridge_n) == 0) return;
        cs_sleep_ns(200000);
    }
    cs_smp_bridge_close(false, atomic_load(&S->active));
    cs_smp_scan_release();
}

// What the kernel recorded since the last look, between two scans (which
// drain too); run under the scan flag.
static void drain_all_rings(void) { cs_smp_drain_all(NULL); }

// The DWARF unwinder, and the samples that waited for it; under the scan
// flag (false if a scan holds it: then at the next period).
// A host closing descriptors while the loader has the library open makes the
// dlopen fail: it is tried CS_SMP_UNWIND_TRIES times, a scan period apart.
static bool load_unwinder(void) {
    int expected = 0;
    if (!atomic_compare_exchange_strong(&S->scanning, &expected, 1)) return false;
    bool last = ++S->unwind_tries >= CS_SMP_UNWIND_TRIES;
    bool done = cs_unwind_load(last) || last;
    if (done && !atomic_load(&S->unw_verified)) S->unwinder = CS_UNW_FP;
    // With frame pointers only (unwinder gone): what waited gets its chains.
    cs_smp_drain_pending(S->unwinder == CS_UNW_FP);
    cs_smp_scan_release();
    return done;
}

void cs_sampler_main_started(void) {
    if (!S->started || atomic_exchange(&S->main_started, 1)) return;
    cs_futex_wake(&S->active);
}

static void *scan_loop(void *arg) {
    (void)arg;
    S->scan_began_ns = cs_monotonic_ns();
    cs_syscall(SYS_prctl, PR_SET_NAME, "coldstart-scan", 0, 0, 0);
    // This thread, the helper and the watcher's thread start on a CPU the
    // host's main thread is not on (cs_start_thread), one after the other.
    // The clocks first on a warm kernel (the helper is done in ~50 µs), the
    // watcher's thread first on a quiet one (the helper then waits 10–18 ms
    // in the kernel), so that neither waits for the other's start.
    if (S->want == CS_CLOCK_PERF) cs_smp_warm_start();
    // While the helper works: whether /proc is this pid namespace's, exactly
    // (arming only compared the pid), before the watcher's thread starts or
    // any thread is listed.
    cs_proc_check_levels(true);
    bool warm = cs_smp_warm_wait(CS_SMP_WARM_WAIT_NS);
    // A quiet kernel: the host's samples from CPU-wide events until the
    // task clocks are in (smpbridge.c), where the kernel allows them.
    uint64_t hold_ns = cs_test_bridge_hold_ns();
    bool bridge = S->want == CS_CLOCK_PERF && cs_g.cfg.sampler != CS_SAMPLER_SIGNALS && cs_g.cfg.bridge
        && (!warm || hold_ns);
    if (bridge) {
        atomic_store(&S->boost_on, S->boost_hz > 0);
        with_scan_flag(cs_smp_bridge_open);
    }
    if (!warm) cs_watch_start_thread();
    // The first samples' buffers, before any clock can fire.
    prefault_ahead();
    cs_own_tick();
    if (bridge || hold_ns) cs_smp_bridge_wait(hold_ns);
    bool opened = open_clocks();
    // Every thread's task clock is in (or none will be): the bridge goes.
    if (bridge) close_bridge();
    cs_own_tick();
    cs_smp_warm_reap();
    cs_own_unplace();
    if (warm) cs_watch_start_thread();
    if (!opened) {
        // Sampling off, as if it had never started (open_clock said why).
        if (atomic_exchange(&S->active, 0)) {
            S->started = false;
            cs_sampler_release();
        }
        return NULL;
    }
    bool unwinder_loaded = S->unwinder != CS_UNW_LIBUNWIND, modules_loaded = false;
    while (atomic_load(&S->active)) {
        // This thread's CPU, placed on the phases by the analysis: it is
        // in the process's getrusage but none of the host's.
        cs_own_tick();
        prefault_ahead();
        // Read once a pass: the wait below returns early once for a main
        // begun since (cs_sampler_main_started), not in a loop if the scan
        // flag was busy (then the next period tries again).
        bool main_seen = atomic_load(&S->main_started);
        if (!modules_loaded && main_seen && (modules_loaded = preload_modules())) {
            // The timeline's file and what the writer first touches at the
            // launch's end, made and faulted in here, off the host's exit
            // (docs/performance.md, "A short command-line tool").
            cs_prefault(S->cost_hist, sizeof S->cost_hist);
            cs_timeline_prepare();
        }
        if (!S->window_ended && boost_spent()) end_window();
        // The unwinder once main runs: a dlopen during the host's library
        // initializers could run libc's initializers a second time,
        // concurrently. Loading it takes this thread ~0.5 ms of CPU.
        if (!unwinder_loaded && main_seen) unwinder_loaded = load_unwinder();
        // Until the next drain, or until a stop: then the thread ends at once,
        // and is gone (or going) before the exiting process waits for it.
        uint64_t until = cs_monotonic_ns() + (atomic_load(&S->kernel_stacks_on) ? CS_SMP_DRAIN_NS : CS_SMP_SCAN_NS);
        while (atomic_load(&S->active) && cs_monotonic_ns() < until && (main_seen || !atomic_load(&S->main_started)))
            cs_futex_wait(&S->active, 1, until);
        if (!atomic_load(&S->active)) break;
        cs_own_exit_if_host_ended();
        drop_alt_if_taken();
        const char *why = early_stop_reason();
        if (why) {
            if (atomic_load(&S->active)) {
                S->stop_reason = why;
                if (why[0] == 's') cs_warn("the program changed SIGURG's action (Coldstart's sampling signal); stack sampling stopped", NULL);
                cs_sampler_stop();
                cs_sampler_release();
            }
            break;
        }
        if (S->clock != CS_CLOCK_WALL && cs_monotonic_ns() - atomic_load(&S->last_scan_ns) >= CS_SMP_SCAN_NS)
            cs_sampler_scan_threads();
        else if (atomic_load(&S->kernel_stacks_on))
            with_scan_flag(drain_all_rings);
    }
    return NULL;
}
