// The sample buffers' writers: the signal fallback's samples (sampler.c)
// and those the kernel records (smp.h, kernel_stacks_on). Each overflow of a
// thread's task clock makes the kernel append {tid, time, its frame-pointer
// call chain, the user registers, the top of the user stack} to the event's
// ring. No signal is sent and no handler runs (docs/performance.md, "The
// kernel's stacks"). The scan thread moves those records into the sample
// buffers every scan period, unwinding each (smpunwind.c), the stopper once
// more at the end. With the offline unwinder nothing is unwound: each keeps
// the kernel's chain, and its registers and stack copy are copied into the
// raw pool for the timeline. Memory, atomics and the unwinder's
// process_vm_readv: async-signal-safe; calls smpunwind.c only.
#include "internal.h"

#include <linux/perf_event.h>
#include <string.h>


// A boosted sample's flags, numbered per thread: one in boost_hz /
// requested_hz is kept if the writer has to thin them. Async-signal-safe.
static uint16_t boosted_flags(struct cs_smp_thread *t) {
    uint32_t every = S->boost_hz / S->requested_hz;
    return CS_SMP_BOOSTED | (every == 0 || t->boost_seq++ % every == 0 ? CS_SMP_KEPT : 0);
}

uint16_t cs_smp_boost_flags(struct cs_smp_thread *t) {
    return atomic_load_explicit(&t->boosted, memory_order_relaxed) ? boosted_flags(t) : 0;
}

uint32_t cs_smp_record(int tid, uint64_t ns, const uint64_t *frames, int n, uint16_t flags, uint32_t cost_ns) {
    uint32_t off = atomic_fetch_add(&S->next_frame, (uint32_t)n);
    uint32_t slot = off + (uint32_t)n <= S->max_frames ? atomic_fetch_add(&S->next_sample, 1) : UINT32_MAX;
    if (slot >= S->max_samples) {
        atomic_fetch_add(&S->dropped, 1);
        return UINT32_MAX;
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
    return slot;
}

// The offline unwinder's copy of sample `slot`: its registers and the
// stack bytes, one memcpy each into the raw pool, published to the writer
// with a release store. A full pool counts the sample (it keeps its chain).
static void keep_raw(uint32_t slot, const uint64_t *regs, const unsigned char *stack, uint32_t len) {
    size_t used = atomic_load_explicit(&S->raw_used, memory_order_relaxed);
    size_t need = (sizeof(struct cs_smp_raw) + len + 7) & ~(size_t)7;
    if (used + need > CS_SMP_RAW_BYTES) {
        S->raw_dropped++;
        return;
    }
    struct cs_smp_raw *r = (void *)(S->raw + used);
    r->slot = slot;
    r->len = len;
    memcpy(r->regs, regs, sizeof r->regs);
    memcpy(r + 1, stack, len);
    S->raw_kept++;
    atomic_store_explicit(&S->raw_used, used + need, memory_order_release);
}

// `len` bytes at ring position `pos`, which may wrap past the end.
static void ring_read(const struct perf_event_mmap_page *pg, uint64_t pos, void *out, size_t len) {
    const unsigned char *data = (const unsigned char *)pg + pg->data_offset;
    uint64_t size = pg->data_size, at = pos % size;
    size_t first = size - at < len ? (size_t)(size - at) : len;
    memcpy(out, data + at, first);
    memcpy((unsigned char *)out + first, data, len - first);
}

// One sample record, as smpclock.c asks for it: TID, TIME, CALLCHAIN, then
// with kernel_regs REGS_USER and STACK_USER. Its fields point into `rec`.
struct parsed {
    int tid;
    uint64_t ns;
    uint64_t chain[CS_SMP_MAX_DEPTH];
    int nchain;
    const uint64_t *regs;             // NULL: none (a kernel thread's sample, or frame pointers only)
    const unsigned char *stack;
    uint32_t stack_len;
};

static bool parse(const uint64_t *rec, size_t words, bool regs, struct parsed *p) {
    size_t at = 1;   // after the header
    if (words < at + 3) return false;
    p->tid = (int)(uint32_t)(rec[at++] >> 32);
    p->ns = rec[at++];
    uint64_t nr = rec[at++];
    if (nr > words - at) return false;
    p->nchain = 0;
    // PERF_CONTEXT_USER, then the PC and the return addresses.
    for (uint64_t i = 0; i < nr; i++)
        if (rec[at + i] < (uint64_t)PERF_CONTEXT_MAX && p->nchain < CS_SMP_MAX_DEPTH) p->chain[p->nchain++] = rec[at + i];
    at += nr;
    p->regs = NULL;
    p->stack = NULL;
    p->stack_len = 0;
    if (!regs) return true;
    if (at >= words) return false;
    uint64_t abi = rec[at++];
    if (abi != 0) {
        if (at + CS_PERF_NREGS > words) return false;
        p->regs = &rec[at];
        at += CS_PERF_NREGS;
    }
    if (at >= words) return false;
    uint64_t size = rec[at++];
    if (size > 0) {
        if (size % 8 || at + size / 8 + 1 > words) return false;
        uint64_t dyn = rec[at + size / 8];
        p->stack = (const unsigned char *)&rec[at];
        p->stack_len = (uint32_t)(dyn < size ? dyn : size);
    }
    if (!p->stack) p->regs = NULL;
    return true;
}

// Unwinds one record and keeps it as a sample; with its kernel chain only
// once the stopper's DWARF budget is spent.
static void keep(const uint64_t *rec, size_t words, bool regs, uint16_t flags) {
    struct parsed p;
    if (!parse(rec, words, regs, &p)) return;
    // A backlog (the records kept until the unwinder loaded) takes the scan
    // thread milliseconds: its CPU placed on the phases as it goes. Not at
    // the stop, which may run on the host's exit path.
    if (!S->final_until_ns) cs_own_tick();
    if (S->unwinder == CS_UNW_OFFLINE) {
        // The kernel's chain now (what the file shows if the CLI cannot
        // unwind), the copy for the CLI's DWARF unwinding.
        uint64_t chain[CS_SMP_MAX_DEPTH];
        uint16_t how;
        int n = cs_unwind_sample(NULL, NULL, 0, p.chain, p.nchain, chain, CS_SMP_MAX_DEPTH, &how);
        uint32_t slot = n > 0 ? cs_smp_record(p.tid, p.ns, chain, n, flags | CS_SMP_KERNEL, 0) : UINT32_MAX;
        if (slot != UINT32_MAX && p.regs) keep_raw(slot, p.regs, p.stack, p.stack_len);
        return;
    }
    if (S->final_until_ns && p.regs && cs_clock_ns(CLOCK_THREAD_CPUTIME_ID) >= S->final_until_ns) p.regs = NULL;
    uint64_t frames[CS_SMP_MAX_DEPTH];
    uint16_t how = 0;
    int n = cs_unwind_sample(p.regs, p.stack, p.stack_len, p.chain, p.nchain, frames, CS_SMP_MAX_DEPTH, &how);
    if (n > 0) cs_smp_record(p.tid, p.ns, frames, n, flags | how | CS_SMP_KERNEL, 0);
}

// Keeps a record for the unwinder, which is not loaded yet; false if full.
static bool defer(int tid, uint16_t flags, const uint64_t *rec, uint32_t size) {
    size_t need = sizeof(struct cs_smp_pending) + size;
    if (!S->pending || S->pending_used + need > CS_SMP_PENDING_BYTES) return false;
    struct cs_smp_pending *e = (void *)(S->pending + S->pending_used);
    e->size = size;
    e->tid = tid;
    e->flags = flags;
    memcpy(e + 1, rec, size);
    S->pending_used += (need + 7) & ~(size_t)7;
    return true;
}

void cs_smp_drain_pending(bool final) {
    if (S->pending_done == S->pending_used) return;
    if (!final && !atomic_load_explicit(&S->unw_verified, memory_order_acquire)) return;
    while (S->pending_done < S->pending_used) {
        const struct cs_smp_pending *e = (const void *)(S->pending + S->pending_done);
        keep((const uint64_t *)(e + 1), e->size / sizeof(uint64_t), true, e->flags);
        S->pending_done += (sizeof *e + e->size + 7) & ~(size_t)7;
    }
    S->pending_used = S->pending_done = 0;
}

void cs_smp_drain_ring(struct perf_event_mmap_page *pg, bool regs, struct cs_smp_thread *t,
                       struct cs_smp_thread *(*keeps)(const uint64_t *ids)) {
    if (!pg || pg->data_size == 0 || !S->rec) return;
    // The launch's end (the stopper): nothing waits for an unwinder any more,
    // and the host's exit waits for this thread: DWARF for at most
    // CS_SMP_FINAL_UNWIND_NS of its CPU, the kernel's chains after.
    bool final = !atomic_load(&S->active);
    if (final && !S->final_until_ns) S->final_until_ns = cs_clock_ns(CLOCK_THREAD_CPUTIME_ID) + CS_SMP_FINAL_UNWIND_NS;
    bool ready = atomic_load_explicit(&S->unw_verified, memory_order_acquire);
    cs_smp_drain_pending(final);
    uint64_t head = __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE), tail = pg->data_tail;
    uint64_t *rec = S->rec;
    while (head - tail >= sizeof(struct perf_event_header)) {
        struct perf_event_header h;
        ring_read(pg, tail, &h, sizeof h);
        if (h.size < sizeof h || h.size > head - tail) break;
        if (h.type == PERF_RECORD_SAMPLE && h.size % 8 == 0) {
            // A bridge record's pid and tid first: another process's goes
            // no further than this header.
            struct cs_smp_thread *to = t;
            if (!t) {
                uint64_t ids[3];
                ring_read(pg, tail, ids, h.size >= sizeof ids ? sizeof ids : sizeof h);
                to = h.size >= sizeof ids ? keeps(ids) : NULL;
            }
            if (to) {
                ring_read(pg, tail, rec, h.size);
                // A bridge sample is boosted as the thread's own clock would have
                // been, numbered with its samples: the writer's thinning keeps one rate.
                uint16_t flags = t ? cs_smp_boost_flags(t) : S->bridge_boosted ? boosted_flags(to) : 0;
                if (!t) S->bridge_kept++;
                int tid = atomic_load(&to->tid);
                if (!regs || ready || final || S->unwinder != CS_UNW_LIBUNWIND || !defer(tid, flags, rec, h.size))
                    keep(rec, h.size / sizeof(uint64_t), regs, flags);
            }
        } else if (h.type == PERF_RECORD_LOST && h.size >= 3 * sizeof(uint64_t)) {
            uint64_t lost[3];   // header, id, lost
            ring_read(pg, tail, lost, sizeof lost);
            uint32_t n = lost[2] > UINT32_MAX ? UINT32_MAX : (uint32_t)lost[2];
            // A bridge ring's losses may be anyone's: not counted as the host's.
            if (t) atomic_fetch_add(&S->ring_lost, n);
            else S->bridge_lost += n;
        }
        tail += h.size;
    }
    __atomic_store_n(&pg->data_tail, tail, __ATOMIC_RELEASE);
}

void cs_smp_drain(struct cs_smp_thread *t) {
    if (t->kernel_stacks) cs_smp_drain_ring(t->ring, t->kernel_regs, t, NULL);
}
