// The watcher's discovery of threads (watcher.c): a slot and open files for
// each thread of the host found in /proc/self/task, and its name re-read
// while it is new. Runs on whoever holds the looks (cs_watch.busy). System
// calls only.
#include "internal.h"

#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

struct cs_watch_live *cs_watch_add_thread(int tid, uint64_t now, int *unwind_budget) {
    struct cs_watch *wt = &cs_g.watch;
    struct cs_watch_buffers *b = wt->buf;
    uint32_t ti = atomic_load_explicit(&wt->nthreads, memory_order_relaxed);
    if (ti >= CS_WATCH_MAX_THREADS) return NULL;
    // A freed slot first; a new one only then (slots above nlive were never
    // touched: a short launch faults in one page of them, not seven).
    struct cs_watch_live *slot = NULL;
    for (int i = 0; i < wt->nlive && !slot; i++)
        if (b->live[i].thread < 0) slot = &b->live[i];
    if (!slot && wt->nlive < wt->max_live) slot = &b->live[wt->nlive++];
    struct cs_watch_thread *t = &b->threads[ti];
    memset(t, 0, sizeof *t);
    t->tid = tid;
    t->first_ns = t->last_ns = now;
    if (!slot) {
        cs_watch_read_comm(tid, t->name);
        // Out of live slots: remember it (so it is not retried) with its totals.
        t->unwatched = true;
        uint64_t ino;
        int fd = cs_watch_open_task_file(tid, "schedstat", &ino);
        char buf[128];
        uint64_t slices;
        if (fd >= 0 && cs_watch_pread_all(fd, buf, sizeof buf) > 0) cs_parse_schedstat(buf, strlen(buf), &t->run_ns, &t->wait_ns, &slices);
        cs_watch_close_own(fd, ino);
        atomic_fetch_add(&wt->dropped_threads, 1);
        atomic_store_explicit(&wt->nthreads, ti + 1, memory_order_release);
        return NULL;
    }
    memset(slot, 0, sizeof *slot);
    slot->thread = (int)ti;   // its stat read names it
    slot->fd_schedstat = cs_watch_open_task_file(tid, "schedstat", &slot->ino_schedstat);
    slot->fd_stat = cs_watch_open_task_file(tid, "stat", &slot->ino_stat);
    slot->fd_syscall = -1;   // once needed (cs_watch_syscall_fd)
    char buf[256];
    ssize_t n = slot->fd_schedstat >= 0 ? cs_watch_pread_all(slot->fd_schedstat, buf, sizeof buf) : -1;
    char state = 'S';
    if (n <= 0 || slot->fd_stat < 0
        || cs_parse_schedstat(buf, (size_t)n, &slot->sched_run, &slot->wait, &slot->slices) != 0
        || !cs_thread_cpu(tid, &slot->run)
        || !cs_watch_read_stat(slot, &state, &slot->minflt, &slot->majflt)) {
        // It exited while we looked.
        cs_watch_close_slot_files(slot);
        slot->thread = -1;
        return NULL;
    }
    slot->last_ns = now;
    slot->name_ns = now;   // the stat read above named it
    slot->name_reads = 10;
    t->run_ns = t->run0_ns = slot->run;
    t->wait_ns = t->wait0_ns = slot->wait;
    t->switches = (uint32_t)slot->slices;
    struct cs_task_syscall sc;
    memset(&sc, 0, sizeof sc);
    sc.running = true;
    // Runnable ('R') is what its syscall file would say as "running": that
    // file is read only for a thread found off the CPU.
    ssize_t len = state != 'R' && cs_watch_syscall_fd(slot) >= 0
        ? cs_watch_pread_all(slot->fd_syscall, slot->text, sizeof slot->text) : -1;
    if (len > 0 && cs_parse_task_syscall(slot->text, (size_t)len, &sc) == 0 && !sc.running) slot->text_len = (uint16_t)len;
    else sc.running = true, sc.nr = CS_NR_RUNNING;
    atomic_store_explicit(&wt->nthreads, ti + 1, memory_order_release);
    // A new thread brings the base period back: found late, the thread that
    // resumed an await after the main thread's was seen only after the span
    // it ended (AsyncLaunchTests, 1 run in ~20). (The main thread, added
    // before the first look, does not: watch_main.)
    wt->changed = true;
    cs_watch_begin_segment(slot, &sc, state, now, now, unwind_budget);
    return slot;
}

static bool known_tid(int tid) {
    struct cs_watch *wt = &cs_g.watch;
    struct cs_watch_buffers *b = wt->buf;
    for (int i = 0; i < wt->nlive; i++)
        if (b->live[i].thread >= 0 && b->threads[b->live[i].thread].tid == tid) return true;
    uint32_t nt = atomic_load_explicit(&wt->nthreads, memory_order_relaxed);
    for (uint32_t i = 0; i < nt; i++)
        if (b->threads[i].unwatched && b->threads[i].tid == tid) return true;
    return false;
}

// Lists /proc/self/task (getdents64 on the directory kept open) and starts
// watching threads not seen before. Its link count, 2 + the process's
// threads, is read at every look: no listing while it says there are none
// but the main thread and Coldstart's (a single-threaded tool's whole
// launch), a listing at once when it grew, else one every
// CS_WATCH_RESCAN_NS (a count alone cannot tell a thread that ended from
// another that began).
void cs_watch_rescan(uint64_t now, int *unwind_budget) {
    struct cs_watch *wt = &cs_g.watch;
    struct cs_watch_buffers *b = wt->buf;
    // A host that closed every descriptor may have reused the number: seeking
    // or reading its directory would move the host's offset. A directory of
    // our own instead.
    struct stat st;
    if (wt->task_dirfd < 0 || fstat(wt->task_dirfd, &st) != 0 || (uint64_t)st.st_ino != wt->task_dir_ino) {
        if (cs_watch_task_dir() < 0 || fstat(wt->task_dirfd, &st) != 0) return;
    }
    uint64_t nlink = (uint64_t)st.st_nlink;
    bool grew = nlink > wt->task_nlink;
    wt->task_nlink = nlink;
    // (One of ours that is starting may not be listed yet: then listed.)
    int own = cs_own_running(0, NULL);
    if (own >= 0 && nlink == 3u + (uint64_t)own) return;
    if (!grew && now < wt->next_rescan_ns) return;
    wt->next_rescan_ns = now + CS_WATCH_RESCAN_NS;
    if (lseek(wt->task_dirfd, 0, SEEK_SET) != 0) return;
    for (;;) {
        long n = cs_syscall(SYS_getdents64, wt->task_dirfd, b->dents, sizeof b->dents);
        if (n <= 0) break;
        for (long off = 0; off < n;) {
            const struct cs_dirent64 *d = (const void *)(b->dents + off);
            off += d->d_reclen;
            int tid = cs_dirent_tid(d);
            // Coldstart's own threads (this one too) are not the host's.
            if (tid == 0 || cs_own_thread(tid, true) || known_tid(tid)) continue;
            cs_watch_add_thread(tid, now, unwind_budget);
        }
    }
}

// Names are often set just after a thread starts: re-read them a few times,
// CS_WATCH_RENAME_NS apart, from the stat file already open (opening `comm`
// each time cost more than the watch of the thread itself over a short
// launch). A stat read for a change of the thread's state names it too.
void cs_watch_reread_names(uint64_t now) {
    struct cs_watch *wt = &cs_g.watch;
    for (int i = 0; i < wt->nlive; i++) {
        struct cs_watch_live *slot = &wt->buf->live[i];
        if (slot->thread < 0 || slot->name_reads == 0 || now - slot->name_ns < CS_WATCH_RENAME_NS) continue;
        slot->name_reads--;
        slot->name_ns = now;
        char state;
        uint64_t minflt, majflt;
        cs_watch_read_stat(slot, &state, &minflt, &majflt);
    }
}
