// The timeline serialiser (format: docs/timeline-format.md). It runs once, from
// a normal thread, the exit handler or a signal handler, so it uses only
// async-signal-safe calls and the scratch space in cs_g.
#include "internal.h"

#include <fcntl.h>
#include <stdio.h>  // rename
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

static const struct cs_rusage zero_rusage;

static const char *signal_name(int sig) {
    switch (sig) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGHUP: return "SIGHUP";
    default: return "signal";
    }
}

static const char *end_reason_text(void) {
    switch (cs_g.launch.end_reason) {
    case CS_END_READY: return "ready";
    case CS_END_EXIT: return "exit";
    case CS_END_ERROR_EXIT: return "error-exit";
    case CS_END_SIGNAL: return "signal";
    case CS_END_ASIDE: return "stepped-aside";
    default: return "unknown";
    }
}

// "ready", "exit(3)" or "SIGTERM".
static size_t end_label(char *out) {
    if (cs_g.launch.end_reason == CS_END_SIGNAL) {
        strcpy(out, signal_name(cs_g.launch.end_status));
    } else if (cs_g.launch.end_reason == CS_END_EXIT || cs_g.launch.end_reason == CS_END_ERROR_EXIT) {
        strcpy(out, "exit(");
        size_t n = cs_format_u64((uint64_t)(unsigned)cs_g.launch.end_status & 0xffu, out + 5);
        strcpy(out + 5 + n, ")");
    } else if (cs_g.launch.end_reason == CS_END_ASIDE) {
        strcpy(out, cs_g.launch.aside_for);
    } else {
        strcpy(out, "ready");
    }
    return strlen(out);
}

#define COMMITTED(i) atomic_load_explicit(&cs_g.log.events[i].committed, memory_order_acquire)

static const char *event_name(const struct cs_event *ev, size_t *len) {
    *len = ev->name_len;
    return cs_g.log.names + ev->name_off;
}

// b − a, or 0 where b is the earlier: a span begun after ready() and still
// open at the write ends, as far as the timeline knows, where it began.
static uint64_t since(uint64_t a, uint64_t b) { return b > a ? b - a : 0; }

static void rusage_fields(struct cs_jw *w, const struct cs_rusage *a, const struct cs_rusage *b) {
    // b − a; a NULL `a` means the process start (all zero).
    if (!a) a = &zero_rusage;
    cs_jw_key(w, "minorFaults"); cs_jw_u64(w, since(a->minflt, b->minflt));
    cs_jw_raw(w, ","); cs_jw_key(w, "majorFaults"); cs_jw_u64(w, since(a->majflt, b->majflt));
    cs_jw_raw(w, ","); cs_jw_key(w, "voluntarySwitches"); cs_jw_u64(w, since(a->nvcsw, b->nvcsw));
    cs_jw_raw(w, ","); cs_jw_key(w, "involuntarySwitches"); cs_jw_u64(w, since(a->nivcsw, b->nivcsw));
    cs_jw_raw(w, ","); cs_jw_key(w, "userNs"); cs_jw_u64(w, since(a->utime_ns, b->utime_ns));
    cs_jw_raw(w, ","); cs_jw_key(w, "systemNs"); cs_jw_u64(w, since(a->stime_ns, b->stime_ns));
}

static void rusage_object(struct cs_jw *w, const struct cs_rusage *a, const struct cs_rusage *b) {
    cs_jw_raw(w, "{");
    rusage_fields(w, a, b);
    cs_jw_raw(w, "}");
}

// Phase p runs from b[p] to b[p + 1]. The pre-main phases have fixed names
// (`phase`); app phases are named after the boundaries around them.
static void phase_name(struct cs_jw *w, const struct cs_boundary *b, size_t p) {
    if (b[p].phase) {
        cs_jw_str(w, b[p].phase, strlen(b[p].phase));
    } else {
        char name[2 * CS_MAX_NAME + 8];
        size_t n = 0;
        memcpy(name + n, b[p].name, b[p].name_len); n += b[p].name_len;
        memcpy(name + n, " \xe2\x86\x92 ", 5); n += 5;   // " → "
        memcpy(name + n, b[p + 1].name, b[p + 1].name_len); n += b[p + 1].name_len;
        cs_jw_str(w, name, n);
    }
}

// COLDSTART_MAX_BYTES, or the file size limit where it is lower, read now:
// the host may have lowered it during the launch (setrlimit, `ulimit -f`).
static void size_bound(struct cs_plan *pl) {
    struct rlimit lim;
    pl->max_bytes = cs_g.cfg.max_bytes;
    pl->fsize_bound = false;
    if (cs_syscall(SYS_prlimit64, 0, RLIMIT_FSIZE, NULL, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY && lim.rlim_cur < pl->max_bytes) {
        pl->max_bytes = lim.rlim_cur;
        pl->fsize_bound = true;
    }
}

static void make_plan(struct cs_plan *pl) {
    size_bound(pl);
    struct cs_start st;
    const struct cs_out_early_facts *ef = &cs_g.out.facts;
    // Read again if the start was not to be had then (the program held
    // every descriptor, say): not the file's fault.
    bool known = atomic_load_explicit(&cs_g.out.facts_ready, memory_order_acquire) && ef->start_rc == 0;
    int start_rc = known ? ef->start_rc : cs_process_start(&st, &pl->without_launcher, &pl->boot_off);
    if (known) {
        st = ef->start;
        pl->without_launcher = ef->without_launcher;
        pl->boot_off = ef->boot_off;
    }
    if (start_rc == 0) {
        pl->start = st.ns;
        pl->precision = st.precision_ns;
        pl->source = st.source;
    } else {
        cs_warn(cs_out_of_descriptors() ? "no descriptor left under RLIMIT_NOFILE to read the process start; the launch starts at the earliest init"
                                        : "cannot read the process start from /proc/self/stat; the launch starts at the earliest init", NULL);
        pl->start = cs_g.launch.t_earliest ? cs_g.launch.t_earliest : cs_g.launch.t_main;
        pl->precision = 0;
        pl->source = "proc-stat";
    }
    // The process began no later than the first code of ours that ran: an
    // estimate or a launcher's stamp past it (a clock read late, a stamp
    // from another clock domain) is pulled back, so no phase is negative.
    uint64_t first = cs_g.launch.t_earliest ? cs_g.launch.t_earliest : cs_g.launch.t_main;
    if (first != 0 && pl->start > first) pl->start = first;
    // Wall clock of the process start, for tools that want a date (pprof's
    // time_nanos).
    pl->start_realtime_us = cs_realtime_us(pl->start);
    pl->has_earliest = cs_g.launch.t_earliest != 0;
    pl->completed = cs_g.launch.end_reason == CS_END_READY || cs_g.launch.end_reason == CS_END_EXIT;
    uint32_t nev = atomic_load(&cs_g.log.next_event);
    pl->nev = nev = nev > CS_MAX_EVENTS ? CS_MAX_EVENTS : nev;
    const struct cs_event *ev = cs_g.log.events;

    // Phase boundaries: the fixed ones, then boundary marks in time order.
    struct cs_boundary *b = pl->b;
    size_t nb = 0;
    b[nb++] = (struct cs_boundary){pl->start, "process start", 13, NULL,
        pl->has_earliest ? "kernel exec + loader" : "kernel exec + loader + library initializers", "loader"};
    if (pl->has_earliest) {
        b[nb++] = (struct cs_boundary){cs_g.launch.t_earliest, "earliest init", 13, &cs_g.launch.ru_earliest, "Coldstart set-up", "profiler"};
        b[nb++] = (struct cs_boundary){cs_g.launch.t_setup_end, "set-up done", 11, &cs_g.launch.ru_setup_end, "library initializers", "initializers"};
    }
    b[nb++] = (struct cs_boundary){cs_g.launch.t_main, "main", 4, &cs_g.launch.ru_main, NULL, "app"};
    size_t nmarks = 0;
    for (uint32_t i = 0; i < nev && nmarks < CS_MAX_BOUNDARIES; i++) {
        if (!COMMITTED(i) || ev[i].kind != CS_EV_MARK || !(ev[i].flags & CS_FLAG_BOUNDARY)) continue;
        if (ev[i].ns < cs_g.launch.t_main || ev[i].ns > cs_g.launch.t_end) continue;
        // Insertion sort by time: marks from several threads may be out of order.
        size_t k = nmarks++;
        while (k > 0 && ev[cs_g.out.boundary_slots[k - 1]].ns > ev[i].ns) {
            cs_g.out.boundary_slots[k] = cs_g.out.boundary_slots[k - 1];
            k--;
        }
        cs_g.out.boundary_slots[k] = i;
    }
    for (size_t k = 0; k < nmarks; k++) {
        const struct cs_event *m = &ev[cs_g.out.boundary_slots[k]];
        size_t len;
        const char *name = event_name(m, &len);
        b[nb++] = (struct cs_boundary){m->ns, name, len, &m->ru, NULL, "app"};
    }
    size_t label_len = end_label(pl->label);
    b[nb++] = (struct cs_boundary){cs_g.launch.t_end, pl->label, label_len, &cs_g.launch.ru_end, NULL, NULL};
    pl->nb = nb;

    memset(cs_g.out.span_end_of, 0, sizeof cs_g.out.span_end_of);
    for (uint32_t i = 0; i < nev; i++) {
        if (COMMITTED(i) && ev[i].kind == CS_EV_SPAN_END && ev[i].begin_slot >= 1 && ev[i].begin_slot <= nev)
            cs_g.out.span_end_of[ev[i].begin_slot - 1] = i + 1;
    }

    // Threads seen, the main thread first.
    size_t nt = 0, cap = sizeof cs_g.out.thread_ids / sizeof *cs_g.out.thread_ids;
    cs_g.out.thread_ids[nt++] = cs_g.proc.pid;
    for (uint32_t i = 0; i < nev; i++) {
        if (!COMMITTED(i)) continue;
        bool seen = false;
        for (size_t t = 0; t < nt; t++) seen |= cs_g.out.thread_ids[t] == ev[i].tid;
        if (!seen && nt < cap) cs_g.out.thread_ids[nt++] = ev[i].tid;
    }
    pl->nthreads = cs_sampler_add_threads(cs_g.out.thread_ids, nt, cap);
    // Read once: both the trace events and the threads section name them.
    int me = cs_gettid();
    for (size_t t = 0; t < pl->nthreads; t++) {
        int tid = cs_g.out.thread_ids[t];
        cs_thread_name(tid, tid == me, cs_g.out.thread_names[t], sizeof cs_g.out.thread_names[t]);
    }

    if (known) {
        memcpy(pl->exe, ef->exe, sizeof pl->exe);
        pl->uts = ef->uts;
    } else {
        ssize_t n = readlink("/proc/self/exe", pl->exe, sizeof pl->exe - 1);
        pl->exe[n > 0 ? n : 0] = 0;
        if (uname(&pl->uts) != 0) strcpy(pl->uts.release, "unknown");
    }
}

#define OFFSET(pl, ns) ((int64_t)(ns) - (int64_t)(pl)->start)

static void write_pid_tid(struct cs_jw *w, int tid) {
    cs_jw_raw(w, ",\"pid\":"); cs_jw_i64(w, cs_g.proc.pid);
    cs_jw_raw(w, ",\"tid\":"); cs_jw_i64(w, tid);
}

static void write_metadata(struct cs_jw *w, const struct cs_plan *pl) {
    cs_jw_raw(w, "{\"displayTimeUnit\":\"ms\",\n\"otherData\":{\"coldstartFormat\":1,\"executable\":");
    cs_jw_cstr(w, pl->exe);
    cs_jw_raw(w, ",\"pid\":"); cs_jw_i64(w, cs_g.proc.pid);
    cs_jw_raw(w, ",\"clock\":\"CLOCK_MONOTONIC\",\"startSource\":\"");
    cs_jw_raw(w, pl->source);
    cs_jw_raw(w, "\",\"startPrecisionMs\":"); cs_jw_milli(w, (int64_t)(pl->precision / 1000));
    cs_jw_raw(w, ",\"kernelRelease\":"); cs_jw_cstr(w, pl->uts.release);
    cs_jw_raw(w, ",\"swiftVersion\":"); cs_jw_cstr(w, cs_g.proc.swift_version[0] ? cs_g.proc.swift_version : "unknown");
    cs_jw_raw(w, ",\"completed\":"); cs_jw_raw(w, pl->completed ? "true" : "false");
    cs_jw_raw(w, "}");
}

static void write_trace_events(struct cs_jw *w, const struct cs_plan *pl) {
    const struct cs_event *ev = cs_g.log.events;
    const struct cs_boundary *b = pl->b;
    cs_jw_raw(w, ",\n\"traceEvents\":[\n{\"ph\":\"M\",\"name\":\"process_name\"");
    write_pid_tid(w, 0);
    cs_jw_raw(w, ",\"args\":{\"name\":");
    cs_jw_cstr(w, strrchr(pl->exe, '/') ? strrchr(pl->exe, '/') + 1 : pl->exe);
    cs_jw_raw(w, "}},\n{\"ph\":\"M\",\"name\":\"thread_name\"");
    write_pid_tid(w, 0);
    cs_jw_raw(w, ",\"args\":{\"name\":\"Launch phases\"}}");
    for (size_t t = 0; t < pl->nthreads; t++) {
        cs_jw_raw(w, ",\n{\"ph\":\"M\",\"name\":\"thread_name\"");
        write_pid_tid(w, cs_g.out.thread_ids[t]);
        cs_jw_raw(w, ",\"args\":{\"name\":"); cs_jw_cstr(w, cs_g.out.thread_names[t]); cs_jw_raw(w, "}}");
    }
    for (size_t p = 0; p + 1 < pl->nb; p++) {
        cs_jw_raw(w, ",\n{\"ph\":\"X\",\"cat\":\"phase\"");
        write_pid_tid(w, 0);
        cs_jw_raw(w, ",\"ts\":"); cs_jw_milli(w, OFFSET(pl, b[p].ns));
        cs_jw_raw(w, ",\"dur\":"); cs_jw_milli(w, (int64_t)(b[p + 1].ns - b[p].ns));
        cs_jw_raw(w, ",\"name\":"); phase_name(w, b, p);
        cs_jw_raw(w, ",\"args\":{\"kind\":\""); cs_jw_raw(w, b[p].kind); cs_jw_raw(w, "\"");
        if (b[p + 1].ru) { cs_jw_raw(w, ","); rusage_fields(w, b[p].ru, b[p + 1].ru); }
        cs_jw_raw(w, "}}");
        if (b[p + 1].ru) {
            cs_jw_raw(w, ",\n{\"ph\":\"C\",\"name\":\"page faults\"");
            write_pid_tid(w, 0);
            cs_jw_raw(w, ",\"ts\":"); cs_jw_milli(w, OFFSET(pl, b[p + 1].ns));
            cs_jw_raw(w, ",\"args\":{\"minor\":"); cs_jw_u64(w, b[p + 1].ru->minflt);
            cs_jw_raw(w, ",\"major\":"); cs_jw_u64(w, b[p + 1].ru->majflt); cs_jw_raw(w, "}}");
        }
    }
    for (uint32_t i = 0; i < pl->nev; i++) {
        if (!COMMITTED(i)) continue;
        size_t len;
        const char *name = event_name(&ev[i], &len);
        if (ev[i].kind == CS_EV_MARK) {
            cs_jw_raw(w, ",\n{\"ph\":\"i\",\"s\":\"p\",\"cat\":\"mark\"");
            write_pid_tid(w, ev[i].tid);
            cs_jw_raw(w, ",\"ts\":"); cs_jw_milli(w, OFFSET(pl, ev[i].ns));
            cs_jw_raw(w, ",\"name\":"); cs_jw_str(w, name, len);
            cs_jw_raw(w, ",\"args\":{\"phaseBoundary\":"); cs_jw_raw(w, ev[i].flags & CS_FLAG_BOUNDARY ? "true" : "false");
            cs_jw_raw(w, ",\"extended\":"); cs_jw_raw(w, ev[i].flags & CS_FLAG_EXTENDED ? "true" : "false");
            cs_jw_raw(w, "}}");
        } else if (ev[i].kind == CS_EV_SPAN_BEGIN) {
            uint32_t e = cs_g.out.span_end_of[i];
            uint64_t end_ns = e ? ev[e - 1].ns : cs_g.launch.t_end;
            if (end_ns < ev[i].ns) end_ns = ev[i].ns;
            cs_jw_raw(w, ",\n{\"ph\":\"X\",\"cat\":\"span\"");
            write_pid_tid(w, ev[i].tid);
            cs_jw_raw(w, ",\"ts\":"); cs_jw_milli(w, OFFSET(pl, ev[i].ns));
            cs_jw_raw(w, ",\"dur\":"); cs_jw_milli(w, (int64_t)(end_ns - ev[i].ns));
            cs_jw_raw(w, ",\"name\":"); cs_jw_str(w, name, len);
            cs_jw_raw(w, ",\"args\":{\"endTid\":"); cs_jw_i64(w, e ? ev[e - 1].tid : ev[i].tid);
            cs_jw_raw(w, ",\"unfinished\":"); cs_jw_raw(w, e ? "false" : "true");
            cs_jw_raw(w, "}}");
        }
    }
    if (pl->detail) cs_watch_write_trace_events(w, cs_g.proc.pid, pl->start);
    cs_jw_raw(w, ",\n{\"ph\":\"i\",\"s\":\"g\",\"cat\":\"launch\"");
    write_pid_tid(w, 0);
    cs_jw_raw(w, ",\"ts\":"); cs_jw_milli(w, OFFSET(pl, cs_g.launch.t_end));
    cs_jw_raw(w, ",\"name\":"); cs_jw_cstr(w, pl->label);
    cs_jw_raw(w, "}\n]");
}

static void write_snapshot(struct cs_jw *w, const struct cs_plan *pl, const char *at, uint64_t ns, const struct cs_rusage *ru) {
    cs_jw_raw(w, "{\"at\":\""); cs_jw_raw(w, at);
    cs_jw_raw(w, "\",\"ns\":"); cs_jw_i64(w, OFFSET(pl, ns));
    cs_jw_raw(w, ",");
    rusage_fields(w, NULL, ru);
    cs_jw_raw(w, "}");
}

// The size bound and what was left out to keep under it: the offline
// unwinder's stack copies first, then the sampling and watch sections, each
// whole, so the file stays valid and complete JSON.
static void write_size_limit(struct cs_jw *w, const struct cs_plan *pl) {
    cs_jw_raw(w, ",\n\"sizeLimit\":{\"maxBytes\":"); cs_jw_u64(w, pl->max_bytes);
    if (pl->fsize_bound) cs_jw_raw(w, ",\"rlimitFsize\":true");
    cs_jw_raw(w, ",\"dropped\":[");
    if (pl->detail && !pl->raw && cs_sampler_has_raw()) cs_jw_raw(w, "\"rawStacks\"");
    if (!pl->detail) {
        bool sampling = cs_g.smp.started, watch = cs_g.watch.buf != NULL;
        cs_jw_raw(w, sampling ? "\"sampling\"" : "");
        cs_jw_raw(w, sampling && watch ? "," : "");
        cs_jw_raw(w, watch ? "\"watch\"" : "");
    }
    cs_jw_raw(w, "]}");
}

static void write_coldstart(struct cs_jw *w, const struct cs_plan *pl) {
    const struct cs_event *ev = cs_g.log.events;
    const struct cs_boundary *b = pl->b;
    cs_jw_raw(w, ",\n\"coldstart\":{\"version\":1,\n\"launch\":{\"startNs\":"); cs_jw_u64(w, pl->start);
    cs_jw_raw(w, ",\"startSource\":\""); cs_jw_raw(w, pl->source);
    cs_jw_raw(w, "\",\"startPrecisionNs\":"); cs_jw_u64(w, pl->precision);
    if (pl->without_launcher.source) {
        // What the start would have been without the launcher, to check it.
        cs_jw_raw(w, ",\"withoutLauncher\":{\"startNs\":"); cs_jw_i64(w, OFFSET(pl, pl->without_launcher.ns));
        cs_jw_raw(w, ",\"startSource\":\""); cs_jw_raw(w, pl->without_launcher.source);
        cs_jw_raw(w, "\",\"startPrecisionNs\":"); cs_jw_u64(w, pl->without_launcher.precision_ns);
        cs_jw_raw(w, "}");
    }
    cs_jw_raw(w, ",\"bootMinusMonotonicNs\":"); cs_jw_u64(w, pl->boot_off);
    if (pl->start_realtime_us) { cs_jw_raw(w, ",\"startRealtimeUs\":"); cs_jw_u64(w, pl->start_realtime_us); }
    cs_jw_raw(w, ",\"clockTicksPerSecond\":"); cs_jw_u64(w, cs_g.proc.ticks_per_second);
    if (pl->has_earliest) {
        cs_jw_raw(w, ",\"earliestInitNs\":"); cs_jw_i64(w, OFFSET(pl, cs_g.launch.t_earliest));
        cs_jw_raw(w, ",\"setupEndNs\":"); cs_jw_i64(w, OFFSET(pl, cs_g.launch.t_setup_end));
    }
    cs_jw_raw(w, ",\"mainNs\":"); cs_jw_i64(w, OFFSET(pl, cs_g.launch.t_main));
    if (cs_g.launch.t_ready) {
        cs_jw_raw(w, ",\"readyNs\":"); cs_jw_i64(w, OFFSET(pl, cs_g.launch.t_ready));
        cs_jw_raw(w, ",\"readyTid\":"); cs_jw_i64(w, cs_g.launch.ready_tid);
    }
    cs_jw_raw(w, ",\"endNs\":"); cs_jw_i64(w, OFFSET(pl, cs_g.launch.t_end));
    cs_jw_raw(w, ",\"completed\":"); cs_jw_raw(w, pl->completed ? "true" : "false");
    cs_jw_raw(w, ",\"endReason\":\""); cs_jw_raw(w, end_reason_text()); cs_jw_raw(w, "\"");
    if (cs_g.launch.end_reason == CS_END_SIGNAL) {
        cs_jw_raw(w, ",\"signal\":"); cs_jw_i64(w, cs_g.launch.end_status);
        cs_jw_raw(w, ",\"signalName\":\""); cs_jw_raw(w, signal_name(cs_g.launch.end_status)); cs_jw_raw(w, "\"");
    } else if (cs_g.launch.end_reason == CS_END_EXIT || cs_g.launch.end_reason == CS_END_ERROR_EXIT) {
        cs_jw_raw(w, ",\"exitStatus\":"); cs_jw_i64(w, cs_g.launch.end_status & 0xff);
    } else if (cs_g.launch.end_reason == CS_END_ASIDE) {
        cs_jw_raw(w, ",\"asideFor\":"); cs_jw_cstr(w, cs_g.launch.aside_for);
    }
    cs_jw_raw(w, ",\"endPhase\":"); phase_name(w, b, pl->nb - 2);
    cs_jw_raw(w, ",\"extendNs\":"); cs_jw_u64(w, cs_g.cfg.extend_ns);
    cs_jw_raw(w, "},\n\"process\":{\"pid\":"); cs_jw_i64(w, cs_g.proc.pid);
    cs_jw_raw(w, ",\"executable\":"); cs_jw_cstr(w, pl->exe);
    cs_jw_raw(w, ",\"kernelRelease\":"); cs_jw_cstr(w, pl->uts.release);
    cs_jw_raw(w, ",\"swiftVersion\":"); cs_jw_cstr(w, cs_g.proc.swift_version[0] ? cs_g.proc.swift_version : "unknown");
    cs_jw_raw(w, "}");
    cs_labels_write(w, &pl->uts);
    write_size_limit(w, pl);
    cs_jw_raw(w, ",\n\"rusage\":[");
    if (pl->has_earliest) {
        write_snapshot(w, pl, "earliestInit", cs_g.launch.t_earliest, &cs_g.launch.ru_earliest);
        cs_jw_raw(w, ",");
        write_snapshot(w, pl, "setupEnd", cs_g.launch.t_setup_end, &cs_g.launch.ru_setup_end);
        cs_jw_raw(w, ",");
    }
    write_snapshot(w, pl, "main", cs_g.launch.t_main, &cs_g.launch.ru_main);
    cs_jw_raw(w, ",");
    write_snapshot(w, pl, cs_g.launch.end_reason == CS_END_READY ? "ready" : "end", cs_g.launch.t_end, &cs_g.launch.ru_end);
    cs_jw_raw(w, "],\n\"phases\":[");
    for (size_t p = 0; p + 1 < pl->nb; p++) {
        cs_jw_raw(w, p ? ",\n{\"name\":" : "\n{\"name\":");
        phase_name(w, b, p);
        cs_jw_raw(w, ",\"kind\":\""); cs_jw_raw(w, b[p].kind);
        cs_jw_raw(w, "\",\"startNs\":"); cs_jw_i64(w, OFFSET(pl, b[p].ns));
        cs_jw_raw(w, ",\"endNs\":"); cs_jw_i64(w, OFFSET(pl, b[p + 1].ns));
        cs_jw_raw(w, ",\"rusage\":");
        if (b[p + 1].ru) rusage_object(w, b[p].ru, b[p + 1].ru);
        else cs_jw_raw(w, "null");
        cs_jw_raw(w, "}");
    }
    cs_jw_raw(w, "],\n\"marks\":[");
    bool first = true;
    for (uint32_t i = 0; i < pl->nev; i++) {
        if (!COMMITTED(i) || ev[i].kind != CS_EV_MARK) continue;
        size_t len;
        const char *name = event_name(&ev[i], &len);
        cs_jw_raw(w, first ? "\n{\"name\":" : ",\n{\"name\":");
        first = false;
        cs_jw_str(w, name, len);
        cs_jw_raw(w, ",\"ns\":"); cs_jw_i64(w, OFFSET(pl, ev[i].ns));
        cs_jw_raw(w, ",\"tid\":"); cs_jw_i64(w, ev[i].tid);
        if (ev[i].thread_cpu_ns) { cs_jw_raw(w, ",\"threadCpuNs\":"); cs_jw_i64(w, (int64_t)ev[i].thread_cpu_ns); }
        cs_jw_raw(w, ",\"phaseBoundary\":"); cs_jw_raw(w, ev[i].flags & CS_FLAG_BOUNDARY ? "true" : "false");
        cs_jw_raw(w, ",\"extended\":"); cs_jw_raw(w, ev[i].flags & CS_FLAG_EXTENDED ? "true" : "false");
        cs_jw_raw(w, ",\"rusage\":"); rusage_object(w, NULL, &ev[i].ru);
        cs_jw_raw(w, "}");
    }
    cs_jw_raw(w, "],\n\"spans\":[");
    first = true;
    for (uint32_t i = 0; i < pl->nev; i++) {
        if (!COMMITTED(i) || ev[i].kind != CS_EV_SPAN_BEGIN) continue;
        uint32_t e = cs_g.out.span_end_of[i];
        const struct cs_event *end = e ? &ev[e - 1] : NULL;
        uint64_t end_ns = end ? end->ns : cs_g.launch.t_end;
        if (end_ns < ev[i].ns) end_ns = ev[i].ns;
        size_t len;
        const char *name = event_name(&ev[i], &len);
        cs_jw_raw(w, first ? "\n{\"name\":" : ",\n{\"name\":");
        first = false;
        cs_jw_str(w, name, len);
        cs_jw_raw(w, ",\"beginNs\":"); cs_jw_i64(w, OFFSET(pl, ev[i].ns));
        cs_jw_raw(w, ",\"endNs\":"); cs_jw_i64(w, OFFSET(pl, end_ns));
        cs_jw_raw(w, ",\"tid\":"); cs_jw_i64(w, ev[i].tid);
        cs_jw_raw(w, ",\"endTid\":"); cs_jw_i64(w, end ? end->tid : ev[i].tid);
        if (ev[i].thread_cpu_ns) { cs_jw_raw(w, ",\"beginThreadCpuNs\":"); cs_jw_i64(w, (int64_t)ev[i].thread_cpu_ns); }
        if (end && end->thread_cpu_ns) { cs_jw_raw(w, ",\"endThreadCpuNs\":"); cs_jw_i64(w, (int64_t)end->thread_cpu_ns); }
        cs_jw_raw(w, ",\"unfinished\":"); cs_jw_raw(w, end ? "false" : "true");
        cs_jw_raw(w, ",\"extended\":"); cs_jw_raw(w, ev[i].flags & CS_FLAG_EXTENDED ? "true" : "false");
        cs_jw_raw(w, ",\"rusage\":"); rusage_object(w, &ev[i].ru, end ? &end->ru : &cs_g.launch.ru_end);
        cs_jw_raw(w, "}");
    }
    cs_jw_raw(w, "],\n\"threads\":[");
    for (size_t t = 0; t < pl->nthreads; t++) {
        cs_jw_raw(w, t ? ",{\"tid\":" : "{\"tid\":"); cs_jw_i64(w, cs_g.out.thread_ids[t]);
        cs_jw_raw(w, ",\"name\":"); cs_jw_cstr(w, t == 0 ? "main" : cs_g.out.thread_names[t]);
        cs_jw_raw(w, "}");
    }
    cs_jw_raw(w, "]");
    if (pl->detail) {
        cs_own_write(w, pl->start);
        cs_sampler_write(w, pl->start, pl->raw);
        cs_watch_write_section(w, pl->start);
    }
    cs_jw_raw(w, ",\n\"dropped\":{\"events\":"); cs_jw_u64(w, atomic_load(&cs_g.log.dropped_events));
    cs_jw_raw(w, ",\"nameBytes\":"); cs_jw_u64(w, atomic_load(&cs_g.log.dropped_name_bytes));
    // Last: every string of the file is written by now.
    cs_jw_raw(w, ",\"notUtf8Bytes\":"); cs_jw_u64(w, w->not_utf8);
    cs_jw_raw(w, "}}");
}

int cs_write_timeline(void) {
    struct cs_plan *pl = &cs_g.out.plan;
    make_plan(pl);
    // The file made during the launch if there is one: no name until it is
    // complete, so nothing to remove if this fails.
    int fd = cs_out_take_prepared();
    bool unnamed = fd >= 0;
    bool opened;
    int dir = cs_out_dir(&opened);
    if (dir < 0) {
        if (unnamed) close(fd);
        return -1;
    }
    char tmp[sizeof cs_g.out.base + 64];
    if (!unnamed) fd = cs_out_create_temp(dir, tmp, sizeof tmp);
    if (fd < 0) {
        if (opened) close(dir);
        return -1;
    }
    struct cs_jw *w = &cs_g.out.jw;
    int rc = -1;
    // The whole timeline, else (past COLDSTART_MAX_BYTES) again from the
    // start without the offline unwinder's stack copies (the samples keep
    // their frame-pointer chains), else without the sampling and watch data.
    for (int pass = 0; pass < 3; pass++) {
        pl->detail = pass < 2;
        pl->raw = pass == 0;
        // Only stack copies make the second pass differ from the first.
        if (pass == 1 && !cs_sampler_has_raw()) continue;
        if (pass > 0 && (ftruncate(fd, 0) != 0 || lseek(fd, 0, SEEK_SET) != 0)) break;
        cs_jw_begin(w, fd, pl->max_bytes);
        write_metadata(w, pl);
        write_trace_events(w, pl);
        write_coldstart(w, pl);
        cs_jw_raw(w, "}\n");
        rc = cs_jw_flush(w);
        if (!w->over) break;
        if (pass == 2) rc = CS_WRITE_TOO_BIG;
    }
    // The start is known to its precision: it may have been that much later.
    uint64_t latest_start_us = pl->start_realtime_us ? pl->start_realtime_us + pl->precision / 1000 : 0;
    if (unnamed) {
        // Linked while open; its close reports nothing on the file systems
        // that have O_TMPFILE.
        if (rc == 0) rc = cs_out_publish(dir, NULL, fd, pl->start_realtime_us, latest_start_us);
        close(fd);
    } else {
        if (close(fd) != 0) rc = -1;
        if (rc == 0) rc = cs_out_publish(dir, tmp, -1, pl->start_realtime_us, latest_start_us);
        if (rc != 0) unlinkat(dir, tmp, 0);
    }
    if (rc == 0) cs_out_rotate(dir);
    if (opened) close(dir);
    return rc;
}
