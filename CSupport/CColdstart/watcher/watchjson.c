// Serialises the off-CPU watch (docs/timeline-format.md, "Off-CPU watch").
// Part of the timeline writer: async-signal-safe, no allocation. Paths and
// thread names were resolved by the watcher; this only copies them out.
#include "internal.h"

#include <string.h>

#define STATE_TID_BASE 1000000000   // state track of thread T is tid T + this

static const char hex_digits[] = "0123456789abcdef";

static size_t format_hex(uint64_t v, char *out) {
    char tmp[16];
    size_t n = 0;
    do tmp[n++] = hex_digits[v & 15]; while ((v >>= 4) != 0);
    out[0] = '0';
    out[1] = 'x';
    for (size_t i = 0; i < n; i++) out[2 + i] = tmp[n - 1 - i];
    out[2 + n] = 0;
    return 2 + n;
}

static void write_hex(struct cs_jw *w, uint64_t v) {
    char s[24];
    size_t n = format_hex(v, s);
    cs_jw_str(w, s, n);
}

static void path_of(int32_t path, const char **s, size_t *n) {
    const struct cs_watch_buffers *b = cs_g.watch.buf;
    *s = NULL;
    *n = 0;
    if (path < 0 || (uint32_t)path >= atomic_load_explicit(&cs_g.watch.npaths, memory_order_acquire)) return;
    *s = b->path_bytes + b->paths[path].off;
    *n = b->paths[path].len;
}

// "read /tmp/x", "futex 0x7f…", "page fault", "running", …: what the state
// track shows for a segment.
static void write_label(struct cs_jw *w, const struct cs_watch_seg *seg) {
    char label[CS_WATCH_MAX_PATH + 64];
    size_t n = 0;
    const char *name = seg->nr >= 0 ? cs_watch_syscall_name(seg->nr) : NULL;
    switch (seg->cause) {
    case CS_CAUSE_RUNNING: cs_jw_raw(w, "\"running\""); return;
    case CS_CAUSE_PAGE_FAULT: cs_jw_raw(w, "\"page fault\""); return;
    case CS_CAUSE_STOPPED: cs_jw_raw(w, "\"stopped\""); return;
    default: break;
    }
    if (seg->nr == CS_NR_UNKNOWN) {
        cs_jw_raw(w, "\"blocked\"");
        return;
    }
    if (name) {
        n = strlen(name);
        memcpy(label, name, n);
    } else {
        memcpy(label, "syscall ", 8);
        n = 8 + cs_format_u64((uint64_t)(int64_t)seg->nr, label + 8);
    }
    const char *path;
    size_t plen;
    path_of(seg->path, &path, &plen);
    if (path) {
        label[n++] = ' ';
        memcpy(label + n, path, plen);
        n += plen;
    } else if (seg->nr == 202) {   // futex: the lock's address
        label[n++] = ' ';
        n += format_hex(seg->args[0], label + n);
    }
    cs_jw_str(w, label, n);
}

void cs_watch_write_trace_events(struct cs_jw *w, int pid, uint64_t start) {
    struct cs_watch *wt = &cs_g.watch;
    const struct cs_watch_buffers *b = wt->buf;
    if (!b || !atomic_load_explicit(&wt->looking, memory_order_acquire)) return;
    uint32_t nt = atomic_load_explicit(&wt->nthreads, memory_order_acquire);
    for (uint32_t i = 0; i < nt; i++) {
        const struct cs_watch_thread *t = &b->threads[i];
        char name[64] = "state: ";
        size_t n = 7;
        size_t k = t->tid == pid ? 4 : strnlen(t->name, sizeof t->name);
        memcpy(name + n, t->tid == pid ? "main" : t->name, k);
        n += k;
        memcpy(name + n, " (", 2);
        n += 2;
        n += cs_format_u64((uint64_t)t->tid, name + n);
        name[n++] = ')';
        cs_jw_raw(w, ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":");
        cs_jw_i64(w, pid);
        cs_jw_raw(w, ",\"tid\":"); cs_jw_i64(w, STATE_TID_BASE + (int64_t)t->tid);
        cs_jw_raw(w, ",\"args\":{\"name\":"); cs_jw_str(w, name, n); cs_jw_raw(w, "}}");
    }
    uint32_t ns = atomic_load_explicit(&wt->nsegs, memory_order_acquire);
    for (uint32_t i = 0; i < ns; i++) {
        const struct cs_watch_seg *seg = &b->segs[i];
        cs_jw_raw(w, ",\n{\"ph\":\"X\",\"cat\":\"state\",\"pid\":");
        cs_jw_i64(w, pid);
        cs_jw_raw(w, ",\"tid\":"); cs_jw_i64(w, STATE_TID_BASE + (int64_t)seg->tid);
        cs_jw_raw(w, ",\"ts\":"); cs_jw_milli(w, (int64_t)(seg->start_ns - start));
        cs_jw_raw(w, ",\"dur\":"); cs_jw_milli(w, (int64_t)(seg->end_ns - seg->start_ns));
        cs_jw_raw(w, ",\"name\":"); write_label(w, seg);
        cs_jw_raw(w, ",\"args\":{\"cause\":\""); cs_jw_raw(w, cs_watch_cause_name(seg->cause));
        cs_jw_raw(w, "\",\"cpuMs\":"); cs_jw_milli(w, (int64_t)(seg->run_ns / 1000));
        cs_jw_raw(w, ",\"runQueueMs\":"); cs_jw_milli(w, (int64_t)(seg->wait_ns / 1000));
        cs_jw_raw(w, ",\"majorFaults\":"); cs_jw_u64(w, seg->majflt);
        cs_jw_raw(w, "}}");
    }
    uint32_t nr = atomic_load_explicit(&wt->nrunnable, memory_order_acquire);
    for (uint32_t i = 0; i < nr; i++) {
        cs_jw_raw(w, ",\n{\"ph\":\"C\",\"name\":\"runnable threads\",\"pid\":");
        cs_jw_i64(w, pid);
        cs_jw_raw(w, ",\"tid\":0,\"ts\":"); cs_jw_milli(w, (int64_t)(b->runnable[i].ns - start));
        cs_jw_raw(w, ",\"args\":{\"threads\":"); cs_jw_u64(w, b->runnable[i].n); cs_jw_raw(w, "}}");
    }
}

// Tick cost percentile from the 1 µs histogram, in ns (bucket midpoint).
static uint64_t tick_percentile(const uint32_t *hist, uint64_t total, uint64_t per_mille) {
    uint64_t want = (total * per_mille + 999) / 1000, seen = 0;
    for (int i = 0; i < CS_WATCH_TICK_BUCKETS; i++) {
        seen += hist[i];
        if (seen >= want && want > 0) return (uint64_t)i * 1000 + 500;
    }
    return 0;
}

// A frame as samples encode them: module index and ELF virtual address, or
// -1 and the absolute address. Return addresses (every frame but the leaf)
// are matched at address − 1: the call may be a function's last instruction.
static void write_frame(struct cs_jw *w, uint64_t address, bool leaf) {
    int m = cs_module_of(leaf ? address : address - 1);
    cs_jw_i64(w, m);
    cs_jw_raw(w, ",");
    cs_jw_u64(w, m >= 0 ? address - cs_g.smp.modules[m].base : address);
}

void cs_watch_write_section(struct cs_jw *w, uint64_t start) {
    struct cs_watch *wt = &cs_g.watch;
    const struct cs_watch_buffers *b = wt->buf;
    if (!b || !atomic_load_explicit(&wt->looking, memory_order_acquire)) return;
    bool stopped = !atomic_load_explicit(&wt->running, memory_order_acquire);
    uint64_t stop = stopped ? wt->stop_ns : cs_monotonic_ns();
    uint64_t ticks = wt->ticks, span = stop > wt->start_ns ? stop - wt->start_ns : 1;
    // Stacks use the sampler's module table, loaded by its writer just before;
    // without sampling, this section loads and writes it.
    if (!cs_g.smp.started && atomic_load_explicit(&wt->nstacks, memory_order_acquire) > 0) {
        cs_modules_load();
        cs_modules_write(w);
    }
    cs_jw_raw(w, ",\n\"watch\":{\"requestedHz\":"); cs_jw_u64(w, wt->requested_hz);
    cs_jw_raw(w, ",\"effectiveHz\":"); cs_jw_milli(w, (int64_t)(ticks * 1000000000000ull / span));
    cs_jw_raw(w, ",\"startNs\":"); cs_jw_i64(w, (int64_t)(wt->start_ns - start));
    cs_jw_raw(w, ",\"stopNs\":"); cs_jw_i64(w, (int64_t)(stop - start));
    cs_jw_raw(w, ",\"complete\":"); cs_jw_raw(w, stopped ? "true" : "false");
    cs_jw_raw(w, ",\"stopReason\":\""); cs_jw_raw(w, stopped && wt->stop_reason ? wt->stop_reason : "writer"); cs_jw_raw(w, "\"");
    cs_jw_raw(w, ",\"ticks\":"); cs_jw_u64(w, ticks);
    cs_jw_raw(w, ",\"missedTicks\":"); cs_jw_u64(w, wt->missed_ticks);
    cs_jw_raw(w, ",\"cpuNs\":"); cs_jw_u64(w, stopped ? wt->cpu_ns : 0);
    cs_jw_raw(w, ",\"tickNs\":{\"median\":"); cs_jw_u64(w, tick_percentile(b->tick_hist, ticks, 500));
    cs_jw_raw(w, ",\"p99\":"); cs_jw_u64(w, tick_percentile(b->tick_hist, ticks, 990));
    cs_jw_raw(w, "},\"cpus\":"); cs_jw_i64(w, wt->cpus);
    cs_jw_raw(w, ",\"syscallFile\":"); cs_jw_raw(w, wt->syscall_readable ? "true" : "false");
    cs_jw_raw(w, ",\"unwinder\":\"");
    cs_jw_raw(w, wt->unwind_state > 0 ? "libunwind-remote" : wt->unwind_state < 0 ? "unavailable" : "none-needed");
    cs_jw_raw(w, "\",\"unwinds\":"); cs_jw_u64(w, wt->unwinds);
    cs_jw_raw(w, ",\"unwindNs\":"); cs_jw_u64(w, wt->unwind_ns);
    cs_jw_raw(w, ",\"tornStacks\":"); cs_jw_u64(w, wt->torn_stacks);
    cs_jw_raw(w, ",\"framePointerGuesses\":"); cs_jw_u64(w, wt->frame_pointer_guesses);
    cs_jw_raw(w, ",\"dropped\":{\"segments\":"); cs_jw_u64(w, atomic_load(&wt->dropped_segments));
    cs_jw_raw(w, ",\"stacks\":"); cs_jw_u64(w, atomic_load(&wt->dropped_stacks));
    cs_jw_raw(w, ",\"threads\":"); cs_jw_u64(w, atomic_load(&wt->dropped_threads));
    cs_jw_raw(w, ",\"paths\":"); cs_jw_u64(w, atomic_load(&wt->dropped_paths));
    cs_jw_raw(w, ",\"runnable\":"); cs_jw_u64(w, atomic_load(&wt->dropped_runnable));
    cs_jw_raw(w, "},\n\"threads\":[");
    uint32_t nt = atomic_load_explicit(&wt->nthreads, memory_order_acquire);
    bool first = true;
    for (uint32_t i = 0; i < nt; i++) {
        const struct cs_watch_thread *t = &b->threads[i];
        cs_jw_raw(w, first ? "\n{\"tid\":" : ",\n{\"tid\":"); cs_jw_i64(w, t->tid);
        first = false;
        cs_jw_raw(w, ",\"name\":"); cs_jw_str(w, t->name, strnlen(t->name, sizeof t->name));
        cs_jw_raw(w, ",\"firstNs\":"); cs_jw_i64(w, (int64_t)(t->first_ns - start));
        cs_jw_raw(w, ",\"lastNs\":"); cs_jw_i64(w, (int64_t)(t->last_ns - start));
        cs_jw_raw(w, ",\"exited\":"); cs_jw_raw(w, t->exited ? "true" : "false");
        cs_jw_raw(w, ",\"watched\":"); cs_jw_raw(w, t->unwatched ? "false" : "true");
        cs_jw_raw(w, ",\"cpuBeforeNs\":"); cs_jw_u64(w, t->run0_ns);
        cs_jw_raw(w, ",\"runQueueBeforeNs\":"); cs_jw_u64(w, t->wait0_ns);
        cs_jw_raw(w, ",\"cpuNs\":"); cs_jw_u64(w, t->run_ns);
        cs_jw_raw(w, ",\"runQueueNs\":"); cs_jw_u64(w, t->wait_ns);
        cs_jw_raw(w, ",\"switches\":"); cs_jw_u64(w, t->switches);
        cs_jw_raw(w, "}");
    }
    cs_jw_raw(w, "],\n\"paths\":[");
    uint32_t np = atomic_load_explicit(&wt->npaths, memory_order_acquire);
    for (uint32_t i = 0; i < np; i++) {
        if (i) cs_jw_raw(w, ",");
        cs_jw_str(w, b->path_bytes + b->paths[i].off, b->paths[i].len);
    }
    cs_jw_raw(w, "],\n\"stacks\":[");
    uint32_t nst = atomic_load_explicit(&wt->nstacks, memory_order_acquire);
    for (uint32_t i = 0; i < nst; i++) {
        cs_jw_raw(w, i ? ",\n[" : "\n[");
        for (uint32_t f = 0; f < b->stacks[i].len; f++) {
            if (f) cs_jw_raw(w, ",");
            write_frame(w, b->frames[b->stacks[i].off + f], f == 0);
        }
        cs_jw_raw(w, "]");
    }
    cs_jw_raw(w, "],\n\"segments\":[");
    uint32_t ns = atomic_load_explicit(&wt->nsegs, memory_order_acquire);
    first = true;
    for (uint32_t i = 0; i < ns; i++) {
        const struct cs_watch_seg *seg = &b->segs[i];
        cs_jw_raw(w, first ? "\n[" : ",\n[");
        first = false;
        cs_jw_i64(w, seg->tid);
        cs_jw_raw(w, ","); cs_jw_i64(w, (int64_t)(seg->start_ns - start));
        cs_jw_raw(w, ","); cs_jw_i64(w, (int64_t)(seg->end_ns - start));
        char state[2] = {(char)seg->state, 0};
        cs_jw_raw(w, ","); cs_jw_str(w, state, 1);
        cs_jw_raw(w, ",\""); cs_jw_raw(w, cs_watch_cause_name(seg->cause)); cs_jw_raw(w, "\",");
        const char *name = seg->nr >= 0 ? cs_watch_syscall_name(seg->nr) : NULL;
        if (name) cs_jw_cstr(w, name);
        else if (seg->nr >= 0 && seg->nr != CS_NR_UNKNOWN) { cs_jw_raw(w, "\"syscall "); cs_jw_u64(w, (uint64_t)seg->nr); cs_jw_raw(w, "\""); }
        else cs_jw_raw(w, "null");
        cs_jw_raw(w, ","); cs_jw_u64(w, seg->run_ns);
        cs_jw_raw(w, ","); cs_jw_u64(w, seg->wait_ns);
        cs_jw_raw(w, ","); cs_jw_u64(w, seg->minflt);
        cs_jw_raw(w, ","); cs_jw_u64(w, seg->majflt);
        cs_jw_raw(w, ","); cs_jw_i64(w, seg->path);
        cs_jw_raw(w, ","); cs_jw_i64(w, seg->stack);
        cs_jw_raw(w, ",[");
        if (seg->nr >= 0 && seg->nr != CS_NR_UNKNOWN) {
            for (int a = 0; a < 6; a++) {
                if (a) cs_jw_raw(w, ",");
                write_hex(w, seg->args[a]);
            }
        }
        cs_jw_raw(w, "]]");
    }
    cs_jw_raw(w, "],\n\"runnable\":[");
    uint32_t nr = atomic_load_explicit(&wt->nrunnable, memory_order_acquire);
    for (uint32_t i = 0; i < nr; i++) {
        cs_jw_raw(w, i ? ",[" : "[");
        cs_jw_i64(w, (int64_t)(b->runnable[i].ns - start));
        cs_jw_raw(w, ","); cs_jw_u64(w, b->runnable[i].n);
        cs_jw_raw(w, "]");
    }
    cs_jw_raw(w, "]}");
}
