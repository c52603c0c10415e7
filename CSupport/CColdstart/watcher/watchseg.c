// The off-CPU watcher's records (watch.h): segments, the blocked stacks it
// interns, and how a segment starts and a thread's watch ends. Watcher thread
// only; calls watchunwind.c (stacks), watchcauses.c (causes) and watchfd.c.
#include "internal.h"

#include <string.h>

// Interns a stack (deduplicated); -1 when the tables are full.
static int32_t intern_stack(const uint64_t *frames, int n) {
    struct cs_watch *wt = &cs_g.watch;
    struct cs_watch_buffers *b = wt->buf;
    uint32_t mask = 2 * CS_WATCH_MAX_STACKS - 1;
    uint32_t h = cs_watch_fnv1a(frames, (size_t)n * sizeof *frames, 2166136261u) & mask;
    for (;; h = (h + 1) & mask) {
        uint32_t e = b->stack_hash[h];
        if (e == 0) break;
        if (b->stacks[e - 1].len == (uint32_t)n
            && memcmp(b->frames + b->stacks[e - 1].off, frames, (size_t)n * sizeof *frames) == 0)
            return (int32_t)e - 1;
    }
    uint32_t ns = atomic_load_explicit(&wt->nstacks, memory_order_relaxed);
    if (ns >= CS_WATCH_MAX_STACKS || wt->nframes + (uint32_t)n > CS_WATCH_MAX_FRAMES) {
        atomic_fetch_add(&wt->dropped_stacks, 1);
        return -1;
    }
    memcpy(b->frames + wt->nframes, frames, (size_t)n * sizeof *frames);
    b->stacks[ns].off = wt->nframes;
    b->stacks[ns].len = (uint32_t)n;
    wt->nframes += (uint32_t)n;
    b->stack_hash[h] = ns + 1;
    atomic_store_explicit(&wt->nstacks, ns + 1, memory_order_release);
    return (int32_t)ns;
}

void cs_watch_close_segment(const struct cs_watch_seg *seg) {
    struct cs_watch *wt = &cs_g.watch;
    uint32_t n = atomic_load_explicit(&wt->nsegs, memory_order_relaxed);
    if (n >= CS_WATCH_MAX_SEGMENTS) {
        atomic_fetch_add(&wt->dropped_segments, 1);
        return;
    }
    wt->buf->segs[n] = *seg;
    atomic_store_explicit(&wt->nsegs, n + 1, memory_order_release);
}

// The stack a blocked thread is stopped at, kept only if the thread is still
// blocked in the very same call afterwards (otherwise the stack memory may
// have changed under the unwinder).
int32_t cs_watch_blocked_stack(struct cs_watch_live *slot, const struct cs_task_syscall *sc) {
    struct cs_watch *wt = &cs_g.watch;
    if (!atomic_load_explicit(&wt->main_started, memory_order_acquire) || !cs_offcpu_ready()) return -1;
    uint64_t frames[CS_WATCH_MAX_DEPTH];
    uint64_t t0 = cs_monotonic_ns();
    int n = cs_offcpu_unwind(sc->pc, sc->sp, frames, CS_WATCH_MAX_DEPTH);
    wt->unwinds++;
    wt->unwind_ns += cs_monotonic_ns() - t0;
    if (n <= 0) return -1;
    char again[sizeof slot->text];
    ssize_t len = cs_watch_pread_all(slot->fd_syscall, again, sizeof again);
    if (len != slot->text_len || memcmp(again, slot->text, (size_t)len) != 0) {
        wt->torn_stacks++;
        return -1;
    }
    return intern_stack(frames, n);
}

void cs_watch_thread_gone(struct cs_watch_live *slot) {
    struct cs_watch_thread *t = &cs_g.watch.buf->threads[slot->thread];
    cs_watch_close_segment(&slot->cur);
    cs_g.watch.changed = true;
    t->exited = true;
    cs_watch_close_slot_files(slot);
    slot->thread = -1;
}

bool cs_watch_read_stat(struct cs_watch_live *slot, char *state, uint64_t *minflt, uint64_t *majflt) {
    char buf[1024];
    ssize_t n = cs_watch_pread_all(slot->fd_stat, buf, sizeof buf);
    if (n <= 0 || cs_parse_task_stat(buf, (size_t)n, state, minflt, majflt) != 0) return false;
    // "tid (name) S …": the name comes with it, without opening `comm`.
    const char *open = memchr(buf, '(', (size_t)n), *close = cs_stat_after_comm(buf, (size_t)n);
    if (open && close && close - 1 > open) {
        size_t len = (size_t)(close - 1 - (open + 1));
        char *name = cs_g.watch.buf->threads[slot->thread].name;
        if (len > 15) len = 15;
        if (len == 15) len = cs_utf8_cut(open + 1, len);   // the kernel's cut of a longer name
        memcpy(name, open + 1, len);
        name[len] = 0;
    }
    return true;
}

// Starts the open segment from an observation at `at`.
void cs_watch_begin_segment(struct cs_watch_live *slot, const struct cs_task_syscall *sc, char state, uint64_t at,
                            uint64_t now, int *unwind_budget) {
    struct cs_watch_seg *seg = &slot->cur;
    memset(seg, 0, sizeof *seg);
    seg->tid = cs_g.watch.buf->threads[slot->thread].tid;
    seg->start_ns = at;
    seg->end_ns = now;
    seg->path = seg->stack = -1;
    if (sc->running) {
        seg->nr = CS_NR_RUNNING;
        seg->state = 'R';
        seg->cause = CS_CAUSE_RUNNING;
        return;
    }
    seg->nr = (int16_t)sc->nr;
    seg->state = (uint8_t)(state == 'R' ? 'S' : state);   // it woke between the two reads
    memcpy(seg->args, sc->args, sizeof seg->args);
    cs_watch_classify(seg);
    bool is_main = seg->tid == cs_g.proc.pid;
    if (*unwind_budget >= 0 && (is_main || *unwind_budget > 0)) {
        if (!is_main) (*unwind_budget)--;
        seg->stack = cs_watch_blocked_stack(slot, sc);
    }
}
