/*
 * The launcher's sampler when the kernel refuses perf events (cs_launcher.h,
 * "Tracing"): the launcher is the program's parent, and a parent may trace
 * its child under Yama's default scope and a container's default seccomp
 * profile. Every thread (PTRACE_O_TRACECLONE) is interrupted once per period
 * while it is running, its registers and the top of its stack are copied
 * (process_vm_readv), and it is let go; the copy is then unwound here, with
 * libunwind's DWARF CFI over the stack copy and the program's mapped files,
 * while the program runs on. Samples and mappings are written as the perf
 * records the perf path produces (PERF_RECORD_SAMPLE / PERF_RECORD_MMAP), so
 * the rest of `coldstart run` reads both alike.
 *
 * The program must not see the tracer: every signal it is sent is given
 * back at its delivery stop, group stops are kept (PTRACE_LISTEN), only
 * threads in state R are interrupted (a sleeping one is left asleep), and a
 * system call that an interrupt ended with EINTR is restarted.
 */
#include "trace.h"

#define ERESTARTNOHAND_ 514

#if CS_TRACE_SUPPORTED

/* ---- threads ---- */

static trace_thread *thread_of(cs_trace *t, pid_t tid, int add) {
    for (int i = 0; i < t->nthreads; i++)
        if (t->threads[i].tid == tid) return &t->threads[i];
    if (!add) return NULL;
    if (t->nthreads == t->cthreads) {
        int cap = t->cthreads ? t->cthreads * 2 : 16;
        trace_thread *grown = realloc(t->threads, (size_t)cap * sizeof *grown);
        if (!grown) return NULL;
        t->threads = grown;
        t->cthreads = cap;
    }
    trace_thread *th = &t->threads[t->nthreads++];
    memset(th, 0, sizeof *th);
    th->tid = tid;
    char path[80];
    snprintf(path, sizeof path, "/proc/%d/task/%d/stat", (int)t->pid, (int)tid);
    th->stat_fd = open(path, O_RDONLY | O_CLOEXEC);
    snprintf(path, sizeof path, "/proc/%d/task/%d/schedstat", (int)t->pid, (int)tid);
    th->sched_fd = open(path, O_RDONLY | O_CLOEXEC);
    return th;
}

static void drop_thread(cs_trace *t, pid_t tid) {
    for (int i = 0; i < t->nthreads; i++) {
        if (t->threads[i].tid != tid) continue;
        if (t->threads[i].stat_fd >= 0) close(t->threads[i].stat_fd);
        if (t->threads[i].sched_fd >= 0) close(t->threads[i].sched_fd);
        t->threads[i] = t->threads[--t->nthreads];
        return;
    }
}

/* 'R' (running or runnable) from /proc/PID/task/TID/stat; 0 when unreadable.
 * The same read gives the thread's name (between the first '(' and the
 * last ')': a name may hold either), so a rename is seen within a tick at
 * no cost of its own, and written as a COMM record when it changed. */
static char look_at_thread(cs_trace *t, trace_thread *th) {
    char buf[512];
    ssize_t n = th->stat_fd >= 0 ? pread(th->stat_fd, buf, sizeof buf - 1, 0) : -1;
    if (n <= 0) return 0;
    buf[n] = 0;
    char *close_paren = strrchr(buf, ')');
    char *open_paren = strchr(buf, '(');
    if (t->execed && open_paren && close_paren && close_paren > open_paren && close_paren - open_paren <= 16) {
        size_t len = (size_t)(close_paren - open_paren - 1);
        if (strncmp(th->comm, open_paren + 1, len) != 0 || th->comm[len] != 0) {
            memcpy(th->comm, open_paren + 1, len);
            th->comm[len] = 0;
            trace_emit_comm(t, th->tid, th->comm, now_ns());
        }
    }
    return close_paren && close_paren[1] == ' ' ? close_paren[2] : 0;
}

/* The thread's CPU time in ns (schedstat's first field: exact while it is stopped). */
static uint64_t thread_cpu_ns(const trace_thread *th) {
    char buf[128];
    ssize_t n = th->sched_fd >= 0 ? pread(th->sched_fd, buf, sizeof buf - 1, 0) : -1;
    if (n <= 0) return 0;
    buf[n] = 0;
    return strtoull(buf, NULL, 10);
}

/* ---- one sample of a stopped thread ---- */

/* Returns how many periods of CPU the sample stands for (0: none taken):
 * registers and stack copied, to be unwound. */
static int sample_stopped(cs_trace *t, trace_thread *th) {
    struct iovec regs = {&t->regs, sizeof t->regs};
    if (ptrace(PTRACE_GETREGSET, th->tid, (void *)NT_PRSTATUS, &regs) != 0) return 0;
    /* An interrupt that ended a system call which does not restart itself
     * (epoll_wait, an inotify read) would show the program EINTR: have the
     * kernel restart it, as it restarts the others. */
    if ((int64_t)t->regs.orig_rax >= 0 && (int64_t)t->regs.rax == -EINTR) {
        t->regs.rax = (unsigned long long)-ERESTARTNOHAND_;
        ptrace(PTRACE_SETREGSET, th->tid, (void *)NT_PRSTATUS, &regs);
        t->regs.rax = (unsigned long long)-EINTR;
    }
    uint64_t cpu = thread_cpu_ns(th);
    /* One sample per period of the thread's CPU time, as a CPU clock would
     * take them: a thread that waited for a CPU (state R too) is not due
     * yet; one whose tracer was late by k periods gets its sample k times. */
    if (!t->execed || cpu < th->credited_ns + t->period_ns) return 0;
    uint64_t periods = (cpu - th->credited_ns) / t->period_ns;
    if (periods > MAX_COPIES) periods = MAX_COPIES;
    th->credited_ns = cpu - (cpu - th->credited_ns) % t->period_ns;
    /* The stack copy, page by page so that the stack's top ends it. */
    uint64_t sp = t->regs.rsp;
    struct iovec local = {t->stack, STACK_COPY};
    struct iovec remote[STACK_COPY / 4096 + 1];
    int nremote = 0;
    uint64_t at = sp, end = sp + STACK_COPY;
    while (at < end) {
        uint64_t page_end = (at & ~(uint64_t)4095) + 4096;
        if (page_end > end) page_end = end;
        remote[nremote].iov_base = (void *)(uintptr_t)at;
        remote[nremote].iov_len = (size_t)(page_end - at);
        nremote++;
        at = page_end;
    }
    ssize_t got = process_vm_readv(t->pid, &local, 1, remote, (unsigned long)nremote, 0);
    t->stack_start = sp;
    t->stack_len = got > 0 ? (size_t)got : 0;
    t->samples += periods;
    return (int)periods;
}

/* ---- events ---- */

static int is_stop_signal(int sig) { return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU; }

/* Handles one wait status of a traced thread. Whatever the stop, it answers
 * an interrupt of ours still pending: the kernel's ptrace_stop() clears a
 * pending PTRACE_INTERRUPT on any trap ("any trap clears pending STOP trap"),
 * so a thread interrupted on its way into a clone event or a signal's stop
 * reports that stop and never the interrupt's. Waiting on for it stalled the
 * tracer until the program ended (1 launch in ~10 of KnownCosts, whose
 * Coldstart start-up clones a thread 7 ms in). */
static void handle(cs_trace *t, pid_t tid, int status, const struct rusage *ru) {
    if (WIFEXITED(status) || WIFSIGNALED(status)) {
        if (tid == t->pid) {
            t->exited = 1;
            t->exit_status = status;
            if (ru) t->usage = *ru;
        }
        drop_thread(t, tid);
        return;
    }
    if (!WIFSTOPPED(status)) return;
    trace_thread *th = thread_of(t, tid, 1);
    int event = status >> 16, sig = WSTOPSIG(status);
    int interrupted = th && th->interrupted;
    if (th) th->interrupted = 0;
    switch (event) {
    case PTRACE_EVENT_CLONE: {
        unsigned long child = 0;
        if (ptrace(PTRACE_GETEVENTMSG, tid, 0, &child) == 0 && thread_of(t, (pid_t)child, 1) && t->execed)
            trace_emit_fork(t, (pid_t)child, tid, now_ns());
        ptrace(PTRACE_CONT, tid, 0, 0);
        return;
    }
    case PTRACE_EVENT_EXEC:
        /* A new image: the old threads and mappings are gone. */
        for (int i = t->nthreads - 1; i >= 0; i--)
            if (t->threads[i].tid != tid) drop_thread(t, t->threads[i].tid);
        trace_forget_files(t);
        cs_uw_forget(&t->unw);
        t->execed = 1;
        trace_refresh_maps(t);
        if (th) {
            th->started = 1;
            th->credited_ns = thread_cpu_ns(th);  /* the fork child's time is not the program's */
        }
        ptrace(PTRACE_CONT, tid, 0, 0);
        return;
    case PTRACE_EVENT_STOP:
        /* Under PTRACE_SEIZE the stop signal alone tells the two apart
         * (ptrace(2), "group-stop"): a group stop (SIGSTOP, ^Z) comes with
         * it, an interrupt's stop (ours, a new thread's first, the re-trap
         * at SIGCONT) with SIGTRAP. PTRACE_GETSIGINFO succeeds for both
         * (si_code PTRACE_EVENT_STOP << 8 | signal), so it cannot; testing
         * it for EINVAL resumed every group stop. An interrupt of ours that
         * met a group stop is answered by it, and takes no sample. */
        if (is_stop_signal(sig)) {
            /* Kept, as without a tracer: the thread stays stopped (and in
             * no state R, so no tick interrupts it) until SIGCONT, whose
             * re-trap is resumed below. A thread left in a ptrace stop that
             * PTRACE_LISTEN refused would never run again: resumed instead. */
            if (ptrace(PTRACE_LISTEN, tid, 0, 0) == 0 || errno == ESRCH) return;
        }
        if (interrupted) {
            uint64_t ns = now_ns();
            int took = sample_stopped(t, th);
            ptrace(PTRACE_CONT, tid, 0, 0);
            t->stopped_ns += now_ns() - ns;
            if (took) trace_unwind_and_emit(t, tid, ns, took);
            return;
        }
        if (th) th->started = 1;
        ptrace(PTRACE_CONT, tid, 0, 0);
        return;
    default:
        break;
    }
    if (event != 0) {
        ptrace(PTRACE_CONT, tid, 0, 0);
        return;
    }
    /* A signal on its way to the program: given back, untouched. */
    ptrace(PTRACE_CONT, tid, 0, (void *)(uintptr_t)sig);
}

/* Whether an interrupt of ours has not been answered yet. Counted afresh
 * each time: an exec drops threads whose answers never come. */
static int interrupts_pending(const cs_trace *t) {
    for (int i = 0; i < t->nthreads; i++)
        if (t->threads[i].interrupted) return 1;
    return 0;
}

/* Interrupts every running thread once and samples it. */
static void tick(cs_trace *t) {
    for (int i = 0; i < t->nthreads; i++) {
        trace_thread *th = &t->threads[i];
        if (!th->started || th->interrupted || look_at_thread(t, th) != 'R') continue;
        if (ptrace(PTRACE_INTERRUPT, th->tid, 0, 0) == 0) th->interrupted = 1;
    }
    while (!t->exited && interrupts_pending(t)) {
        int status;
        struct rusage ru;
        pid_t tid = wait4(-1, &status, __WALL, &ru);
        if (tid < 0) {
            if (errno == EINTR) continue;
            break;
        }
        handle(t, tid, status, &ru);
    }
}

#endif /* CS_TRACE_SUPPORTED */

int cs_trace_attach(cs_launch *l, unsigned hz) {
#if CS_TRACE_SUPPORTED
    cs_trace *t = calloc(1, sizeof *t);
    if (!t) {
        snprintf(l->error, sizeof l->error, "out of memory for the tracer");
        return -1;
    }
    t->pid = l->pid;
    t->period_ns = 1000000000u / (hz ? hz : 1000);
    if (trace_load_unwinder(t, l->error, sizeof l->error) != 0) {
        cs_trace_free(t);
        return -1;
    }
    long options = PTRACE_O_TRACECLONE | PTRACE_O_TRACEEXEC;
    if (ptrace(PTRACE_SEIZE, l->pid, 0, (void *)options) != 0) {
        snprintf(l->error, sizeof l->error, "ptrace(PTRACE_SEIZE): %s", strerror(errno));
        cs_trace_free(t);
        return -1;
    }
    thread_of(t, l->pid, 1)->started = 1;
    l->trace = t;
    return 0;
#else
    (void)hz;
    snprintf(l->error, sizeof l->error, "tracing is not built for this architecture");
    return -1;
#endif
}

int cs_trace_wait(cs_launch *l, cs_records *out, int timeout_ms, int *status, struct rusage *usage) {
#if CS_TRACE_SUPPORTED
    cs_trace *t = l->trace;
    t->out = out;
    uint64_t deadline = now_ns() + (uint64_t)timeout_ms * 1000000u;
    for (;;) {
        int st;
        struct rusage ru;
        pid_t tid;
        while (!t->exited && (tid = wait4(-1, &st, __WALL | WNOHANG, &ru)) > 0) handle(t, tid, st, &ru);
        if (t->exited) {
            *status = t->exit_status;
            *usage = t->usage;
            return 1;
        }
        uint64_t now = now_ns();
        if (t->execed && now >= t->next_tick_ns) {
            tick(t);
            uint64_t after = now_ns();
            t->next_tick_ns = t->next_tick_ns + t->period_ns > after ? t->next_tick_ns + t->period_ns : after + t->period_ns;
            continue;
        }
        if (now >= deadline) return 0;
        /* Wake for the next period, and often enough to give a signal back quickly. */
        uint64_t wake = t->execed ? t->next_tick_ns : deadline;
        if (wake > now + 100000) wake = now + 100000;
        if (wake > deadline) wake = deadline;
        struct timespec ts = {(time_t)(wake / 1000000000u), (long)(wake % 1000000000u)};
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
    }
#else
    (void)l; (void)out; (void)timeout_ms; (void)status; (void)usage;
    return -1;
#endif
}

void cs_trace_counts(const cs_launch *l, uint64_t *samples, uint64_t *unwind_failures, uint64_t *stopped_ns) {
    *samples = *unwind_failures = *stopped_ns = 0;
#if CS_TRACE_SUPPORTED
    if (!l->trace) return;
    *samples = l->trace->samples;
    *unwind_failures = l->trace->unwind_failures;
    *stopped_ns = l->trace->stopped_ns;
#endif
}

void cs_trace_free(cs_trace *t) {
#if CS_TRACE_SUPPORTED
    if (!t) return;
    for (int i = 0; i < t->nthreads; i++) {
        if (t->threads[i].stat_fd >= 0) close(t->threads[i].stat_fd);
        if (t->threads[i].sched_fd >= 0) close(t->threads[i].sched_fd);
    }
    free(t->threads);
    trace_forget_files(t);
    free(t->files);
    free(t->maps);
    cs_uw_unload(&t->unw);
    free(t);
#else
    (void)t;
#endif
}
