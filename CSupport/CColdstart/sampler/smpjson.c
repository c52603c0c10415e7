// The sampling sections of the timeline (docs/timeline-format.md,
// "Sampling sections"): "sampling", "modules", "samples" and, with the
// offline unwinder, "rawStacks", from the sampler's buffers and the module
// table (modules.c). Runs in the timeline
// writer, which may be a signal handler: memory reads and the JSON emitter
// only, nothing allocates.
#include "internal.h"
#include "include/coldstart_testing.h"

#include <string.h>

// Value at quantile q (percent) of the handler-cost histogram (10 ns buckets).
static uint64_t quantile(uint64_t count, uint32_t percent, uint64_t max) {
    uint64_t rank = (count * percent + 99) / 100, seen = 0;
    if (rank == 0) return 0;
    for (size_t b = 0; b < CS_SMP_COST_BUCKETS; b++) {
        seen += S->cost_hist[b];
        if (seen >= rank) return b * 10 + 5;
    }
    return max;
}

// The perf clock's samples: its task clocks', or only the bridge's when the
// launch ended before they opened (a sample is one period of user CPU
// either way, sampling.bridge says which).
static bool perf_sampled(void) {
    return S->clock == CS_CLOCK_PERF || (S->clock == CS_CLOCK_NONE && S->bridge_cpus > 0);
}

static const char *clock_name(void) {
    if (perf_sampled()) return "perf-task-clock";
    switch (S->clock) {
    case CS_CLOCK_POSIX: return "posix-cpu-timer";
    case CS_CLOCK_WALL: return "wall-timer";
    default: return "none";
    }
}

// Whether sample `smp` is in the file: recorded, and, when the launch
// outlived a boosted start, a boosted sample only if it is one of those kept,
// so that every sample in the file stands for 1/requested_hz of CPU time.
static bool written(const struct cs_sample *smp) {
    if (!atomic_load_explicit(&smp->committed, memory_order_acquire)) return false;
    return S->boost_end_ns == 0 || !(smp->flags & CS_SMP_BOOSTED) || (smp->flags & CS_SMP_KEPT);
}

// The rate the file's samples were taken at: the boost's, when the launch
// ended inside it (nothing was thinned).
static uint64_t file_hz(void) {
    return S->boost_hz && S->boost_end_ns == 0 ? S->boost_hz : S->requested_hz;
}

// Why perf_event_open was refused, when the POSIX timers replaced it
// (docs/timeline-format.md, "perfRefused"): what a report needs to name the
// cause and the remedy, as sampler.c read it at the refusal.
static void write_perf_refusal(struct cs_jw *w) {
    if (!S->perf_errno) return;
    cs_jw_raw(w, ",\"perfRefused\":{\"errno\":"); cs_jw_u64(w, (uint64_t)S->perf_errno);
    if (S->perf_paranoid >= 0) { cs_jw_raw(w, ",\"paranoid\":"); cs_jw_u64(w, (uint64_t)S->perf_paranoid); }
    if (S->perf_seccomp >= 0) {
        cs_jw_raw(w, ",\"seccomp\":"); cs_jw_u64(w, (uint64_t)S->perf_seccomp);
        cs_jw_raw(w, ",\"capPerfmon\":"); cs_jw_raw(w, S->perf_caps >> 38 & 1 ? "true" : "false");
        cs_jw_raw(w, ",\"capSysAdmin\":"); cs_jw_raw(w, S->perf_caps >> 21 & 1 ? "true" : "false");
    }
    cs_jw_raw(w, "}");
}

static void write_sampling(struct cs_jw *w, uint64_t start_ns, uint32_t nsamples) {
    memset(S->cost_hist, 0, sizeof S->cost_hist);
    uint64_t recorded = 0, by_kernel = 0, by_dwarf = 0, chain_tails = 0, max_cost = 0, total_cost = 0;
    for (uint32_t i = 0; i < nsamples; i++) {
        const struct cs_sample *smp = &S->samples[i];
        if (!written(smp)) continue;
        recorded++;
        // No handler ran for these: the handler's figures are the others'.
        if (smp->flags & CS_SMP_KERNEL) {
            by_kernel++;
            by_dwarf += (smp->flags & CS_SMP_DWARF) != 0;
            chain_tails += (smp->flags & CS_SMP_CHAIN_TAIL) != 0;
            continue;
        }
        uint32_t b = smp->cost_ns / 10;
        S->cost_hist[b < CS_SMP_COST_BUCKETS ? b : CS_SMP_COST_BUCKETS]++;
        if (smp->cost_ns > max_cost) max_cost = smp->cost_ns;
        total_cost += smp->cost_ns;
    }
    uint64_t dropped = atomic_load(&S->dropped);
    uint64_t cpu = S->cpu_stop > S->cpu_start ? S->cpu_stop - S->cpu_start : 0;
    uint64_t user = S->ru_stop.utime_ns - S->ru_start.utime_ns, sys = S->ru_stop.stime_ns - S->ru_start.stime_ns;
    // Per second of CPU time (user + system, exact). The perf clock skips the
    // periods that end in the kernel (exclude_kernel), so a launch that spends
    // a share of its time in the kernel gets that share fewer samples. The
    // user/system split (getrusage: the exact total split by tick counts, a
    // few percent off over a short launch) is written for readers who want a
    // rate per user second. The wall timer's rate is per second of wall time.
    uint64_t sampled_cpu = cpu > S->own_cpu ? cpu - S->own_cpu : 0;
    uint64_t counted = S->clock == CS_CLOCK_WALL ? S->t_stop - S->t_start : sampled_cpu;
    uint32_t stride = atomic_load(&S->stride);
    cs_jw_raw(w, ",\n\"sampling\":{\"clock\":\""); cs_jw_raw(w, clock_name());
    cs_jw_raw(w, "\",\"unwinder\":\"");
    cs_jw_raw(w, S->unwinder == CS_UNW_LIBUNWIND ? "libunwind" : S->unwinder == CS_UNW_OFFLINE ? "offline" : "frame-pointer");
    cs_jw_raw(w, "\"");
    if (atomic_load_explicit(&S->unw_verified, memory_order_acquire)) {
        cs_jw_raw(w, ",\"unwinderReadyNs\":"); cs_jw_i64(w, (int64_t)S->unw_ready_ns - (int64_t)start_ns);
    }
    write_perf_refusal(w);
    cs_jw_raw(w, ",\"requestedHz\":"); cs_jw_u64(w, file_hz());
    if (S->boost_hz) {
        cs_jw_raw(w, ",\"boost\":{\"hz\":"); cs_jw_u64(w, S->boost_hz);
        // Until the clocks were switched back, or the end of sampling.
        uint64_t until = S->boost_end_ns ? S->boost_end_ns : S->t_stop;
        cs_jw_raw(w, ",\"untilNs\":"); cs_jw_i64(w, (int64_t)until - (int64_t)start_ns);
        cs_jw_raw(w, ",\"thinned\":"); cs_jw_raw(w, S->boost_end_ns ? "true" : "false");
        cs_jw_raw(w, ",\"afterHz\":"); cs_jw_u64(w, S->requested_hz);
        cs_jw_raw(w, "}");
    }
    if (perf_sampled()) {
        cs_jw_raw(w, ",\"kernelStacks\":{\"samples\":"); cs_jw_u64(w, by_kernel);
        cs_jw_raw(w, ",\"lost\":"); cs_jw_u64(w, atomic_load(&S->ring_lost));
        // Never switched to signals since the DWARF unwinder moved off the
        // host's threads (files before that switched after 50 ms).
        cs_jw_raw(w, ",\"untilNs\":null");
        if (S->unwinder == CS_UNW_LIBUNWIND) {
            cs_jw_raw(w, ",\"stackBytes\":"); cs_jw_u64(w, S->stack_bytes);
            cs_jw_raw(w, ",\"dwarf\":"); cs_jw_u64(w, by_dwarf);
            cs_jw_raw(w, ",\"chainTails\":"); cs_jw_u64(w, chain_tails);
            cs_jw_raw(w, ",\"unwindNs\":"); cs_jw_u64(w, S->unwind_ns);
        }
        if (S->unwinder == CS_UNW_OFFLINE) {
            // Copies kept for the CLI, and samples whose copy the pool had no room for.
            cs_jw_raw(w, ",\"stackBytes\":"); cs_jw_u64(w, S->stack_bytes);
            cs_jw_raw(w, ",\"raw\":"); cs_jw_u64(w, S->raw_kept);
            cs_jw_raw(w, ",\"rawDropped\":"); cs_jw_u64(w, S->raw_dropped);
        }
        cs_jw_raw(w, "}");
    }
    if (S->bridge_cpus > 0) {
        // The CPU-wide events that sampled the host while a quiet kernel held
        // its task clocks back (smpbridge.c): its samples are among the others.
        cs_jw_raw(w, ",\"bridge\":{\"cpus\":"); cs_jw_u64(w, (uint64_t)S->bridge_cpus);
        cs_jw_raw(w, ",\"openNs\":"); cs_jw_i64(w, (int64_t)S->bridge_open_ns - (int64_t)start_ns);
        cs_jw_raw(w, ",\"closeNs\":");
        if (S->bridge_close_ns) cs_jw_i64(w, (int64_t)S->bridge_close_ns - (int64_t)start_ns);
        else cs_jw_raw(w, "null");
        cs_jw_raw(w, ",\"samples\":"); cs_jw_u64(w, S->bridge_kept);
        cs_jw_raw(w, ",\"overlap\":"); cs_jw_u64(w, S->bridge_overlap);
        cs_jw_raw(w, ",\"foreign\":"); cs_jw_u64(w, S->bridge_foreign);
        cs_jw_raw(w, ",\"lost\":"); cs_jw_u64(w, S->bridge_lost);
        cs_jw_raw(w, "}");
    }
    cs_jw_raw(w, ",\"effectiveHz\":");
    // The clock's rate: the samples a full ring lost were taken too.
    uint64_t lost = atomic_load(&S->ring_lost);
    cs_jw_milli(w, counted ? (int64_t)((recorded + dropped + lost) * 1000000000000ull / counted) : 0);
    cs_jw_raw(w, ",\"loweredHz\":");
    if (stride > 1) cs_jw_milli(w, (int64_t)(file_hz() * 1000ull / stride));
    else cs_jw_raw(w, "null");
    cs_jw_raw(w, ",\"startNs\":"); cs_jw_i64(w, (int64_t)S->t_start - (int64_t)start_ns);
    if (S->armed_ns) { cs_jw_raw(w, ",\"clockArmedNs\":"); cs_jw_i64(w, (int64_t)S->armed_ns - (int64_t)start_ns); }
    if (S->scan_began_ns) { cs_jw_raw(w, ",\"scanBeganNs\":"); cs_jw_i64(w, (int64_t)S->scan_began_ns - (int64_t)start_ns); }
    cs_jw_raw(w, ",\"stopNs\":"); cs_jw_i64(w, (int64_t)S->t_stop - (int64_t)start_ns);
    cs_jw_raw(w, ",\"cpuNs\":"); cs_jw_u64(w, cpu);
    cs_jw_raw(w, ",\"coldstartCpuNs\":"); cs_jw_u64(w, S->own_cpu);
    cs_jw_raw(w, ",\"userNs\":"); cs_jw_u64(w, user);
    cs_jw_raw(w, ",\"systemNs\":"); cs_jw_u64(w, sys);

    cs_jw_raw(w, ",\"samples\":"); cs_jw_u64(w, recorded);
    cs_jw_raw(w, ",\"dropped\":"); cs_jw_u64(w, dropped);
    cs_jw_raw(w, ",\"maxSamples\":"); cs_jw_u64(w, S->max_samples);
    cs_jw_raw(w, ",\"threads\":\""); cs_jw_raw(w, S->clock == CS_CLOCK_WALL ? "main" : "per-thread");
    cs_jw_raw(w, "\",\"stopReason\":\""); cs_jw_raw(w, S->stop_reason ? S->stop_reason : "launch-end");
    cs_jw_raw(w, "\",\"threadsSampled\":"); cs_jw_u64(w, atomic_load(&S->threads_armed));
    cs_jw_raw(w, ",\"threadsBlockingSignal\":"); cs_jw_u64(w, atomic_load(&S->threads_blocking));
    cs_jw_raw(w, ",\"threadsMissed\":"); cs_jw_u64(w, atomic_load(&S->thread_overflow));
    cs_jw_raw(w, ",\"unwindFailures\":"); cs_jw_u64(w, atomic_load(&S->unwind_failures));
    cs_jw_raw(w, ",\"stackSkips\":"); cs_jw_u64(w, atomic_load(&S->stack_skips));
    cs_jw_raw(w, ",\"handlerNs\":{\"median\":"); cs_jw_u64(w, quantile(recorded, 50, max_cost));
    cs_jw_raw(w, ",\"p99\":"); cs_jw_u64(w, quantile(recorded, 99, max_cost));
    cs_jw_raw(w, ",\"max\":"); cs_jw_u64(w, max_cost);
    // The sum, not a quantile: first-sight unwinds (50–400 µs) are rare but
    // most of what the handlers cost a launch (the report's estimate without
    // profiling).
    cs_jw_raw(w, ",\"totalNs\":"); cs_jw_u64(w, total_cost);
    cs_jw_raw(w, "}}");
}

void cs_modules_write(struct cs_jw *w) {
    cs_jw_raw(w, ",\n\"modules\":[");
    for (uint32_t i = 0; i < S->nmodules; i++) {
        const struct cs_module *m = &S->modules[i];
        cs_jw_raw(w, i ? ",\n{\"path\":" : "\n{\"path\":");
        cs_jw_cstr(w, m->path);
        cs_jw_raw(w, ",\"buildId\":");
        if (m->build_id_len) {
            char id[2 * sizeof m->build_id + 1];
            cs_hex(m->build_id, m->build_id_len, id);
            cs_jw_str(w, id, 2 * (size_t)m->build_id_len);
        } else {
            cs_jw_raw(w, "null");
        }
        cs_jw_raw(w, ",\"base\":"); cs_jw_u64(w, m->base);
        cs_jw_raw(w, ",\"start\":"); cs_jw_u64(w, m->start);
        cs_jw_raw(w, ",\"end\":"); cs_jw_u64(w, m->end);
        cs_jw_raw(w, "}");
    }
    cs_jw_raw(w, "]");
}

static void write_samples(struct cs_jw *w, uint64_t start_ns, uint32_t nsamples) {
    cs_jw_raw(w, ",\n\"samples\":[");
    bool first = true;
    for (uint32_t i = 0; i < nsamples; i++) {
        const struct cs_sample *smp = &S->samples[i];
        if (!written(smp)) continue;
        cs_jw_raw(w, first ? "\n[" : ",\n[");
        first = false;
        cs_jw_i64(w, (int64_t)smp->ns - (int64_t)start_ns);
        cs_jw_raw(w, ",");
        cs_jw_i64(w, smp->tid);
        cs_jw_raw(w, ",[");
        for (uint32_t f = 0; f < smp->nframes; f++) {
            uint64_t a = S->frames[smp->frame_off + f];
            // Return addresses point after the call: look the caller up at a − 1.
            int m = cs_module_of(f == 0 ? a : a - 1);
            // "<module>,<offset>" in one piece: most of what the writer formats.
            char pair[48];
            size_t k = 0;
            if (f) pair[k++] = ',';
            if (m < 0) pair[k++] = '-';
            k += cs_format_u64(m < 0 ? (uint64_t)-(int64_t)m : (uint64_t)m, pair + k);
            pair[k++] = ',';
            k += cs_format_u64(m >= 0 ? a - S->modules[m].base : a, pair + k);
            cs_jw_bytes(w, pair, k);
        }
        cs_jw_raw(w, "]]");
    }
    cs_jw_raw(w, "]");
}

// Base64 (RFC 4648, padded) of `n` bytes, in pieces of a small buffer: the
// writer may be a signal handler on a thread with little stack.
static void write_base64(struct cs_jw *w, const unsigned char *p, size_t n) {
    static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char out[512];
    size_t k = 0;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) | (i + 2 < n ? p[i + 2] : 0);
        out[k++] = abc[v >> 18 & 63];
        out[k++] = abc[v >> 12 & 63];
        out[k++] = i + 1 < n ? abc[v >> 6 & 63] : '=';
        out[k++] = i + 2 < n ? abc[v & 63] : '=';
        if (k == sizeof out) {
            cs_jw_bytes(w, out, k);
            k = 0;
        }
    }
    cs_jw_bytes(w, out, k);
}

bool cs_sampler_has_raw(void) {
    return S->started && atomic_load_explicit(&S->raw_used, memory_order_acquire) > 0;
}

static size_t put_varint(unsigned char *out, uint64_t v) {
    size_t n = 0;
    for (; v >= 0x80; v >>= 7) out[n++] = (unsigned char)(v | 0x80);
    out[n++] = (unsigned char)v;
    return n;
}

// The copy's 8-byte word j, read bytewise: a copy need not start 8-aligned.
static uint64_t word_at(const unsigned char *p, size_t j) {
    uint64_t v;
    memcpy(&v, p + 8 * j, 8);
    return v;
}

// What an elided word of the copy is (docs/timeline-format.md, "packed"):
// measured on the release fixtures, a copy of a thread that sampled the
// same frames a moment ago shares nearly every word with its previous copy
// (the burn: 73–109 bytes a copy against 1.6 kB with zero runs alone), while
// a short tool's copies share fewer words and are one fifth zeros, where
// eliding both kinds wins.
enum { PACK_ZERO = 0, PACK_REF = 1, PACK_BOTH = 2 };

size_t cs_raw_pack(const unsigned char *copy, uint32_t len, const unsigned char *ref, uint32_t ref_len,
                   uint32_t dist, int64_t off, unsigned char *out) {
    size_t nw = len / 8, rw = ref ? ref_len / 8 : 0;
    // The reference's word at the address of the copy's word j, if any.
#define REF_HAS(j) (ref && (int64_t)(j) + off >= 0 && (uint64_t)((int64_t)(j) + off) < rw)
    size_t zero = 0, same = 0, either = 0;
    for (size_t j = 0; j < nw; j++) {
        uint64_t v = word_at(copy, j);
        bool z = v == 0, s = REF_HAS(j) && word_at(ref, (size_t)((int64_t)j + off)) == v;
        zero += z;
        same += s;
        either += z || s;
    }
    // Bytes each way: one literal bit per word, 8 per literal word, and for
    // PACK_BOTH one more bit per elided word saying which.
    size_t by_zero = 8 * (nw - zero), by_ref = 8 * (nw - same), by_both = 8 * (nw - either) + (either + 7) / 8;
    int mode = PACK_ZERO;
    if (ref && by_ref <= by_zero && by_ref <= by_both) mode = PACK_REF;
    else if (ref && by_both < by_zero) mode = PACK_BOTH;
    size_t n = 0;
    out[n++] = (unsigned char)mode;
    n += put_varint(out + n, len);
    if (mode != PACK_ZERO) {
        n += put_varint(out + n, dist);
        n += put_varint(out + n, off >= 0 ? (uint64_t)off << 1 : ((uint64_t)(-(off + 1)) << 1) | 1);
    }
    unsigned char *lit_bits = out + n, *src_bits = lit_bits + (nw + 7) / 8;
    size_t nsrc = mode == PACK_BOTH ? (either + 7) / 8 : 0;
    memset(lit_bits, 0, (nw + 7) / 8 + nsrc);
    unsigned char *lits = src_bits + nsrc;
    size_t nlit = 0, k = 0;
    for (size_t j = 0; j < nw; j++) {
        uint64_t v = word_at(copy, j);
        bool s = REF_HAS(j) && word_at(ref, (size_t)((int64_t)j + off)) == v;
        bool elided = mode == PACK_ZERO ? v == 0 : mode == PACK_REF ? s : (v == 0 || s);
        if (!elided) {
            lit_bits[j / 8] |= (unsigned char)(1u << (j % 8));
            memcpy(lits + 8 * nlit++, &v, 8);
            continue;
        }
        if (mode == PACK_BOTH) {
            if (v != 0) src_bits[k / 8] |= (unsigned char)(1u << (k % 8));
            k++;
        }
    }
#undef REF_HAS
    n = (size_t)(lits - out) + 8 * nlit;
    memcpy(out + n, copy + 8 * nw, len % 8);
    return n + len % 8;
}

// The writer's packing buffer and its per-thread references: static, as the
// writer may be a signal handler on a thread with little stack, and runs
// once.
static unsigned char pack_out[CS_RAW_PACK_MAX(CS_MAX_STACK_BYTES)];
#define PACK_THREADS 64
static struct pack_ref {
    int32_t tid;
    uint32_t row;                       // its row in "packed"
    const struct cs_smp_raw *raw;
} pack_refs[PACK_THREADS];

// `"rawStacks"`: each kept copy whose sample is in the file, as
// [sample index in "samples", [registers], "base64 of the packed copy"] in
// "packed" (cs_raw_pack, against the thread's previous row). The pool lists
// copies in their samples' slot order, so one walk over the slots numbers
// them as write_samples does. "stacks" (whole copies, older files) stays
// empty, so that an older reader keeps the chains rather than unwinding
// packed bytes as a copy.
static void write_raw_stacks(struct cs_jw *w, uint32_t nsamples) {
    size_t used = atomic_load_explicit(&S->raw_used, memory_order_acquire);
    if (!used) return;
    cs_jw_raw(w, ",\n\"rawStacks\":{\"arch\":\"" CS_ARCH_NAME "\",\"stacks\":[],\"packed\":[");
    uint32_t slot = 0, index = 0, row = 0, nrefs = 0;
    for (size_t at = 0; at < used;) {
        const struct cs_smp_raw *r = (const void *)(S->raw + at);
        at += (sizeof *r + r->len + 7) & ~(size_t)7;
        for (; slot < r->slot && slot < nsamples; slot++) index += written(&S->samples[slot]);
        if (r->slot >= nsamples || slot != r->slot || !written(&S->samples[slot])) continue;
        int32_t tid = S->samples[slot].tid;
        struct pack_ref *ref = NULL;
        for (uint32_t i = 0; i < nrefs && !ref; i++)
            if (pack_refs[i].tid == tid) ref = &pack_refs[i];
        // The previous copy is a reference only when both start on the same
        // 8-byte grid, so that words at one address line up.
        const struct cs_smp_raw *prev = ref ? ref->raw : NULL;
        uint64_t sp = r->regs[CS_PERF_SP];
        if (prev && (sp - prev->regs[CS_PERF_SP]) % 8 != 0) prev = NULL;
        // The kernel copies at most the stackBytes asked for, never more
        // than CS_MAX_STACK_BYTES: pack_out's bound.
        uint32_t len = r->len > CS_MAX_STACK_BYTES ? CS_MAX_STACK_BYTES : r->len;
        size_t n = cs_raw_pack((const unsigned char *)(r + 1), len, prev ? (const unsigned char *)(prev + 1) : NULL,
                               prev ? prev->len : 0, prev ? row - ref->row : 0,
                               prev ? (int64_t)(sp - prev->regs[CS_PERF_SP]) / 8 : 0, pack_out);
        cs_jw_raw(w, row ? ",\n[" : "\n[");
        cs_jw_u64(w, index);
        cs_jw_raw(w, ",[");
        for (int i = 0; i < CS_PERF_NREGS; i++) {
            if (i) cs_jw_raw(w, ",");
            cs_jw_u64(w, r->regs[i]);
        }
        cs_jw_raw(w, "],\"");
        write_base64(w, pack_out, n);
        cs_jw_raw(w, "\"]");
        // A thread past the table's 64 takes another's entry (fewer
        // references, the same bytes).
        if (!ref) ref = &pack_refs[nrefs < PACK_THREADS ? nrefs++ : row % PACK_THREADS];
        *ref = (struct pack_ref){.tid = tid, .row = row, .raw = r};
        row++;
    }
    cs_jw_raw(w, "]}");
}

void cs_sampler_write(struct cs_jw *w, uint64_t start_ns, bool raw) {
    if (!S->started) return;
    // A stop that gave up waiting for the scan thread (preempted for 100 ms)
    // could find it filling the table: then no modules (frames keep their
    // absolute addresses) rather than a torn table.
    if (atomic_load(&S->scanning)) S->nmodules = 0;
    else cs_modules_for_writer();
    uint32_t n = atomic_load(&S->next_sample);
    if (n > S->max_samples) n = S->max_samples;
    write_sampling(w, start_ns, n);
    cs_modules_write(w);
    write_samples(w, start_ns, n);
    if (raw) write_raw_stacks(w, n);
}
