// The watcher's descriptors and names (watch.h): reading /proc files it
// keeps open without ever touching a descriptor that is no longer its own, and
// naming what a blocked thread waits on (a file's path, a socket's peer, a
// path argument read from memory), interned once. Watcher thread only; calls
// sys.c and jsonw.c (number formatting) only.
#include "internal.h"

#include <sys/syscall.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

ssize_t cs_watch_pread_all(int fd, char *buf, size_t cap) {
    ssize_t n;
    do n = pread(fd, buf, cap - 1, 0); while (n < 0 && errno == EINTR);
    if (n >= 0) buf[n] = 0;
    return n;
}

uint64_t cs_watch_inode_of(int fd) {
    struct stat st;
    return fd >= 0 && fstat(fd, &st) == 0 ? (uint64_t)st.st_ino : 0;
}

// Closes a descriptor only if it is still the file we opened: a host that
// closes every descriptor (daemons do) may have reused the number since.
void cs_watch_close_own(int fd, uint64_t ino) {
    if (fd >= 0 && ino != 0 && cs_watch_inode_of(fd) == ino) close(fd);
}

void cs_watch_close_slot_files(struct cs_watch_live *slot) {
    cs_watch_close_own(slot->fd_stat, slot->ino_stat);
    cs_watch_close_own(slot->fd_schedstat, slot->ino_schedstat);
    cs_watch_close_own(slot->fd_syscall, slot->ino_syscall);
}

int cs_watch_syscall_fd(struct cs_watch_live *slot) {
    struct cs_watch *wt = &cs_g.watch;
    if (slot->syscall_tried || !wt->syscall_readable) return slot->fd_syscall;
    slot->syscall_tried = true;
    slot->fd_syscall = cs_watch_open_task_file(wt->buf->threads[slot->thread].tid, "syscall", &slot->ino_syscall);
    int open_errno = errno;
    char buf[128];
    // Not there for a thread that is (its schedstat reads): this kernel has
    // none, or the program changed its user, after which the kernel makes
    // the 0400 file root's (the process is no longer dumpable).
    if (slot->fd_syscall < 0 && cs_watch_pread_all(slot->fd_schedstat, buf, sizeof buf) > 0) {
        wt->syscall_readable = false;
        if (open_errno == EACCES && cs_syscall(SYS_prctl, PR_GET_DUMPABLE) == 0)
            cs_warn("the program changed its user, which makes /proc/self/task/<tid>/syscall root's: "
                    "threads first blocked after that have no causes", NULL);
        else
            cs_warn(cs_out_of_descriptors() ? "no descriptor left under RLIMIT_NOFILE for /proc/self/task/<tid>/syscall; off-CPU time will have no causes"
                                            : "cannot read /proc/self/task/<tid>/syscall; off-CPU time will have no causes", NULL);
    }
    return slot->fd_syscall;
}

int cs_watch_task_dir(void) {
    struct cs_watch *wt = &cs_g.watch;
    // (No inode yet: the watcher's start, whose zeroed descriptor is 0.)
    if (wt->task_dir_ino != 0 && cs_watch_inode_of(wt->task_dirfd) == wt->task_dir_ino) return wt->task_dirfd;
    // Closed by the host (the number may be the host's now: left alone).
    uint64_t dev;
    int fd = cs_open_known(AT_FDCWD, "/proc/self/task", O_RDONLY | O_DIRECTORY, true, &dev, &wt->task_dir_ino);
    wt->task_dirfd = fd;
    wt->task_nlink = 0;
    return fd;
}

int cs_watch_open_task_file(int tid, const char *file, uint64_t *ino) {
    char path[48];
    size_t n = cs_format_u64((uint64_t)tid, path);
    path[n++] = '/';
    strcpy(path + n, file);
    uint64_t dev;
    int fd = cs_open_known(cs_g.watch.task_dirfd, path, O_RDONLY, true, &dev, ino);
    // The directory's descriptor lost to a host that closes every descriptor:
    // once more, from /proc/self/task opened again (the check only on a failure).
    if (fd < 0 && cs_watch_inode_of(cs_g.watch.task_dirfd) != cs_g.watch.task_dir_ino && cs_watch_task_dir() >= 0)
        fd = cs_open_known(cs_g.watch.task_dirfd, path, O_RDONLY, true, &dev, ino);
    return fd;
}

bool cs_watch_reopen_slot_files(struct cs_watch_live *slot) {
    if (cs_watch_inode_of(slot->fd_schedstat) == slot->ino_schedstat && cs_watch_inode_of(slot->fd_stat) == slot->ino_stat)
        return false;   // still ours: a read that fails means the thread ended
    int tid = cs_g.watch.buf->threads[slot->thread].tid;
    // Not closed: numbers that are not ours any more are the host's.
    if (cs_watch_inode_of(slot->fd_syscall) != slot->ino_syscall) {
        slot->fd_syscall = -1;
        slot->syscall_tried = false;
    }
    slot->fd_schedstat = cs_watch_open_task_file(tid, "schedstat", &slot->ino_schedstat);
    if (cs_watch_inode_of(slot->fd_stat) != slot->ino_stat) {
        slot->fd_stat = cs_watch_open_task_file(tid, "stat", &slot->ino_stat);
    }
    return slot->fd_schedstat >= 0 && slot->fd_stat >= 0;
}

void cs_watch_read_comm(int tid, char name[16]) {
    uint64_t ino;
    int fd = cs_watch_open_task_file(tid, "comm", &ino);
    if (fd < 0) return;
    char buf[32];
    ssize_t n = cs_watch_pread_all(fd, buf, sizeof buf);
    cs_watch_close_own(fd, ino);
    if (n <= 0) return;
    if (buf[n - 1] == '\n') n--;
    if (n > 15) n = 15;
    // The kernel keeps 15 bytes of a longer name, wherever a character ends.
    if (n == 15) n = (ssize_t)cs_utf8_cut(buf, 15);
    memcpy(name, buf, (size_t)n);
    name[n] = 0;
}

uint32_t cs_watch_fnv1a(const void *data, size_t n, uint32_t h) {
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 16777619u;
    return h;
}

// Interns a path (deduplicated); -1 when the table is full. Whoever holds
// the looks (cs_watch.busy); async-signal-safe.
static int32_t cs_watch_intern_path(const char *s, size_t n) {
    struct cs_watch *wt = &cs_g.watch;
    struct cs_watch_buffers *b = wt->buf;
    if (n > CS_WATCH_MAX_PATH) n = cs_utf8_cut(s, CS_WATCH_MAX_PATH);
    uint32_t mask = 2 * CS_WATCH_MAX_PATHS - 1;
    uint32_t h = cs_watch_fnv1a(s, n, 2166136261u) & mask;
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
int32_t cs_watch_fd_path(int fd, enum cs_fd_kind *kind) {
    struct cs_watch_buffers *b = cs_g.watch.buf;
    *kind = CS_FD_FILE;
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) return -1;
    if (fd < CS_WATCH_FD_CACHE && b->fd_cache[fd].path > 0
        && b->fd_cache[fd].dev == (uint64_t)st.st_dev && b->fd_cache[fd].ino == (uint64_t)st.st_ino) {
        *kind = (enum cs_fd_kind)b->fd_cache[fd].kind;
        return b->fd_cache[fd].path - 1;
    }
    char link[32] = "/proc/self/fd/";
    cs_format_u64((uint64_t)fd, link + strlen(link));
    char target[CS_WATCH_MAX_PATH + 64];
    ssize_t n = readlink(link, target, CS_WATCH_MAX_PATH);
    if (n <= 0) return -1;
    if (n == CS_WATCH_MAX_PATH) n = (ssize_t)cs_utf8_cut(target, (size_t)n);   // perhaps cut
    target[n] = 0;
    if (S_ISSOCK(st.st_mode)) {
        *kind = CS_FD_SOCKET;
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
        *kind = strncmp(target, "pipe:", 5) == 0 ? CS_FD_PIPE : CS_FD_FIFO;
    } else if (strncmp(target, "anon_inode:", 11) == 0) {
        *kind = CS_FD_EVENTS;
    }
    int32_t path = cs_watch_intern_path(target, (size_t)n);
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
int32_t cs_watch_user_path(uint64_t addr) {
    if (addr == 0) return -1;
    char s[CS_WATCH_MAX_PATH + 1];
    size_t got = 0;
    while (got < CS_WATCH_MAX_PATH) {
        // Never cross a page in one read: the next page may be unmapped.
        size_t room = 4096 - (size_t)((addr + got) & 4095);
        if (room > CS_WATCH_MAX_PATH - got) room = CS_WATCH_MAX_PATH - got;
        struct iovec local = {s + got, room}, remote = {(void *)(uintptr_t)(addr + got), room};
        ssize_t n = process_vm_readv(cs_g.proc.pid, &local, 1, &remote, 1, 0);
        if (n <= 0) break;
        size_t len = strnlen(s + got, (size_t)n);
        got += len;
        if (len < (size_t)n) break;
    }
    if (got == CS_WATCH_MAX_PATH) got = cs_utf8_cut(s, got);   // no NUL within reach: cut
    return got ? cs_watch_intern_path(s, got) : -1;
}
