// The stack sampler: a CPU-time clock per thread raises SIGPROF on the thread
// that consumed the time, and the handler records that thread's stack.
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
// waiting in pthread_join) would not be found by those handlers, so from the
// executable's first constructor on a helper thread ("coldstart-scan", all
// signals blocked) also looks every CS_SMP_SCAN_NS of wall time. A
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
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <pthread.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#define CS_SMP_SCAN_NS 5000000ull         // look for new threads at most every 5 ms
#define CS_SMP_BUDGET_PERCENT 20          // handler may use this much of the period
#define CS_SMP_WINDOW 256                 // samples per cost check
#define CS_SMP_EARLY_SAMPLES 512          // buffers faulted in before the first sample
#define CS_SMP_MIN_HZ 10
#define CS_SMP_MAX_HZ 10000

#define S (&cs_g.smp)

static void on_signal(int sig, siginfo_t *si, void *uc);

// ---- small helpers ----

static uint64_t cpu_ns(void) {
    struct timespec ts;
    if (syscall(SYS_clock_gettime, CLOCK_PROCESS_CPUTIME_ID, &ts) != 0) return 0;
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

// CPU time of one thread of this process, read from its kernel CPU clock
// (the clock id glibc's pthread_getcpuclockid builds: the tid, CPUCLOCK_SCHED,
// per-thread). 0 for tid 0 or a thread that has ended. Async-signal-safe.
static uint64_t thread_cpu_ns(int tid) {
    if (tid <= 0) return 0;
    clockid_t id = (clockid_t)((~(uint32_t)tid << 3) | 6u);
    struct timespec ts;
    if (syscall(SYS_clock_gettime, id, &ts) != 0) return 0;
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

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

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23   // Linux 5.14
#endif

static void *map_buffer(size_t bytes) {
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

// Faults in [p, p + bytes) without changing its contents (the handler may be
// writing there): MADV_POPULATE_WRITE, or an atomic add of 0 per page.
static void prefault(void *p, size_t bytes) {
    if (bytes == 0) return;
    if (madvise(p, bytes, MADV_POPULATE_WRITE) == 0) return;
    for (size_t off = 0; off < bytes; off += 4096)
        __atomic_fetch_add((char *)p + off, 0, __ATOMIC_RELAXED);
}

// The buffers of the first CS_SMP_EARLY_SAMPLES samples are faulted in at
// start (a few dozen pages); faulting in all of them there cost ~1 ms of a
// 28 ms launch. The scanning thread faults in the rest as soon as it starts,
// after the library initializers, long before the handler gets there at any
// rate up to 10 kHz. (A sample that did get there first would take an
// ordinary page fault: slower, still safe.)
static void prefault_buffers(bool early) {
    size_t nsamples = S->max_samples < CS_SMP_EARLY_SAMPLES ? S->max_samples : CS_SMP_EARLY_SAMPLES;
    size_t s_bytes = nsamples * sizeof(struct cs_sample), f_bytes = nsamples * CS_SMP_AVG_DEPTH * sizeof(uint64_t);
    if (early) {
        prefault(S->samples, s_bytes);
        prefault(S->frames, f_bytes);
    } else {
        size_t s_page = s_bytes & ~(size_t)4095, f_page = f_bytes & ~(size_t)4095;
        prefault((char *)S->samples + s_page, sizeof(struct cs_sample) * S->max_samples - s_page);
        prefault((char *)S->frames + f_page, sizeof(uint64_t) * S->max_frames - f_page);
    }
}

static void set_period(uint64_t ns) { S->period_ns = ns ? ns : 1; }

// ---- the thread table ----

struct cs_smp_thread *cs_sampler_thread(int tid, bool insert) {
    if (tid <= 0) return NULL;
    uint32_t mask = CS_SMP_MAX_THREADS - 1;
    uint32_t h = ((uint32_t)tid * 2654435761u) & mask;
    for (uint32_t i = 0; i < CS_SMP_MAX_THREADS; i++) {
        struct cs_smp_thread *t = &S->threads[(h + i) & mask];
        int cur = atomic_load_explicit(&t->tid, memory_order_acquire);
        if (cur == tid) return t;
        if (cur == 0) {
            if (!insert) return NULL;
            int expected = 0;
            if (atomic_compare_exchange_strong(&t->tid, &expected, tid)) {
                t->fd = -1;
                return t;
            }
            if (expected == tid) return t;
        }
    }
    return NULL;
}

size_t cs_sampler_add_threads(int *ids, size_t n, size_t cap) {
    if (!S->started) return n;
    for (size_t i = 0; i < CS_SMP_MAX_THREADS && n < cap; i++) {
        const struct cs_smp_thread *t = &S->threads[i];
        int tid = atomic_load(&t->tid);
        if (tid == 0 || !atomic_load(&t->sampled) || tid == S->scanner_tid) continue;
        bool seen = false;
        for (size_t k = 0; k < n && !seen; k++) seen = ids[k] == tid;
        if (!seen) ids[n++] = tid;
    }
    return n;
}

// ---- clock sources ----

// Opens the task-clock event of `tid` and points its overflow signal at that
// thread. Returns 0 or an errno value. Async-signal-safe (syscalls only).
static int arm_perf(struct cs_smp_thread *t, int tid) {
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.type = PERF_TYPE_SOFTWARE;
    a.size = sizeof a;
    a.config = PERF_COUNT_SW_TASK_CLOCK;
    a.sample_period = S->period_ns;
    a.disabled = 1;
    a.exclude_kernel = 1;   // allowed at perf_event_paranoid 2; user time only
    a.exclude_hv = 1;
    a.wakeup_events = 1;    // with a ring buffer: a wakeup, so a signal, per overflow
    int fd = (int)syscall(SYS_perf_event_open, &a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0) return errno;
    struct f_owner_ex owner = {F_OWNER_TID, tid};
    uint64_t id = 0;
    if (fcntl(fd, F_SETFL, O_ASYNC | O_NONBLOCK) != 0 || fcntl(fd, F_SETSIG, CS_SMP_SIGNAL) != 0
        || fcntl(fd, F_SETOWN_EX, &owner) != 0 || ioctl(fd, PERF_EVENT_IOC_ID, &id) != 0) {
        int e = errno;
        close(fd);
        return e;
    }
    t->fd = fd;
    t->event_id = id;
    // A one-page ring buffer makes every overflow signal on its own; the
    // handler only moves the tail (no system call). Without one (the locked
    // memory limit: perf_event_mlock_kb), the event disables itself after
    // each overflow and the handler re-enables it with an ioctl (~0.9 µs here).
    void *ring = mmap(NULL, 2 * 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    t->ring = ring == MAP_FAILED ? NULL : ring;
    atomic_store(&t->armed, 1);
    if (ioctl(fd, t->ring ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_REFRESH, 1) != 0) return errno;
    return 0;
}

// A POSIX timer on the thread's CPU clock (or, for the wall mode, on
// CLOCK_MONOTONIC) that signals that thread. Async-signal-safe (raw syscalls).
static int arm_timer(struct cs_smp_thread *t, int tid, bool wall) {
    // The kernel's encoding of a thread's CPU clock: MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED).
    clockid_t clock = wall ? CLOCK_MONOTONIC : (clockid_t)((~(unsigned)tid << 3) | 6);
    struct sigevent ev;
    memset(&ev, 0, sizeof ev);
    ev.sigev_notify = SIGEV_THREAD_ID;
    ev.sigev_signo = CS_SMP_SIGNAL;
    ev.sigev_value.sival_ptr = (void *)(uintptr_t)S->cookie;
    ev._sigev_un._tid = tid;
    int kid = -1;
    if (syscall(SYS_timer_create, clock, &ev, &kid) != 0) return errno;
    struct itimerspec its;
    its.it_interval.tv_sec = (time_t)(S->period_ns / 1000000000ull);
    its.it_interval.tv_nsec = (long)(S->period_ns % 1000000000ull);
    its.it_value = its.it_interval;
    t->timer = (timer_t)(intptr_t)kid;
    t->has_timer = true;
    atomic_store(&t->armed, 1);
    if (syscall(SYS_timer_settime, kid, 0, &its, NULL) != 0) return errno;
    return 0;
}

static int arm_thread(struct cs_smp_thread *t, int tid) {
    int e;
    switch (S->clock) {
    case CS_CLOCK_PERF: e = arm_perf(t, tid); break;
    case CS_CLOCK_POSIX: e = arm_timer(t, tid, false); break;
    case CS_CLOCK_WALL: e = arm_timer(t, tid, true); break;
    default: e = EINVAL; break;
    }
    if (e == 0) {
        atomic_fetch_add(&S->threads_armed, 1);
        atomic_store(&t->sampled, 1);
    }
    return e;
}

// True when `fd` is still the perf event we opened (the host may have closed
// it and reused the number: never touch a descriptor that is not ours).
static bool still_ours(const struct cs_smp_thread *t) {
    uint64_t id = 0;
    return t->fd >= 0 && ioctl(t->fd, PERF_EVENT_IOC_ID, &id) == 0 && id == t->event_id;
}

// Stops the thread's clock: no new signal after this returns.
static void silence_thread(struct cs_smp_thread *t) {
    if (!atomic_exchange(&t->armed, 0)) return;
    if (t->fd >= 0 && still_ours(t)) ioctl(t->fd, PERF_EVENT_IOC_DISABLE, 0);
    if (t->has_timer) {
        syscall(SYS_timer_delete, (int)(intptr_t)t->timer);
        t->has_timer = false;
    }
}

// Frees what the handler may touch (the ring buffer): only once no handler runs.
static void free_thread(struct cs_smp_thread *t) {
    if (t->fd >= 0) {
        if (still_ours(t)) close(t->fd);
        t->fd = -1;
    }
    if (t->ring) {
        munmap(t->ring, 2 * 4096);
        t->ring = NULL;
    }
}

// For a thread no handler can be running on (never enabled, or the caller).
static void disarm_thread(struct cs_smp_thread *t) {
    silence_thread(t);
    free_thread(t);
}

// ---- discovering threads ----

struct linux_dirent64 {
    uint64_t d_ino;
    int64_t d_off;
    unsigned short d_reclen;
    unsigned char d_type;
    char d_name[];
};

void cs_sampler_scan_threads(void) {
    if (!atomic_load(&S->active) || S->clock == CS_CLOCK_WALL) return;
    int expected = 0;
    if (!atomic_compare_exchange_strong(&S->scanning, &expected, 1)) return;
    atomic_store(&S->last_scan_ns, cs_monotonic_ns());
    // Opened per scan, not kept: a host that closes descriptors it does not
    // know could otherwise get this number reused for its own file, and our
    // seek would move that file's offset.
    int dir = atomic_load(&S->active) ? open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    char buf[2048] __attribute__((aligned(8)));
    if (dir >= 0) {
        long n;
        while ((n = syscall(SYS_getdents64, dir, buf, sizeof buf)) > 0) {
            for (long off = 0; off < n;) {
                const struct linux_dirent64 *d = (const void *)(buf + off);
                off += d->d_reclen;
                uint64_t tid;
                if (cs_parse_u64(d->d_name, &tid) != 0 || tid == 0 || tid > INT32_MAX) continue;
                if ((int)tid == atomic_load(&S->scanner_tid) || (int)tid == atomic_load(&cs_g.watch.tid)) continue;
                struct cs_smp_thread *t = cs_sampler_thread((int)tid, true);
                if (!t) { atomic_fetch_add(&S->thread_overflow, 1); continue; }
                if (atomic_load(&t->armed) || t->fd == -2) continue;
                if (arm_thread(t, (int)tid) != 0) {
                    // Gone already (ESRCH), or out of descriptors: do not retry.
                    disarm_thread(t);
                    t->fd = -2;
                    atomic_fetch_add(&S->thread_overflow, 1);
                }
            }
        }
        close(dir);
    }
    atomic_store(&S->scanning, 0);
}

// ---- the handler ----

// A SIGPROF that is not one of our clock signals (someone sent it): do what
// the default action would have done, terminate, as if we were not here.
static void foreign_signal(int sig) {
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigaction(sig, &dfl, NULL);
    S->owns_signal = false;
    // Blocked while this handler runs: delivered, with the default action, on return.
    syscall(SYS_tgkill, cs_g.pid ? cs_g.pid : (int)syscall(SYS_getpid), cs_gettid(), sig);
}

static uint32_t tcb_hash(uintptr_t tcb) { return (uint32_t)((tcb >> 12) * 2654435761u) & (CS_SMP_MAX_THREADS - 1); }

// Points this thread's %fs base at its slot. Only the owning thread writes its entry.
static void index_tcb(uintptr_t tcb, struct cs_smp_thread *t) {
    for (uint32_t i = 0, h = tcb_hash(tcb); i < CS_SMP_MAX_THREADS; i++) {
        uint32_t k = (h + i) & (CS_SMP_MAX_THREADS - 1);
        uintptr_t cur = atomic_load(&S->by_tcb[k].tcb);
        if (cur == 0) {
            uintptr_t expected = 0;
            S->by_tcb[k].thread = t;
            if (atomic_compare_exchange_strong(&S->by_tcb[k].tcb, &expected, tcb)) return;
            cur = expected;
        }
        if (cur == tcb) {
            S->by_tcb[k].thread = t;   // a new thread on a recycled TCB
            return;
        }
    }
}

struct cs_smp_thread *cs_sampler_current_thread(void) {
    uintptr_t tcb = cs_fs_base();
    for (uint32_t i = 0, h = tcb_hash(tcb); i < CS_SMP_MAX_THREADS; i++) {
        uint32_t k = (h + i) & (CS_SMP_MAX_THREADS - 1);
        uintptr_t cur = atomic_load(&S->by_tcb[k].tcb);
        if (cur == tcb) {
            struct cs_smp_thread *t = S->by_tcb[k].thread;
            return t && t->tcb == tcb ? t : NULL;
        }
        if (cur == 0) return NULL;
    }
    return NULL;
}

// Lowers the rate when the handler costs more than CS_SMP_BUDGET_PERCENT of
// the period in most samples of a window of CS_SMP_WINDOW. The cost is wall
// time, so a handler preempted on a busy machine looks slow: the median, not
// the mean, decides.
static void account_cost(uint64_t cost) {
    uint32_t stride = atomic_load(&S->stride);
    uint64_t budget = S->period_ns * stride * CS_SMP_BUDGET_PERCENT / 100;
    uint32_t over = cost > budget ? atomic_fetch_add(&S->window_over, 1) + 1 : atomic_load(&S->window_over);
    uint32_t count = atomic_fetch_add(&S->window_count, 1) + 1;
    if (count < CS_SMP_WINDOW) return;
    uint32_t expected = count;
    if (!atomic_compare_exchange_strong(&S->window_count, &expected, 0)) return;
    atomic_fetch_sub(&S->window_over, over);
    if (over * 2 > count && S->requested_hz / (stride * 2) >= CS_SMP_MIN_HZ)
        atomic_store(&S->stride, stride * 2);
}

static void take_sample(siginfo_t *si, ucontext_t *uc) {
    uint64_t t0 = cs_monotonic_ns();
    int tid = cs_gettid();
    struct cs_smp_thread *t = cs_sampler_thread(tid, true);
    uint32_t stride = atomic_load(&S->stride);
    uint32_t tick = atomic_fetch_add(&S->ticks, 1);
    if (t && (stride <= 1 || tick % stride == 0)) {
        uintptr_t tcb = cs_fs_base();
        if (t->tcb != tcb) {
            // A new thread (or a recycled tid): libunwind's TLS starts empty.
            memset(t->tls, 0, sizeof t->tls);
            t->tcb = tcb;
            index_tcb(tcb, t);
        }
        uint64_t frames[CS_SMP_MAX_DEPTH];
        atomic_store_explicit(&t->in_handler, 1, memory_order_relaxed);
        int n = cs_unwind(uc, t, frames, CS_SMP_MAX_DEPTH);
        atomic_store_explicit(&t->in_handler, 0, memory_order_relaxed);
        uint32_t off = atomic_fetch_add(&S->next_frame, (uint32_t)n);
        uint32_t slot = off + (uint32_t)n <= S->max_frames ? atomic_fetch_add(&S->next_sample, 1) : UINT32_MAX;
        if (slot < S->max_samples) {
            struct cs_sample *smp = &S->samples[slot];
            memcpy(&S->frames[off], frames, (size_t)n * sizeof *frames);
            smp->tid = tid;
            smp->ns = t0;
            smp->frame_off = off;
            smp->nframes = (uint16_t)n;
            uint64_t cost = cs_monotonic_ns() - t0;
            smp->cost_ns = cost > UINT32_MAX ? UINT32_MAX : (uint32_t)cost;
            atomic_store_explicit(&smp->committed, 1, memory_order_release);
            account_cost(cost);
        } else {
            atomic_fetch_add(&S->dropped, 1);
        }
    }
    if (t0 - atomic_load(&S->last_scan_ns) > CS_SMP_SCAN_NS) cs_sampler_scan_threads();
    if (S->clock == CS_CLOCK_PERF && t && t->fd == si->si_fd && atomic_load(&S->active)) {
        if (t->ring) {
            // Records are headers only; consume them all so the buffer never fills.
            uint64_t head = __atomic_load_n(&t->ring->data_head, __ATOMIC_ACQUIRE);
            __atomic_store_n(&t->ring->data_tail, head, __ATOMIC_RELEASE);
        } else {
            // Re-arm last, so the time spent in this handler is not itself sampled.
            ioctl(si->si_fd, PERF_EVENT_IOC_REFRESH, 1);
        }
    }
}

static void on_signal(int sig, siginfo_t *si, void *ucv) {
    int saved = errno;
    int code = si->si_code;
    bool ours = code == POLL_HUP || code == POLL_IN
        || (code == SI_TIMER && si->si_value.sival_ptr == (void *)(uintptr_t)S->cookie);
    if (!ours) {
        if (code <= 0) foreign_signal(sig);
        errno = saved;
        return;
    }
    atomic_fetch_add(&S->in_flight, 1);
    if (atomic_load(&S->active)) take_sample(si, ucv);
    atomic_fetch_sub(&S->in_flight, 1);
    errno = saved;
}

// ---- configuration ----

static uint32_t parse_bounded(char **envp, const char *name, uint64_t lo, uint64_t hi, uint32_t fallback, const char *want) {
    const char *v = cs_env_get(envp, name);
    uint64_t x;
    if (v == NULL || *v == 0) return fallback;
    if (cs_parse_u64(v, &x) != 0 || x < lo || x > hi) {
        char msg[160] = "ignoring ";
        strcat(msg, name);
        strcat(msg, " (want ");
        strcat(msg, want);
        strcat(msg, "): ");
        cs_warn(msg, v);
        return fallback;
    }
    return (uint32_t)x;
}

static bool open_clock(enum cs_smp_clock clock) {
    S->clock = clock;
    struct cs_smp_thread *t = cs_sampler_thread(S->main_tid, true);
    int e = arm_thread(t, S->main_tid);
    if (e == 0) return true;
    disarm_thread(t);
    t->fd = -1;
    if (clock == CS_CLOCK_PERF) {
        cs_warn("perf_event_open refused the task clock, sampling with POSIX CPU timers instead (at most the kernel tick rate): ",
                errno_name(e));
    } else {
        cs_warn("cannot create a sampling timer; sampling off: ", errno_name(e));
    }
    S->clock = CS_CLOCK_NONE;
    return false;
}

void cs_sampler_start(char **argv, char **envp) {
#if !defined(__x86_64__)
    (void)argv;
    (void)envp;
    if (cs_env_get(envp, "COLDSTART_SAMPLER")) cs_warn("stack sampling supports x86_64 only; sampling off", NULL);
    return;
#else
    if (S->started) return;
    const char *mode = cs_env_get(envp, "COLDSTART_SAMPLER");
    enum cs_smp_clock want = CS_CLOCK_PERF;
    bool forced = mode && *mode;
    if (forced) {
        if (strcmp(mode, "off") == 0) return;
        else if (strcmp(mode, "perf") == 0) want = CS_CLOCK_PERF;
        else if (strcmp(mode, "posix") == 0) want = CS_CLOCK_POSIX;
        else if (strcmp(mode, "wall") == 0) want = CS_CLOCK_WALL;
        else cs_warn("ignoring COLDSTART_SAMPLER (want perf, posix, wall or off): ", mode);
    }
    S->requested_hz = parse_bounded(envp, "COLDSTART_HZ", CS_SMP_MIN_HZ, CS_SMP_MAX_HZ, 1000, "10 to 10000");
    S->max_samples = parse_bounded(envp, "COLDSTART_MAX_SAMPLES", 100, 1000000, CS_SMP_DEFAULT_MAX_SAMPLES, "100 to 1000000");
    const char *unw = cs_env_get(envp, "COLDSTART_UNWINDER");
    S->unwinder = CS_UNW_LIBUNWIND;
    if (unw && strcmp(unw, "fp") == 0) S->unwinder = CS_UNW_FP;
    else if (unw && *unw && strcmp(unw, "libunwind") != 0)
        cs_warn("ignoring COLDSTART_UNWINDER (want libunwind or fp): ", unw);
    set_period(1000000000ull / S->requested_hz);
    S->main_tid = cs_gettid();
    atomic_store(&S->stride, 1);

    struct sigaction old;
    if (sigaction(CS_SMP_SIGNAL, NULL, &old) != 0 || (old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL) {
        cs_warn("SIGPROF already has a handler in this program; stack sampling off", NULL);
        return;
    }
    S->max_frames = S->max_samples * CS_SMP_AVG_DEPTH;
    S->samples = map_buffer(sizeof(struct cs_sample) * S->max_samples);
    S->frames = map_buffer(sizeof(uint64_t) * S->max_frames);
    if (!S->samples || !S->frames) {
        cs_warn("cannot allocate the sample buffers; stack sampling off", NULL);
        return;
    }
    prefault_buffers(true);
    cs_safe_read_init();
    // The main thread's slot first: libunwind's warm-up below uses its TLS.
    struct cs_smp_thread *main_slot = cs_sampler_thread(S->main_tid, true);
    main_slot->tcb = cs_fs_base();
    index_tcb(main_slot->tcb, main_slot);
    if (S->unwinder == CS_UNW_LIBUNWIND && !cs_unwind_load(argv, envp)) S->unwinder = CS_UNW_FP;

    S->cookie = ((uint64_t)(uintptr_t)&cs_g ^ cs_monotonic_ns()) | 1;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigfillset(&sa.sa_mask);   // one sample at a time per thread; no reentry
    if (sigaction(CS_SMP_SIGNAL, &sa, NULL) != 0) {
        cs_warn("cannot install the SIGPROF handler; stack sampling off", NULL);
        return;
    }
    S->owns_signal = true;
    S->started = true;
    S->t_start = cs_monotonic_ns();
    S->cpu_start = cpu_ns();
    cs_rusage_now(&S->ru_start);
    atomic_store(&S->active, 1);
    bool ok = open_clock(want);
    if (!ok && want == CS_CLOCK_PERF) ok = open_clock(CS_CLOCK_POSIX);
    if (!ok) {
        atomic_store(&S->active, 0);
        S->started = false;
        cs_sampler_release();
        return;
    }
    if (S->clock != CS_CLOCK_WALL) cs_sampler_scan_threads();
#endif
}

// ---- the scanning thread ----

void cs_sampler_leave_alone(int tid) {
    // On a busy machine the thread can start running long after it was
    // created and armed. Hold the scan flag, so a scan already past the id
    // check cannot arm it again behind our back, and take it out of
    // threadsSampled: it is never sampled.
    bool holding = false;
    for (int i = 0; i < 2000 && !holding; i++) {
        int expected = 0;
        holding = atomic_compare_exchange_strong(&S->scanning, &expected, 1);
        struct timespec ts = {0, 50000};
        if (!holding) nanosleep(&ts, NULL);
    }
    struct cs_smp_thread *t = cs_sampler_thread(tid, false);
    if (t) {
        disarm_thread(t);
        if (atomic_exchange(&t->sampled, 0)) atomic_fetch_sub(&S->threads_armed, 1);
    }
    if (holding) atomic_store(&S->scanning, 0);
}

static void *scan_loop(void *arg) {
    (void)arg;
    int me = cs_gettid();
    S->scanner_tid = me;
    // A scan may have found this thread before it knew its own id.
    cs_sampler_leave_alone(me);
    prefault_buffers(false);
    prctl(PR_SET_NAME, "coldstart-scan", 0, 0, 0);
    while (atomic_load(&S->active)) {
        struct timespec ts = {0, (long)CS_SMP_SCAN_NS};
        nanosleep(&ts, NULL);
        if (cs_monotonic_ns() - atomic_load(&S->last_scan_ns) >= CS_SMP_SCAN_NS) cs_sampler_scan_threads();
    }
    return NULL;
}

void cs_sampler_after_initializers(void) {
    if (!atomic_load(&S->active)) return;
    if (S->clock == CS_CLOCK_WALL) {   // one thread, no scanning: fault in here
        prefault_buffers(false);
        return;
    }
    if (cs_start_thread(scan_loop, 64 * 1024) != 0) {
        cs_warn("cannot start the thread scanner; threads that start while sampled threads sleep may be missed", NULL);
        prefault_buffers(false);
    }
}

// ---- stopping ----

void cs_sampler_stop(void) {
    if (!S->started || atomic_load(&S->stopped)) return;
    if (!atomic_exchange(&S->active, 0)) {
        // Another thread is stopping: the caller may write the timeline
        // next, so wait (bounded) until the window is closed.
        for (int i = 0; i < 4000 && !atomic_load(&S->stopped); i++) {
            struct timespec ts = {0, 50000};
            nanosleep(&ts, NULL);
        }
        return;
    }
    // A scan in progress on another thread finishes on its own (bounded).
    for (int i = 0; i < 2000 && atomic_load(&S->scanning); i++) {
        struct timespec ts = {0, 50000};
        nanosleep(&ts, NULL);
    }
    for (size_t i = 0; i < CS_SMP_MAX_THREADS; i++) {
        if (atomic_load(&S->threads[i].tid)) silence_thread(&S->threads[i]);
    }
    // Handlers already running finish their sample (microseconds); bounded
    // wait. A handler that saw `active` after we cleared it touches nothing,
    // so once none runs the ring buffers can go. If one is still running
    // (preempted for 200 ms), they stay mapped: a leak, never a fault.
    for (int i = 0; i < 4000 && atomic_load(&S->in_flight) > 0; i++) {
        struct timespec ts = {0, 50000};
        nanosleep(&ts, NULL);
    }
    if (atomic_load(&S->in_flight) == 0) {
        for (size_t i = 0; i < CS_SMP_MAX_THREADS; i++) {
            if (atomic_load(&S->threads[i].tid)) free_thread(&S->threads[i]);
        }
    }
    // After the last handler: every recorded sample lies inside the window.
    S->t_stop = cs_monotonic_ns();
    S->cpu_stop = cpu_ns();
    // Coldstart's own threads are never sampled: their CPU (whole lifetimes,
    // which lie inside the window but for the watcher's first microseconds)
    // must not count towards the rate.
    S->own_cpu = thread_cpu_ns(atomic_load(&cs_g.watch.tid)) + thread_cpu_ns(atomic_load(&S->scanner_tid));
    cs_rusage_now(&S->ru_stop);
    atomic_store(&S->stopped, true);
}

// True when some thread (or the process) has SIGPROF pending: giving the
// signal back to SIG_DFL then would kill the host.
static bool signal_may_be_pending(void) {
    char path[64] = "/proc/self/task/";
    char buf[2048] __attribute__((aligned(8)));
    char status[4096];
    int dir = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0) return true;
    bool pending = false;
    long n;
    uint64_t bit = 1ull << (CS_SMP_SIGNAL - 1);
    while (!pending && (n = syscall(SYS_getdents64, dir, buf, sizeof buf)) > 0) {
        for (long off = 0; off < n && !pending;) {
            const struct linux_dirent64 *d = (const void *)(buf + off);
            off += d->d_reclen;
            if (d->d_name[0] < '0' || d->d_name[0] > '9') continue;
            path[16] = 0;
            strncat(path, d->d_name, 24);
            strcat(path, "/status");
            int fd = open(path, O_RDONLY | O_CLOEXEC);
            if (fd < 0) continue;   // the thread exited
            ssize_t k = read(fd, status, sizeof status - 1);
            close(fd);
            if (k <= 0) continue;
            status[k] = 0;
            // SigPnd: this thread; ShdPnd: the process. Both hex masks.
            for (const char *key = status; (key = strstr(key, "Pnd:\t")) != NULL; key += 5) {
                uint64_t mask = 0;
                for (const char *p = key + 5; (*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f'); p++)
                    mask = mask * 16 + (uint64_t)(*p <= '9' ? *p - '0' : *p - 'a' + 10);
                if (mask & bit) pending = true;
            }
        }
    }
    close(dir);
    return pending;
}

void cs_sampler_release(void) {
    if (!S->owns_signal || S->released) return;
    // The clocks are closed and no handler runs (cs_sampler_stop waited), so a
    // signal of ours can only still be pending on a thread that blocks
    // SIGPROF. Then the (now idle) handler stays, rather than SIG_DFL killing
    // the host when that thread unblocks.
    if (signal_may_be_pending()) return;
    struct sigaction cur;
    if (sigaction(CS_SMP_SIGNAL, NULL, &cur) == 0 && (cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == on_signal) {
        struct sigaction dfl;
        memset(&dfl, 0, sizeof dfl);
        dfl.sa_handler = SIG_DFL;
        sigaction(CS_SMP_SIGNAL, &dfl, NULL);
    }
    S->owns_signal = false;
    S->released = true;
}
