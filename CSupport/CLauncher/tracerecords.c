/*
 * The tracer's records (trace.h), in the perf path's layout, so that the
 * rest of `coldstart run` reads both alike.
 */
#include "trace.h"

#if CS_TRACE_SUPPORTED

/* ---- records: the perf path's layout (linux/perf_event.h) ---- */

static int records_append(cs_records *out, const void *bytes, size_t n) {
    if (cs_records_reserve(out, n) < 0) return -1;
    memcpy(out->bytes + out->count, bytes, n);
    out->count += n;
    return 0;
}

/* PERF_RECORD_SAMPLE, IDENTIFIER|IP|TID|TIME|CALLCHAIN, user mode. */
void trace_emit_sample(cs_trace *t, pid_t tid, uint64_t ns, const uint64_t *ips, int n) {
    struct { struct perf_event_header h; uint64_t id, ip; uint32_t pid, tid; uint64_t time, nr; } head;
    head.h.type = PERF_RECORD_SAMPLE;
    head.h.misc = PERF_RECORD_MISC_USER;
    head.h.size = (uint16_t)(sizeof head + (size_t)n * 8);
    head.id = CS_TRACE_SAMPLE_ID;
    head.ip = ips[0];
    head.pid = (uint32_t)t->pid;
    head.tid = (uint32_t)tid;
    head.time = ns;
    head.nr = (uint64_t)n;
    if (records_append(t->out, &head, sizeof head) == 0) records_append(t->out, ips, (size_t)n * 8);
}

/* PERF_RECORD_MMAP with sample_id_all's TID|TIME|IDENTIFIER trailer. */
void trace_emit_mmap(cs_trace *t, const trace_map *m, const char *path, uint64_t ns) {
    uint8_t record[8 + 32 + 264 + 24];
    size_t name = strlen(path) + 1;
    if (name > 256) name = 256;
    size_t padded = (name + 7) & ~(size_t)7;
    struct perf_event_header h = {PERF_RECORD_MMAP, (uint16_t)(PERF_RECORD_MISC_USER | (m->executable ? 0 : PERF_RECORD_MISC_MMAP_DATA)),
                                  (uint16_t)(8 + 32 + padded + 24)};
    memset(record, 0, sizeof record);
    memcpy(record, &h, 8);
    uint32_t ids[2] = {(uint32_t)t->pid, (uint32_t)t->pid};
    uint64_t range[3] = {m->start, m->end - m->start, m->offset};
    memcpy(record + 8, ids, 8);
    memcpy(record + 16, range, 24);
    memcpy(record + 40, path, name - 1);
    uint64_t trailer[3];
    memcpy(trailer, ids, 8);
    trailer[1] = ns;
    trailer[2] = CS_TRACE_SAMPLE_ID;
    memcpy(record + 40 + padded, trailer, 24);
    records_append(t->out, record, h.size);
}

/* A record of the task events' layout: `u32s` (pid, tid for COMM; pid,
 * ppid, tid, ptid for FORK), then for COMM the name, NUL-padded to 8 bytes,
 * for FORK the time, then sample_id_all's TID|TIME|IDENTIFIER trailer. */
static void emit_task(cs_trace *t, uint32_t type, const uint32_t *u32s, int n, const char *name, pid_t tid, uint64_t ns) {
    uint8_t record[8 + 16 + 16 + 8 + 24];
    size_t at = 8;
    memset(record, 0, sizeof record);
    memcpy(record + at, u32s, (size_t)n * 4);
    at += (size_t)n * 4;
    if (name) {
        size_t len = strnlen(name, 15);
        memcpy(record + at, name, len);
        at += (len + 1 + 7) & ~(size_t)7;
    } else {
        memcpy(record + at, &ns, 8);
        at += 8;
    }
    uint32_t ids[2] = {(uint32_t)t->pid, (uint32_t)tid};
    uint64_t id = CS_TRACE_SAMPLE_ID;
    memcpy(record + at, ids, 8);
    memcpy(record + at + 8, &ns, 8);
    memcpy(record + at + 16, &id, 8);
    at += 24;
    struct perf_event_header h = {type, PERF_RECORD_MISC_USER, (uint16_t)at};
    memcpy(record, &h, 8);
    records_append(t->out, record, at);
}

/* PERF_RECORD_COMM: the thread's kernel name, as perf's comm records give it. */
void trace_emit_comm(cs_trace *t, pid_t tid, const char *name, uint64_t ns) {
    uint32_t ids[2] = {(uint32_t)t->pid, (uint32_t)tid};
    emit_task(t, PERF_RECORD_COMM, ids, 2, name, tid, ns);
}

/* PERF_RECORD_FORK: a new thread, named as its creator until it renames itself. */
void trace_emit_fork(cs_trace *t, pid_t tid, pid_t parent, uint64_t ns) {
    uint32_t ids[4] = {(uint32_t)t->pid, (uint32_t)t->pid, (uint32_t)tid, (uint32_t)parent};
    emit_task(t, PERF_RECORD_FORK, ids, 4, NULL, tid, ns);
}

#endif /* CS_TRACE_SUPPORTED */
