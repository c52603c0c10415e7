// The process start: from COLDSTART_SPAWN_NS when the launcher set it; else
// estimated in .preinit_array from what the kernel accounts for the main
// thread since it was created (its CPU time and run-queue wait), bounded by
// /proc/self/stat's starttime (in clock ticks). docs/timeline-format.md.
// And what the kernel calls a thread of this process.
#include "internal.h"

#include <fcntl.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

// What the trusted estimate is stated to be good to. Measured against a
// launcher's stamp taken before fork: 0.2–0.3 ms late (the fork itself, before
// the thread exists); the rest is the accounting's own granularity.
#define CS_ESTIMATE_PRECISION_NS 1000000ull

uint64_t cs_ticks_to_ns(uint64_t ticks, uint64_t ticks_per_second) {
    if (ticks_per_second == 0) return 0;
    // Split to avoid overflow: whole seconds, then the remainder.
    return ticks / ticks_per_second * 1000000000ull
        + ticks % ticks_per_second * 1000000000ull / ticks_per_second;
}

uint64_t cs_boottime_to_monotonic(uint64_t boottime_ns, uint64_t boot_minus_mono_ns) {
    return boottime_ns > boot_minus_mono_ns ? boottime_ns - boot_minus_mono_ns : 0;
}

bool cs_start_from_estimate(uint64_t tick_ns, uint64_t tick_len_ns, uint64_t estimate_ns,
                            uint64_t voluntary_switches, uint64_t *start_ns, uint64_t *precision_ns) {
    uint64_t window_end = tick_ns + (tick_len_ns ? tick_len_ns - 1 : 0);
    if (voluntary_switches == 0 && estimate_ns != 0) {
        // Nothing but running and waiting to run since the thread was created:
        // the estimate misses no time. The tick still bounds it.
        *start_ns = estimate_ns < tick_ns ? tick_ns : estimate_ns > window_end ? window_end : estimate_ns;
        *precision_ns = CS_ESTIMATE_PRECISION_NS < tick_len_ns ? CS_ESTIMATE_PRECISION_NS : tick_len_ns;
        return true;
    }
    // The thread slept (a cold disk read by the loader): the time asleep is in
    // neither figure, so the estimate is only an upper bound of the start.
    // The start is the tick; the estimate narrows how early that may be.
    *start_ns = tick_ns;
    *precision_ns = estimate_ns > tick_ns && estimate_ns <= window_end ? estimate_ns - tick_ns : tick_len_ns;
    return false;
}

void cs_estimate_start(void) {
    // Read the thread's accounting first and the clock last: the estimate is
    // then late by the few microseconds between, never early.
    struct rusage ru;
    if (cs_syscall(SYS_getrusage, RUSAGE_THREAD, &ru) != 0) return;
    char buf[128];
    // In .preinit_array, on the only thread, before any host code: no one
    // can take the number, so no check (cs_read_small_file's costs ~3 µs).
    int fd = open("/proc/self/schedstat", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    ssize_t n = read(fd, buf, sizeof buf);
    close(fd);
    uint64_t run_ns, wait_ns, slices;
    if (n <= 0 || cs_parse_schedstat(buf, (size_t)n, &run_ns, &wait_ns, &slices) != 0) return;
    // Field 1 of schedstat lags for the running thread; the CPU clock does not.
    uint64_t cpu_ns = cs_clock_ns(CLOCK_THREAD_CPUTIME_ID);
    uint64_t now = cs_clock_ns(CLOCK_MONOTONIC);
    if (cpu_ns == 0 || now <= cpu_ns + wait_ns) return;
    cs_g.launch.start_estimate = now - cpu_ns - wait_ns;
    cs_g.launch.start_estimate_nvcsw = (uint64_t)ru.ru_nvcsw;
}

// /proc/self/stat's starttime as CLOCK_MONOTONIC: the tick it started in.
static int tick_start(uint64_t offset, uint64_t *tick_ns, uint64_t *tick_len_ns) {
    char buf[1024];
    ssize_t n = cs_read_small_file("/proc/self/stat", buf, sizeof buf);
    uint64_t ticks;
    if (n <= 0 || cs_parse_proc_stat_starttime(buf, (size_t)n, &ticks) != 0) return -1;
    uint64_t hz = cs_g.proc.ticks_per_second ? cs_g.proc.ticks_per_second : 100;
    *tick_ns = cs_boottime_to_monotonic(cs_ticks_to_ns(ticks, hz), offset);
    *tick_len_ns = 1000000000ull / hz;
    return 0;
}

int cs_process_start(struct cs_start *start, struct cs_start *without_launcher, uint64_t *boot_minus_mono_ns) {
    // Bracket the BOOTTIME read with MONOTONIC reads so the offset is good to
    // about a microsecond even if the thread is preempted between the calls.
    uint64_t m0 = cs_clock_ns(CLOCK_MONOTONIC);
    uint64_t b = cs_clock_ns(CLOCK_BOOTTIME);
    uint64_t m1 = cs_clock_ns(CLOCK_MONOTONIC);
    uint64_t mono = m0 + (m1 - m0) / 2;
    uint64_t offset = b > mono ? b - mono : 0;
    *boot_minus_mono_ns = offset;

    struct cs_start own = {0, 0, NULL};
    uint64_t tick_ns, tick_len_ns;
    if (tick_start(offset, &tick_ns, &tick_len_ns) == 0) {
        own.ns = tick_ns;
        own.precision_ns = tick_len_ns;
        own.source = "proc-stat";
        if (cs_g.launch.start_estimate != 0
            && cs_start_from_estimate(tick_ns, tick_len_ns, cs_g.launch.start_estimate,
                                      cs_g.launch.start_estimate_nvcsw, &own.ns, &own.precision_ns))
            own.source = "thread-cpu";
    }
    *without_launcher = (struct cs_start){0, 0, NULL};
    if (cs_g.cfg.spawn_boottime_ns != 0) {
        *start = (struct cs_start){cs_boottime_to_monotonic(cs_g.cfg.spawn_boottime_ns, offset), 0, "spawn-env"};
        *without_launcher = own;
        return 0;
    }
    *start = own;
    return own.source ? 0 : -1;
}

// ---- a /proc of another pid namespace (sys.h, cs_proc_foreign) ----

// The ids /proc/self/task lists were opened as perf events and moved with
// sched_setaffinity in this namespace, where they name other processes or
// none (issue 35 item 8: another process's samples under a host thread's
// name). Only ids this process has from the kernel itself (gettid) are
// safe: the main thread's clock; no scan, no watch. Said once.
static void mark_foreign(bool sampling) {
    if (!atomic_exchange(&cs_g.proc.proc_foreign, true))
        cs_warn(sampling ? "/proc shows another pid namespace (unshare -p without --mount-proc): sampling the main thread only, no off-CPU watch"
                         : "/proc shows another pid namespace (unshare -p without --mount-proc): no off-CPU watch", NULL);
}

bool cs_proc_note_ns(int pid, bool sampling) {
    char buf[32];
    uint64_t v;
    ssize_t n = readlink("/proc/self", buf, sizeof buf);
    if (n > 0 && n < (ssize_t)sizeof buf && cs_scan_dec(buf, buf + n, &v) == buf + n && v != (uint64_t)pid)
        mark_foreign(sampling);
    return cs_proc_foreign();
}

void cs_proc_check_levels(bool sampling) {
    if (atomic_exchange(&cs_g.proc.ns_checked, true)) return;
    char buf[4096];
    ssize_t n = cs_read_small_file("/proc/thread-self/status", buf, sizeof buf);
    if (n > 0 && cs_status_ns_levels(buf, (size_t)n) > 1) mark_foreign(sampling);
}

// ---- a thread's kernel name ----

void cs_thread_name(int tid, bool mine, char *out, size_t cap) {
    // The writer's own (usually the main thread's, at exit) without a walk
    // through /proc: ~13 µs of the exit.
    // The kernel keeps 15 bytes of a longer name, wherever a character ends.
    if (mine && cap >= 16 && cs_syscall(SYS_prctl, PR_GET_NAME, out, 0, 0, 0) == 0 && out[0]) {
        out[15] = 0;
        out[cs_utf8_cut(out, strlen(out))] = 0;
        return;
    }
    // With /proc another pid namespace's, /proc/self/task/<tid> is some
    // other thread of ours or none (sys.h, cs_proc_foreign): the main
    // thread's name is its process's, /proc/self/comm; any other is
    // left unread.
    char path[64] = "/proc/self/task/";
    bool foreign = cs_proc_foreign();
    if (foreign) strcpy(path, "/proc/self/comm");
    else {
        cs_format_u64((uint64_t)tid, path + strlen(path));
        strcat(path, "/comm");
    }
    out[0] = 0;
    ssize_t n = foreign && tid != cs_g.proc.pid ? 0 : cs_read_small_file(path, out, cap - 1);
    if (n > 0) {
        out[n] = 0;
        if (out[n - 1] == '\n') out[n - 1] = 0;
        if (strlen(out) == 15) out[cs_utf8_cut(out, 15)] = 0;
    }
    if (out[0] == 0) {
        strcpy(out, "thread ");
        cs_format_u64((uint64_t)tid, out + 7);
    }
}
