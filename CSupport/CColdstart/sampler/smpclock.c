// The sampler's clock sources (smp.h): one per thread, a perf task-clock
// event or a POSIX timer, whose signal goes to that thread. Every function
// here is async-signal-safe (system calls only). Before the first event, a
// helper process warms the kernel (below).
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <linux/perf_event.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>


static void mark_armed(struct cs_smp_thread *t) {
    if (!atomic_exchange(&t->armed, 1)) atomic_fetch_add(&S->threads_live, 1);
}

int cs_smp_signal_for(int tid) {
    char path[64] = "/proc/self/task/";
    size_t n = strlen(path);
    n += cs_format_u64((uint64_t)tid, path + n);
    memcpy(path + n, "/status", 8);
    char status[4096];
    ssize_t k = cs_read_small_file(path, status, sizeof status);
    if (k <= 0) return CS_SMP_SIGNAL;   // gone: arming it fails anyway
    uint64_t blocked = cs_status_mask(status, (size_t)k, "SigBlk");
    if (!(blocked & (1ull << (CS_SMP_SIGNAL - 1)))) return CS_SMP_SIGNAL;
    if ((blocked & (1ull << (CS_SMP_ALT_SIGNAL - 1))) || !atomic_load(&S->owns_alt)) return 0;
    // The host may have taken SIGPROF since the scan thread last looked.
    struct sigaction cur;
    if (sigaction(CS_SMP_ALT_SIGNAL, NULL, &cur) != 0 || !(cur.sa_flags & SA_SIGINFO) || cur.sa_sigaction != S->handler)
        return 0;
    return CS_SMP_ALT_SIGNAL;
}

// ---- warming the kernel from a helper process ----
//
// On a kernel where no perf event has been open for about a second, the
// first one switches the kernel's scheduler hooks on and waits for an RCU
// grace period (10–18 ms measured), asleep and uninterruptible. On the scan
// thread that made the whole process wait at its exit: a 10 ms tool was
// reaped 8 ms after its end. So before the first event a short-lived helper,
// cloned with CLONE_VM but neither CLONE_THREAD nor CLONE_FILES, closes every
// descriptor of its copy of the table (it must hold none of the program's
// pipes open), opens a dummy event on itself, which pays that wait, and
// exits; the kernel keeps its hooks on for a second after the last event
// closes, so the scan thread's own events then open at once. While the scan
// thread waits for the helper it can be killed at once, and the helper holds
// up no one's exit. It sends no signal when it ends (exit signal 0): only a
// wait with __WCLONE or __WALL sees it, and the scan thread reaps it (a
// process that exits first leaves it to init).

#ifndef SYS_close_range
#define SYS_close_range 436
#endif

#if CS_ARCH_SUPPORTED
// The helper's whole life: system calls only, on its own small stack. It
// says it is done while its event is still open (then exits, closing it).
static int helper_main(void *arg) {
    const struct perf_event_attr *dummy = arg;
    // System calls without errno: the helper runs on the scan thread's TLS.
    // Known by its pid before anything else: a host's wait may reap it
    // before clone has returned to the scan thread.
    atomic_store(&S->warm_child, (int)cs_raw_syscall(SYS_getpid, 0, 0, 0, 0, 0));
    if (cs_raw_syscall(SYS_close_range, 0, ~0L, 0, 0, 0) == 0)
        cs_raw_syscall(SYS_perf_event_open, (long)dummy, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
    atomic_store(&S->warm_done, 1);
    cs_raw_syscall(SYS_futex, (long)&S->warm_done, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, 1, 0, 0);
    cs_raw_syscall(SYS_exit, 0, 0, 0, 0, 0);
    return 0;
}
#endif

#define CS_HELPER_STACK (16 * 1024)

void cs_smp_warm_start(void) {
#if CS_ARCH_SUPPORTED
    static const struct perf_event_attr dummy = {
        .type = PERF_TYPE_SOFTWARE, .size = sizeof dummy, .config = PERF_COUNT_SW_DUMMY,
        .disabled = 1, .exclude_kernel = 1, .exclude_hv = 1,
    };
    void *stack = mmap(NULL, CS_HELPER_STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (stack == MAP_FAILED) return;
    atomic_store(&S->warm_done, 0);
    atomic_store(&S->warm_reaped, 0);
    S->warm_stack = stack;
    // No signal of anyone's may run on the helper (it has no TLS of its own).
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int pid = clone(helper_main, (char *)stack + CS_HELPER_STACK, CLONE_VM | CLONE_UNTRACED, (void *)&dummy);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (pid < 0) {
        munmap(stack, CS_HELPER_STACK);
        return;
    }
    S->warm_pid = pid;
    int none = 0;
    atomic_compare_exchange_strong(&S->warm_child, &none, pid);
#endif
}

// The helper is reaped (by the scan thread or a host's wait): the first to
// say so unmaps its stack, and it is no longer recognised (its pid may be
// the host's child's later).
static void helper_reaped(void) {
    atomic_store(&S->warm_child, 0);
    if (!atomic_exchange(&S->warm_reaped, 1)) munmap(S->warm_stack, CS_HELPER_STACK);
}

void cs_smp_warm_reap(void) {
    if (S->warm_pid <= 0) return;
    // Interruptible: a process exiting meanwhile ends this thread at once.
    // Its stack goes only once it has ended (never, if it cannot be reaped).
    // ECHILD: a host's wait took it (below), and unmapped its stack.
    long rc;
    while ((rc = cs_syscall(SYS_wait4, S->warm_pid, NULL, __WCLONE, NULL)) < 0 && errno == EINTR) {}
    if (rc == S->warm_pid) helper_reaped();
    S->warm_pid = 0;
}

bool cs_smp_warm_wait(uint64_t ns) {
    uint64_t deadline = cs_monotonic_ns() + ns;
    // Interruptible: a process exiting meanwhile ends this thread at once.
    while (S->warm_pid > 0 && !atomic_load(&S->warm_done) && cs_monotonic_ns() < deadline)
        cs_futex_wait(&S->warm_done, 0, deadline);
    return S->warm_pid <= 0 || atomic_load(&S->warm_done);
}

// ---- forks ----
//
// A child the host forks inherits every descriptor, perf events included
// (PERF_FLAG_FD_CLOEXEC closes them at exec only): mapped and re-enabled
// there, the parent's task clock or the bridge's CPU-wide events would give
// the child, which may have dropped its privileges, the parent's stacks, or
// another user's. The child closes the events the parent recorded in its
// slots (cs_sampler_fork_child); one opened but not yet recorded at the
// fork would escape that, so the fork waits for the few microseconds
// between the open and the record, and no open starts while a fork is
// under way.

void cs_smp_open_begin(void) {
    // 100 ms at most: a fork whose handlers never finished (a host that
    // longjmps out of one) must not stop the sampler for good.
    uint64_t deadline = 0;
    for (;;) {
        atomic_fetch_add(&S->fd_opens, 1);
        if (!atomic_load(&S->forks)) return;
        atomic_fetch_sub(&S->fd_opens, 1);
        uint64_t now = cs_monotonic_ns();
        if (deadline == 0) deadline = now + 100000000ull;
        if (now >= deadline) {
            atomic_fetch_add(&S->fd_opens, 1);
            return;
        }
        cs_sleep_ns(20000);
    }
}

void cs_smp_open_end(void) { atomic_fetch_sub(&S->fd_opens, 1); }


// The task clock of `tid`: user time only, at the boosted period during a
// boosted start (the scan thread, which arms threads and ends the boost under
// one flag, switches it back later). With `kernel_stacks`, each overflow makes
// the kernel append {tid, time, user call chain} to the event's ring and,
// with `regs`, the user registers and a copy of the top S->stack_bytes of
// the user stack (smpunwind.c); otherwise it only wakes the ring's reader,
// which F_SETSIG turns into a signal. The descriptor, or -1 with errno set.
static int open_task_clock(int tid, bool kernel_stacks, bool regs, bool boosted) {
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.type = PERF_TYPE_SOFTWARE;
    a.size = sizeof a;
    a.config = PERF_COUNT_SW_TASK_CLOCK;
    a.sample_period = boosted ? S->boost_period_ns : S->period_ns;
    a.disabled = 1;
    a.exclude_kernel = 1;   // allowed at perf_event_paranoid 2; user time only
    a.exclude_hv = 1;
    if (kernel_stacks) {
        // Wakeups only when the ring is half full (watermark 0): with no
        // O_ASYNC they reach nobody, and the scan thread empties the ring
        // long before. Times on the clock of every other figure.
        a.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CALLCHAIN;
        a.exclude_callchain_kernel = 1;
        a.use_clockid = 1;
        a.clockid = CLOCK_MONOTONIC;
        if (regs) {
            a.sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
            a.sample_regs_user = CS_PERF_REGS_MASK;
            a.sample_stack_user = S->stack_bytes;
        }
    } else {
        a.wakeup_events = 1;   // with a ring buffer: a wakeup, so a signal, per overflow
    }
    return (int)cs_syscall(SYS_perf_event_open, &a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

uint64_t cs_smp_event_id(int fd) {
    uint64_t id = 0;
    return fd >= 0 && ioctl(fd, PERF_EVENT_IOC_ID, &id) == 0 ? id : 0;
}

void cs_smp_close_event(int fd, uint64_t id) {
    if (id != 0 && cs_smp_event_id(fd) == id) close(fd);
}

// Opens the task clock of `tid` and points its overflow signal at that
// thread. Returns 0 or an errno value. Async-signal-safe (syscalls only).
static int arm_perf(struct cs_smp_thread *t, int tid) {
    bool boosted = atomic_load(&S->boost_on);
    int fd = open_task_clock(tid, false, false, boosted);
    if (fd < 0) return errno;
    struct f_owner_ex owner = {F_OWNER_TID, tid};
    uint64_t id = cs_smp_event_id(fd);
    if (id == 0) return EBADF;
    if (fcntl(fd, F_SETFL, O_ASYNC | O_NONBLOCK) != 0 || fcntl(fd, F_SETSIG, t->signo) != 0
        || fcntl(fd, F_SETOWN_EX, &owner) != 0) {
        int e = errno;
        cs_smp_close_event(fd, id);
        return e;
    }
    t->fd = fd;
    t->event_id = id;
    t->kernel_stacks = false;
    atomic_store(&t->boosted, boosted);
    // A one-page ring buffer makes every overflow signal on its own; the
    // handler only moves the tail (no system call). Without one (the locked
    // memory limit: perf_event_mlock_kb), the event disables itself after
    // each overflow and the handler re-enables it with an ioctl (~0.9 µs here).
    void *ring = mmap(NULL, 2 * 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    t->ring = ring == MAP_FAILED ? NULL : ring;
    t->ring_bytes = 2 * 4096;
    mark_armed(t);
    atomic_store(&t->armed_at_ns, cs_monotonic_ns());
    if (ioctl(fd, t->ring ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_REFRESH, 1) != 0) return errno;
    return 0;
}

// The same clock with the kernel recording the stacks (smp.h,
// kernel_stacks_on): no signal, so a thread that blocks ours is sampled too.
// A ring of 64 data pages for the main thread, 32 for others (a sample of a
// 4 KiB stack copy is ~4.4 KiB: ~30 ms of the boosted 3 kHz on 256 KiB; the
// scan thread empties the rings every 5 ms), fewer where the locked-memory
// limit (perf_event_mlock_kb, shared by the user's processes) leaves less.
// A kernel that refuses the registers or the stack copy records the
// frame-pointer chain alone. Leaves nothing behind on failure.
// Async-signal-safe (syscalls only).
static int arm_kernel_stacks(struct cs_smp_thread *t, int tid) {
    bool boosted = atomic_load(&S->boost_on);
    bool regs = S->unwinder != CS_UNW_FP;
    int fd = open_task_clock(tid, true, regs, boosted);
    if (fd < 0 && regs) {
        regs = false;
        fd = open_task_clock(tid, true, false, boosted);
    }
    if (fd < 0) return errno;
    uint64_t id = cs_smp_event_id(fd);
    if (id == 0) return EBADF;
    void *ring = MAP_FAILED;
    size_t bytes = 0;
    // The main thread's ring holds ~58 samples of a 4 KiB stack in 64 pages:
    // 58 ms at 1 kHz, 5.8 ms at 10 kHz, which a scan thread kept off the CPU
    // on a busy machine outlasted (samples lost, read as kernel time:
    // docs/real-programs.md). From 4 kHz it asks for 256 (23 ms at 10 kHz);
    // the locked-memory limit may leave it the smaller ones.
    static const size_t data_pages[] = {256, 64, 32, 8, 2};
    size_t from = tid != S->main_tid ? 2 : S->requested_hz >= 4000 ? 0 : 1;
    for (size_t i = from; i < sizeof data_pages / sizeof *data_pages && ring == MAP_FAILED; i++) {
        bytes = (1 + data_pages[i]) * 4096;
        // The smallest ring must hold one sample.
        if (regs && data_pages[i] * 4096 < 2 * (S->stack_bytes + 1024)) break;
        ring = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    }
    // Its time before the enable: the bridge's samples of this thread from
    // then on are this clock's too (smpbridge.c drops them).
    if (ring != MAP_FAILED) atomic_store(&t->armed_at_ns, cs_monotonic_ns());
    if (ring == MAP_FAILED || ioctl(fd, PERF_EVENT_IOC_ENABLE, 0) != 0) {
        int e = ring == MAP_FAILED ? ENOMEM : errno;
        if (ring != MAP_FAILED) munmap(ring, bytes);
        cs_smp_close_event(fd, id);
        atomic_store(&t->armed_at_ns, 0);
        return e;
    }
    t->fd = fd;
    t->event_id = id;
    t->ring = ring;
    t->ring_bytes = (uint32_t)bytes;
    t->kernel_stacks = true;
    t->kernel_regs = regs;
    atomic_store(&t->boosted, boosted);
    mark_armed(t);
    return 0;
}

// A POSIX timer on the thread's CPU clock (or, for the wall mode, on
// CLOCK_MONOTONIC) that signals that thread. Async-signal-safe (raw syscalls).
static int arm_timer(struct cs_smp_thread *t, int tid, bool wall) {
    clockid_t clock = wall ? CLOCK_MONOTONIC : cs_thread_cpu_clock(tid);
    struct sigevent ev;
    memset(&ev, 0, sizeof ev);
    ev.sigev_notify = SIGEV_THREAD_ID;
    ev.sigev_signo = t->signo;
    ev.sigev_value.sival_ptr = (void *)(uintptr_t)S->cookie;
    ev._sigev_un._tid = tid;
    int kid = -1;
    if (cs_syscall(SYS_timer_create, clock, &ev, &kid) != 0) return errno;
    struct itimerspec its;
    its.it_interval.tv_sec = (time_t)(S->period_ns / 1000000000ull);
    its.it_interval.tv_nsec = (long)(S->period_ns % 1000000000ull);
    its.it_value = its.it_interval;
    t->timer = (timer_t)(intptr_t)kid;
    t->has_timer = true;
    mark_armed(t);
    if (cs_syscall(SYS_timer_settime, kid, 0, &its, NULL) != 0) return errno;
    return 0;
}

int cs_smp_arm_thread(struct cs_smp_thread *t, int tid, int signo) {
    t->signo = signo;
    int e;
    // The first event once the helper is done (2 s at most: a helper killed
    // by someone else never says so); outside the fork's wait.
    if (S->clock == CS_CLOCK_PERF) cs_smp_warm_wait(2000000000ull);
    cs_smp_open_begin();
    switch (S->clock) {
    case CS_CLOCK_PERF:
        e = atomic_load(&S->kernel_stacks_on) ? arm_kernel_stacks(t, tid) : EAGAIN;
        if (e == 0) break;
        // Signals, then (a kernel refusing call chains, or the ring's memory).
        if (signo == 0) t->signo = signo = cs_smp_signal_for(tid);
        e = signo ? arm_perf(t, tid) : EAGAIN;
        break;
    case CS_CLOCK_POSIX: e = arm_timer(t, tid, false); break;
    case CS_CLOCK_WALL: e = arm_timer(t, tid, true); break;
    default: e = EINVAL; break;
    }
    cs_smp_open_end();
    // Counted once: a thread switched from kernel stacks to signals is armed twice.
    if (e == 0 && !atomic_exchange(&t->sampled, 1)) atomic_fetch_add(&S->threads_armed, 1);
    return e;
}

// True when `fd` is still the perf event we opened (the host may have closed
// it and reused the number: never touch a descriptor that is not ours).
static bool still_ours(const struct cs_smp_thread *t) {
    return t->event_id != 0 && cs_smp_event_id(t->fd) == t->event_id;
}

// Stops the thread's clock: no new signal after this returns.
void cs_smp_silence_thread(struct cs_smp_thread *t) {
    if (!atomic_exchange(&t->armed, 0)) return;
    atomic_fetch_sub(&S->threads_live, 1);
    if (t->fd >= 0 && still_ours(t)) ioctl(t->fd, PERF_EVENT_IOC_DISABLE, 0);
    if (t->has_timer) {
        cs_syscall(SYS_timer_delete, (int)(intptr_t)t->timer);
        t->has_timer = false;
    }
}

// Frees what the handler may touch (the ring buffer): only once no handler runs.
void cs_smp_free_thread(struct cs_smp_thread *t) {
    if (t->fd >= 0) {
        cs_smp_close_event(t->fd, t->event_id);
        t->fd = -1;
    }
    if (t->ring) {
        munmap(t->ring, t->ring_bytes);
        t->ring = NULL;
    }
    t->kernel_stacks = false;
    t->kernel_regs = false;
}

// For a thread no handler can be running on (never enabled, or the caller).
void cs_smp_disarm_thread(struct cs_smp_thread *t) {
    cs_smp_silence_thread(t);
    cs_smp_free_thread(t);
}

// ---- a host's waits ----
//
// The helper sends no signal when it ends, so only a wait with __WALL or
// __WCLONE sees it: a supervisor host waiting with waitpid(-1, __WALL)
// reaped it on a quiet kernel (4 of 4 runs) and got a pid it never made.
// These take the place of the C library's waitpid, wait3, wait4 and waitid
// (as end.c's do for unshare and syscall): a wait that reaps the helper
// takes it for Coldstart and waits again, as the host asked, so that it
// returns what it would have without the helper (another child, 0 with
// WNOHANG, or ECHILD). waitpid is the C library's own (__waitpid, a
// cancellation point); wait4 with a rusage and waitid are the system call
// (not one: a host that cancels a thread blocked in them cancels it when
// the wait returns).

extern pid_t __waitpid(pid_t pid, int *status, int options);

// Whether `pid`, just reaped by a host's wait, was Coldstart's helper.
static bool took_helper(long pid) {
    if (pid <= 0 || pid != atomic_load(&S->warm_child)) return false;
    helper_reaped();
    return true;
}

pid_t wait4(pid_t pid, int *status, int options, struct rusage *usage) {
    // A wait that returns 0 (WNOHANG) leaves *status as it found it.
    int saved = status ? *status : 0;
    for (;;) {
        long rc = usage ? cs_syscall(SYS_wait4, pid, status, options, usage) : __waitpid(pid, status, options);
        if (!took_helper(rc)) {
            if (rc == 0 && status) *status = saved;
            return (pid_t)rc;
        }
    }
}

pid_t waitpid(pid_t pid, int *status, int options) { return wait4(pid, status, options, NULL); }

pid_t wait3(int *status, int options, struct rusage *usage) { return wait4(-1, status, options, usage); }

int waitid(idtype_t type, id_t id, siginfo_t *info, int options) {
    siginfo_t saved;
    if (info) saved = *info;
    for (;;) {
        long rc = cs_syscall(SYS_waitid, type, id, info, options, NULL);
        if (rc != 0 || !info || !took_helper(info->si_pid)) return (int)rc;
        // WNOHANG with nothing to report leaves si_pid 0, as it was zeroed.
        *info = saved;
    }
}
