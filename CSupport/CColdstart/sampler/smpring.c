// The sample buffers' writers: the handler's samples (sampler.c) and those
// the kernel records (smp.h, kernel_stacks_on). During the first
// CS_BOOST_NS of sampling, each overflow of a thread's task clock makes the
// kernel walk that thread's frame pointers, as the handler would, and append
// {time, call chain} to the event's ring. No signal is sent and no handler
// runs: on this VM a sample costs the host ~17 µs, nearly all of it the timer
// interrupt, instead of ~34 µs with a signal's delivery, handler and return
// (docs/performance.md, "The kernel's stacks"). The scan thread moves those
// records into the sample buffers every scan period, the stopper once more at
// the end. Memory and atomics only: async-signal-safe.
#include "internal.h"

#include <linux/perf_event.h>
#include <string.h>


uint16_t cs_smp_boost_flags(struct cs_smp_thread *t) {
    if (!atomic_load_explicit(&t->boosted, memory_order_relaxed)) return 0;
    // Numbered per thread: one in boost_hz / requested_hz is kept if the
    // writer has to thin them.
    uint32_t every = S->boost_hz / S->requested_hz;
    return CS_SMP_BOOSTED | (every == 0 || t->boost_seq++ % every == 0 ? CS_SMP_KEPT : 0);
}

void cs_smp_record(int tid, uint64_t ns, const uint64_t *frames, int n, uint16_t flags, uint32_t cost_ns) {
    uint32_t off = atomic_fetch_add(&S->next_frame, (uint32_t)n);
    uint32_t slot = off + (uint32_t)n <= S->max_frames ? atomic_fetch_add(&S->next_sample, 1) : UINT32_MAX;
    if (slot >= S->max_samples) {
        atomic_fetch_add(&S->dropped, 1);
        return;
    }
    struct cs_sample *smp = &S->samples[slot];
    memcpy(&S->frames[off], frames, (size_t)n * sizeof *frames);
    smp->tid = tid;
    smp->ns = ns;
    smp->frame_off = off;
    smp->nframes = (uint16_t)n;
    smp->flags = flags;
    smp->cost_ns = cost_ns;
    atomic_store_explicit(&smp->committed, 1, memory_order_release);
}

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
