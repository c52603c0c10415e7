// The bridge: samples of a lone launch before its task clocks can open
// (docs/performance.md, "The bridge"). On a quiet kernel the first
// task-bound perf event waits 10–18 ms (kernel/events/core.c,
// account_event: PERF_ATTACH_TASK takes perf_sched_count, whose first
// taker enables the perf_sched_events static key and waits in
// synchronize_rcu under perf_sched_mutex), and a ~10 ms tool has often
// ended by then. A CPU-wide event (pid -1, one CPU) without context-switch
// records, a branch stack or a cgroup takes none of that, so where the
// kernel lets this process open one (CAP_PERFMON, or perf_event_paranoid
// <= 0) the scan thread opens a cpu-clock event on each online CPU, with the
// task clock's sample format, while the helper (smpclock.c) pays the wait;
// once the task clocks are installed it closes them. A cpu-clock event
// counts wall time on its CPU; with exclude_kernel a period that ends in
// user mode samples whichever task runs there, so a host thread gets a
// sample per period of its user time, as from its task clock. The kernel
// writes every process's samples into these rings: the drain keeps the
// host's and drops the others' at their header (bridge_keeps;
// docs/security.md). Where the kernel refuses, nothing happens and nothing
// is said: the task clocks alone, as before. Every function here but the
// wait runs with the scan flag held (the scan thread, or the stopper), and
// the wait takes it for each drain, so one drainer at a time uses the record
// buffer and the unwinder. System calls, memory and atomics:
// async-signal-safe.
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>


// The online CPUs ("0-3,6"), into `cpus`; their count (0: unreadable, or
// more than `cap`: no bridge on a machine of more CPUs than it holds).
static int online_cpus(int *cpus, int cap) {
    char buf[512];
    ssize_t n = cs_read_small_file("/sys/devices/system/cpu/online", buf, sizeof buf - 1);
    if (n <= 0) return 0;
    const char *p = buf, *end = buf + n;
    int count = 0;
    while (p < end) {
        uint64_t lo, hi;
        const char *q = cs_scan_dec(p, end, &lo);
        if (!q) break;
        hi = lo;
        if (q < end && *q == '-' && !(q = cs_scan_dec(q + 1, end, &hi))) break;
        for (uint64_t c = lo; c <= hi; c++) {
            if (count == cap) return 0;
            cpus[count++] = (int)c;
        }
        if (q >= end || *q != ',') break;
        p = q + 1;
    }
    return count;
}

// Which thread a bridge record (header, pid/tid, time) is kept for, or NULL
// (and counted) when it is dropped: another process's (nothing of it is
// read past these words; its stack copy is left in the ring, to be
// overwritten), Coldstart's own thread's, or a thread's after its task clock
// armed (that clock has it from then on).
static struct cs_smp_thread *bridge_keeps(const uint64_t *ids) {
    int pid = (int)(uint32_t)ids[1], tid = (int)(uint32_t)(ids[1] >> 32);
    if (pid != S->host_pid) {
        S->bridge_foreign++;
        return NULL;
    }
    if (cs_own_thread(tid, false)) return NULL;
    // Its ids are this namespace's, so any of the host's threads would be
    // right; but with a foreign /proc nothing can name them (their names
    // are read by id there) or sample them after the bridge: the main
    // thread alone, as the sampler promises then (sys.h, cs_proc_foreign).
    if (tid != S->main_tid && cs_proc_foreign()) return NULL;
    // NULL: the thread table is full (the thread is counted as missed).
    struct cs_smp_thread *t = cs_sampler_thread(tid, true);
    uint64_t armed = t ? atomic_load(&t->armed_at_ns) : 0;
    if (t && armed && ids[2] >= armed) {
        S->bridge_overlap++;
        return NULL;
    }
    return t;
}

static void bridge_attr(struct perf_event_attr *a, bool regs) {
    memset(a, 0, sizeof *a);
    a->type = PERF_TYPE_SOFTWARE;
    a->size = sizeof *a;
    a->config = PERF_COUNT_SW_CPU_CLOCK;
    a->sample_period = S->bridge_boosted ? S->boost_period_ns : S->period_ns;
    a->disabled = 1;
    a->exclude_kernel = 1;
    a->exclude_hv = 1;
    a->sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CALLCHAIN;
    a->exclude_callchain_kernel = 1;
    a->use_clockid = 1;
    a->clockid = CLOCK_MONOTONIC;
    if (regs) {
        a->sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
        a->sample_regs_user = CS_PERF_REGS_MASK;
        a->sample_stack_user = S->stack_bytes;
    }
}

// Closes what is open; the caller holds the bridge.
static void release_all(void) {
    for (uint32_t i = 0, n = atomic_load(&S->bridge_n); i < n; i++) {
        // Never a descriptor the host has closed and reused.
        cs_smp_close_event(S->bridge_fd[i], S->bridge_id[i]);
        if (S->bridge_ring[i]) munmap(S->bridge_ring[i], S->bridge_ring_bytes);
        S->bridge_ring[i] = NULL;
    }
    atomic_store(&S->bridge_n, 0);
}

// Opens and maps an event on each CPU into the bridge's slots, stopping at
// the first refusal (not allowed here, a CPU gone offline, the locked-memory
// limit: the caller then closes them all, so every CPU or none, silently:
// the task clocks alone) or stop.
static void open_all(struct perf_event_attr *a, const int *cpus, int ncpu) {
    for (int i = 0; i < ncpu && atomic_load(&S->active); i++) {
        int fd = (int)cs_syscall(SYS_perf_event_open, a, -1, cpus[i], -1, PERF_FLAG_FD_CLOEXEC);
        if (fd < 0 && i == 0 && S->bridge_regs && errno != EACCES && errno != EPERM) {
            // A kernel that refuses the registers or the stack copy.
            S->bridge_regs = false;
            bridge_attr(a, false);
            fd = (int)cs_syscall(SYS_perf_event_open, a, -1, cpus[i], -1, PERF_FLAG_FD_CLOEXEC);
        }
        uint64_t id = cs_smp_event_id(fd);
        void *ring = id == 0 ? MAP_FAILED : mmap(NULL, S->bridge_ring_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (ring == MAP_FAILED) {
            cs_smp_close_event(fd, id);
            return;
        }
        uint32_t k = atomic_load(&S->bridge_n);
        S->bridge_fd[k] = fd;
        S->bridge_id[k] = id;
        S->bridge_ring[k] = ring;
        atomic_store(&S->bridge_n, k + 1);
    }
}

void cs_smp_bridge_open(void) {
    int cpus[CS_SMP_BRIDGE_CPUS];
    int ncpu = online_cpus(cpus, CS_SMP_BRIDGE_CPUS);
    // Its descriptors count towards the sampler's allowance (the threads'
    // clocks arm within what it leaves): a bridge over only some CPUs would
    // sample the host only where it happens to run, so none at all.
    if (ncpu == 0 || (uint32_t)ncpu >= S->max_live) return;
    S->host_pid = (int)cs_syscall(SYS_getpid);
    S->bridge_boosted = atomic_load(&S->boost_on);
    S->bridge_regs = S->unwinder != CS_UNW_FP;
    // 256 KiB a CPU holds ~58 samples of a 4 KiB stack: 19 ms of a busy
    // CPU at 3 kHz, drained every millisecond; less on a machine of many CPUs.
    size_t pages = ncpu <= 4 ? 64 : 16;
    S->bridge_ring_bytes = (uint32_t)((1 + pages) * 4096);
    struct perf_event_attr a;
    bridge_attr(&a, S->bridge_regs);
    cs_smp_open_begin();
    open_all(&a, cpus, ncpu);
    cs_smp_open_end();
    if (atomic_load(&S->bridge_n) < (uint32_t)ncpu) {
        release_all();   // refused, or a stop came meanwhile
        return;
    }
    // From the first enable: every sample of a host thread on any CPU is
    // recorded from here on.
    S->bridge_open_ns = cs_monotonic_ns();
    for (uint32_t i = 0; i < (uint32_t)ncpu; i++) {
        if (ioctl(S->bridge_fd[i], PERF_EVENT_IOC_ENABLE, 0) != 0) {
            for (uint32_t k = 0; k < i; k++) ioctl(S->bridge_fd[k], PERF_EVENT_IOC_DISABLE, 0);
            release_all();
            S->bridge_open_ns = 0;
            return;
        }
    }
    S->bridge_cpus = ncpu;
}

void cs_smp_bridge_drain(void) {
    for (uint32_t i = 0, n = atomic_load(&S->bridge_n); i < n; i++)
        cs_smp_drain_ring(S->bridge_ring[i], S->bridge_regs, NULL, bridge_keeps);
}

// The rings emptied every millisecond (a CPU kept busy by another process
// fills one in ~19 ms), each time under the scan flag, which a stop thus
// waits for a drain's length at most. `hold_ns` (tests only:
// cs_test_bridge_hold_ns) holds the task clocks back that long from here,
// bridge or not, as a quiet kernel would on any kernel.
void cs_smp_bridge_wait(uint64_t hold_ns) {
    uint64_t now = cs_monotonic_ns(), deadline = now + CS_SMP_BRIDGE_WAIT_NS;
    uint64_t hold_until = now + hold_ns;
    while (atomic_load(&S->active) && (now = cs_monotonic_ns()) < deadline) {
        bool bridged = atomic_load(&S->bridge_n) > 0, held = now < hold_until;
        if (!bridged && !held) break;
        bool done = !bridged || cs_smp_warm_wait(1000000ull);
        if (done && !held) break;
        int expected = 0;
        if (bridged && atomic_compare_exchange_strong(&S->scanning, &expected, 1)) {
            if (atomic_load(&S->active)) cs_smp_bridge_drain();
            cs_smp_scan_release();
        }
        if (done) cs_sleep_ns(1000000ull);
    }
}

void cs_smp_bridge_close(bool exiting, bool drain) {
    uint32_t n = atomic_load(&S->bridge_n);
    if (n == 0) return;
    for (uint32_t i = 0; i < n; i++) {
        if (cs_smp_event_id(S->bridge_fd[i]) == S->bridge_id[i]) ioctl(S->bridge_fd[i], PERF_EVENT_IOC_DISABLE, 0);
    }
    S->bridge_close_ns = cs_monotonic_ns();
    if (drain) cs_smp_bridge_drain();
    // An exiting process closes and unmaps them itself (each munmap here
    // would cost its exit a TLB shootdown).
    if (exiting) atomic_store(&S->bridge_n, 0);
    else release_all();
}
