#define _GNU_SOURCE
#include "bench_support.h"

#include <dirent.h>
#include <pthread.h>
#include <fcntl.h>
#include <stdbool.h>
#include <linux/perf_event.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t bench_run(const char *path, char *const argv[], char *const envp[], const char *marker, int64_t *line_ns) {
    *line_ns = -1;
    int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (master < 0 || grantpt(master) != 0 || unlockpt(master) != 0) return -1;
    int slave = open(ptsname(master), O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (slave < 0) { close(master); return -1; }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, slave, STDOUT_FILENO);
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
    pid_t pid;
    int64_t start = now_ns();
    int rc = posix_spawn(&pid, path, &actions, NULL, argv, envp);
    posix_spawn_file_actions_destroy(&actions);
    close(slave);
    if (rc != 0) { close(master); return -1; }
    char buf[8192];
    size_t len = 0;
    while (len < sizeof buf - 1) {
        ssize_t n = read(master, buf + len, sizeof buf - 1 - len);
        if (n <= 0) break;   // EIO once the child closed the terminal
        len += (size_t)n;
        buf[len] = 0;
        char *hit = strstr(buf, marker);
        if (hit && strchr(hit, '\n')) { *line_ns = now_ns() - start; break; }
    }
    while (read(master, buf, sizeof buf) > 0) {}
    close(master);
    int status = 0;
    waitpid(pid, &status, 0);
    int64_t reaped = now_ns() - start;
    return (WIFEXITED(status) && WEXITSTATUS(status) == 0 && *line_ns >= 0) ? reaped : -1;
}

int64_t bench_time_to_line(const char *path, char *const argv[], char *const envp[], const char *marker) {
    int64_t line = -1;
    return bench_run(path, argv, envp, marker, &line) >= 0 ? line : -1;
}

int bench_perf_event_holders(int except_pid) {
    DIR *proc = opendir("/proc");
    if (!proc) return -1;
    int holders = 0;
    struct dirent *p;
    while ((p = readdir(proc)) != NULL) {
        if (p->d_name[0] < '1' || p->d_name[0] > '9' || atoi(p->d_name) == except_pid) continue;
        char dir[64];
        snprintf(dir, sizeof dir, "/proc/%s/fd", p->d_name);
        DIR *fds = opendir(dir);
        if (!fds) continue;
        struct dirent *f;
        bool holds = false;
        while (!holds && (f = readdir(fds)) != NULL) {
            char link[320], target[64];
            snprintf(link, sizeof link, "%s/%s", dir, f->d_name);
            ssize_t n = readlink(link, target, sizeof target - 1);
            if (n <= 0) continue;
            target[n] = 0;
            holds = strcmp(target, "anon_inode:[perf_event]") == 0;
        }
        closedir(fds);
        holders += holds;
    }
    closedir(proc);
    return holders;
}

static volatile long signals_seen;

static void empty_handler(int sig, siginfo_t *si, void *uc) {
    (void)sig; (void)si; (void)uc;
    signals_seen++;
}

static int64_t thread_cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

// A fixed amount of work (a few hundred ms of CPU): a dependent chain the
// compiler cannot shorten, since each step reads the last through memory.
static int64_t fixed_loop_cpu_ns(void) {
    int64_t start = thread_cpu_ns();
    volatile uint64_t x = 1;
    for (long i = 0; i < 200000000L; i++) x = x * 6364136223846793005ull + 1442695040888963407ull;
    return thread_cpu_ns() - start;
}

// The bench's sampling clock: each thread's user-mode CPU time, disabled
// until enabled, one sample per 1/hz s.
static struct perf_event_attr task_clock_attr(int hz) {
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.type = PERF_TYPE_SOFTWARE;
    a.size = sizeof a;
    a.config = PERF_COUNT_SW_TASK_CLOCK;
    a.sample_period = 1000000000ull / (uint64_t)hz;
    a.disabled = 1;
    a.exclude_kernel = 1;
    return a;
}


double bench_signal_cost_ns(int hz, long *signals, double *loop_ms) {
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = empty_handler;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigfillset(&sa.sa_mask);
    if (sigaction(SIGPROF, &sa, &old) != 0) return -1;
    int64_t base = fixed_loop_cpu_ns();
    struct perf_event_attr a = task_clock_attr(hz);
    a.wakeup_events = 1;
    int tid = (int)syscall(SYS_gettid);
    int fd = (int)syscall(SYS_perf_event_open, &a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0) { sigaction(SIGPROF, &old, NULL); return -1; }
    struct f_owner_ex owner = {F_OWNER_TID, tid};
    void *ring = mmap(NULL, 2 * 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    fcntl(fd, F_SETFL, O_ASYNC);
    fcntl(fd, F_SETSIG, SIGPROF);
    fcntl(fd, F_SETOWN_EX, &owner);
    signals_seen = 0;
    ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
    int64_t sampled = fixed_loop_cpu_ns();
    ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
    if (ring != MAP_FAILED) munmap(ring, 2 * 4096);
    close(fd);
    sigaction(SIGPROF, &old, NULL);
    *signals = signals_seen;
    *loop_ms = (double)base / 1e6;
    return signals_seen > 0 ? (double)(sampled - base) / (double)signals_seen : -1;
}

// ---- the kernel's ring instead of a signal ----

struct drainer {
    struct perf_event_mmap_page *pg;
    volatile int stop;
    long samples;
};

// Empties the ring every 0.5 ms from another thread, as the sampler's scan
// thread does, counting the samples.
static void *drain_ring(void *arg) {
    struct drainer *d = arg;
    for (;;) {
        int last = d->stop;
        uint64_t head = __atomic_load_n(&d->pg->data_head, __ATOMIC_ACQUIRE), tail = d->pg->data_tail;
        const unsigned char *data = (const unsigned char *)d->pg + d->pg->data_offset;
        while (head - tail >= sizeof(struct perf_event_header)) {
            struct perf_event_header h;
            uint64_t at = tail % d->pg->data_size;
            if (at + sizeof h > d->pg->data_size) break;   // headers are 8-aligned: never split
            memcpy(&h, data + at, sizeof h);
            if (h.size == 0) break;
            if (h.type == PERF_RECORD_SAMPLE) d->samples++;
            tail += h.size;
        }
        __atomic_store_n(&d->pg->data_tail, tail, __ATOMIC_RELEASE);
        if (last) return NULL;
        struct timespec ts = {0, 500000};
        nanosleep(&ts, NULL);
    }
}

double bench_ring_cost_ns(int hz, int stack_bytes, long *samples, double *loop_ms) {
    int64_t base = fixed_loop_cpu_ns();
    struct perf_event_attr a = task_clock_attr(hz);
    a.exclude_callchain_kernel = 1;
    a.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CALLCHAIN;
    if (stack_bytes > 0) {
        // The sampler's registers and stack copy (CSupport/CColdstart/sampler/smp.h).
        a.sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
        a.sample_regs_user = 0xff01ffull;
        a.sample_stack_user = (uint32_t)stack_bytes;
    }
    int tid = (int)syscall(SYS_gettid);
    int fd = (int)syscall(SYS_perf_event_open, &a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0) return -1;
    size_t bytes = (1 + 64) * 4096;
    void *ring = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (ring == MAP_FAILED) { close(fd); return -1; }
    struct drainer d = {ring, 0, 0};
    pthread_t t;
    if (pthread_create(&t, NULL, drain_ring, &d) != 0) { munmap(ring, bytes); close(fd); return -1; }
    ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
    int64_t sampled = fixed_loop_cpu_ns();
    ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
    d.stop = 1;
    pthread_join(t, NULL);
    munmap(ring, bytes);
    close(fd);
    *samples = d.samples;
    *loop_ms = (double)base / 1e6;
    return d.samples > 0 ? (double)(sampled - base) / (double)d.samples : -1;
}

double bench_pingpong_ns(long rounds, int cpu) {
    int there[2], back[2];
    if (pipe(there) != 0) return -1;
    if (pipe(back) != 0) { close(there[0]); close(there[1]); return -1; }
    cpu_set_t one, old;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    sched_getaffinity(0, sizeof old, &old);
    sched_setaffinity(0, sizeof one, &one);   // the child inherits it
    pid_t child = fork();
    if (child == 0) {
        // Its copies of the parent's ends closed: the parent's close of
        // there[1] then ends its read (it hung there forever otherwise).
        close(there[1]);
        close(back[0]);
        char byte;
        while (read(there[0], &byte, 1) == 1 && write(back[1], &byte, 1) == 1) {}
        _exit(0);
    }
    double result = -1;
    if (child > 0) {
        char byte = 0;
        long done = 0;
        int64_t start = now_ns();
        for (; done < rounds; done++)
            if (write(there[1], &byte, 1) != 1 || read(back[0], &byte, 1) != 1) break;
        int64_t elapsed = now_ns() - start;
        if (done == rounds) result = (double)elapsed / (double)rounds;
    }
    close(there[1]);   // the child's read ends, and it exits
    close(there[0]); close(back[0]); close(back[1]);
    if (child > 0) waitpid(child, NULL, 0);
    sched_setaffinity(0, sizeof old, &old);
    return result;
}

double bench_open_ms(int cpu_wide, int *opened) {
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.type = PERF_TYPE_SOFTWARE;
    a.size = sizeof a;
    a.config = cpu_wide ? PERF_COUNT_SW_CPU_CLOCK : PERF_COUNT_SW_TASK_CLOCK;
    a.disabled = 1;
    a.exclude_kernel = 1;
    a.exclude_hv = 1;
    int fds[256], n = 0, cpus = cpu_wide ? (int)sysconf(_SC_NPROCESSORS_ONLN) : 1;
    if (cpus > 256) cpus = 256;
    int64_t start = now_ns();
    for (int c = 0; c < cpus; c++) {
        int fd = (int)syscall(SYS_perf_event_open, &a, cpu_wide ? -1 : 0, cpu_wide ? c : -1, -1, PERF_FLAG_FD_CLOEXEC);
        if (fd >= 0) fds[n++] = fd;
    }
    int64_t elapsed = now_ns() - start;
    for (int i = 0; i < n; i++) close(fds[i]);
    *opened = n;
    return (double)elapsed / 1e6;
}
