// The off-CPU watcher: why threads were not running, without signalling them.
//
// A thread of ours wakes at the sampling rate and, for every thread of the
// process, re-reads (pread on files kept open) /proc/self/task/<tid>/schedstat
// — CPU time and run-queue wait, exact — and, when the thread has run or is
// runnable, its `syscall` file: "running", or the syscall it is blocked in
// with arguments, user stack pointer and program counter (the kernel fills it
// in only for a thread that is off the CPU, and never interrupts it). `stat`
// is read only when the observation changes (state letter, fault counts).
// Observations are run-length encoded into segments (watch.h). Format of what
// the writer makes of them: docs/timeline-format.md, "Off-CPU watch".
#include "internal.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

const char *const cs_watch_cause_names[CS_CAUSE_COUNT] = {
    [CS_CAUSE_RUNNING] = "running",       [CS_CAUSE_FILE_READ] = "file-read",
    [CS_CAUSE_FILE_WRITE] = "file-write", [CS_CAUSE_FILE_SYSTEM] = "file-system",
    [CS_CAUSE_LOCK] = "lock",             [CS_CAUSE_EVENTS] = "events",
    [CS_CAUSE_NETWORK] = "network",       [CS_CAUSE_PIPE] = "pipe",
    [CS_CAUSE_SLEEP] = "sleep",           [CS_CAUSE_PAGE_FAULT] = "page-fault",
    [CS_CAUSE_CHILD] = "child",           [CS_CAUSE_MEMORY] = "memory",
    [CS_CAUSE_STOPPED] = "stopped",       [CS_CAUSE_OTHER] = "other",
};

// ---- syscalls (x86_64) ----

// Which argument names what the call waits on.
enum arg_kind { ARG_NONE, ARG_FD0, ARG_PATH0, ARG_PATH1 };

struct syscall_info {
    int16_t nr;
    uint8_t cause;      // for fd calls: the cause on a regular file
    uint8_t arg;        // enum arg_kind
    const char *name;
};

// The calls a thread is commonly seen blocked in; the rest are "other" with
// their number. Sorted by number (binary search).
static const struct syscall_info syscalls[] = {
    {0, CS_CAUSE_FILE_READ, ARG_FD0, "read"},
    {1, CS_CAUSE_FILE_WRITE, ARG_FD0, "write"},
    {2, CS_CAUSE_FILE_SYSTEM, ARG_PATH0, "open"},
    {3, CS_CAUSE_FILE_SYSTEM, ARG_FD0, "close"},
    {4, CS_CAUSE_FILE_SYSTEM, ARG_PATH0, "stat"},
    {5, CS_CAUSE_FILE_SYSTEM, ARG_FD0, "fstat"},
    {6, CS_CAUSE_FILE_SYSTEM, ARG_PATH0, "lstat"},
    {7, CS_CAUSE_EVENTS, ARG_NONE, "poll"},
    {9, CS_CAUSE_MEMORY, ARG_NONE, "mmap"},
    {10, CS_CAUSE_MEMORY, ARG_NONE, "mprotect"},
    {11, CS_CAUSE_MEMORY, ARG_NONE, "munmap"},
    {12, CS_CAUSE_MEMORY, ARG_NONE, "brk"},
    {16, CS_CAUSE_OTHER, ARG_FD0, "ioctl"},
    {17, CS_CAUSE_FILE_READ, ARG_FD0, "pread64"},
    {18, CS_CAUSE_FILE_WRITE, ARG_FD0, "pwrite64"},
    {19, CS_CAUSE_FILE_READ, ARG_FD0, "readv"},
    {20, CS_CAUSE_FILE_WRITE, ARG_FD0, "writev"},
    {21, CS_CAUSE_FILE_SYSTEM, ARG_PATH0, "access"},
    {23, CS_CAUSE_EVENTS, ARG_NONE, "select"},
    {25, CS_CAUSE_MEMORY, ARG_NONE, "mremap"},
    {26, CS_CAUSE_FILE_SYSTEM, ARG_NONE, "msync"},
    {28, CS_CAUSE_MEMORY, ARG_NONE, "madvise"},
    {34, CS_CAUSE_SLEEP, ARG_NONE, "pause"},
    {35, CS_CAUSE_SLEEP, ARG_NONE, "nanosleep"},
    {40, CS_CAUSE_FILE_WRITE, ARG_FD0, "sendfile"},
    {42, CS_CAUSE_NETWORK, ARG_FD0, "connect"},
    {43, CS_CAUSE_NETWORK, ARG_FD0, "accept"},
    {44, CS_CAUSE_NETWORK, ARG_FD0, "sendto"},
    {45, CS_CAUSE_NETWORK, ARG_FD0, "recvfrom"},
    {46, CS_CAUSE_NETWORK, ARG_FD0, "sendmsg"},
    {47, CS_CAUSE_NETWORK, ARG_FD0, "recvmsg"},
    {48, CS_CAUSE_NETWORK, ARG_FD0, "shutdown"},
    {59, CS_CAUSE_FILE_SYSTEM, ARG_PATH0, "execve"},
    {61, CS_CAUSE_CHILD, ARG_NONE, "wait4"},
    {72, CS_CAUSE_LOCK, ARG_FD0, "fcntl"},
    {73, CS_CAUSE_LOCK, ARG_FD0, "flock"},
    {74, CS_CAUSE_FILE_SYSTEM, ARG_FD0, "fsync"},
    {75, CS_CAUSE_FILE_SYSTEM, ARG_FD0, "fdatasync"},
    {76, CS_CAUSE_FILE_SYSTEM, ARG_PATH0, "truncate"},
    {77, CS_CAUSE_FILE_SYSTEM, ARG_FD0, "ftruncate"},
    {78, CS_CAUSE_FILE_SYSTEM, ARG_FD0, "getdents"},
    {80, CS_CAUSE_FILE_SYSTEM, ARG_PATH0, "chdir"},
    {82, CS_CAUSE_FILE_SYSTEM, ARG_PATH0, "rename"},
    {83, CS_CAUSE_FILE_SYSTEM, ARG_PATH0, "mkdir"},
    {84, CS_CAUSE_FILE_SYSTEM, ARG_PATH0, "rmdir"},
    {85, CS_CAUSE_FILE_SYSTEM, ARG_PATH0, "creat"},
    {87, CS_CAUSE_FILE_SYSTEM, ARG_PATH0, "unlink"},
    {89, CS_CAUSE_FILE_SYSTEM, ARG_PATH0, "readlink"},
    {130, CS_CAUSE_SLEEP, ARG_NONE, "rt_sigsuspend"},
    {137, CS_CAUSE_FILE_SYSTEM, ARG_PATH0, "statfs"},
    {162, CS_CAUSE_FILE_SYSTEM, ARG_NONE, "sync"},
    {187, CS_CAUSE_FILE_READ, ARG_FD0, "readahead"},
    {202, CS_CAUSE_LOCK, ARG_NONE, "futex"},
    {208, CS_CAUSE_EVENTS, ARG_NONE, "io_getevents"},
    {217, CS_CAUSE_FILE_SYSTEM, ARG_FD0, "getdents64"},
    {230, CS_CAUSE_SLEEP, ARG_NONE, "clock_nanosleep"},
    {232, CS_CAUSE_EVENTS, ARG_NONE, "epoll_wait"},
    {247, CS_CAUSE_CHILD, ARG_NONE, "waitid"},
    {257, CS_CAUSE_FILE_SYSTEM, ARG_PATH1, "openat"},
    {258, CS_CAUSE_FILE_SYSTEM, ARG_PATH1, "mkdirat"},
    {262, CS_CAUSE_FILE_SYSTEM, ARG_PATH1, "newfstatat"},
    {263, CS_CAUSE_FILE_SYSTEM, ARG_PATH1, "unlinkat"},
    {267, CS_CAUSE_FILE_SYSTEM, ARG_PATH1, "readlinkat"},
    {269, CS_CAUSE_FILE_SYSTEM, ARG_PATH1, "faccessat"},
    {270, CS_CAUSE_EVENTS, ARG_NONE, "pselect6"},
    {271, CS_CAUSE_EVENTS, ARG_NONE, "ppoll"},
    {275, CS_CAUSE_FILE_READ, ARG_FD0, "splice"},
    {277, CS_CAUSE_FILE_SYSTEM, ARG_FD0, "sync_file_range"},
    {281, CS_CAUSE_EVENTS, ARG_NONE, "epoll_pwait"},
    {285, CS_CAUSE_FILE_WRITE, ARG_FD0, "fallocate"},
    {288, CS_CAUSE_NETWORK, ARG_FD0, "accept4"},
    {295, CS_CAUSE_FILE_READ, ARG_FD0, "preadv"},
    {296, CS_CAUSE_FILE_WRITE, ARG_FD0, "pwritev"},
    {299, CS_CAUSE_NETWORK, ARG_FD0, "recvmmsg"},
    {306, CS_CAUSE_FILE_SYSTEM, ARG_FD0, "syncfs"},
    {307, CS_CAUSE_NETWORK, ARG_FD0, "sendmmsg"},
    {316, CS_CAUSE_FILE_SYSTEM, ARG_PATH1, "renameat2"},
    {326, CS_CAUSE_FILE_WRITE, ARG_FD0, "copy_file_range"},
    {327, CS_CAUSE_FILE_READ, ARG_FD0, "preadv2"},
    {328, CS_CAUSE_FILE_WRITE, ARG_FD0, "pwritev2"},
    {332, CS_CAUSE_FILE_SYSTEM, ARG_PATH1, "statx"},
    {426, CS_CAUSE_EVENTS, ARG_NONE, "io_uring_enter"},
    {437, CS_CAUSE_FILE_SYSTEM, ARG_PATH1, "openat2"},
    {439, CS_CAUSE_FILE_SYSTEM, ARG_PATH1, "faccessat2"},
    {441, CS_CAUSE_EVENTS, ARG_NONE, "epoll_pwait2"},
    {449, CS_CAUSE_LOCK, ARG_NONE, "futex_waitv"},
};

// Binary search of the table. Async-signal-safe.
static const struct syscall_info *syscall_info(int nr) {
    size_t lo = 0, hi = sizeof syscalls / sizeof *syscalls;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (syscalls[mid].nr == nr) return &syscalls[mid];
        if (syscalls[mid].nr < nr) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

const char *cs_watch_syscall_name(int nr) {
    const struct syscall_info *info = syscall_info(nr);
    return info ? info->name : NULL;
}

// ---- parsing /proc (pure; exposed in coldstart.h for tests) ----

static bool parse_hex(const char **p, const char *end, uint64_t *out) {
    const char *s = *p;
    while (s < end && *s == ' ') s++;
    if (end - s < 3 || s[0] != '0' || s[1] != 'x') return false;
    s += 2;
    uint64_t v = 0;
    const char *digits = s;
    for (; s < end; s++) {
        int d;
        if (*s >= '0' && *s <= '9') d = *s - '0';
        else if (*s >= 'a' && *s <= 'f') d = *s - 'a' + 10;
        else break;
        if (s - digits >= 16) return false;
        v = v << 4 | (uint64_t)d;
    }
    if (s == digits) return false;
    *out = v;
    *p = s;
    return true;
}

static bool parse_dec(const char **p, const char *end, uint64_t *out) {
    const char *s = *p;
    while (s < end && *s == ' ') s++;
    uint64_t v = 0;
    const char *digits = s;
    for (; s < end && *s >= '0' && *s <= '9'; s++) {
        if (v > (UINT64_MAX - 9) / 10) return false;
        v = v * 10 + (uint64_t)(*s - '0');
    }
    if (s == digits) return false;
    *out = v;
    *p = s;
    return true;
}

int cs_parse_task_syscall(const char *buf, size_t len, struct cs_task_syscall *out) {
    const char *p = buf, *end = buf + len;
    memset(out, 0, sizeof *out);
    if (len >= 7 && memcmp(buf, "running", 7) == 0) {
        out->running = true;
        out->nr = CS_NR_RUNNING;
        return 0;
    }
    bool negative = len > 0 && buf[0] == '-';
    if (negative) p++;
    uint64_t nr;
    if (!parse_dec(&p, end, &nr) || nr > 1023) return -1;
    out->nr = negative ? -(int64_t)nr : (int64_t)nr;
    if (negative) {
        // "-1 sp pc": blocked outside a syscall (a page fault, most often).
        if (out->nr != -1) return -1;
    } else {
        for (int i = 0; i < 6; i++)
            if (!parse_hex(&p, end, &out->args[i])) return -1;
    }
    if (!parse_hex(&p, end, &out->sp) || !parse_hex(&p, end, &out->pc)) return -1;
    return 0;
}

int cs_parse_schedstat(const char *buf, size_t len, uint64_t *run_ns, uint64_t *wait_ns, uint64_t *slices) {
    const char *p = buf, *end = buf + len;
    return parse_dec(&p, end, run_ns) && parse_dec(&p, end, wait_ns) && parse_dec(&p, end, slices) ? 0 : -1;
}

int cs_parse_task_stat(const char *buf, size_t len, char *state, uint64_t *minflt, uint64_t *majflt) {
    // Fields count from the last ')': the command name may hold anything.
    size_t close = len;
    for (size_t i = len; i > 0; i--)
        if (buf[i - 1] == ')') { close = i - 1; break; }
    if (close == len) return -1;
    const char *p = buf + close + 1, *end = buf + len;
    while (p < end && *p == ' ') p++;
    if (p >= end || *p < 'A' || *p > 'z') return -1;
    *state = *p++;
    // Fields 4…9 (ppid pgrp session tty_nr tpgid flags) may be negative and
    // are skipped; then minflt (10), cminflt (11), majflt (12).
    for (int field = 4; field <= 9; field++) {
        while (p < end && *p == ' ') p++;
        const char *token = p;
        while (p < end && *p != ' ' && *p != '\n') p++;
        if (p == token) return -1;
    }
    uint64_t cminflt;
    return parse_dec(&p, end, minflt) && parse_dec(&p, end, &cminflt) && parse_dec(&p, end, majflt) ? 0 : -1;
}

// ---- helpers of the watcher thread ----

static uint64_t mono_ns(void) { return cs_monotonic_ns(); }

static uint64_t thread_cpu_ns(void) {
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return 0;
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

// The CPU-time clock of another thread of this process (glibc's
// MAKE_THREAD_CPUCLOCK). Unlike schedstat's first field, which lags by up to a
// scheduler tick for a thread that is on a CPU, reading it brings the
// thread's runtime up to date, so boundaries between segments stay exact.
static bool thread_cpu_of(int tid, uint64_t *ns) {
    clockid_t clock = (clockid_t)((~(unsigned)tid << 3) | 4u /* per thread */ | 2u /* sched */);
    struct timespec ts;
    if (clock_gettime(clock, &ts) != 0) return false;
    *ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    return true;
}

static ssize_t pread_all(int fd, char *buf, size_t cap) {
    ssize_t n;
    do n = pread(fd, buf, cap - 1, 0); while (n < 0 && errno == EINTR);
    if (n >= 0) buf[n] = 0;
    return n;
}

static uint64_t inode_of(int fd) {
    struct stat st;
    return fd >= 0 && fstat(fd, &st) == 0 ? (uint64_t)st.st_ino : 0;
}

// Closes a descriptor only if it is still the file we opened: a host that
// closes every descriptor (daemons do) may have reused the number since.
static void close_own(int fd, uint64_t ino) {
    if (fd >= 0 && ino != 0 && inode_of(fd) == ino) close(fd);
}

static void close_slot_files(struct cs_watch_live *slot) {
    close_own(slot->fd_stat, slot->ino_stat);
    close_own(slot->fd_schedstat, slot->ino_schedstat);
    close_own(slot->fd_syscall, slot->ino_syscall);
}

// Moves a descriptor above the range hosts usually use (select() and code
// that expects small numbers), keeping it where it is if that fails.
static int move_high(int fd) {
    struct cs_watch *wt = &cs_g.watch;
    if (fd < 0 || wt->high_fd == 0) return fd;
    uint64_t ino = inode_of(fd);
    int high = fcntl(fd, F_DUPFD_CLOEXEC, wt->high_fd);
    if (high < 0) return fd;
    close_own(fd, ino);
    return high;
}

static int open_task_file(int tid, const char *file) {
    char path[48];
    size_t n = cs_format_u64((uint64_t)tid, path);
    path[n++] = '/';
    strcpy(path + n, file);
    return move_high(openat(cs_g.watch.task_dirfd, path, O_RDONLY | O_CLOEXEC));
}

static void read_comm(int tid, char name[16]) {
    int fd = open_task_file(tid, "comm");
    if (fd < 0) return;
    uint64_t ino = inode_of(fd);
    char buf[32];
    ssize_t n = pread_all(fd, buf, sizeof buf);
    close_own(fd, ino);
    if (n <= 0) return;
    if (buf[n - 1] == '\n') n--;
    if (n > 15) n = 15;
    memcpy(name, buf, (size_t)n);
    name[n] = 0;
}

static uint32_t fnv1a(const void *data, size_t n, uint32_t h) {
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 16777619u;
    return h;
}

// Interns a path (deduplicated); -1 when the table is full.
static int32_t intern_path(const char *s, size_t n) {
    struct cs_watch *wt = &cs_g.watch;
    struct cs_watch_buffers *b = wt->buf;
    if (n > CS_WATCH_MAX_PATH) n = CS_WATCH_MAX_PATH;
    uint32_t mask = 2 * CS_WATCH_MAX_PATHS - 1;
    uint32_t h = fnv1a(s, n, 2166136261u) & mask;
    for (;; h = (h + 1) & mask) {
        uint32_t e = b->path_hash[h];
        if (e == 0) break;
        if (b->paths[e - 1].len == n && memcmp(b->path_bytes + b->paths[e - 1].off, s, n) == 0) return (int32_t)e - 1;
    }
    uint32_t np = atomic_load_explicit(&wt->npaths, memory_order_relaxed);
    if (np >= CS_WATCH_MAX_PATHS || wt->path_bytes + n > CS_WATCH_PATH_BYTES) {
        atomic_fetch_add(&wt->dropped_paths, 1);
        return -1;
    }
    memcpy(b->path_bytes + wt->path_bytes, s, n);
    b->paths[np].off = wt->path_bytes;
    b->paths[np].len = (uint32_t)n;
    wt->path_bytes += (uint32_t)n;
    b->path_hash[h] = np + 1;
    atomic_store_explicit(&wt->npaths, np + 1, memory_order_release);
    return (int32_t)np;
}

enum fd_kind { FD_FILE, FD_FIFO, FD_PIPE, FD_SOCKET, FD_EVENTS };

// "a.b.c.d:port", "[v6]:port" or the unix socket's path.
static size_t format_sockaddr(const struct sockaddr_storage *sa, socklen_t len, char *out, size_t cap) {
    out[0] = 0;
    if (sa->ss_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
        const struct sockaddr_in *in = (const void *)sa;
        if (!inet_ntop(AF_INET, &in->sin_addr, out, (socklen_t)cap)) return 0;
        size_t n = strlen(out);
        out[n++] = ':';
        return n + cs_format_u64(ntohs(in->sin_port), out + n);
    }
    if (sa->ss_family == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
        const struct sockaddr_in6 *in6 = (const void *)sa;
        out[0] = '[';
        if (!inet_ntop(AF_INET6, &in6->sin6_addr, out + 1, (socklen_t)cap - 1)) return 0;
        size_t n = strlen(out);
        out[n++] = ']';
        out[n++] = ':';
        return n + cs_format_u64(ntohs(in6->sin6_port), out + n);
    }
    if (sa->ss_family == AF_UNIX && len > sizeof(sa_family_t)) {
        const struct sockaddr_un *un = (const void *)sa;
        size_t n = len - sizeof(sa_family_t);
        if (n > cap - 8) n = cap - 8;
        memcpy(out, "unix:", 5);
        memcpy(out + 5, un->sun_path, n);
        if (n > 0 && un->sun_path[0] == 0) out[5] = '@';   // abstract name
        size_t k = 5 + strnlen(out + 5, n);
        out[k] = 0;
        return k;
    }
    return 0;
}

// What a descriptor of the process is, and its path (or peer). The watcher is
// in the same process, so fstat/getpeername on the fd are cheap and touch
// nothing of the blocked thread; the path is cached by (fd, dev, inode).
static int32_t fd_path(int fd, enum fd_kind *kind) {
    struct cs_watch_buffers *b = cs_g.watch.buf;
    *kind = FD_FILE;
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) return -1;
    if (fd < CS_WATCH_FD_CACHE && b->fd_cache[fd].path > 0
        && b->fd_cache[fd].dev == (uint64_t)st.st_dev && b->fd_cache[fd].ino == (uint64_t)st.st_ino) {
        *kind = (enum fd_kind)b->fd_cache[fd].kind;
        return b->fd_cache[fd].path - 1;
    }
    char link[32] = "/proc/self/fd/";
    cs_format_u64((uint64_t)fd, link + strlen(link));
    char target[CS_WATCH_MAX_PATH + 64];
    ssize_t n = readlink(link, target, CS_WATCH_MAX_PATH);
    if (n <= 0) return -1;
    target[n] = 0;
    if (S_ISSOCK(st.st_mode)) {
        *kind = FD_SOCKET;
        struct sockaddr_storage sa;
        socklen_t len = sizeof sa;
        char addr[CS_WATCH_MAX_PATH];
        size_t k = 0;
        if (getpeername(fd, (struct sockaddr *)&sa, &len) == 0) {
            k = format_sockaddr(&sa, len, addr, sizeof addr);
        } else {
            len = sizeof sa;
            if (getsockname(fd, (struct sockaddr *)&sa, &len) == 0) {
                memcpy(addr, "listening ", 10);
                size_t a = format_sockaddr(&sa, len, addr + 10, sizeof addr - 10);
                k = a ? 10 + a : 0;
            }
        }
        if (k) {
            memcpy(target, addr, k);
            n = (ssize_t)k;
        }
    } else if (S_ISFIFO(st.st_mode)) {
        *kind = strncmp(target, "pipe:", 5) == 0 ? FD_PIPE : FD_FIFO;
    } else if (strncmp(target, "anon_inode:", 11) == 0) {
        *kind = FD_EVENTS;
    }
    int32_t path = intern_path(target, (size_t)n);
    if (path >= 0 && fd < CS_WATCH_FD_CACHE) {
        b->fd_cache[fd].dev = (uint64_t)st.st_dev;
        b->fd_cache[fd].ino = (uint64_t)st.st_ino;
        b->fd_cache[fd].kind = (int32_t)*kind;
        b->fd_cache[fd].path = path + 1;
    }
    return path;
}

// Copies a NUL-terminated string out of the process's memory without ever
// faulting (process_vm_readv reports a bad address as an error).
static int32_t user_path(uint64_t addr) {
    if (addr == 0) return -1;
    char s[CS_WATCH_MAX_PATH + 1];
    size_t got = 0;
    while (got < CS_WATCH_MAX_PATH) {
        // Never cross a page in one read: the next page may be unmapped.
        size_t room = 4096 - (size_t)((addr + got) & 4095);
        if (room > CS_WATCH_MAX_PATH - got) room = CS_WATCH_MAX_PATH - got;
        struct iovec local = {s + got, room}, remote = {(void *)(uintptr_t)(addr + got), room};
        ssize_t n = process_vm_readv(cs_g.pid, &local, 1, &remote, 1, 0);
        if (n <= 0) break;
        size_t len = strnlen(s + got, (size_t)n);
        got += len;
        if (len < (size_t)n) break;
    }
    return got ? intern_path(s, got) : -1;
}

// Interns a stack (deduplicated); -1 when the tables are full.
static int32_t intern_stack(const uint64_t *frames, int n) {
    struct cs_watch *wt = &cs_g.watch;
    struct cs_watch_buffers *b = wt->buf;
    uint32_t mask = 2 * CS_WATCH_MAX_STACKS - 1;
    uint32_t h = fnv1a(frames, (size_t)n * sizeof *frames, 2166136261u) & mask;
    for (;; h = (h + 1) & mask) {
        uint32_t e = b->stack_hash[h];
        if (e == 0) break;
        if (b->stacks[e - 1].len == (uint32_t)n
            && memcmp(b->frames + b->stacks[e - 1].off, frames, (size_t)n * sizeof *frames) == 0)
            return (int32_t)e - 1;
    }
    uint32_t ns = atomic_load_explicit(&wt->nstacks, memory_order_relaxed);
    if (ns >= CS_WATCH_MAX_STACKS || wt->nframes + (uint32_t)n > CS_WATCH_MAX_FRAMES) {
        atomic_fetch_add(&wt->dropped_stacks, 1);
        return -1;
    }
    memcpy(b->frames + wt->nframes, frames, (size_t)n * sizeof *frames);
    b->stacks[ns].off = wt->nframes;
    b->stacks[ns].len = (uint32_t)n;
    wt->nframes += (uint32_t)n;
    b->stack_hash[h] = ns + 1;
    atomic_store_explicit(&wt->nstacks, ns + 1, memory_order_release);
    return (int32_t)ns;
}

static void close_segment(const struct cs_watch_seg *seg) {
    struct cs_watch *wt = &cs_g.watch;
    uint32_t n = atomic_load_explicit(&wt->nsegs, memory_order_relaxed);
    if (n >= CS_WATCH_MAX_SEGMENTS) {
        atomic_fetch_add(&wt->dropped_segments, 1);
        return;
    }
    wt->buf->segs[n] = *seg;
    atomic_store_explicit(&wt->nsegs, n + 1, memory_order_release);
}

// ---- observing one thread ----

// The cause of a blocked observation, and the path it waits on.
static void classify(struct cs_watch_seg *seg) {
    seg->path = -1;
    if (seg->state == 'T' || seg->state == 't') { seg->cause = CS_CAUSE_STOPPED; return; }
    if (seg->nr == -1) { seg->cause = CS_CAUSE_PAGE_FAULT; return; }
    const struct syscall_info *info = syscall_info(seg->nr);
    if (!info) { seg->cause = CS_CAUSE_OTHER; return; }
    seg->cause = info->cause;
    if (info->arg == ARG_PATH0) seg->path = user_path(seg->args[0]);
    else if (info->arg == ARG_PATH1) seg->path = user_path(seg->args[1]);
    else if (info->arg == ARG_FD0) {
        enum fd_kind kind;
        seg->path = fd_path((int)seg->args[0], &kind);
        if (kind == FD_SOCKET) seg->cause = CS_CAUSE_NETWORK;
        else if (kind == FD_PIPE) seg->cause = CS_CAUSE_PIPE;
        else if (kind == FD_EVENTS && (seg->cause == CS_CAUSE_FILE_READ || seg->cause == CS_CAUSE_FILE_WRITE))
            seg->cause = CS_CAUSE_EVENTS;
    }
    // fcntl blocks only in F_SETLKW / F_OFD_SETLKW; other commands are I/O-free.
    if (seg->nr == 72 && seg->args[1] != F_SETLKW && seg->args[1] != 38 /* F_OFD_SETLKW */)
        seg->cause = CS_CAUSE_OTHER;
}

// The stack a blocked thread is stopped at, kept only if the thread is still
// blocked in the very same call afterwards (otherwise the stack memory may
// have changed under the unwinder).
static int32_t blocked_stack(struct cs_watch_live *slot, const struct cs_task_syscall *sc) {
    struct cs_watch *wt = &cs_g.watch;
    if (!atomic_load_explicit(&wt->main_started, memory_order_acquire) || !cs_offcpu_ready()) return -1;
    uint64_t frames[CS_WATCH_MAX_DEPTH];
    uint64_t t0 = mono_ns();
    int n = cs_offcpu_unwind(sc->pc, sc->sp, frames, CS_WATCH_MAX_DEPTH);
    wt->unwinds++;
    wt->unwind_ns += mono_ns() - t0;
    if (n <= 0) return -1;
    char again[sizeof slot->text];
    ssize_t len = pread_all(slot->fd_syscall, again, sizeof again);
    if (len != slot->text_len || memcmp(again, slot->text, (size_t)len) != 0) {
        wt->torn_stacks++;
        return -1;
    }
    return intern_stack(frames, n);
}

static void thread_gone(struct cs_watch_live *slot) {
    struct cs_watch_thread *t = &cs_g.watch.buf->threads[slot->thread];
    close_segment(&slot->cur);
    t->exited = true;
    close_slot_files(slot);
    slot->thread = -1;
}

static bool read_stat(struct cs_watch_live *slot, char *state, uint64_t *minflt, uint64_t *majflt) {
    char buf[1024];
    ssize_t n = pread_all(slot->fd_stat, buf, sizeof buf);
    return n > 0 && cs_parse_task_stat(buf, (size_t)n, state, minflt, majflt) == 0;
}

// Starts the open segment from an observation at `at`.
static void begin_segment(struct cs_watch_live *slot, const struct cs_task_syscall *sc, char state, uint64_t at,
                          uint64_t now, int *unwind_budget) {
    struct cs_watch_seg *seg = &slot->cur;
    memset(seg, 0, sizeof *seg);
    seg->tid = cs_g.watch.buf->threads[slot->thread].tid;
    seg->start_ns = at;
    seg->end_ns = now;
    seg->path = seg->stack = -1;
    if (sc->running) {
        seg->nr = CS_NR_RUNNING;
        seg->state = 'R';
        seg->cause = CS_CAUSE_RUNNING;
        return;
    }
    seg->nr = (int16_t)sc->nr;
    seg->state = (uint8_t)(state == 'R' ? 'S' : state);   // it woke between the two reads
    memcpy(seg->args, sc->args, sizeof seg->args);
    classify(seg);
    bool is_main = seg->tid == cs_g.pid;
    if (is_main || *unwind_budget > 0) {
        if (!is_main) (*unwind_budget)--;
        seg->stack = blocked_stack(slot, sc);
    }
}

static void observe(struct cs_watch_live *slot, uint64_t now, int *unwind_budget) {
    struct cs_watch_thread *t = &cs_g.watch.buf->threads[slot->thread];
    char buf[256];
    uint64_t run, wait, slices, sched_run;
    ssize_t n = pread_all(slot->fd_schedstat, buf, sizeof buf);
    if (n <= 0 || cs_parse_schedstat(buf, (size_t)n, &sched_run, &wait, &slices) != 0) {
        thread_gone(slot);
        return;
    }
    struct cs_watch_seg *cur = &slot->cur;
    // Blocked and not scheduled since the last look: still blocked in the
    // same call (a woken thread that has not run yet shows up once it has).
    if (cur->nr != CS_NR_RUNNING && sched_run == slot->sched_run && wait == slot->wait && slices == slot->slices) {
        cur->end_ns = t->last_ns = slot->last_ns = now;
        slot->quiet++;
        return;
    }
    slot->quiet = 0;
    slot->sched_run = sched_run;
    if (!thread_cpu_of(t->tid, &run)) {
        thread_gone(slot);
        return;
    }
    uint64_t drun = run - slot->run, dwait = wait - slot->wait;
    slot->run = t->run_ns = run;
    slot->wait = t->wait_ns = wait;
    slot->slices = slices;
    t->switches = (uint32_t)slices;
    t->last_ns = now;
    uint64_t last = slot->last_ns;
    slot->last_ns = now;
    struct cs_task_syscall sc;
    char text[sizeof slot->text];
    ssize_t len = -1;
    if (slot->fd_syscall >= 0) {
        len = pread_all(slot->fd_syscall, text, sizeof text);
        if (len == 0 || (len < 0 && errno == ESRCH)) { thread_gone(slot); return; }
    }
    if (len <= 0 || cs_parse_task_syscall(text, (size_t)len, &sc) != 0) {
        // No syscall file: tell runnable from blocked by the state letter only.
        char state;
        uint64_t minflt, majflt;
        if (!read_stat(slot, &state, &minflt, &majflt)) { thread_gone(slot); return; }
        memset(&sc, 0, sizeof sc);
        sc.running = state == 'R';
        sc.nr = sc.running ? CS_NR_RUNNING : CS_NR_UNKNOWN;
        len = 0;
    }
    bool same = sc.running ? cur->nr == CS_NR_RUNNING
                           : (size_t)len == slot->text_len && memcmp(text, slot->text, (size_t)len) == 0;
    if (same) {
        cur->end_ns = now;
        cur->run_ns += drun;
        cur->wait_ns += dwait;
        return;
    }

    // A new observation. The interval (last, now] holds the end of the old one
    // and the start of the new one; schedstat says how long the thread was
    // busy in it, which places the boundary: a thread that blocked ran first,
    // a thread that woke ran last.
    char state = sc.running ? 'R' : 'S';
    uint64_t minflt = slot->minflt, majflt = slot->majflt;
    read_stat(slot, &state, &minflt, &majflt);
    uint64_t dt = now - last, busy = drun + dwait < dt ? drun + dwait : dt;
    uint64_t boundary;
    bool deltas_to_old = false;
    uint64_t again;
    if (cur->nr == CS_NR_RUNNING) { boundary = last + busy; deltas_to_old = true; }
    else if (!sc.running) boundary = last + dt / 2;
    else if (thread_cpu_of(t->tid, &again) && again != run) boundary = now - busy;   // on a CPU now: woke `busy` ago
    else boundary = last + (dt - busy) / 2;   // queued now: its current wait is not in schedstat yet
    if (boundary < cur->start_ns) boundary = cur->start_ns;
    cur->end_ns = boundary;
    if (deltas_to_old) { cur->run_ns += drun; cur->wait_ns += dwait; }
    cur->minflt += (uint32_t)(minflt - slot->minflt);
    cur->majflt += (uint32_t)(majflt - slot->majflt);
    close_segment(cur);
    slot->minflt = minflt;
    slot->majflt = majflt;
    slot->text_len = (uint16_t)len;
    memcpy(slot->text, text, (size_t)len);
    begin_segment(slot, &sc, state, boundary, now, unwind_budget);
    if (!deltas_to_old) { cur->run_ns = drun; cur->wait_ns = dwait; }
}

// ---- discovering threads ----

static bool add_thread(int tid, uint64_t now, int *unwind_budget) {
    struct cs_watch *wt = &cs_g.watch;
    struct cs_watch_buffers *b = wt->buf;
    uint32_t ti = atomic_load_explicit(&wt->nthreads, memory_order_relaxed);
    if (ti >= CS_WATCH_MAX_THREADS) return false;
    struct cs_watch_live *slot = NULL;
    for (int i = 0; i < CS_WATCH_MAX_LIVE && !slot; i++)
        if (b->live[i].thread < 0) slot = &b->live[i];
    struct cs_watch_thread *t = &b->threads[ti];
    memset(t, 0, sizeof *t);
    t->tid = tid;
    t->first_ns = t->last_ns = now;
    read_comm(tid, t->name);
    if (!slot) {
        // Out of live slots: remember it (so it is not retried) with its totals.
        t->unwatched = true;
        int fd = open_task_file(tid, "schedstat");
        uint64_t ino = inode_of(fd);
        char buf[128];
        uint64_t slices;
        if (fd >= 0 && pread_all(fd, buf, sizeof buf) > 0) cs_parse_schedstat(buf, strlen(buf), &t->run_ns, &t->wait_ns, &slices);
        close_own(fd, ino);
        atomic_fetch_add(&wt->dropped_threads, 1);
        atomic_store_explicit(&wt->nthreads, ti + 1, memory_order_release);
        return true;
    }
    memset(slot, 0, sizeof *slot);
    slot->fd_schedstat = open_task_file(tid, "schedstat");
    slot->fd_stat = open_task_file(tid, "stat");
    slot->fd_syscall = wt->syscall_readable ? open_task_file(tid, "syscall") : -1;
    slot->ino_schedstat = inode_of(slot->fd_schedstat);
    slot->ino_stat = inode_of(slot->fd_stat);
    slot->ino_syscall = inode_of(slot->fd_syscall);
    char buf[256];
    ssize_t n = slot->fd_schedstat >= 0 ? pread_all(slot->fd_schedstat, buf, sizeof buf) : -1;
    char state = 'S';
    if (n <= 0 || slot->fd_stat < 0
        || cs_parse_schedstat(buf, (size_t)n, &slot->sched_run, &slot->wait, &slot->slices) != 0
        || !thread_cpu_of(tid, &slot->run)
        || !read_stat(slot, &state, &slot->minflt, &slot->majflt)) {
        // It exited while we looked.
        close_slot_files(slot);
        slot->thread = -1;
        return false;
    }
    slot->thread = (int)ti;
    slot->last_ns = now;
    slot->name_reads = 10;
    t->run_ns = t->run0_ns = slot->run;
    t->wait_ns = t->wait0_ns = slot->wait;
    t->switches = (uint32_t)slot->slices;
    struct cs_task_syscall sc;
    memset(&sc, 0, sizeof sc);
    sc.running = true;
    ssize_t len = slot->fd_syscall >= 0 ? pread_all(slot->fd_syscall, slot->text, sizeof slot->text) : -1;
    if (len > 0 && cs_parse_task_syscall(slot->text, (size_t)len, &sc) == 0 && !sc.running) slot->text_len = (uint16_t)len;
    else sc.running = true, sc.nr = CS_NR_RUNNING;
    atomic_store_explicit(&wt->nthreads, ti + 1, memory_order_release);
    begin_segment(slot, &sc, state, now, now, unwind_budget);
    return true;
}

static bool known_tid(int tid) {
    struct cs_watch *wt = &cs_g.watch;
    struct cs_watch_buffers *b = wt->buf;
    for (int i = 0; i < CS_WATCH_MAX_LIVE; i++)
        if (b->live[i].thread >= 0 && b->threads[b->live[i].thread].tid == tid) return true;
    uint32_t nt = atomic_load_explicit(&wt->nthreads, memory_order_relaxed);
    for (uint32_t i = 0; i < nt; i++)
        if (b->threads[i].unwatched && b->threads[i].tid == tid) return true;
    return false;
}

// Lists /proc/self/task (getdents64 on the directory kept open) and starts
// watching threads not seen before.
static void rescan(uint64_t now, int *unwind_budget) {
    struct cs_watch *wt = &cs_g.watch;
    struct cs_watch_buffers *b = wt->buf;
    int self = atomic_load_explicit(&wt->tid, memory_order_relaxed);
    // A host that closed every descriptor may have reused the number: seeking
    // or reading its directory would move the host's offset. Stop looking
    // for new threads instead.
    if (wt->task_dirfd < 0 || inode_of(wt->task_dirfd) != wt->task_dir_ino) {
        wt->task_dirfd = -1;
        return;
    }
    if (lseek(wt->task_dirfd, 0, SEEK_SET) != 0) return;
    for (;;) {
        long n = syscall(SYS_getdents64, wt->task_dirfd, b->dents, sizeof b->dents);
        if (n <= 0) break;
        for (long off = 0; off < n;) {
            struct dirent64 *d = (struct dirent64 *)(b->dents + off);
            off += d->d_reclen;
            uint64_t tid;
            if (cs_parse_u64(d->d_name, &tid) != 0 || (int)tid == self || known_tid((int)tid)) continue;
            if ((int)tid == atomic_load(&cs_g.smp.scanner_tid)) continue;   // the sampler's own thread
            add_thread((int)tid, now, unwind_budget);
        }
    }
    // Names are often set just after a thread starts: re-read them a few times.
    for (int i = 0; i < CS_WATCH_MAX_LIVE; i++) {
        struct cs_watch_live *slot = &b->live[i];
        if (slot->thread < 0 || slot->name_reads == 0) continue;
        slot->name_reads--;
        struct cs_watch_thread *t = &b->threads[slot->thread];
        read_comm(t->tid, t->name);
        // Coldstart's other threads (the sampler's scanner) name themselves
        // once running; they are not the host's: stop watching them.
        if (strncmp(t->name, "coldstart-", 10) == 0) {
            t->unwatched = true;
            t->own = true;
            close_slot_files(slot);
            slot->thread = -1;
        }
    }
}

// ---- the thread ----

// A thread found blocked and unscheduled this many looks in a row is looked
// at every QUIET_STRIDE-th tick only (not the main thread): parked pool
// threads then cost a quarter. When it wakes, schedstat's wait and CPU time
// still place the boundary (see observe), so only the cause's resolution drops.
#define QUIET_AFTER 16
#define QUIET_STRIDE 4

static void tick(uint64_t tick_no, bool last) {
    struct cs_watch *wt = &cs_g.watch;
    struct cs_watch_buffers *b = wt->buf;
    uint64_t now = mono_ns();
    int unwind_budget = 1;   // stacks of threads other than main, per tick
    if (tick_no % wt->rescan_every == 0) rescan(now, &unwind_budget);
    uint32_t runnable = 0;
    for (int i = 0; i < CS_WATCH_MAX_LIVE; i++) {
        struct cs_watch_live *slot = &b->live[i];
        if (slot->thread < 0) continue;
        if (!last && slot->quiet >= QUIET_AFTER && (tick_no + (uint64_t)i) % QUIET_STRIDE != 0
            && b->threads[slot->thread].tid != cs_g.pid)
            continue;
        observe(slot, now, &unwind_budget);
        if (slot->thread >= 0 && slot->cur.nr == CS_NR_RUNNING) runnable++;
    }
    if (runnable != wt->last_runnable || tick_no == 0) {
        uint32_t k = atomic_load_explicit(&wt->nrunnable, memory_order_relaxed);
        if (k < CS_WATCH_MAX_RUNNABLE) {
            b->runnable[k].ns = now;
            b->runnable[k].n = runnable;
            atomic_store_explicit(&wt->nrunnable, k + 1, memory_order_release);
            wt->last_runnable = runnable;
        } else {
            atomic_fetch_add(&wt->dropped_runnable, 1);
        }
    }
    wt->ticks++;
    uint64_t us = (mono_ns() - now) / 1000;
    b->tick_hist[us < CS_WATCH_TICK_BUCKETS ? us : CS_WATCH_TICK_BUCKETS - 1]++;
}

// Opens /proc/self/task and checks what this kernel offers; false (with one
// line on stderr) when the watch cannot work here.
static bool open_proc(void) {
    struct cs_watch *wt = &cs_g.watch;
    char probe[48];
    size_t n = cs_format_u64((uint64_t)cs_g.pid, probe);
    strcpy(probe + n, "/schedstat");
    int fd = openat(wt->task_dirfd, probe, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        cs_warn("this kernel has no per-thread schedstat; the off-CPU watch is off", NULL);
        close_own(wt->task_dirfd, wt->task_dir_ino);
        return false;
    }
    close_own(fd, inode_of(fd));
    strcpy(probe + n, "/syscall");
    fd = openat(wt->task_dirfd, probe, O_RDONLY | O_CLOEXEC);
    wt->syscall_readable = fd >= 0;
    if (fd >= 0) close_own(fd, inode_of(fd));
    else cs_warn("cannot read /proc/self/task/<tid>/syscall; off-CPU time will have no causes", NULL);
    return true;
}

static void *watch_main(void *arg) {
    (void)arg;
    struct cs_watch *wt = &cs_g.watch;
    atomic_store(&wt->tid, cs_gettid());
    // The sampler's scans skip this tid; one may have armed the thread before
    // it was known.
    cs_sampler_leave_alone(atomic_load(&wt->tid));
    prctl(PR_SET_NAME, "coldstart-watch", 0, 0, 0);
    if (!open_proc()) {
        atomic_store_explicit(&wt->running, 0, memory_order_release);
        return NULL;
    }
    for (int i = 0; i < CS_WATCH_MAX_LIVE; i++) wt->buf->live[i].thread = -1;
    for (int i = 0; i < CS_WATCH_UNWIND_PAGES; i++) wt->buf->pages[i].addr = 1;
    // Default priority on purpose: at nice 10 or 19 the watcher starved in
    // exactly the launches that need it (more runnable threads than CPUs):
    // 195–500 looks a second instead of 1000, threads found 100 ms late.
    cpu_set_t cpus;
    if (sched_getaffinity(0, sizeof cpus, &cpus) == 0) wt->cpus = CPU_COUNT(&cpus);
    uint64_t cpu0 = thread_cpu_ns();
    uint64_t next = wt->start_ns = mono_ns();
    atomic_store_explicit(&wt->looking, 1, memory_order_release);
    for (uint64_t n = 0; !atomic_load_explicit(&wt->stop, memory_order_acquire); n++) {
        tick(n, false);
        next += wt->period_ns;
        uint64_t now = mono_ns();
        // A host that never calls ready() (a server) would otherwise pay for
        // the watcher until it exits.
        if (now - wt->start_ns > CS_WATCH_MAX_NS) { wt->stop_reason = "time-limit"; break; }
        if (atomic_load_explicit(&wt->dropped_segments, memory_order_relaxed) > 0) { wt->stop_reason = "buffer-full"; break; }
        if (next <= now) {
            // Late (the machine is busy): skip the missed ticks, no bursts.
            uint64_t behind = (now - next) / wt->period_ns + 1;
            wt->missed_ticks += behind;
            next += behind * wt->period_ns;
        }
        struct timespec ts = {(time_t)(next / 1000000000ull), (long)(next % 1000000000ull)};
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
    }
    // A last look, so every segment ends when the launch's writer asked.
    if (!wt->stop_reason) wt->stop_reason = "writer";
    tick(1, true);
    struct cs_watch_buffers *b = wt->buf;
    for (int i = 0; i < CS_WATCH_MAX_LIVE; i++) {
        struct cs_watch_live *slot = &b->live[i];
        if (slot->thread < 0) continue;
        close_segment(&slot->cur);
        close_slot_files(slot);
        slot->thread = -1;
    }
    close_own(wt->task_dirfd, wt->task_dir_ino);
    wt->stop_ns = mono_ns();
    wt->cpu_ns = thread_cpu_ns() - cpu0;
    atomic_store_explicit(&wt->running, 0, memory_order_release);
    return NULL;
}

void cs_watch_start(char **envp, bool single_threaded) {
    // Only what must happen before the thread exists runs here, on the host's
    // main thread before its library initializers: probing /proc and touching
    // the buffers is the watcher's own first job (docs/performance.md).
    struct cs_watch *wt = &cs_g.watch;
    const char *on = cs_env_get(envp, "COLDSTART_WATCH");
    if (on && strcmp(on, "0") == 0) return;
    // The sampler's rate, read the same way (it starts after the watcher and
    // says what is wrong with a bad value, unless sampling is off).
    uint64_t hz = 1000;
    const char *rate = cs_env_get(envp, "COLDSTART_HZ");
    const char *sampler = cs_env_get(envp, "COLDSTART_SAMPLER");
    if (rate && (cs_parse_u64(rate, &hz) != 0 || hz < 10 || hz > 10000)) {
        if (sampler && strcmp(sampler, "off") == 0) cs_warn("ignoring COLDSTART_HZ (want 10 to 10000): ", rate);
        hz = 1000;
    }
    // At most 1 kHz: a look period of 1 ms already resolves what blocks a
    // launch, and each wake-up costs ~20 µs of CPU on a VM, so a 10 kHz
    // watcher took 200 ms/s and pulled the sampler's own 10 kHz down to
    // 7.5 kHz on 2 CPUs (docs/performance.md).
    if (hz > CS_WATCH_MAX_HZ) hz = CS_WATCH_MAX_HZ;
    wt->requested_hz = hz;
    wt->period_ns = 1000000000ull / hz;
    wt->rescan_every = hz / 200 ? hz / 200 : 1;   // new threads within ~5 ms

    wt->task_dirfd = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (wt->task_dirfd < 0) {
        cs_warn("cannot open /proc/self/task; the off-CPU watch is off", NULL);
        return;
    }
    // Growing the descriptor table to reach the high range waits for an RCU
    // grace period once the process has a second thread (8–14 ms measured on
    // the watcher): do it here, while the process has one, or not at all.
    struct rlimit rl;
    if (single_threaded && getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur >= 1024) wt->high_fd = 768;
    wt->task_dirfd = move_high(wt->task_dirfd);
    wt->task_dir_ino = inode_of(wt->task_dirfd);

    void *mem = mmap(NULL, sizeof *wt->buf, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (mem == MAP_FAILED) {
        cs_warn("cannot allocate the off-CPU watch buffers; the off-CPU watch is off", NULL);
        close_own(wt->task_dirfd, wt->task_dir_ino);
        return;
    }
    wt->buf = mem;

    // The watcher takes none of the host's signals (cs_start_thread blocks
    // them all): the timeline writer, which may run in a signal handler,
    // never runs on the watcher, so it can wait for it.
    atomic_store(&wt->running, 1);
    if (cs_start_thread(watch_main, 512 * 1024) != 0) {
        atomic_store(&wt->running, 0);
        cs_warn("cannot start the off-CPU watcher thread; the off-CPU watch is off", NULL);
        close_own(wt->task_dirfd, wt->task_dir_ino);
        munmap(mem, sizeof *wt->buf);
        wt->buf = NULL;
    }
}

void cs_watch_main_started(void) { atomic_store_explicit(&cs_g.watch.main_started, 1, memory_order_release); }

void cs_watch_stop(void) {
    struct cs_watch *wt = &cs_g.watch;
    // A forked child has the parent's memory but not its watcher thread.
    if (!atomic_load(&wt->running) || (int)syscall(SYS_getpid) != cs_g.pid) return;
    atomic_store_explicit(&wt->stop, 1, memory_order_release);
    struct timespec ts = {0, 500000};
    for (int i = 0; i < 100 && atomic_load_explicit(&wt->running, memory_order_acquire); i++) nanosleep(&ts, NULL);
}
