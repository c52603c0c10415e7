// How a launch ends, and the one owner of stopping: ready(), the exit handler
// and the abandonment signal handlers all come here; the first one stops the
// watcher, then the sampler, then writes the timeline (single writer).
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/nsfs.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stdarg.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static const int abandon_signals[] = {SIGINT, SIGTERM, SIGHUP};

/// Declares the launch over (first caller wins), stops the watcher, then the
/// sampler, and writes the timeline. Async-signal-safe; returns once the
/// timeline is written, or after a bounded wait if another thread is writing.
static void cs_end_launch(enum cs_end_reason reason, int status);

static void on_abandon_signal(int sig) {
    int saved = errno;
    struct sigaction cur;
    bool installed = sigaction(sig, NULL, &cur) == 0 && !(cur.sa_flags & SA_SIGINFO) && cur.sa_handler == on_abandon_signal;
    if (!installed) {
        // The host installed its own handler over ours and chains to "the
        // previous handler": the host decides what the signal does. Record an
        // abandoned launch if one is in progress, and do nothing else.
        if (atomic_load(&cs_g.state) == CS_RECORDING) cs_end_launch(CS_END_SIGNAL, sig);
        errno = saved;
        return;
    }
    cs_end_launch(CS_END_SIGNAL, sig);
    // Ours is the action: do the default one. Restore it and re-raise: the
    // signal is blocked while this handler runs, so it is delivered as soon as
    // the handler returns and the process ends exactly as it would have
    // without Coldstart.
    cs_restore_default(sig);
    raise(sig);
    errno = saved;
}

static void on_process_exit(int status, void *arg) {
    (void)arg;
    // The copies of this handler after the one that wrote (cs_end_arm): one
    // load each, no system call, on the host's exit.
    if (atomic_load_explicit(&cs_g.out.written, memory_order_acquire)) return;
    cs_end_launch(status == 0 ? CS_END_EXIT : CS_END_ERROR_EXIT, status);
}

// glibc's exit() is not thread-safe (exit(3): MT-Unsafe race:exit): each
// exiting thread pops the next handler off one shared list, and one that
// finds it empty goes on to _exit, which ends the process, and the writer
// with it, mid-write. So there is one handler for each of up to
// CS_EXIT_HANDLERS threads that exit at once: every one of them then comes
// here and waits for the one that writes (write_once); a later exit that
// finds the timeline written returns at once. One more thread than that
// still ends the process first (security.md, "Racing exits").
#define CS_EXIT_HANDLERS 8

void cs_end_arm(void) {
    for (int i = 0; i < CS_EXIT_HANDLERS; i++) {
        if (on_exit(on_process_exit, NULL) == 0) continue;
        if (i == 0) cs_warn("cannot register the exit handler; an exit before ready() will not be recorded", NULL);
        break;
    }

    // The init process of a pid namespace (a container's entrypoint) is
    // never sent a signal whose action is the default one: its SIGTERM does
    // nothing, and the launch goes on. A handler of ours would make it
    // deliverable, record an abandoned launch, and re-raise to no effect.
    if ((int)cs_syscall(SYS_getpid) == 1) return;
    // Only over the default action: a handler or SIG_IGN the host chose stays.
    for (size_t i = 0; i < sizeof abandon_signals / sizeof *abandon_signals; i++) {
        int sig = abandon_signals[i];
        struct sigaction old;
        if (sigaction(sig, NULL, &old) != 0 || (old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL) continue;
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_abandon_signal;
        sa.sa_flags = SA_RESTART;
        sigemptyset(&sa.sa_mask);
        cs_g.abandon.owns_signal[sig] = sigaction(sig, &sa, NULL) == 0;
    }
}

static void release_signals(void) {
    for (size_t i = 0; i < sizeof abandon_signals / sizeof *abandon_signals; i++) {
        int sig = abandon_signals[i];
        if (!cs_g.abandon.owns_signal[sig]) continue;
        struct sigaction cur;
        // Leave it alone if the host has installed its own handler since.
        if (sigaction(sig, NULL, &cur) == 0 && !(cur.sa_flags & SA_SIGINFO) && cur.sa_handler == on_abandon_signal)
            cs_restore_default(sig);
        cs_g.abandon.owns_signal[sig] = false;
    }
}

// ---- stopping and the single writer ----

// Unmaps the event log, the sample buffers and the watcher's buffers, and
// closes the timeline's directory and /proc/self/task (opened for a writer
// at exit), each only when nothing can touch it any more: no mark between
// enter() and leave(), no sampling handler, no watcher thread. Whatever is
// still in use stays (a leak, never a fault).
static void release_memory(void) {
    for (int i = 0; i < 1000 && atomic_load(&cs_g.log.busy) > 0; i++) cs_sleep_ns(50000);
    if (atomic_load(&cs_g.log.busy) == 0 && cs_g.log.events) {
        munmap(cs_g.log.events, sizeof(struct cs_event) * CS_MAX_EVENTS);
        munmap(cs_g.log.names, CS_NAME_BYTES);
        cs_g.log.events = NULL;
        cs_g.log.names = NULL;
    }
    cs_sampler_unmap();
    cs_watch_unmap();
    cs_out_close_dir();
    cs_cpu_release();
}

// Appends `s` to the NUL-terminated text in `buf` (cap bytes), cut if it must be.
static void add_text(char *buf, size_t cap, const char *s) {
    size_t n = strlen(buf), k = strnlen(s, cap - n - 1);
    memcpy(buf + n, s, k);
    buf[n + k] = 0;
}

// Why the timeline could not be written, on one line: after the program
// changed its user (a daemon dropping root), that, and whether the new user
// may create files in the timeline's directory.
static void warn_not_written(void) {
    uid_t now = geteuid();
    if (now == cs_g.proc.euid) {
        cs_warn("could not write the timeline to ", cs_g.out.dest);
        return;
    }
    char why[2 * PATH_MAX + 160] = "", from[24], to[24];
    cs_format_u64((uint64_t)cs_g.proc.euid, from);
    cs_format_u64((uint64_t)now, to);
    add_text(why, sizeof why, cs_g.out.dest);
    add_text(why, sizeof why, ": the program changed its user from uid ");
    add_text(why, sizeof why, from);
    add_text(why, sizeof why, " to ");
    add_text(why, sizeof why, to);
    // As the effective user (AT_EACCESS), without glibc's emulation.
    if (cs_syscall(SYS_faccessat2, AT_FDCWD, cs_g.out.dir, W_OK | X_OK, AT_EACCESS) != 0 && errno == EACCES) {
        add_text(why, sizeof why, ", who may not create files in ");
        add_text(why, sizeof why, cs_g.out.dir);
    }
    cs_warn("could not write the timeline to ", why);
}

// Becomes the writer if nobody is; otherwise waits (bounded) for the writer,
// unless the writer is this very thread (a signal interrupted its write).
// The watcher's segments end first, then the sampler's window closes, so the
// writer sees both finished.
static void write_once(void) {
    int me = cs_gettid();
    int expected = 0;
    if (atomic_compare_exchange_strong(&cs_g.out.writer_tid, &expected, me)) {
        // The process is ending (a kill, an exit) while the host's threads
        // still run: the writer gets a CPU of its own until it is done
        // (writecpu.c). Not after ready(): the host goes on.
        bool own_cpu = cs_g.launch.end_reason != CS_END_READY;
        if (own_cpu) cs_cpu_isolate();
        cs_watch_stop();
        cs_sampler_stop();
        int rc = cs_write_timeline();
        if (rc == CS_WRITE_TOO_BIG)
            cs_warn(cs_g.out.plan.fsize_bound ? "timeline over the file size limit (RLIMIT_FSIZE) even without its sampling and watch data; not written: "
                                              : "timeline over COLDSTART_MAX_BYTES even without its sampling and watch data; not written: ",
                    cs_g.out.dest);
        else if (rc != 0)
            warn_not_written();
        atomic_store(&cs_g.out.written, 1);
        cs_futex_wake(&cs_g.out.written);
        cs_sampler_release();
        if (own_cpu) cs_cpu_restore();
        // After ready() the process goes on: give back what only the launch
        // needed. (At exit or on a signal the process is ending anyway.)
        if (cs_g.launch.end_reason == CS_END_READY) release_memory();
        return;
    }
    if (expected == me) return;
    // Woken the moment the writer is done (an exit right after ready() waits
    // for the writer thread), 5 s at most.
    uint64_t deadline = cs_monotonic_ns() + 5000000000ull;
    while (!atomic_load(&cs_g.out.written) && cs_monotonic_ns() < deadline) cs_futex_wait(&cs_g.out.written, 0, deadline);
}

// The end's fields are set: a thread that lost the race to end the launch
// (another exit, a signal) may write the timeline now.
static void publish_end(void) {
    atomic_store_explicit(&cs_g.launch.end_known, 1, memory_order_release);
    cs_futex_wake(&cs_g.launch.end_known);
}

// Ends the launch as `reason` if it is in progress (the first caller wins):
// its end's time, resource use and reason, published. *found: the state
// found.
static bool claim_end(enum cs_end_reason reason, int status, int *found) {
    *found = CS_RECORDING;
    if (!atomic_compare_exchange_strong(&cs_g.state, found, CS_ENDED)) return false;
    cs_g.launch.t_end = cs_monotonic_ns();
    cs_rusage_now(&cs_g.launch.ru_end);
    cs_g.launch.end_reason = reason;
    cs_g.launch.end_status = status;
    publish_end();
    return true;
}

static void cs_end_launch(enum cs_end_reason reason, int status) {
    if ((int)cs_syscall(SYS_getpid) != cs_g.proc.pid) return;   // a forked child
    int found;
    if (!claim_end(reason, status, &found)) {
        if (found == CS_OFF) return;
        // The thread that ended it sets the end's fields within microseconds;
        // 10 ms at most (it may be this very thread, under a signal handler).
        uint64_t deadline = cs_monotonic_ns() + 10000000ull;
        while (!atomic_load_explicit(&cs_g.launch.end_known, memory_order_acquire) && cs_monotonic_ns() < deadline)
            cs_futex_wait(&cs_g.launch.end_known, 0, deadline);
    }
    write_once();
}

static void *ready_writer(void *arg) {
    (void)arg;
    cs_own_unplace();
    if (cs_g.cfg.extend_ns) cs_sleep_ns(cs_g.cfg.extend_ns);
    write_once();
    return NULL;
}

void cs_ready(void) {
    // A forked child (a daemon's) has the parent's state but is not the launch.
    if ((int)cs_syscall(SYS_getpid) != cs_g.proc.pid) return;
    int expected = CS_RECORDING;
    if (!atomic_compare_exchange_strong(&cs_g.state, &expected, CS_ENDED)) return;
    cs_g.launch.t_ready = cs_g.launch.t_end = cs_monotonic_ns();
    cs_g.launch.ready_tid = cs_gettid();
    cs_rusage_now(&cs_g.launch.ru_end);
    cs_g.launch.end_reason = CS_END_READY;
    publish_end();
    // Samples end at ready() unless the launch is extended; the watcher (whose
    // stop waits for its thread) is stopped by the writer, off this thread.
    if (cs_g.cfg.extend_ns == 0) cs_sampler_stop();
    release_signals();
    // Serialising can take milliseconds with many samples: do it off the
    // caller's thread. The exit handler finishes it if the process ends first.
    if (cs_start_thread(ready_writer, CS_WRITER_STACK) != 0 && cs_g.cfg.extend_ns == 0) write_once();
    // (Without the thread and with an extension, the exit handler writes it.)
}

// ---- stepping aside: calls after which Coldstart cannot go on ----
//
// Some calls a host makes change the process under Coldstart's feet:
// - unshare(CLONE_NEWUSER) (and CLONE_THREAD, CLONE_SIGHAND, CLONE_VM), and
//   setns into a user or mount namespace, fail with EINVAL in a process of
//   several threads (a mount namespace: whose filesystem state is shared):
//   Coldstart's threads, running from before main, made a sandboxing host's
//   unshare fail (exit 8 instead of 0);
// - a seccomp filter (or strict mode) kills the calls it does not allow:
//   with SECCOMP_FILTER_FLAG_TSYNC Coldstart's threads get it too, and their
//   next /proc read or perf ioctl killed the whole process (SIGSYS); on the
//   calling thread alone, Coldstart's writer would meet it at the exit.
// The host's choice wins: Coldstart ends the launch there (end
// "stepped-aside", the timeline written with what it has), says so on one
// line, lets its threads end, and then makes the call. These definitions
// take the place of the C library's unshare, setns, prctl and syscall for
// the executable's own calls (its references bind to them when it links
// Coldstart), and for a shared library's where the executable exports them
// (as the linker does for a symbol a library it links refers to: libseccomp
// calls syscall). A shared library's call that binds to the C library's
// reaches the kernel directly (EINVAL, or SIGSYS, as before).

// The label each call gets in the timeline (at most 31 bytes: cs_plan.label).
#define CS_ASIDE_LABEL_MAX 31
_Static_assert(sizeof "unshare(CLONE_NEWUSER)" - 1 <= CS_ASIDE_LABEL_MAX, "the longest label fits");

// Whether Coldstart has anything running: a launch in progress, or threads
// (the writer's, after ready()).
static bool coldstart_running(void) {
    return atomic_load(&cs_g.state) == CS_RECORDING || cs_own_running(cs_gettid(), NULL) != 0;
}

// Which call system call `nr` with these arguments is, if Coldstart must step
// aside before it; else NULL.
static const char *aside_label(long nr, long a0, long a1, long a2) {
    if (nr == SYS_unshare) {
        return a0 & CLONE_NEWUSER ? "unshare(CLONE_NEWUSER)"
            : a0 & CLONE_THREAD ? "unshare(CLONE_THREAD)"
            : a0 & CLONE_SIGHAND ? "unshare(CLONE_SIGHAND)"
            : a0 & CLONE_VM ? "unshare(CLONE_VM)" : NULL;
    }
    if (nr == SYS_setns) {
        // 0: whatever namespace the descriptor is (a pidfd takes flags
        // instead); asked only while Coldstart runs.
        long type = a1 != 0 ? a1 : coldstart_running() ? cs_raw_syscall(SYS_ioctl, a0, NS_GET_NSTYPE, 0, 0, 0) : 0;
        return type > 0 && (type & CLONE_NEWUSER) ? "setns(CLONE_NEWUSER)"
            : type > 0 && (type & CLONE_NEWNS) ? "setns(CLONE_NEWNS)" : NULL;
    }
    // A filter of NULL is libseccomp's probe for the call (EFAULT).
    if (nr == SYS_seccomp)
        return a0 == SECCOMP_SET_MODE_STRICT ? "seccomp(STRICT)"
            : a0 == SECCOMP_SET_MODE_FILTER && a2 != 0 ? "seccomp(FILTER)" : NULL;
    if (nr == SYS_prctl && a0 == PR_SET_SECCOMP)
        return a1 == SECCOMP_MODE_STRICT ? "prctl(SECCOMP_MODE_STRICT)"
            : a1 == SECCOMP_MODE_FILTER && a2 != 0 ? "prctl(SECCOMP_MODE_FILTER)" : NULL;
    return NULL;
}

static void step_aside(const char *call) {
    if ((int)cs_raw_syscall(SYS_getpid, 0, 0, 0, 0, 0) != cs_g.proc.pid) return;   // a forked child: profiling is off there
    // Read only with CS_END_ASIDE, which claim_end publishes after it.
    cs_g.launch.aside_for = call;
    int expected;
    if (claim_end(CS_END_ASIDE, 0, &expected)) {
        release_signals();
        char why[160] = "the program called ";
        add_text(why, sizeof why, call);
        add_text(why, sizeof why, ", after which Coldstart cannot go on: profiling stopped there; timeline: ");
        cs_warn(why, cs_g.out.dest);
    }
    // The writer stops the sampler's and the watcher's threads (after
    // ready() its thread is writing already: wait for it).
    if (expected != CS_OFF) write_once();
    // They end once stopped: 1 s at most (a machine too busy to run them).
    uint64_t deadline = cs_monotonic_ns() + 1000000000ull;
    while (cs_own_running(cs_gettid(), NULL) != 0 && cs_monotonic_ns() < deadline) cs_sleep_ns(100000);
}

// The call, as the C library's syscall makes it (-1 and errno on failure),
// after stepping aside if it needs to. A thread whose body has returned
// leaves the kernel's thread group a few microseconds later, and until then
// a call that needs one thread still says EINVAL: retried, 100 ms at most.
static long call(long nr, long a0, long a1, long a2, long a3, long a4, long a5) {
    const char *label = aside_label(nr, a0, a1, a2);
    bool stepped = label && coldstart_running();
    if (stepped) step_aside(label);
    uint64_t deadline = stepped ? cs_monotonic_ns() + 100000000ull : 0;
    for (;;) {
        long rc = cs_raw_syscall6(nr, a0, a1, a2, a3, a4, a5);
        if (rc < 0 && rc > -4096) {
            if (rc == -EINVAL && stepped && cs_monotonic_ns() < deadline) {
                cs_sleep_ns(100000);
                continue;
            }
            errno = (int)-rc;
            return -1;
        }
        return rc;
    }
}

int unshare(int flags) { return (int)call(SYS_unshare, flags, 0, 0, 0, 0, 0); }

int setns(int fd, int nstype) { return (int)call(SYS_setns, fd, nstype, 0, 0, 0, 0); }

int prctl(int option, ...) {
    va_list ap;
    va_start(ap, option);
    // As the C library's: four more arguments, whatever the option uses.
    long a1 = va_arg(ap, long), a2 = va_arg(ap, long), a3 = va_arg(ap, long), a4 = va_arg(ap, long);
    va_end(ap);
    return (int)call(SYS_prctl, option, a1, a2, a3, a4, 0);
}

long syscall(long nr, ...) {
    va_list ap;
    va_start(ap, nr);
    // As the C library's: six arguments, whatever the call uses.
    long a0 = va_arg(ap, long), a1 = va_arg(ap, long), a2 = va_arg(ap, long);
    long a3 = va_arg(ap, long), a4 = va_arg(ap, long), a5 = va_arg(ap, long);
    va_end(ap);
    return call(nr, a0, a1, a2, a3, a4, a5);
}
