// Stopping the sampler (smp.h): closing its window, giving its signals
// back, and unmapping its buffers, each only once nothing can touch what it
// undoes. Called by the writer (end.c), the ready() path and the scan
// thread's early stops. Async-signal-safe (system calls, atomics, futexes).
#include "internal.h"

#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>


bool cs_smp_handler_holds(int sig) {
    struct sigaction cur;
    return sigaction(sig, NULL, &cur) == 0 && (cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == S->handler;
}

void cs_sampler_stop(void) {
    if (!S->started || atomic_load(&S->stopped)) return;
    bool was_active = atomic_exchange(&S->active, 0);
    if (was_active) cs_futex_wake(&S->active);   // the scan thread's sleep
    if (!was_active) {
        // Another thread is stopping: the caller may write the timeline
        // next, so wait (bounded) until the window is closed.
        for (int i = 0; i < 4000 && !atomic_load(&S->stopped); i++) {
            struct timespec ts = {0, 50000};
            nanosleep(&ts, NULL);
        }
        return;
    }
    // The first clock still opening: its opener undoes it (open_clocks), and
    // the main thread's slot is not ours to touch meanwhile.
    int opening = 1;
    bool skip_main = atomic_compare_exchange_strong(&S->opening, &opening, 2);
    struct cs_smp_thread *main_slot = skip_main ? cs_sampler_thread(S->main_tid, false) : NULL;
    // A scan in progress on another thread finishes on its own: woken the
    // moment it lets go of the flag (100 ms at most).
    uint64_t deadline = cs_monotonic_ns() + 100000000ull;
    for (int v; (v = atomic_load(&S->scanning)) != 0 && cs_monotonic_ns() < deadline;) {
        if (v == 1 && !atomic_compare_exchange_strong(&S->scanning, &v, 2)) continue;
        cs_futex_wait(&S->scanning, 2, deadline);
    }
    uint32_t used = atomic_load(&S->nused);
    for (uint32_t k = 0; k < used; k++) {
        struct cs_smp_thread *t = cs_smp_used(k);
        if (t && t != main_slot) cs_smp_silence_thread(t);
    }
    // Handlers already running finish their sample (microseconds); bounded
    // wait. A handler that saw `active` after we cleared it touches nothing,
    // so once none runs the ring buffers can go. If one is still running
    // (preempted for 200 ms), they stay mapped: a leak, never a fault.
    for (int i = 0; i < 4000 && atomic_load(&S->in_flight) > 0; i++) {
        struct timespec ts = {0, 50000};
        nanosleep(&ts, NULL);
    }
    // What the kernel recorded since the last scan, under the scan flag
    // (held until the rings are freed below, so no late scan drains one
    // meanwhile), and not from the slot whose opener may be freeing it. A
    // scan that the wait above gave up on may hold the flag still: then
    // those samples are lost.
    int idle = 0;
    bool flag = atomic_compare_exchange_strong(&S->scanning, &idle, 1);
    // A process that is exiting closes the descriptors and unmaps the rings
    // itself: each munmap here cost a TLB shootdown on the host's exit.
    enum cs_end_reason end = cs_g.launch.end_reason;
    bool exiting = end == CS_END_EXIT || end == CS_END_ERROR_EXIT;
    // The bridge first (a launch that ended before its task clocks opened
    // has only its samples): a thread's from it all precede those of its
    // ring, and the file keeps each thread's in time order.
    if (flag) cs_smp_bridge_close(exiting, true);
    if (flag) cs_smp_drain_all(main_slot);
    if (!exiting && atomic_load(&S->in_flight) == 0) {
        for (uint32_t k = 0; k < used; k++) {
            struct cs_smp_thread *t = cs_smp_used(k);
            if (t && t != main_slot) cs_smp_free_thread(t);
        }
    }
    if (flag) cs_smp_scan_release();
    if (!S->stop_reason) S->stop_reason = "launch-end";
    // After the last handler: every recorded sample lies inside the window.
    S->t_stop = cs_monotonic_ns();
    S->cpu_stop = cs_clock_ns(CLOCK_PROCESS_CPUTIME_ID);
    // Coldstart's own threads are never sampled: their CPU (whole lifetimes,
    // which lie inside the window but for the watcher's first microseconds)
    // must not count towards the rate.
    S->own_cpu = cs_own_cpu_ns();
    cs_rusage_now(&S->ru_stop);
    atomic_store(&S->stopped, true);
}

void cs_sampler_release(void) {
    if (!S->owns_signal || S->released) return;
    // A signal of ours still pending on a thread that blocks it is discarded
    // under SIG_DFL (SIGURG's default action is to ignore it).
    if (cs_smp_handler_holds(CS_SMP_SIGNAL)) cs_restore_default(CS_SMP_SIGNAL);
    // SIGPROF's default action ends the process, so a signal of ours still
    // pending (raised just before its clock stopped, on a thread that was not
    // running then) must not meet it: SIG_IGN discards every pending SIGPROF
    // of every thread (POSIX; Linux flushes them in sigaction), then the
    // default. The clocks are stopped by now, so no new one comes. (One sent
    // by someone else in between is dropped rather than ending the process.)
    if (atomic_exchange(&S->owns_alt, false) && cs_smp_handler_holds(CS_SMP_ALT_SIGNAL)) {
        struct sigaction ign;
        memset(&ign, 0, sizeof ign);
        ign.sa_handler = SIG_IGN;
        sigaction(CS_SMP_ALT_SIGNAL, &ign, NULL);
        cs_restore_default(CS_SMP_ALT_SIGNAL);
    }
    S->owns_signal = false;
    S->released = true;
}

void cs_sampler_unmap(void) {
    // A handler that starts from now on sees `active` clear and touches
    // nothing; a scan still running (one the stop gave up waiting for) may
    // be moving a ring's samples in: then they stay (a leak, never a fault).
    if (!S->started || !atomic_load(&S->stopped) || atomic_load(&S->in_flight) > 0 || atomic_load(&S->scanning) || !S->samples)
        return;
    munmap(S->samples, sizeof(struct cs_sample) * S->max_samples);
    munmap(S->frames, sizeof(uint64_t) * S->max_frames);
    S->samples = NULL;
    S->frames = NULL;
}
