// The sampler across a fork of the host's (pthread_atfork, core.c): the
// fork waits for a perf event being opened to be recorded, and the child
// closes every event the parent's sampler held (smp.h; why: smpclock.c,
// "forks"). Async-signal-safe: system calls and atomics only.
#include "internal.h"

void cs_sampler_fork_prepare(void) {
    atomic_fetch_add(&S->forks, 1);
    // An open and its record take microseconds; a scan thread kept off the
    // CPU may take longer, and the fork does not wait for it past 10 ms.
    uint64_t deadline = 0;
    while (atomic_load(&S->fd_opens)) {
        uint64_t now = cs_monotonic_ns();
        if (deadline == 0) deadline = now + 10000000ull;
        if (now >= deadline) return;
        cs_sleep_ns(20000);
    }
}

void cs_sampler_fork_parent(void) { atomic_fetch_sub(&S->forks, 1); }

void cs_sampler_fork_child(void) {
    atomic_store(&S->forks, 0);
    atomic_store(&S->fd_opens, 0);
    atomic_store(&S->active, 0);
    // Its children are the parent's; its rings the kernel did not copy
    // (VM_DONTCOPY): forgotten, never unmapped here.
    S->warm_pid = 0;
    atomic_store(&S->warm_child, 0);
    for (uint32_t k = 0, n = atomic_load(&S->nused); k < n; k++) {
        struct cs_smp_thread *t = cs_smp_used(k);
        if (!t) continue;
        cs_smp_close_event(t->fd, t->event_id);
        t->fd = -1;
        t->ring = NULL;
        atomic_store(&t->armed, 0);
    }
    for (uint32_t i = 0, n = atomic_load(&S->bridge_n); i < n; i++) {
        cs_smp_close_event(S->bridge_fd[i], S->bridge_id[i]);
        S->bridge_ring[i] = NULL;
    }
    atomic_store(&S->bridge_n, 0);
}

