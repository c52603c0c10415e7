// A host whose threads have all ended (a main thread that called
// pthread_exit, no other thread of its own): glibc's last thread would call
// exit(0), which Coldstart's threads, counted among glibc's, hold back.
// One of them calls it instead (cs_own_exit_if_host_ended, internal.h).
#include "internal.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

// Whether the main thread has ended (a zombie: its state after the command's
// closing parenthesis is Z or X). With a foreign /proc, its id there is not
// `pid`: /proc/self/stat, the thread group leader's state, says the same.
static bool main_thread_ended(int pid) {
    char path[64] = "/proc/self/task/", buf[512];
    size_t n = strlen(path);
    if (cs_proc_foreign()) memcpy(path, "/proc/self/stat", 16);
    else {
        n += cs_format_u64((uint64_t)pid, path + n);
        memcpy(path + n, "/stat", 6);
    }
    ssize_t k = cs_read_small_file(path, buf, sizeof buf - 1);
    if (k <= 0) return false;
    const char *close = NULL;
    for (ssize_t i = 0; i < k; i++) if (buf[i] == ')') close = buf + i;
    return close && close + 2 < buf + k && (close[2] == 'Z' || close[2] == 'X');
}

// Whether /proc/self/task lists no thread but the main one and Coldstart's.
static bool only_own_threads_besides(int pid) {
    if (atomic_load(&cs_g.own.starting) > 0) return false;
    uint64_t dev, ino;
    int dir = cs_open_known(AT_FDCWD, "/proc/self/task", O_RDONLY | O_DIRECTORY, false, &dev, &ino);
    if (dir < 0) return false;
    if (cs_proc_foreign()) {
        // The ids listed are not gettid's, so Coldstart's threads cannot be
        // told apart by id: by count instead. The link count is 2 + the
        // threads, and each of ours not yet done is listed: 3 + ours means
        // no host thread but main. (One of ours ending meanwhile makes it
        // more: then the next turn looks again.)
        struct stat st;
        int own = cs_own_running(0, NULL);
        bool only = own >= 0 && fstat(dir, &st) == 0 && st.st_nlink == (nlink_t)(3 + own);
        if (cs_fd_is(dir, dev, ino)) close(dir);
        return only;
    }
    char buf[2048] __attribute__((aligned(8)));
    bool only = true;
    long n;
    while (only && (n = cs_syscall(SYS_getdents64, dir, buf, sizeof buf)) > 0) {
        for (long off = 0; off < n && only;) {
            const struct cs_dirent64 *d = (const void *)(buf + off);
            off += d->d_reclen;
            int tid = cs_dirent_tid(d);
            if (tid != 0 && tid != pid && !cs_own_thread(tid, false)) only = false;
        }
    }
    if (n < 0) only = false;
    if (cs_fd_is(dir, dev, ino)) close(dir);
    return only;
}

void cs_own_exit_if_host_ended(void) {
    uint64_t now = cs_monotonic_ns(), last = atomic_load(&cs_g.own.host_look_ns);
    if (now - last < 5000000ull || !atomic_compare_exchange_strong(&cs_g.own.host_look_ns, &last, now)) return;
    // A main thread whose CPU moved is running: no /proc read.
    int pid = cs_g.proc.pid;
    uint64_t cpu = 0;
    if (cs_thread_cpu(pid, &cpu) && cpu != cs_g.own.host_main_cpu) {
        cs_g.own.host_main_cpu = cpu;
        return;
    }
    if (!main_thread_ended(pid) || !only_own_threads_besides(pid) || atomic_exchange(&cs_g.own.host_exit, true)) return;
    exit(0);
}

