// The off-CPU watcher: why threads were not running, without signalling them.
//
// A thread of ours wakes at the sampling rate, at most 1 kHz (less often, down
// to CS_WATCH_MAX_PERIOD_NS, while its looks find nothing new), and for every
// thread of the process re-reads (pread on files kept open) /proc/self/task/<tid>/schedstat
// — CPU time and run-queue wait, exact — and, when the thread has been off the
// CPU since the last look, its `syscall` file: "running", or the syscall it is blocked in
// with arguments, user stack pointer and program counter (the kernel fills it
// in only for a thread that is off the CPU, and never interrupts it). `stat`
// is read only when the observation changes (state letter, fault counts).
// Observations are run-length encoded into segments (watch.h). Format of what
// the writer makes of them: docs/timeline-format.md, "Off-CPU watch". The
// syscall table and causes: watchcauses.c; descriptors and names: watchfd.c;
// finding the threads: watchfind.c.
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

// ---- observing one thread ----

// A read of the thread's files failed: it ended, or a host that closes every
// descriptor (again and again, for milliseconds at main) closed ours
// between the reopen and this read. If the thread exists (a signal 0 checks,
// sending nothing), this look is lost, not the thread; the next reopens.
static void ended_or_look_lost(struct cs_watch_live *slot, int tid) {
    if (cs_syscall(SYS_tgkill, cs_g.proc.pid, tid, 0) == 0) return;
    cs_watch_thread_gone(slot);
}

// `self`: the thread taking this look when it is not the watcher (a stopper
// taking the last look), else 0.
static void observe(struct cs_watch_live *slot, uint64_t now, int *unwind_budget, int self) {
    struct cs_watch_thread *t = &cs_g.watch.buf->threads[slot->thread];
    char buf[256];
    uint64_t run, wait, slices, sched_run;
    ssize_t n = cs_watch_pread_all(slot->fd_schedstat, buf, sizeof buf);
    // A host that closes every descriptor closed ours: not a thread that
    // ended. One that does so again and again (for milliseconds at main) can
    // close the reopened files before they are read: a few tries.
    for (int tries = 0; n <= 0 && tries < 4 && cs_watch_reopen_slot_files(slot); tries++)
        n = cs_watch_pread_all(slot->fd_schedstat, buf, sizeof buf);
    if (n <= 0) {
        ended_or_look_lost(slot, t->tid);
        return;
    }
    if (cs_parse_schedstat(buf, (size_t)n, &sched_run, &wait, &slices) != 0) {
        cs_watch_thread_gone(slot);
        return;
    }
    struct cs_watch_seg *cur = &slot->cur;
    // Blocked and not scheduled since the last look: still blocked in the
    // same call (a woken thread that has not run yet shows up once it has).
    if (cur->nr != CS_NR_RUNNING && sched_run == slot->sched_run && wait == slot->wait && slices == slot->slices) {
        cur->end_ns = t->last_ns = slot->last_ns = now;
        slot->quiet++;
        // A block the per-look budget skipped: not run since, so its stack is
        // unchanged; unwind it now (an idle dispatch worker and one blocked in
        // the main actor's code differ only by their stacks).
        struct cs_task_syscall sc;
        if (cur->stack < 0 && slot->quiet <= 3 && *unwind_budget > 0 && slot->text_len > 0
            && cs_parse_task_syscall(slot->text, slot->text_len, &sc) == 0 && !sc.running) {
            (*unwind_budget)--;
            cur->stack = cs_watch_blocked_stack(slot, &sc);
        }
        return;
    }
    slot->quiet = 0;
    slot->sched_run = sched_run;
    if (!cs_thread_cpu(t->tid, &run)) {
        cs_watch_thread_gone(slot);
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
    if (cur->nr == CS_NR_RUNNING && drun + dwait + CS_WATCH_BUSY_SLACK_NS >= now - last) {
        // On a CPU or queued for all of the interval: still running. Its
        // syscall file is read only once it has been off the CPU; should it
        // have blocked just now, the next look places that exactly (the
        // counters say how long it ran first).
        cur->end_ns = now;
        cur->run_ns += drun;
        cur->wait_ns += dwait;
        return;
    }
    struct cs_task_syscall sc;
    char text[sizeof slot->text];
    ssize_t len = -1;
    if (t->tid == self) {
        // The looker itself is running: its syscall file would only show its
        // read of that very file.
        memset(&sc, 0, sizeof sc);
        sc.running = true;
        sc.nr = CS_NR_RUNNING;
        len = 0;
    } else if (cs_watch_syscall_fd(slot) >= 0) {
        len = cs_watch_pread_all(slot->fd_syscall, text, sizeof text);
        if (len == 0 || (len < 0 && errno == ESRCH)) { ended_or_look_lost(slot, t->tid); return; }
    }
    if (t->tid != self && (len <= 0 || cs_parse_task_syscall(text, (size_t)len, &sc) != 0)) {
        // No syscall file: tell runnable from blocked by the state letter only.
        char state;
        uint64_t minflt, majflt;
        if (!cs_watch_read_stat(slot, &state, &minflt, &majflt)) { ended_or_look_lost(slot, t->tid); return; }
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

    cs_g.watch.changed = true;
    // A new observation. The interval (last, now] holds the end of the old one
    // and the start of the new one; schedstat says how long the thread was
    // busy in it, which places the boundary: a thread that blocked ran first,
    // a thread that woke ran last.
    char state = sc.running ? 'R' : 'S';
    uint64_t minflt = slot->minflt, majflt = slot->majflt;
    if (cs_watch_read_stat(slot, &state, &minflt, &majflt)) slot->name_ns = now;
    uint64_t dt = now - last, busy = drun + dwait < dt ? drun + dwait : dt;
    uint64_t boundary;
    bool deltas_to_old = false;
    uint64_t again;
    if (cur->nr == CS_NR_RUNNING) { boundary = last + busy; deltas_to_old = true; }
    else if (!sc.running) boundary = last + dt / 2;
    else if (cs_thread_cpu(t->tid, &again) && again != run) boundary = now - busy;   // on a CPU now: woke `busy` ago
    else boundary = last + (dt - busy) / 2;   // queued now: its current wait is not in schedstat yet
    if (boundary < cur->start_ns) boundary = cur->start_ns;
    cur->end_ns = boundary;
    if (deltas_to_old) { cur->run_ns += drun; cur->wait_ns += dwait; }
    cur->minflt += (uint32_t)(minflt - slot->minflt);
    cur->majflt += (uint32_t)(majflt - slot->majflt);
    cs_watch_close_segment(cur);
    slot->minflt = minflt;
    slot->majflt = majflt;
    slot->text_len = (uint16_t)len;
    memcpy(slot->text, text, (size_t)len);
    cs_watch_begin_segment(slot, &sc, state, boundary, now, unwind_budget);
    if (!deltas_to_old) { cur->run_ns = drun; cur->wait_ns = dwait; }
}

// ---- the thread ----

// A thread found blocked and unscheduled this many looks in a row is looked
// at every QUIET_STRIDE-th tick only (not the main thread): parked pool
// threads then cost a quarter. When it wakes, schedstat's wait and CPU time
// still place the boundary (see observe), so only the cause's resolution drops.
#define QUIET_AFTER 16
#define QUIET_STRIDE 4

// Records the number of runnable threads from `now` on.
static void note_runnable(uint64_t now, uint32_t runnable) {
    struct cs_watch *wt = &cs_g.watch;
    uint32_t k = atomic_load_explicit(&wt->nrunnable, memory_order_relaxed);
    if (k >= CS_WATCH_MAX_RUNNABLE) {
        atomic_fetch_add(&wt->dropped_runnable, 1);
        return;
    }
    wt->buf->runnable[k].ns = now;
    wt->buf->runnable[k].n = runnable;
    atomic_store_explicit(&wt->nrunnable, k + 1, memory_order_release);
    wt->last_runnable = runnable;
}

static void tick(uint64_t tick_no, bool last, int self) {
    struct cs_watch *wt = &cs_g.watch;
    struct cs_watch_buffers *b = wt->buf;
    uint64_t now = cs_monotonic_ns();
    // Stacks of threads other than main, per tick. None at all on the last
    // look: the segments it starts end at once, and the main thread is then
    // usually blocked in the writer's wait for this very look (unwinding it
    // loaded the remote unwinder into a short launch's exit).
    int unwind_budget = last ? -1 : 1;
    if (!last) {
        cs_watch_rescan(now, &unwind_budget);
        cs_watch_reread_names(now);
    }
    uint32_t runnable = 0;
    for (int i = 0; i < wt->nlive; i++) {
        struct cs_watch_live *slot = &b->live[i];
        if (slot->thread < 0) continue;
        if (!last && slot->quiet >= QUIET_AFTER && (tick_no + (uint64_t)i) % QUIET_STRIDE != 0
            && b->threads[slot->thread].tid != cs_g.proc.pid)
            continue;
        // One found in this look was read at `now` already.
        if (slot->last_ns != now) observe(slot, now, &unwind_budget, self);
        if (slot->thread >= 0 && slot->cur.nr == CS_NR_RUNNING) runnable++;
    }
    if (runnable != wt->last_runnable) note_runnable(now, runnable);
    wt->ticks++;
    uint64_t us = (cs_monotonic_ns() - now) / 1000;
    b->tick_hist[us < CS_WATCH_TICK_BUCKETS ? us : CS_WATCH_TICK_BUCKETS - 1]++;
}

// Starts watching the main thread, whose files tell what this kernel
// offers; false (with one line on stderr) when the watch cannot work here.
// (Probing the files first cost as much as the watcher's first look; the
// syscall file says so when it is first needed, cs_watch_syscall_fd.)
// A failure is taken for a kernel without the file only when the file is
// not there: a host closing every descriptor as this look opened and read
// them (2 launches in 20 of such a host said "no per-thread schedstat")
// is waited out, up to 4 more tries over 15 ms, well within the 50 ms a
// stopper waits for the watcher; a stop ends the tries at once, quietly.
static bool watch_main_thread(uint64_t now) {
    struct cs_watch *wt = &cs_g.watch;
    int unwind_budget = -1;
    wt->syscall_readable = true;
    struct cs_watch_live *slot;
    // A host that held every descriptor and let them go between our tries
    // is still the cause: the last try's errno alone would not say so.
    bool starved = false;
    for (int attempt = 0;; attempt++) {
        slot = cs_watch_task_dir() >= 0 ? cs_watch_add_thread(cs_g.proc.pid, now, &unwind_budget) : NULL;
        if (slot) break;
        char path[64] = "/proc/self/task/";
        size_t n = strlen(path);
        n += cs_format_u64((uint64_t)cs_g.proc.pid, path + n);
        strcpy(path + n, "/schedstat");
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        int e = fd < 0 ? errno : 0;
        if (fd >= 0) close(fd);
        starved = starved || e == EMFILE || e == ENFILE;
        const char *why = e == ENOENT ? "this kernel has no per-thread schedstat; the off-CPU watch is off"
            : attempt == 4 ? (starved ? "no descriptor left under RLIMIT_NOFILE for /proc/self/task/<tid>/schedstat; the off-CPU watch is off"
                                                           : "cannot read /proc/self/task/<tid>/schedstat; the off-CPU watch is off")
            : NULL;
        uint64_t until = cs_monotonic_ns() + (1000000ull << attempt);
        while (!why && !atomic_load_explicit(&wt->stop, memory_order_acquire) && cs_monotonic_ns() < until)
            cs_futex_wait(&wt->stop, 0, until);
        if (why || atomic_load_explicit(&wt->stop, memory_order_acquire)) {
            if (why) cs_warn(why, NULL);
            cs_watch_close_own(wt->task_dirfd, wt->task_dir_ino);
            return false;
        }
        now = cs_monotonic_ns();
    }
    note_runnable(now, slot->cur.nr == CS_NR_RUNNING);
    return true;
}

// The end of the watch: a last look, so every segment ends when the launch's
// writer asked, and the totals. Runs on whoever holds the looks (`busy`): the
// watcher when it stops on its own, else the stopper (cs_watch_stop), which
// then needs no wake-up of this thread on its exit path.
static void finish(const char *reason) {
    struct cs_watch *wt = &cs_g.watch;
    if (!wt->stop_reason) wt->stop_reason = reason;
    int me = cs_gettid();
    tick(1, true, me == wt->tid ? 0 : me);
    // The writer waits for what follows. A process that is exiting (or dying
    // of a signal) closes our descriptors itself: checking and closing three
    // per thread would only delay its exit.
    enum cs_end_reason end = cs_g.launch.end_reason;
    bool keep_open = wt->stop_reason[0] == 'w' && (end == CS_END_EXIT || end == CS_END_ERROR_EXIT || end == CS_END_SIGNAL);
    struct cs_watch_buffers *b = wt->buf;
    for (int i = 0; i < wt->nlive; i++) {
        struct cs_watch_live *slot = &b->live[i];
        if (slot->thread < 0) continue;
        cs_watch_close_segment(&slot->cur);
        if (!keep_open) cs_watch_close_slot_files(slot);
        slot->thread = -1;
    }
    if (!keep_open) cs_watch_close_own(wt->task_dirfd, wt->task_dir_ino);
    wt->stop_ns = cs_monotonic_ns();
    uint64_t cpu = 0;
    if (cs_thread_cpu(wt->tid, &cpu) && cpu >= wt->cpu0_ns) wt->cpu_ns = cpu - wt->cpu0_ns;
    atomic_store_explicit(&wt->running, 0, memory_order_release);
    cs_futex_wake(&wt->running);
    cs_futex_wake(&wt->busy);
}

// The watcher's end once its last look is taken (by whoever took it): alive
// until then, as the one who takes it reads this thread's CPU clock.
static void *watch_end(void) {
    struct cs_watch *wt = &cs_g.watch;
    while (atomic_load_explicit(&wt->running, memory_order_acquire)) cs_futex_wait(&wt->running, 1, 0);
    return NULL;
}

static void *watch_main(void *arg) {
    (void)arg;
    struct cs_watch *wt = &cs_g.watch;
    cs_syscall(SYS_prctl, PR_SET_NAME, "coldstart-watch", 0, 0, 0);
    cs_own_unplace();
    wt->tid = cs_gettid();
    // Holds the looks (`busy` 1, from cs_watch_start) until its first sleep.
    wt->cpu0_ns = cs_clock_ns(CLOCK_THREAD_CPUTIME_ID);
    uint64_t next = wt->start_ns = cs_monotonic_ns();
    // A foreign /proc found after arming (a pid with the same number in
    // both namespaces; sys.h), by the scan thread or, with no sampler, here:
    // the ids this watch would list and read are not this namespace's.
    cs_proc_check_levels(cs_g.cfg.sampler != CS_SAMPLER_OFF);
    bool foreign = cs_proc_foreign();
    if (foreign) cs_watch_close_own(wt->task_dirfd, wt->task_dir_ino);
    if (foreign || !watch_main_thread(next)) {
        atomic_store_explicit(&wt->running, 0, memory_order_release);
        cs_futex_wake(&wt->running);
        cs_futex_wake(&wt->busy);
        return NULL;
    }
    // Default priority on purpose: at nice 10 or 19 the watcher starved in
    // exactly the launches that need it (more runnable threads than CPUs):
    // 195–500 looks a second instead of 1000, threads found 100 ms late.
    cpu_set_t cpus;
    if (sched_getaffinity(0, sizeof cpus, &cpus) == 0) wt->cpus = CPU_COUNT(&cpus);
    atomic_store_explicit(&wt->looking, 1, memory_order_release);
    uint64_t period = wt->period_ns;
    // The main thread's first read is the first look: a tick right after it
    // would find nothing new, so the next one comes two periods later.
    for (uint64_t n = 0;; n++) {
        if (atomic_load_explicit(&wt->stop, memory_order_acquire)) { finish("writer"); return watch_end(); }
        wt->changed = false;
        if (n > 0) tick(n, false, 0);
        cs_own_tick();
        // Looks that find nothing new come less often, down to one per
        // max_period_ns; anything new brings the base rate back at once. A
        // boundary the counters place (a thread that blocked after running,
        // or that woke and is on a CPU) stays exact; others are known to
        // half a period (docs/performance.md).
        period = wt->changed ? wt->period_ns : period * 2 < wt->max_period_ns ? period * 2 : wt->max_period_ns;
        next += period;
        uint64_t now = cs_monotonic_ns();
        // A host that never calls ready() (a server) would otherwise pay for
        // the watcher until it exits.
        if (now - wt->start_ns > cs_g.cfg.limit_ns) { finish("time-limit"); return NULL; }
        if (atomic_load_explicit(&wt->dropped_segments, memory_order_relaxed) > 0) { finish("buffer-full"); return NULL; }
        if (next <= now) {
            // Late (the machine is busy): skip the missed ticks, no bursts.
            uint64_t behind = (now - next) / period + 1;
            wt->missed_ticks += behind;
            next += behind * period;
        }
        // Between looks a stopper may take them over (cs_watch_stop).
        atomic_store_explicit(&wt->busy, 0, memory_order_release);
        cs_futex_wake(&wt->busy);
        // Between looks, so that a stopper never waits for it; the writer
        // copes with a preparation that races it (timeline.c).
        if (wt->prepares_write && atomic_load_explicit(&wt->main_started, memory_order_acquire)) {
            wt->prepares_write = false;
            cs_timeline_prepare();
        }
        cs_own_exit_if_host_ended();
        // Until the next tick, or until the writer asks it to stop: then at once.
        while (!atomic_load_explicit(&wt->stop, memory_order_acquire) && cs_monotonic_ns() < next)
            cs_futex_wait(&wt->stop, 0, next);
        int idle = 0;
        // The stopper took the last look (busy 2): nothing here is ours any
        // more. Alive until it is done, though: it reads this thread's CPU clock.
        if (!atomic_compare_exchange_strong(&wt->busy, &idle, 1)) return watch_end();
    }
}

// Undoes cs_watch_start: the thread never ran. A stopper waiting for it
// (its thread failed to start) is woken.
static void give_up(void) {
    struct cs_watch *wt = &cs_g.watch;
    cs_watch_close_own(wt->task_dirfd, wt->task_dir_ino);
    munmap(wt->buf, sizeof *wt->buf);
    wt->buf = NULL;
    atomic_store(&wt->busy, 0);
    atomic_store_explicit(&wt->running, 0, memory_order_release);
    cs_futex_wake(&wt->running);
    cs_futex_wake(&wt->busy);
}

void cs_watch_start(void) {
    // Only what must happen before the thread exists runs here, on the host's
    // main thread before its library initializers: probing /proc and touching
    // the buffers is the watcher's own first job (docs/performance.md).
    struct cs_watch *wt = &cs_g.watch;
    if (!cs_g.cfg.watch) return;
    uint64_t hz = cs_g.cfg.hz;
    // At most 1 kHz: a look period of 1 ms already resolves what blocks a
    // launch, and each wake-up costs ~20 µs of CPU on a VM, so a 10 kHz
    // watcher took 200 ms/s and pulled the sampler's own 10 kHz down to
    // 7.5 kHz on 2 CPUs (docs/performance.md).
    if (hz > CS_WATCH_MAX_HZ) hz = CS_WATCH_MAX_HZ;
    wt->requested_hz = hz;
    wt->period_ns = 1000000000ull / hz;
    wt->max_period_ns = wt->period_ns > CS_WATCH_MAX_PERIOD_NS ? wt->period_ns : CS_WATCH_MAX_PERIOD_NS;

    // Three files per watched thread, within the watcher's allowance of
    // Coldstart's share of the descriptor limit (sys.h).
    uint64_t slots = cs_fd_allowance() / 3;
    wt->max_live = slots < CS_WATCH_MAX_LIVE ? (int)slots : CS_WATCH_MAX_LIVE;
    if (cs_watch_task_dir() < 0) {
        cs_warn(cs_out_of_descriptors() ? "no descriptor left under RLIMIT_NOFILE for /proc/self/task; the off-CPU watch is off"
                                        : "cannot open /proc/self/task; the off-CPU watch is off", NULL);
        return;
    }

    void *mem = cs_map_zeroed(sizeof *wt->buf);
    if (!mem) {
        cs_warn("cannot allocate the off-CPU watch buffers; the off-CPU watch is off", NULL);
        cs_watch_close_own(wt->task_dirfd, wt->task_dir_ino);
        return;
    }
    wt->buf = mem;

    // The watcher takes none of the signals the timeline writer runs in
    // (cs_start_thread blocks all but SIGPROF): the writer never runs on the
    // watcher, so it can wait for it.
    atomic_store(&wt->running, 1);
    atomic_store(&wt->busy, 1);
    atomic_store(&wt->deferred, 1);
}

void cs_watch_start_thread(void) {
    if (!atomic_exchange(&cs_g.watch.deferred, 0)) return;
    if (cs_start_thread(watch_main, CS_WATCH_STACK) != 0) {
        cs_warn("cannot start the off-CPU watcher thread; the off-CPU watch is off", NULL);
        give_up();
    }
}

void cs_watch_main_started(void) { atomic_store_explicit(&cs_g.watch.main_started, 1, memory_order_release); }

void cs_watch_stop(void) {
    struct cs_watch *wt = &cs_g.watch;
    // A forked child has the parent's memory but not its watcher thread.
    if (!atomic_load(&wt->running) || (int)cs_syscall(SYS_getpid) != cs_g.proc.pid) return;
    // Its thread not started yet (the sampler's starts it): now it never is.
    if (atomic_exchange(&wt->deferred, 0)) {
        give_up();
        return;
    }
    atomic_store_explicit(&wt->stop, 1, memory_order_release);
    // 50 ms at most on a machine too busy to run the watcher.
    uint64_t deadline = cs_monotonic_ns() + 50000000ull;
    while (atomic_load_explicit(&wt->running, memory_order_acquire) && cs_monotonic_ns() < deadline) {
        // Between two looks (the usual case): take the last look here. Waking
        // the watcher and waiting for it to be scheduled took 0.1–2 ms of a
        // short launch's exit on a busy machine (docs/performance.md).
        int idle = 0;
        if (atomic_compare_exchange_strong(&wt->busy, &idle, 2)) {
            finish("writer");
            // It exits when it next runs, while this thread writes. (Left
            // asleep for the kernel to end with an exiting process, it made
            // the exit 0.15 ms longer: exit_group then waits for it to wake.)
            cs_futex_wake(&wt->stop);
            return;
        }
        // In a look (or setting itself up): it ends that look, sees `stop`
        // and finishes by itself, or gives the looks up.
        cs_futex_wake(&wt->stop);
        cs_futex_wait(&wt->busy, 1, deadline);
    }
}

void cs_watch_fork_child(void) {
    struct cs_watch *wt = &cs_g.watch;
    if (!atomic_exchange(&wt->running, 0) || !wt->buf) return;
    atomic_store(&wt->deferred, 0);
    for (int i = 0; i < wt->nlive; i++) {
        if (wt->buf->live[i].thread >= 0) cs_watch_close_slot_files(&wt->buf->live[i]);
        wt->buf->live[i].thread = -1;
    }
    cs_watch_close_own(wt->task_dirfd, wt->task_dir_ino);
    wt->task_dir_ino = 0;
}

void cs_watch_unmap(void) {
    struct cs_watch *wt = &cs_g.watch;
    if (!wt->buf || atomic_load_explicit(&wt->running, memory_order_acquire)) return;
    munmap(wt->buf, sizeof *wt->buf);
    wt->buf = NULL;
}
