// The sampler's thread table (smp.h): a slot per thread, found by tid or
// by %fs base, and the scan of /proc/self/task that arms new threads. Lock-free
// and async-signal-safe.
#include "internal.h"

#include <fcntl.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>


struct cs_smp_thread *cs_sampler_thread(int tid, bool insert) {
    if (tid <= 0) return NULL;
    uint32_t mask = CS_SMP_MAX_THREADS - 1;
    uint32_t h = ((uint32_t)tid * 2654435761u) & mask;
    for (uint32_t i = 0; i < CS_SMP_MAX_THREADS; i++) {
        struct cs_smp_thread *t = &S->threads[(h + i) & mask];
        int cur = atomic_load_explicit(&t->tid, memory_order_acquire);
        if (cur == tid) return t;
        if (cur == 0) {
            if (!insert) return NULL;
            int expected = 0;
            if (atomic_compare_exchange_strong(&t->tid, &expected, tid)) {
                t->fd = -1;
                uint32_t k = atomic_fetch_add(&S->nused, 1);
                atomic_store_explicit(&S->used[k], (uint16_t)((h + i) & mask) + 1, memory_order_release);
                return t;
            }
            if (expected == tid) return t;
        }
    }
    return NULL;
}

struct cs_smp_thread *cs_smp_used(uint32_t k) {
    uint16_t v = atomic_load_explicit(&S->used[k], memory_order_acquire);
    return v ? &S->threads[v - 1] : NULL;
}

size_t cs_sampler_add_threads(int *ids, size_t n, size_t cap) {
    if (!S->started) return n;
    for (uint32_t k = 0, used = atomic_load(&S->nused); k < used && n < cap; k++) {
        const struct cs_smp_thread *t = cs_smp_used(k);
        int tid = t ? atomic_load(&t->tid) : 0;
        if (tid == 0 || !atomic_load(&t->sampled) || cs_own_thread(tid, false)) continue;
        bool seen = false;
        for (size_t k = 0; k < n && !seen; k++) seen = ids[k] == tid;
        if (!seen) ids[n++] = tid;
    }
    return n;
}

void cs_smp_drain_all(const struct cs_smp_thread *except) {
    for (uint32_t k = 0, used = atomic_load(&S->nused); k < used; k++) {
        struct cs_smp_thread *t = cs_smp_used(k);
        if (t && t != except && t->kernel_stacks) cs_smp_drain(t);
    }
}

// ---- the scan flag ----

void cs_smp_scan_release(void) {
    if (atomic_exchange(&S->scanning, 0) == 2) cs_futex_wake(&S->scanning);
}

// ---- discovering threads ----

uint32_t cs_smp_drop_alt_threads(void) {
    uint32_t dropped = 0;
    for (uint32_t k = 0, used = atomic_load(&S->nused); k < used; k++) {
        struct cs_smp_thread *t = cs_smp_used(k);
        if (!t || !atomic_load(&t->armed) || t->signo != CS_SMP_ALT_SIGNAL) continue;
        cs_smp_silence_thread(t);
        if (!t->blocking) atomic_fetch_add(&S->threads_blocking, 1);
        t->blocking = true;
        dropped++;
    }
    return dropped;
}

void cs_sampler_scan_threads(void) {
    if (!atomic_load(&S->active) || S->clock == CS_CLOCK_WALL) return;
    int expected = 0;
    if (!atomic_compare_exchange_strong(&S->scanning, &expected, 1)) return;
    atomic_store(&S->last_scan_ns, cs_monotonic_ns());
    cs_smp_drain_all(NULL);
    // Opened per scan, not kept: a host that closes descriptors it does not
    // know could otherwise get this number reused for its own file, and our
    // seek would move that file's offset. Even so the host may close it and
    // open its own file on the number between our open and our close: known
    // by its path, it is read and closed only while it is still the directory
    // (with a DescriptorHost, once in ~400 launches the host's file was closed
    // and the next scan's directory dup2'd in its place).
    // Not at all where /proc is another pid namespace's (sys.h,
    // cs_proc_foreign): its ids opened as perf events here named other
    // processes (issue 35 item 8). The main thread's clock, opened by its
    // gettid, is the one sampled; its ring is still drained above.
    uint64_t dev = 0, ino = 0;
    int dir = atomic_load(&S->active) && !cs_proc_foreign()
        ? cs_open_known(AT_FDCWD, "/proc/self/task", O_RDONLY | O_DIRECTORY, false, &dev, &ino) : -1;
    char buf[2048] __attribute__((aligned(8)));
    uint32_t gen = ++S->scan_gen;
    if (dir >= 0) {
        long n;
        while ((n = cs_syscall(SYS_getdents64, dir, buf, sizeof buf)) > 0) {
            for (long off = 0; off < n;) {
                const struct cs_dirent64 *d = (const void *)(buf + off);
                off += d->d_reclen;
                int tid = cs_dirent_tid(d);
                if (tid == 0) continue;
                // Listed, so alive: marked before the own-thread check, which
                // skips every thread while one of ours is starting. (Marked
                // after it, the main thread was taken for gone when the first
                // scan met the watcher's start, then armed again: counted
                // twice in threadsSampled, unsampled for a scan period.)
                struct cs_smp_thread *known = cs_sampler_thread(tid, false);
                if (known) known->seen = gen;
                if (cs_own_thread(tid, true)) continue;   // Coldstart's own: never sampled
                // A stop that gave up waiting for this scan (preempted for
                // 100 ms on a loaded machine) has silenced every clock: arm
                // none again.
                if (!atomic_load(&S->active)) continue;
                struct cs_smp_thread *t = cs_sampler_thread(tid, true);
                if (!t) { atomic_fetch_add(&S->thread_overflow, 1); continue; }
                t->seen = gen;
                // -2: arming failed; a descriptor: dropped from SIGPROF (it
                // goes at the stop, once no handler can read its ring).
                if (atomic_load(&t->armed) || t->fd != -1) continue;
                // The kernel's stacks need no signal: every thread is sampled.
                bool by_kernel = atomic_load(&S->kernel_stacks_on);
                int signo = by_kernel ? 0 : cs_smp_signal_for(tid);
                if (signo == 0 && !by_kernel) {
                    // A signal of ours would wait for it, or be taken by its
                    // sigwait/sigtimedwait: not now. (A thread blocks every
                    // signal for its first instants in pthread_create too, so
                    // look again at the next scan; it counts as blocking only
                    // when a second scan finds it so.)
                    if (!t->blocking && ++t->blocked_scans >= 2) {
                        atomic_fetch_add(&S->threads_blocking, 1);
                        t->blocking = true;
                    }
                    continue;
                }
                if (atomic_load(&S->threads_live) + atomic_load(&S->bridge_n) >= S->max_live || cs_smp_arm_thread(t, tid, signo) != 0) {
                    // Gone already (ESRCH), out of descriptors, or at our
                    // share of them: do not retry.
                    cs_smp_disarm_thread(t);
                    t->fd = -2;
                    atomic_fetch_add(&S->thread_overflow, 1);
                } else if (!atomic_load(&S->active)) {
                    // The stop came in between: no signal after it. (Its
                    // descriptor stays open: a handler may be reading its ring.)
                    cs_smp_silence_thread(t);
                }
            }
        }
        // A complete listing: a thread armed before and not listed now has
        // ended. Its descriptor and ring go now (no handler can run on a
        // thread that is gone), so a host making many short threads keeps
        // its descriptors; the slot can serve a new thread with that id.
        if (n == 0) {
            for (uint32_t k = 0, used = atomic_load(&S->nused); k < used; k++) {
                struct cs_smp_thread *t = cs_smp_used(k);
                if (!t || t->seen == gen || !atomic_load(&t->armed)) continue;
                cs_smp_silence_thread(t);
                cs_smp_drain(t);
                cs_smp_disarm_thread(t);
                t->fd = -1;
            }
        }
        if (cs_fd_is(dir, dev, ino)) close(dir);
    }
    cs_smp_scan_release();
}

