// The fallback's signal handler (smp.h): the sample of the interrupted
// thread, by frame pointers, its cost accounted, its clock re-armed. Runs in
// the host's threads on their stacks, so everything here is
// async-signal-safe: no lock, no allocation, no library call, only what the
// sampler preallocated.
#include "internal.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <ucontext.h>

#define CS_SMP_BUDGET_PERCENT 20          // handler may use this much of the period
#define CS_SMP_WINDOW 256                 // samples per cost check
// The fallback handler's frames below cs_smp_on_signal (take_sample's 1 KiB
// of frames and the walk): measured ~1.3 KiB; the sample is skipped when
// less than this is left.
#define CS_SMP_HANDLER_ROOM 2048

// Lowers the rate when the handler costs more than CS_SMP_BUDGET_PERCENT of
// the period in most samples of a window of CS_SMP_WINDOW. The cost is wall
// time, so a handler preempted on a busy machine looks slow: the median, not
// the mean, decides.
static void account_cost(uint64_t cost, uint64_t period_ns) {
    uint32_t stride = atomic_load(&S->stride);
    uint64_t budget = period_ns * stride * CS_SMP_BUDGET_PERCENT / 100;
    uint32_t over = cost > budget ? atomic_fetch_add(&S->window_over, 1) + 1 : atomic_load(&S->window_over);
    uint32_t count = atomic_fetch_add(&S->window_count, 1) + 1;
    if (count < CS_SMP_WINDOW) return;
    uint32_t expected = count;
    if (!atomic_compare_exchange_strong(&S->window_count, &expected, 0)) return;
    atomic_fetch_sub(&S->window_over, over);
    if (over * 2 > count && S->requested_hz / (stride * 2) >= CS_MIN_HZ)
        atomic_store(&S->stride, stride * 2);
}

// The fallback's sample: frame pointers only, no call into any library, and
// never with less than CS_SMP_HANDLER_ROOM of the interrupted thread's stack
// left below this frame (the thread would die of our handler).
static void take_sample(siginfo_t *si, ucontext_t *uc) {
    uint64_t t0 = cs_monotonic_ns();
    int tid = cs_gettid();
    struct cs_smp_thread *t = cs_sampler_thread(tid, true);
    uint32_t stride = atomic_load(&S->stride);
    uint32_t tick = atomic_fetch_add(&S->ticks, 1);
    if (t && (stride <= 1 || tick % stride == 0)) {
        uint16_t flags = cs_smp_boost_flags(t);
        uint64_t frames[CS_SMP_MAX_DEPTH];
        int n = cs_unwind(uc, t, frames, CS_SMP_MAX_DEPTH);
        uint64_t cost = cs_monotonic_ns() - t0;
        cs_smp_record(tid, t0, frames, n, flags, cost > UINT32_MAX ? UINT32_MAX : (uint32_t)cost);
        account_cost(cost, flags ? S->boost_period_ns : S->period_ns);
    }
    if (S->clock == CS_CLOCK_PERF && t && t->fd == si->si_fd && atomic_load(&S->active)) {
        if (t->ring) {
            // Records are headers only; consume them all so the buffer never fills.
            uint64_t head = __atomic_load_n(&t->ring->data_head, __ATOMIC_ACQUIRE);
            __atomic_store_n(&t->ring->data_tail, head, __ATOMIC_RELEASE);
        } else {
            // Re-arm last, so the time spent in this handler is not itself sampled.
            ioctl(si->si_fd, PERF_EVENT_IOC_REFRESH, 1);
        }
    }
}

void cs_smp_bind_handler_calls(void) {
    int saved = errno;                      // __errno_location
    struct sigaction current;
    sigaction(CS_SMP_ALT_SIGNAL, NULL, &current);  // cs_restore_default's sigaction
    (void)cs_gettid();                      // syscall, also cs_safe_read's
    (void)cs_monotonic_ns();                // clock_gettime
    ioctl(-1, PERF_EVENT_IOC_REFRESH, 1);   // EBADF
    raise(0);                               // signal 0: checked, never sent
    // Sizes the compiler cannot see, so that these stay library calls.
    volatile size_t one = 1;
    uint64_t from = 0, to;
    memcpy(&to, &from, one);
    memset(&to, 0, one);
    errno = saved;
}

void cs_smp_on_signal(int sig, siginfo_t *si, void *ucv) {
    int saved = errno;
    int code = si->si_code;
    bool ours = code == POLL_HUP || code == POLL_IN
        || (code == SI_TIMER && si->si_value.sival_ptr == (void *)(uintptr_t)S->cookie);
    if (!ours) {
        // Another sender's SIGPROF (a kill, an ITIMER_PROF): its default
        // action ends the process, as it would have without us. The signal is
        // blocked in here (sa_mask), so it is delivered once we return.
        if (sig == CS_SMP_ALT_SIGNAL) {
            cs_restore_default(sig);
            raise(sig);
        }
        // Another sender's SIGURG (a socket's urgent data, a kill): its
        // default action is to be ignored, which is what returning does.
        errno = saved;
        return;
    }
    atomic_fetch_add(&S->in_flight, 1);
    if (atomic_load(&S->active)) {
        if (cs_unwind_stack_room(CS_SMP_HANDLER_ROOM)) take_sample(si, ucv);
        else atomic_fetch_add(&S->stack_skips, 1);
    }
    atomic_fetch_sub(&S->in_flight, 1);
    errno = saved;
}
