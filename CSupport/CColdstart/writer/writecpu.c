// A CPU of its own for the thread that writes the timeline when the process
// ends (a kill, an exit): the host's other threads go on running until the
// process is gone, and on a machine with more runnable threads than CPUs the
// writer, preempted after each time slice, waited for all of them in turn:
// 2 ms of work took 10–35 ms (docs/performance.md, "Exit, kill and the
// host's signals"). So while it writes, the host's threads are moved off the
// CPU the writer is on, and the writer is pinned to it (only if a host
// thread was moved: below); then every thread gets its own affinity back.
// Unlike a lower priority (which an unprivileged process cannot undo, so the
// threads died slowly) or parking (which needs each thread to run first),
// sched_setaffinity moves a thread at once and is undone by anyone. Coldstart's own threads are moved too: the stop wakes
// the watcher and the scan thread to end, and on the writer's CPU each
// preempted it (measured with sched_switch: two preemptions per exit).
// Raw system calls only: async-signal-safe.
#include "internal.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define C (&cs_g.out.cpus)

// Thread `tid`'s affinity (0: the caller). Async-signal-safe (a system call).
static bool get_affinity(int tid, cpu_set_t *set) {
    // The raw call returns the size it copied.
    return cs_syscall(SYS_sched_getaffinity, tid, sizeof *set, set) > 0;
}

// Moves thread `tid` (0: the caller) at once, running or not. Async-signal-safe.
static bool set_affinity(int tid, const cpu_set_t *set) {
    return cs_syscall(SYS_sched_setaffinity, tid, sizeof *set, set) == 0;
}

// /proc/self/task, opened at the end: ~7 µs of the host's exit (a walk
// through /proc with cold caches), so one of Coldstart's threads opens it
// ahead. Async-signal-safe (open, fstat, fcntl).
void cs_cpu_prepare(void) {
    int expected = 0;
    if (!atomic_compare_exchange_strong(&C->task_state, &expected, 1)) return;
    uint64_t dev, ino;
    int fd = cs_open_known(AT_FDCWD, "/proc/self/task", O_RDONLY | O_DIRECTORY, true, &dev, &ino);
    if (fd >= 0) {
        C->task_fd = fd;
        C->task_dev = dev;
        C->task_ino = ino;
    }
    expected = 1;
    // The writer came first (it then opened its own): this one goes.
    if (!atomic_compare_exchange_strong(&C->task_state, &expected, fd >= 0 ? 2 : 3) && fd >= 0) close(fd);
}

// The directory cs_cpu_prepare opened if it is there and still ours (a host
// that closes every descriptor may have reused the number: then it is the
// host's, neither read nor closed), else -1. Async-signal-safe.
static int take_task_dir(void) {
    if (atomic_exchange(&C->task_state, 3) != 2) return -1;
    struct stat st;
    int fd = C->task_fd;
    if (fstat(fd, &st) != 0 || (uint64_t)st.st_dev != C->task_dev || (uint64_t)st.st_ino != C->task_ino) return -1;
    return fd;
}

void cs_cpu_release(void) {
    int fd = take_task_dir();
    if (fd >= 0) close(fd);
}

// Moves thread `tid` off `cpu` and remembers its affinity; false if it was
// gone, never on that CPU, or pinned to it alone by the host (left alone).
// Async-signal-safe.
static bool move_off(int tid, unsigned cpu) {
    cpu_set_t *saved = &C->masks[C->n];
    if (!get_affinity(tid, saved) || !CPU_ISSET(cpu, saved) || CPU_COUNT(saved) < 2) return false;
    cpu_set_t moved = *saved;
    CPU_CLR(cpu, &moved);
    if (!set_affinity(tid, &moved)) return false;
    C->tids[C->n++] = tid;
    return true;
}

// Async-signal-safe: getcpu, fstat, getdents64 and the affinity calls.
void cs_cpu_isolate(void) {
    C->n = 0;
    C->writer_pinned = false;
    unsigned cpu;
    if (cs_syscall(SYS_getcpu, &cpu, NULL, NULL) != 0 || cpu >= CPU_SETSIZE) return;
    if (!get_affinity(0, &C->writer) || CPU_COUNT(&C->writer) < 2) return;
    int dir = take_task_dir();
    if (dir < 0) dir = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0) return;
    int me = cs_gettid();
    bool host_moved = false;
    // The directory's link count is 2 + the process's threads. When they are
    // this one and Coldstart's alone (a tool with one thread), those are
    // moved by their ids: listing /proc/self/task cost the exit ~10–15 µs.
    int own[CS_OWN_MAX];
    int nown = cs_own_running(me, own);
    struct stat st;
    // Where /proc is another pid namespace's, the ids listed there name
    // other processes' threads for sched_setaffinity, or none (sys.h,
    // cs_proc_foreign): Coldstart's own threads alone, by gettid's ids (none
    // while one is starting), and no pin, as with no host thread moved.
    if (cs_proc_foreign()) {
        for (int i = 0; i < nown; i++) move_off(own[i], cpu);
        close(dir);
        return;
    }
    if (nown >= 0 && fstat(dir, &st) == 0 && st.st_nlink == (nlink_t)(3 + nown)) {
        for (int i = 0; i < nown; i++) move_off(own[i], cpu);
        close(dir);
        return;   // no host thread to keep the writer's CPU from: no pin (below)
    }
    char buf[2048] __attribute__((aligned(8)));
    long n;
    while (C->n < CS_CPU_MOVE_MAX && (n = cs_syscall(SYS_getdents64, dir, buf, sizeof buf)) > 0) {
        for (long off = 0; off < n && C->n < CS_CPU_MOVE_MAX;) {
            const struct cs_dirent64 *d = (const void *)(buf + off);
            off += d->d_reclen;
            int tid = cs_dirent_tid(d);
            if (tid == 0 || tid == me) continue;
            if (move_off(tid, cpu)) host_moved |= !cs_own_thread(tid, false);
        }
    }
    close(dir);
    // The pin keeps the writer on the CPU the host's threads have left. With
    // none of them moved (a tool whose only other threads are Coldstart's,
    // which can no longer come to this CPU) there is nothing to keep it from,
    // and the pin itself cost the writer its turn on a busy machine: with two
    // other processes burning the 2 CPUs, the exit handler took 0.7–2.8 ms
    // (median) with it, 0.28–0.29 ms without (docs/performance.md).
    if (!host_moved) return;
    cpu_set_t mine;
    CPU_ZERO(&mine);
    CPU_SET(cpu, &mine);
    C->writer_pinned = set_affinity(0, &mine);
}

// Async-signal-safe.
void cs_cpu_restore(void) {
    // A thread that has ended since fails with ESRCH: nothing to undo.
    for (int i = 0; i < C->n; i++) set_affinity(C->tids[i], &C->masks[i]);
    C->n = 0;
    if (C->writer_pinned) set_affinity(0, &C->writer);
    C->writer_pinned = false;
}
