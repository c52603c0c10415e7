// Samples the kernel records (sampler.h, kernel_stacks_on): during the first
// CS_BOOST_NS of sampling, each overflow of a thread's task clock makes the
// kernel walk that thread's frame pointers, as the handler would, and append
// {time, call chain} to the event's ring. No signal is sent and no handler
// runs: on this VM a sample costs the host ~5 µs instead of the ~30 µs of a
// signal's delivery and return (docs/performance.md, "A short command-line
// tool"). This file moves those records into the sample buffers; the scan
// thread does it every scan period, the stopper once more at the end.
// Memory and atomics only: async-signal-safe.
#include "internal.h"

#include <linux/perf_event.h>
#include <string.h>

#define S (&cs_g.smp)

// `len` bytes at ring position `pos`, which may wrap past the end.
static void ring_read(const struct perf_event_mmap_page *pg, uint64_t pos, void *out, size_t len) {
    const unsigned char *data = (const unsigned char *)pg + pg->data_offset;
    uint64_t size = pg->data_size, at = pos % size;
    size_t first = size - at < len ? (size_t)(size - at) : len;
    memcpy(out, data + at, first);
    memcpy((unsigned char *)out + first, data, len - first);
}

void cs_smp_drain(struct cs_smp_thread *t) {
    struct perf_event_mmap_page *pg = t->ring;
    if (!t->kernel_stacks || !pg || pg->data_size == 0) return;
    int tid = atomic_load(&t->tid);
    uint64_t head = __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE), tail = pg->data_tail;
    // header, time, nr, then the chain: PERF_CONTEXT_USER, then the PC and
    // the return addresses (at most perf_event_max_stack, 127 by default).
    uint64_t rec[3 + 8 + CS_SMP_MAX_DEPTH];
    while (head - tail >= sizeof(struct perf_event_header)) {
        struct perf_event_header h;
        ring_read(pg, tail, &h, sizeof h);
        if (h.size < sizeof h || h.size > head - tail) break;
        if (h.type == PERF_RECORD_SAMPLE && h.size >= 3 * sizeof(uint64_t) && h.size <= sizeof rec) {
            ring_read(pg, tail, rec, h.size);
            uint64_t words = h.size / sizeof(uint64_t), nr = rec[2] < words - 3 ? rec[2] : words - 3;
            uint64_t frames[CS_SMP_MAX_DEPTH];
            int n = 0;
            for (uint64_t i = 0; i < nr && n < CS_SMP_MAX_DEPTH; i++)
                if (rec[3 + i] < (uint64_t)PERF_CONTEXT_MAX) frames[n++] = rec[3 + i];
            if (n > 0) cs_smp_record(tid, rec[1], frames, n, CS_SMP_KERNEL | cs_smp_boost_flags(t), 0);
        } else if (h.type == PERF_RECORD_LOST && h.size >= 3 * sizeof(uint64_t)) {
            uint64_t lost[3];   // header, id, lost
            ring_read(pg, tail, lost, sizeof lost);
            atomic_fetch_add(&S->ring_lost, lost[2] > UINT32_MAX ? UINT32_MAX : (uint32_t)lost[2]);
        }
        tail += h.size;
    }
    __atomic_store_n(&pg->data_tail, tail, __ATOMIC_RELEASE);
}

void cs_smp_drain_all(void) {
    for (size_t i = 0; i < CS_SMP_MAX_THREADS; i++) {
        struct cs_smp_thread *t = &S->threads[i];
        if (atomic_load(&t->tid) && t->kernel_stacks) cs_smp_drain(t);
    }
}
