/*
 * The launcher's perf events (cs_launcher.h). The child is forked and waits
 * on a pipe while the parent attaches the events, so nothing of its run
 * after exec escapes them: enable_on_exec switches them on exactly at exec.
 */
#include "cs_launcher.h"
#include "spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <stdio.h>
#include <ctype.h>

/* 512 KiB per ring: at 10 kHz with 128-frame chains about 0.4 s of one CPU
 * between two drains, which run every millisecond or so. */
#define RING_DATA_PAGES 128

static long perf_open(struct perf_event_attr *attr, pid_t pid, int cpu, int group, unsigned long flags) {
    return syscall(SYS_perf_event_open, attr, pid, cpu, group, flags);
}

uint64_t cs_launch_monotonic_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t cs_launch_boottime_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_BOOTTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int cs_launch_keep_perf_warm(void) {
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_TASK_CLOCK;
    a.exclude_kernel = 1;
    a.exclude_hv = 1;
    return (int)perf_open(&a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

int cs_launch_secure_execution(void) { return getauxval(AT_SECURE) != 0; }

long cs_launch_original_environment(char *buf, size_t cap) {
    char stat[4096];
    int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = read(fd, stat, sizeof stat - 1);
    close(fd);
    if (n <= 0) return -1;
    stat[n] = 0;
    char *p = strrchr(stat, ')');
    /* Fields 50 and 51 (env_start, env_end); p is at the end of field 2. */
    for (int field = 2; p && field < 50; field++) p = strchr(p + 1, ' ');
    unsigned long long start, end;
    if (!p || sscanf(p, " %llu %llu", &start, &end) != 2 || end <= start) return -1;
    size_t size = (size_t)(end - start);
    if (buf) memcpy(buf, (const void *)(uintptr_t)start, size < cap ? size : cap);
    return (long)size;
}

int cs_launch_perf_errno(void) {
    int fd = cs_launch_keep_perf_warm();
    if (fd >= 0) {
        close(fd);
        return 0;
    }
    return errno;
}

static void base_attr(struct perf_event_attr *a, int inherit) {
    memset(a, 0, sizeof *a);
    a->size = sizeof *a;
    a->type = PERF_TYPE_SOFTWARE;
    a->disabled = 1;
    a->enable_on_exec = 1;
    a->exclude_kernel = 1;
    a->exclude_hv = 1;
    a->exclude_callchain_kernel = 1;
    a->sample_id_all = 1;
    a->use_clockid = 1;
    a->clockid = CLOCK_MONOTONIC;
    a->inherit = (unsigned)inherit;
    /* Threads, not child processes: a tool's subprocesses are not its launch. */
    a->inherit_thread = (unsigned)inherit;
    a->watermark = 1;
    a->wakeup_watermark = RING_DATA_PAGES * 4096 / 4;
}

static void close_events(cs_launch *l) {
    size_t ring_bytes = l->ring_data_bytes + (size_t)sysconf(_SC_PAGESIZE);
    for (int i = 0; i < l->ncpus; i++) {
        if (l->rings[i]) munmap(l->rings[i], ring_bytes);
        if (l->fault_fds[i] >= 0) close(l->fault_fds[i]);
        if (l->name_fds[i] >= 0) close(l->name_fds[i]);
        if (l->clock_fds[i] >= 0) close(l->clock_fds[i]);
        l->rings[i] = NULL;
        l->fault_fds[i] = l->name_fds[i] = l->clock_fds[i] = -1;
    }
    l->ncpus = 0;
}

/* Opens the events on `pid` for CPUs [0, ncpus) (cpu -1 when !per_cpu). */
static int open_events(cs_launch *l, pid_t pid, int per_cpu, int ncpus, unsigned hz, unsigned fault_period) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    l->ring_data_bytes = RING_DATA_PAGES * page;
    l->faults = fault_period > 0;
    /* Kernel-mode samples too where perf_event_paranoid (or CAP_PERFMON)
     * allows: each phase's kernel time is then counted, not inferred. The
     * first refusal drops back to user mode for every CPU. */
    l->kernel_samples = 1;
    for (int i = 0; i < ncpus; i++) {
        int cpu = per_cpu ? i : -1;
        struct perf_event_attr a;
        base_attr(&a, per_cpu);
        a.config = PERF_COUNT_SW_TASK_CLOCK;
        a.exclude_kernel = l->kernel_samples ? 0 : 1;
        a.sample_period = 1000000000u / (hz ? hz : 1000);
        a.sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CALLCHAIN;
        /* Data mappings too: a fault's address names the file it touched. */
        a.mmap = 1;
        a.mmap_data = 1;
        long fd = perf_open(&a, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
        if (fd < 0 && l->kernel_samples && (errno == EACCES || errno == EPERM)) {
            if (i > 0) {
                snprintf(l->error, sizeof l->error, "perf_event_open(task-clock, cpu %d): kernel mode refused after cpu 0", cpu);
                return -1;
            }
            l->kernel_samples = 0;
            a.exclude_kernel = 1;
            fd = perf_open(&a, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
        }
        if (fd < 0) {
            if (!l->perf_errno) l->perf_errno = errno;
            snprintf(l->error, sizeof l->error, "perf_event_open(task-clock, cpu %d): %s", cpu, strerror(errno));
            return -1;
        }
        l->clock_fds[i] = (int)fd;
        l->ncpus = i + 1;
        void *ring = mmap(NULL, l->ring_data_bytes + page, PROT_READ | PROT_WRITE, MAP_SHARED, (int)fd, 0);
        if (ring == MAP_FAILED) {
            snprintf(l->error, sizeof l->error, "mmap of the perf ring (cpu %d): %s", cpu, strerror(errno));
            return -1;
        }
        l->rings[i] = ring;
        ioctl((int)fd, PERF_EVENT_IOC_ID, &l->clock_ids[i]);
        /* Thread names, on an event of their own that counts nothing and
         * stays on when the clock is stopped (a linked app's own sampler
         * takes over at its start): a COMM record at exec and at each rename
         * (prctl(PR_SET_NAME), pthread_setname_np), a FORK record at each
         * clone, whose thread has its creator's name until it renames
         * itself. Into the clock's ring; without it threads go unnamed. */
        base_attr(&a, per_cpu);
        a.config = PERF_COUNT_SW_DUMMY;
        a.sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
        a.comm = 1;
        a.task = 1;
        long nfd = perf_open(&a, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
        if (nfd >= 0 && ioctl((int)nfd, PERF_EVENT_IOC_SET_OUTPUT, (int)fd) < 0) {
            close((int)nfd);
            nfd = -1;
        }
        l->name_fds[i] = (int)nfd;
        if (!fault_period) continue;
        /* No call chain: the faulting instruction and address are enough to
         * name code and file, and a chain per fault would cost more than the
         * fault itself. */
        base_attr(&a, per_cpu);
        a.config = PERF_COUNT_SW_PAGE_FAULTS;
        a.sample_period = fault_period;
        a.sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR;
        long ffd = perf_open(&a, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
        if (ffd < 0 || ioctl((int)ffd, PERF_EVENT_IOC_SET_OUTPUT, (int)fd) < 0) {
            if (ffd >= 0) close((int)ffd);
            l->faults = 0;
            continue;
        }
        l->fault_fds[i] = (int)ffd;
        ioctl((int)ffd, PERF_EVENT_IOC_ID, &l->fault_ids[i]);
    }
    return 0;
}

int cs_launch_start(cs_launch *l, const char *path, char *const argv[], char *const envp[],
                    char *spawn_slot, int stdout_fd, unsigned hz, unsigned fault_period, unsigned flags) {
    for (int i = 0; i < CS_LAUNCH_MAX_CPUS; i++) l->clock_fds[i] = l->fault_fds[i] = l->name_fds[i] = -1;
    l->error[0] = 0;
    l->perf_error[0] = 0;
    l->perf_errno = 0;
    l->tracing = 0;
    l->trace = NULL;
    char *digits = spawn_slot ? strchr(spawn_slot, '=') : NULL;
    int go, failed;
    pid_t pid = cs_spawn_held(path, argv, envp, digits, stdout_fd, -1, &go, &failed);
    if (pid < 0) return errno;
    l->pid = pid;
    long online = sysconf(_SC_NPROCESSORS_CONF);
    int ncpus = online > 0 && online <= CS_LAUNCH_MAX_CPUS ? (int)online : 0;
    /* Per CPU with inherit follows every thread (what perf record does); an
     * inherited per-task event cannot be mapped, so the fallback samples only
     * the thread that execs. */
    if (ncpus > 0 && open_events(l, pid, 1, ncpus, hz, fault_period) == 0) {
        l->per_cpu = 1;
        l->sampling = 1;
    } else {
        close_events(l);
        if (open_events(l, pid, 0, 1, hz, fault_period) == 0) {
            l->sampling = 1;
        } else {
            close_events(l);
            int refused = l->perf_errno == EPERM || l->perf_errno == EACCES || l->perf_errno == ENOSYS;
            if ((flags & CS_LAUNCH_TRACE_IF_REFUSED) && refused) {
                memcpy(l->perf_error, l->error, sizeof l->error);
                if (cs_trace_attach(l, hz) == 0) {
                    l->tracing = 1;
                    l->sampling = 1;
                    l->error[0] = 0;
                }
            }
        }
    }
    int e = cs_spawn_release(l, go, failed);
    if (e) cs_launch_close(l);
    return e;
}

int cs_records_reserve(cs_records *out, size_t more) {
    if (out->count + more <= out->capacity) return 0;
    size_t cap = out->capacity ? out->capacity : 1 << 20;
    while (cap < out->count + more) cap *= 2;
    uint8_t *bytes = realloc(out->bytes, cap);
    if (!bytes) return -1;
    out->bytes = bytes;
    out->capacity = cap;
    return 0;
}

long cs_launch_drain(cs_launch *l, cs_records *out) {
    long added = 0;
    for (int i = 0; i < l->ncpus; i++) {
        struct perf_event_mmap_page *meta = l->rings[i];
        if (!meta) continue;
        const uint8_t *data = (const uint8_t *)meta + meta->data_offset;
        uint64_t size = meta->data_size ? meta->data_size : l->ring_data_bytes;
        uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
        uint64_t tail = meta->data_tail;
        if (head - tail > size) return -1;
        if (cs_records_reserve(out, (size_t)(head - tail)) < 0) return -1;
        while (tail + sizeof(struct perf_event_header) <= head) {
            struct perf_event_header h;
            for (size_t k = 0; k < sizeof h; k++) ((uint8_t *)&h)[k] = data[(tail + k) % size];
            if (h.size < sizeof h || tail + h.size > head) break;
            uint64_t at = tail % size;
            uint64_t first = size - at < h.size ? size - at : h.size;
            memcpy(out->bytes + out->count, data + at, first);
            memcpy(out->bytes + out->count + first, data, h.size - first);
            out->count += h.size;
            added += h.size;
            tail += h.size;
        }
        __atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
    }
    return added;
}

void cs_launch_poll(cs_launch *l, int timeout_ms) {
    struct pollfd fds[CS_LAUNCH_MAX_CPUS];
    int n = 0;
    for (int i = 0; i < l->ncpus; i++) {
        if (l->clock_fds[i] < 0) continue;
        fds[n].fd = l->clock_fds[i];
        fds[n].events = POLLIN;
        n++;
    }
    if (n == 0) {
        struct timespec ts = {timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000000};
        nanosleep(&ts, NULL);
        return;
    }
    poll(fds, (nfds_t)n, timeout_ms);
}

void cs_launch_stop_sampling(cs_launch *l) {
    for (int i = 0; i < l->ncpus; i++)
        if (l->clock_fds[i] >= 0) ioctl(l->clock_fds[i], PERF_EVENT_IOC_DISABLE, 0);
}

void cs_launch_close(cs_launch *l) {
    cs_trace_free(l->trace);
    l->trace = NULL;
    l->tracing = 0;
    for (int i = 0; i < l->ncpus; i++) {
        if (l->clock_fds[i] >= 0) ioctl(l->clock_fds[i], PERF_EVENT_IOC_DISABLE, 0);
        if (l->fault_fds[i] >= 0) ioctl(l->fault_fds[i], PERF_EVENT_IOC_DISABLE, 0);
    }
    close_events(l);
}

void cs_records_free(cs_records *r) {
    free(r->bytes);
    r->bytes = NULL;
    r->count = r->capacity = 0;
}

int cs_file_contains(const char *path, const char *needle) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    struct stat st;
    int found = 0;
    if (fstat(fd, &st) == 0 && st.st_size > 0) {
        void *bytes = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (bytes != MAP_FAILED) {
            found = memmem(bytes, (size_t)st.st_size, needle, strlen(needle)) != NULL;
            munmap(bytes, (size_t)st.st_size);
        }
    }
    close(fd);
    return found;
}

struct ksym {
    uint64_t address;
    int perf;
};

static int ksym_order(const void *a, const void *b) {
    uint64_t x = ((const struct ksym *)a)->address, y = ((const struct ksym *)b)->address;
    return x < y ? -1 : x > y;
}

static int is_perf_name(const char *name) {
    while (*name == '_') name++;
    return strncmp(name, "perf_", 5) == 0;
}

long cs_launch_kernel_perf_ranges(uint64_t *ranges, size_t cap) {
    FILE *f = fopen("/proc/kallsyms", "re");
    if (!f) return -1;
    size_t n = 0, room = 1 << 16;
    struct ksym *syms = malloc(room * sizeof *syms);
    char line[512];
    while (syms && fgets(line, sizeof line, f)) {
        char *end;
        uint64_t address = strtoull(line, &end, 16);
        if (end == line || *end != ' ' || !isalpha((unsigned char)end[1]) || end[2] != ' ') continue;
        char type = end[1];
        if (type != 't' && type != 'T') continue;
        char *name = end + 3;
        name[strcspn(name, " \t\n")] = 0;
        if (n == room) {
            struct ksym *more = realloc(syms, 2 * room * sizeof *syms);
            if (!more) break;
            syms = more;
            room *= 2;
        }
        syms[n].address = address;
        syms[n].perf = is_perf_name(name);
        n++;
    }
    fclose(f);
    if (!syms) return -1;
    qsort(syms, n, sizeof *syms, ksym_order);
    long count = 0;
    int any_address = n > 0 && syms[n - 1].address != 0;
    for (size_t i = 0; any_address && i + 1 < n && (size_t)count < cap; i++) {
        if (!syms[i].perf || syms[i].address == 0) continue;
        size_t j = i + 1;
        while (j < n && syms[j].address == syms[i].address) j++;
        if (j == n) break;
        ranges[2 * count] = syms[i].address;
        ranges[2 * count + 1] = syms[j].address;
        count++;
    }
    free(syms);
    return any_address ? count : -1;
}
