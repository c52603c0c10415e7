// What a blocked thread waits for: the system calls (x86_64's or aarch64's
// numbers) it is commonly
// seen in, their causes (watch.h), and the classification of a blocked
// observation (watchfd.c names the file or peer).
#include "internal.h"

#include <fcntl.h>
#include <string.h>
#include <sys/syscall.h>

// The one table of the causes' names, by number (enum cs_cause, watch.h).
// Swift's Timeline.Cause and docs/timeline-format.md's list follow it, in
// this order (WaitCauseTests).
static const char *const cause_names[CS_CAUSE_COUNT] = {
    [CS_CAUSE_RUNNING] = "running",       [CS_CAUSE_FILE_READ] = "file-read",
    [CS_CAUSE_FILE_WRITE] = "file-write", [CS_CAUSE_FILE_SYSTEM] = "file-system",
    [CS_CAUSE_LOCK] = "lock",             [CS_CAUSE_EVENTS] = "events",
    [CS_CAUSE_NETWORK] = "network",       [CS_CAUSE_PIPE] = "pipe",
    [CS_CAUSE_SLEEP] = "sleep",           [CS_CAUSE_PAGE_FAULT] = "page-fault",
    [CS_CAUSE_CHILD] = "child",           [CS_CAUSE_MEMORY] = "memory",
    [CS_CAUSE_STOPPED] = "stopped",       [CS_CAUSE_OTHER] = "other",
};

const char *cs_watch_cause_name(int cause) {
    return cause >= 0 && cause < CS_CAUSE_COUNT ? cause_names[cause] : NULL;
}


// ---- syscalls ----

// The calls a thread is commonly seen blocked in; the rest are "other" with
// their number. Sorted by number (binary search).
#if defined(__x86_64__)
static const struct cs_syscall_info syscalls[] = {
    {0, CS_CAUSE_FILE_READ, CS_ARG_FD0, "read"},
    {1, CS_CAUSE_FILE_WRITE, CS_ARG_FD0, "write"},
    {2, CS_CAUSE_FILE_SYSTEM, CS_ARG_PATH0, "open"},
    {3, CS_CAUSE_FILE_SYSTEM, CS_ARG_FD0, "close"},
    {4, CS_CAUSE_FILE_SYSTEM, CS_ARG_PATH0, "stat"},
    {5, CS_CAUSE_FILE_SYSTEM, CS_ARG_FD0, "fstat"},
    {6, CS_CAUSE_FILE_SYSTEM, CS_ARG_PATH0, "lstat"},
    {7, CS_CAUSE_EVENTS, CS_ARG_NONE, "poll"},
    {9, CS_CAUSE_MEMORY, CS_ARG_NONE, "mmap"},
    {10, CS_CAUSE_MEMORY, CS_ARG_NONE, "mprotect"},
    {11, CS_CAUSE_MEMORY, CS_ARG_NONE, "munmap"},
    {12, CS_CAUSE_MEMORY, CS_ARG_NONE, "brk"},
    {16, CS_CAUSE_OTHER, CS_ARG_FD0, "ioctl"},
    {17, CS_CAUSE_FILE_READ, CS_ARG_FD0, "pread64"},
    {18, CS_CAUSE_FILE_WRITE, CS_ARG_FD0, "pwrite64"},
    {19, CS_CAUSE_FILE_READ, CS_ARG_FD0, "readv"},
    {20, CS_CAUSE_FILE_WRITE, CS_ARG_FD0, "writev"},
    {21, CS_CAUSE_FILE_SYSTEM, CS_ARG_PATH0, "access"},
    {23, CS_CAUSE_EVENTS, CS_ARG_NONE, "select"},
    {25, CS_CAUSE_MEMORY, CS_ARG_NONE, "mremap"},
    {26, CS_CAUSE_FILE_SYSTEM, CS_ARG_NONE, "msync"},
    {28, CS_CAUSE_MEMORY, CS_ARG_NONE, "madvise"},
    {34, CS_CAUSE_SLEEP, CS_ARG_NONE, "pause"},
    {35, CS_CAUSE_SLEEP, CS_ARG_NONE, "nanosleep"},
    {40, CS_CAUSE_FILE_WRITE, CS_ARG_FD0, "sendfile"},
    {42, CS_CAUSE_NETWORK, CS_ARG_FD0, "connect"},
    {43, CS_CAUSE_NETWORK, CS_ARG_FD0, "accept"},
    {44, CS_CAUSE_NETWORK, CS_ARG_FD0, "sendto"},
    {45, CS_CAUSE_NETWORK, CS_ARG_FD0, "recvfrom"},
    {46, CS_CAUSE_NETWORK, CS_ARG_FD0, "sendmsg"},
    {47, CS_CAUSE_NETWORK, CS_ARG_FD0, "recvmsg"},
    {48, CS_CAUSE_NETWORK, CS_ARG_FD0, "shutdown"},
    {59, CS_CAUSE_FILE_SYSTEM, CS_ARG_PATH0, "execve"},
    {61, CS_CAUSE_CHILD, CS_ARG_NONE, "wait4"},
    {72, CS_CAUSE_LOCK, CS_ARG_FD0, "fcntl"},
    {73, CS_CAUSE_LOCK, CS_ARG_FD0, "flock"},
    {74, CS_CAUSE_FILE_SYSTEM, CS_ARG_FD0, "fsync"},
    {75, CS_CAUSE_FILE_SYSTEM, CS_ARG_FD0, "fdatasync"},
    {76, CS_CAUSE_FILE_SYSTEM, CS_ARG_PATH0, "truncate"},
    {77, CS_CAUSE_FILE_SYSTEM, CS_ARG_FD0, "ftruncate"},
    {78, CS_CAUSE_FILE_SYSTEM, CS_ARG_FD0, "getdents"},
    {80, CS_CAUSE_FILE_SYSTEM, CS_ARG_PATH0, "chdir"},
    {82, CS_CAUSE_FILE_SYSTEM, CS_ARG_PATH0, "rename"},
    {83, CS_CAUSE_FILE_SYSTEM, CS_ARG_PATH0, "mkdir"},
    {84, CS_CAUSE_FILE_SYSTEM, CS_ARG_PATH0, "rmdir"},
    {85, CS_CAUSE_FILE_SYSTEM, CS_ARG_PATH0, "creat"},
    {87, CS_CAUSE_FILE_SYSTEM, CS_ARG_PATH0, "unlink"},
    {89, CS_CAUSE_FILE_SYSTEM, CS_ARG_PATH0, "readlink"},
    {130, CS_CAUSE_SLEEP, CS_ARG_NONE, "rt_sigsuspend"},
    {137, CS_CAUSE_FILE_SYSTEM, CS_ARG_PATH0, "statfs"},
    {162, CS_CAUSE_FILE_SYSTEM, CS_ARG_NONE, "sync"},
    {187, CS_CAUSE_FILE_READ, CS_ARG_FD0, "readahead"},
    {202, CS_CAUSE_LOCK, CS_ARG_NONE, "futex"},
    {208, CS_CAUSE_EVENTS, CS_ARG_NONE, "io_getevents"},
    {217, CS_CAUSE_FILE_SYSTEM, CS_ARG_FD0, "getdents64"},
    {230, CS_CAUSE_SLEEP, CS_ARG_NONE, "clock_nanosleep"},
    {232, CS_CAUSE_EVENTS, CS_ARG_NONE, "epoll_wait"},
    {247, CS_CAUSE_CHILD, CS_ARG_NONE, "waitid"},
    {257, CS_CAUSE_FILE_SYSTEM, CS_ARG_PATH1, "openat"},
    {258, CS_CAUSE_FILE_SYSTEM, CS_ARG_PATH1, "mkdirat"},
    {262, CS_CAUSE_FILE_SYSTEM, CS_ARG_PATH1, "newfstatat"},
    {263, CS_CAUSE_FILE_SYSTEM, CS_ARG_PATH1, "unlinkat"},
    {267, CS_CAUSE_FILE_SYSTEM, CS_ARG_PATH1, "readlinkat"},
    {269, CS_CAUSE_FILE_SYSTEM, CS_ARG_PATH1, "faccessat"},
    {270, CS_CAUSE_EVENTS, CS_ARG_NONE, "pselect6"},
    {271, CS_CAUSE_EVENTS, CS_ARG_NONE, "ppoll"},
    {275, CS_CAUSE_FILE_READ, CS_ARG_FD0, "splice"},
    {277, CS_CAUSE_FILE_SYSTEM, CS_ARG_FD0, "sync_file_range"},
    {281, CS_CAUSE_EVENTS, CS_ARG_NONE, "epoll_pwait"},
    {285, CS_CAUSE_FILE_WRITE, CS_ARG_FD0, "fallocate"},
    {288, CS_CAUSE_NETWORK, CS_ARG_FD0, "accept4"},
    {295, CS_CAUSE_FILE_READ, CS_ARG_FD0, "preadv"},
    {296, CS_CAUSE_FILE_WRITE, CS_ARG_FD0, "pwritev"},
    {299, CS_CAUSE_NETWORK, CS_ARG_FD0, "recvmmsg"},
    {306, CS_CAUSE_FILE_SYSTEM, CS_ARG_FD0, "syncfs"},
    {307, CS_CAUSE_NETWORK, CS_ARG_FD0, "sendmmsg"},
    {316, CS_CAUSE_FILE_SYSTEM, CS_ARG_PATH1, "renameat2"},
    {326, CS_CAUSE_FILE_WRITE, CS_ARG_FD0, "copy_file_range"},
    {327, CS_CAUSE_FILE_READ, CS_ARG_FD0, "preadv2"},
    {328, CS_CAUSE_FILE_WRITE, CS_ARG_FD0, "pwritev2"},
    {332, CS_CAUSE_FILE_SYSTEM, CS_ARG_PATH1, "statx"},
    {426, CS_CAUSE_EVENTS, CS_ARG_NONE, "io_uring_enter"},
    {437, CS_CAUSE_FILE_SYSTEM, CS_ARG_PATH1, "openat2"},
    {439, CS_CAUSE_FILE_SYSTEM, CS_ARG_PATH1, "faccessat2"},
    {441, CS_CAUSE_EVENTS, CS_ARG_NONE, "epoll_pwait2"},
    {449, CS_CAUSE_LOCK, CS_ARG_NONE, "futex_waitv"},
};
#else
// aarch64 (and every other architecture of the kernel's generic numbering,
// asm-generic/unistd.h): only the *at, p* and epoll_pwait forms of the calls
// above exist there.
static const struct cs_syscall_info syscalls[] = {
    {4, CS_CAUSE_EVENTS, CS_ARG_NONE, "io_getevents"},
    {22, CS_CAUSE_EVENTS, CS_ARG_NONE, "epoll_pwait"},
    {25, CS_CAUSE_LOCK, CS_ARG_FD0, "fcntl"},
    {29, CS_CAUSE_OTHER, CS_ARG_FD0, "ioctl"},
    {32, CS_CAUSE_LOCK, CS_ARG_FD0, "flock"},
    {34, CS_CAUSE_FILE_SYSTEM, CS_ARG_PATH1, "mkdirat"},
    {35, CS_CAUSE_FILE_SYSTEM, CS_ARG_PATH1, "unlinkat"},
    {38, CS_CAUSE_FILE_SYSTEM, CS_ARG_PATH1, "renameat"},
    {43, CS_CAUSE_FILE_SYSTEM, CS_ARG_PATH0, "statfs"},
    {45, CS_CAUSE_FILE_SYSTEM, CS_ARG_PATH0, "truncate"},
    {46, CS_CAUSE_FILE_SYSTEM, CS_ARG_FD0, "ftruncate"},
    {47, CS_CAUSE_FILE_WRITE, CS_ARG_FD0, "fallocate"},
    {48, CS_CAUSE_FILE_SYSTEM, CS_ARG_PATH1, "faccessat"},
    {49, CS_CAUSE_FILE_SYSTEM, CS_ARG_PATH0, "chdir"},
    {56, CS_CAUSE_FILE_SYSTEM, CS_ARG_PATH1, "openat"},
    {57, CS_CAUSE_FILE_SYSTEM, CS_ARG_FD0, "close"},
    {61, CS_CAUSE_FILE_SYSTEM, CS_ARG_FD0, "getdents64"},
    {63, CS_CAUSE_FILE_READ, CS_ARG_FD0, "read"},
    {64, CS_CAUSE_FILE_WRITE, CS_ARG_FD0, "write"},
    {65, CS_CAUSE_FILE_READ, CS_ARG_FD0, "readv"},
    {66, CS_CAUSE_FILE_WRITE, CS_ARG_FD0, "writev"},
    {67, CS_CAUSE_FILE_READ, CS_ARG_FD0, "pread64"},
    {68, CS_CAUSE_FILE_WRITE, CS_ARG_FD0, "pwrite64"},
    {69, CS_CAUSE_FILE_READ, CS_ARG_FD0, "preadv"},
    {70, CS_CAUSE_FILE_WRITE, CS_ARG_FD0, "pwritev"},
    {71, CS_CAUSE_FILE_WRITE, CS_ARG_FD0, "sendfile"},
    {72, CS_CAUSE_EVENTS, CS_ARG_NONE, "pselect6"},
    {73, CS_CAUSE_EVENTS, CS_ARG_NONE, "ppoll"},
    {76, CS_CAUSE_FILE_READ, CS_ARG_FD0, "splice"},
    {78, CS_CAUSE_FILE_SYSTEM, CS_ARG_PATH1, "readlinkat"},
    {79, CS_CAUSE_FILE_SYSTEM, CS_ARG_PATH1, "newfstatat"},
    {80, CS_CAUSE_FILE_SYSTEM, CS_ARG_FD0, "fstat"},
    {81, CS_CAUSE_FILE_SYSTEM, CS_ARG_NONE, "sync"},
    {82, CS_CAUSE_FILE_SYSTEM, CS_ARG_FD0, "fsync"},
    {83, CS_CAUSE_FILE_SYSTEM, CS_ARG_FD0, "fdatasync"},
    {84, CS_CAUSE_FILE_SYSTEM, CS_ARG_FD0, "sync_file_range"},
    {95, CS_CAUSE_CHILD, CS_ARG_NONE, "waitid"},
    {98, CS_CAUSE_LOCK, CS_ARG_NONE, "futex"},
    {101, CS_CAUSE_SLEEP, CS_ARG_NONE, "nanosleep"},
    {115, CS_CAUSE_SLEEP, CS_ARG_NONE, "clock_nanosleep"},
    {133, CS_CAUSE_SLEEP, CS_ARG_NONE, "rt_sigsuspend"},
    {202, CS_CAUSE_NETWORK, CS_ARG_FD0, "accept"},
    {203, CS_CAUSE_NETWORK, CS_ARG_FD0, "connect"},
    {206, CS_CAUSE_NETWORK, CS_ARG_FD0, "sendto"},
    {207, CS_CAUSE_NETWORK, CS_ARG_FD0, "recvfrom"},
    {210, CS_CAUSE_NETWORK, CS_ARG_FD0, "shutdown"},
    {211, CS_CAUSE_NETWORK, CS_ARG_FD0, "sendmsg"},
    {212, CS_CAUSE_NETWORK, CS_ARG_FD0, "recvmsg"},
    {213, CS_CAUSE_FILE_READ, CS_ARG_FD0, "readahead"},
    {214, CS_CAUSE_MEMORY, CS_ARG_NONE, "brk"},
    {215, CS_CAUSE_MEMORY, CS_ARG_NONE, "munmap"},
    {216, CS_CAUSE_MEMORY, CS_ARG_NONE, "mremap"},
    {221, CS_CAUSE_FILE_SYSTEM, CS_ARG_PATH0, "execve"},
    {222, CS_CAUSE_MEMORY, CS_ARG_NONE, "mmap"},
    {226, CS_CAUSE_MEMORY, CS_ARG_NONE, "mprotect"},
    {227, CS_CAUSE_FILE_SYSTEM, CS_ARG_NONE, "msync"},
    {233, CS_CAUSE_MEMORY, CS_ARG_NONE, "madvise"},
    {242, CS_CAUSE_NETWORK, CS_ARG_FD0, "accept4"},
    {243, CS_CAUSE_NETWORK, CS_ARG_FD0, "recvmmsg"},
    {260, CS_CAUSE_CHILD, CS_ARG_NONE, "wait4"},
    {267, CS_CAUSE_FILE_SYSTEM, CS_ARG_FD0, "syncfs"},
    {269, CS_CAUSE_NETWORK, CS_ARG_FD0, "sendmmsg"},
    {276, CS_CAUSE_FILE_SYSTEM, CS_ARG_PATH1, "renameat2"},
    {285, CS_CAUSE_FILE_WRITE, CS_ARG_FD0, "copy_file_range"},
    {286, CS_CAUSE_FILE_READ, CS_ARG_FD0, "preadv2"},
    {287, CS_CAUSE_FILE_WRITE, CS_ARG_FD0, "pwritev2"},
    {291, CS_CAUSE_FILE_SYSTEM, CS_ARG_PATH1, "statx"},
    {426, CS_CAUSE_EVENTS, CS_ARG_NONE, "io_uring_enter"},
    {437, CS_CAUSE_FILE_SYSTEM, CS_ARG_PATH1, "openat2"},
    {439, CS_CAUSE_FILE_SYSTEM, CS_ARG_PATH1, "faccessat2"},
    {441, CS_CAUSE_EVENTS, CS_ARG_NONE, "epoll_pwait2"},
    {449, CS_CAUSE_LOCK, CS_ARG_NONE, "futex_waitv"},
};
#endif

// The syscall's table entry (a binary search), or NULL when unknown.
// Async-signal-safe.
static const struct cs_syscall_info *cs_syscall_info(int nr) {
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
    const struct cs_syscall_info *info = cs_syscall_info(nr);
    return info ? info->name : NULL;
}


// The cause of a blocked observation, and the path it waits on.
void cs_watch_classify(struct cs_watch_seg *seg) {
    seg->path = -1;
    if (seg->state == 'T' || seg->state == 't') { seg->cause = CS_CAUSE_STOPPED; return; }
    if (seg->nr == -1) { seg->cause = CS_CAUSE_PAGE_FAULT; return; }
    const struct cs_syscall_info *info = cs_syscall_info(seg->nr);
    if (!info) { seg->cause = CS_CAUSE_OTHER; return; }
    seg->cause = info->cause;
    if (info->arg == CS_ARG_PATH0) seg->path = cs_watch_user_path(seg->args[0]);
    else if (info->arg == CS_ARG_PATH1) seg->path = cs_watch_user_path(seg->args[1]);
    else if (info->arg == CS_ARG_FD0) {
        enum cs_fd_kind kind;
        seg->path = cs_watch_fd_path((int)seg->args[0], &kind);
        if (kind == CS_FD_SOCKET) seg->cause = CS_CAUSE_NETWORK;
        else if (kind == CS_FD_PIPE) seg->cause = CS_CAUSE_PIPE;
        else if (kind == CS_FD_EVENTS && (seg->cause == CS_CAUSE_FILE_READ || seg->cause == CS_CAUSE_FILE_WRITE))
            seg->cause = CS_CAUSE_EVENTS;
    }
    // fcntl blocks only in F_SETLKW / F_OFD_SETLKW; other commands are I/O-free.
    if (seg->nr == SYS_fcntl && seg->args[1] != F_SETLKW && seg->args[1] != 38 /* F_OFD_SETLKW */)
        seg->cause = CS_CAUSE_OTHER;
}

