// Parsing what /proc says (procparse.h). Pure: no I/O, no state, calls
// nothing else of Coldstart's.
#include "procparse.h"

#include <string.h>

const char *cs_scan_dec(const char *p, const char *end, uint64_t *out) {
    while (p < end && *p == ' ') p++;
    const char *digits = p;
    uint64_t v = 0;
    for (; p < end && *p >= '0' && *p <= '9'; p++) {
        uint64_t d = (uint64_t)(*p - '0');
        if (v > (UINT64_MAX - d) / 10) return NULL;
        v = v * 10 + d;
    }
    if (p == digits) return NULL;
    *out = v;
    return p;
}

// cs_scan_dec for lower-case hex digits (no "0x"; at most 16 digits).
// Async-signal-safe.
static const char *cs_scan_hex(const char *p, const char *end, uint64_t *out) {
    while (p < end && *p == ' ') p++;
    const char *digits = p;
    uint64_t v = 0;
    for (; p < end; p++) {
        int d;
        if (*p >= '0' && *p <= '9') d = *p - '0';
        else if (*p >= 'a' && *p <= 'f') d = *p - 'a' + 10;
        else break;
        if (p - digits >= 16) return NULL;
        v = v << 4 | (uint64_t)d;
    }
    if (p == digits) return NULL;
    *out = v;
    return p;
}

const char *cs_stat_after_comm(const char *buf, size_t len) {
    for (size_t i = len; i > 0; i--)
        if (buf[i - 1] == ')') return buf + i;
    return NULL;
}

// Skips `n` space-separated fields (each may be negative). NULL if the line
// ends first. Async-signal-safe.
static const char *cs_skip_fields(const char *p, const char *end, int n) {
    for (int i = 0; i < n; i++) {
        while (p < end && *p == ' ') p++;
        const char *token = p;
        while (p < end && *p != ' ' && *p != '\n') p++;
        if (p == token) return NULL;
    }
    return p;
}

int cs_parse_u64(const char *s, uint64_t *out) {
    if (s == NULL || *s < '0' || *s > '9') return -1;
    const char *end = s + strlen(s);
    return cs_scan_dec(s, end, out) == end ? 0 : -1;
}

int cs_parse_proc_stat_starttime(const char *buf, size_t len, uint64_t *ticks) {
    const char *end = buf + len, *p = cs_stat_after_comm(buf, len);
    if (p) p = cs_skip_fields(p, end, 19);   // fields 3 … 21
    if (p) p = cs_scan_dec(p, end, ticks);   // field 22
    return p && (p == end || *p == ' ' || *p == '\n') ? 0 : -1;
}

int cs_parse_task_stat(const char *buf, size_t len, char *state, uint64_t *minflt, uint64_t *majflt) {
    const char *end = buf + len, *p = cs_stat_after_comm(buf, len);
    if (!p) return -1;
    while (p < end && *p == ' ') p++;
    if (p >= end || *p < 'A' || *p > 'z') return -1;
    *state = *p++;
    // Fields 4…9 (ppid pgrp session tty_nr tpgid flags) may be negative and
    // are skipped; then minflt (10), cminflt (11), majflt (12).
    uint64_t cminflt;
    p = cs_skip_fields(p, end, 6);
    if (p) p = cs_scan_dec(p, end, minflt);
    if (p) p = cs_scan_dec(p, end, &cminflt);
    if (p) p = cs_scan_dec(p, end, majflt);
    return p ? 0 : -1;
}

// " 0x1f": the syscall file's hex form.
static const char *scan_0x(const char *p, const char *end, uint64_t *out) {
    while (p < end && *p == ' ') p++;
    if (end - p < 3 || p[0] != '0' || p[1] != 'x' || p[2] == ' ') return NULL;
    return cs_scan_hex(p + 2, end, out);
}

int cs_parse_task_syscall(const char *buf, size_t len, struct cs_task_syscall *out) {
    const char *p = buf, *end = buf + len;
    memset(out, 0, sizeof *out);
    if (len >= 7 && memcmp(buf, "running", 7) == 0) {
        out->running = true;
        out->nr = -2;
        return 0;
    }
    bool negative = len > 0 && buf[0] == '-';
    if (negative) p++;
    uint64_t nr;
    if (!(p = cs_scan_dec(p, end, &nr)) || nr > 1023) return -1;
    out->nr = negative ? -(int64_t)nr : (int64_t)nr;
    if (negative) {
        // "-1 sp pc": blocked outside a syscall (a page fault, most often).
        if (out->nr != -1) return -1;
    } else {
        for (int i = 0; i < 6 && p; i++) p = scan_0x(p, end, &out->args[i]);
    }
    if (p) p = scan_0x(p, end, &out->sp);
    if (p) p = scan_0x(p, end, &out->pc);
    return p ? 0 : -1;
}

int cs_parse_schedstat(const char *buf, size_t len, uint64_t *run_ns, uint64_t *wait_ns, uint64_t *slices) {
    const char *p = buf, *end = buf + len;
    if (p) p = cs_scan_dec(p, end, run_ns);
    if (p) p = cs_scan_dec(p, end, wait_ns);
    if (p) p = cs_scan_dec(p, end, slices);
    return p ? 0 : -1;
}

bool cs_parse_maps_line(const char *line, struct cs_maps_line *out) {
    const char *end = line + strlen(line), *p;
    if (!(p = cs_scan_hex(line, end, &out->start)) || *p++ != '-' || !(p = cs_scan_hex(p, end, &out->end))) return false;
    while (*p == ' ') p++;
    out->perms = p;
    if (!(p = cs_skip_fields(p, end, 1)) || !(p = cs_scan_hex(p, end, &out->offset))) return false;
    if (!(p = cs_skip_fields(p, end, 2))) return false;   // dev, inode
    while (*p == ' ') p++;
    out->path = p;
    return end - out->perms >= 4;
}

uint64_t cs_status_mask(const char *buf, size_t len, const char *key) {
    size_t k = strlen(key);
    uint64_t mask = 0;
    for (size_t i = 0; i + k + 2 <= len; i++) {
        if (memcmp(buf + i, key, k) != 0 || buf[i + k] != ':' || buf[i + k + 1] != '\t') continue;
        uint64_t v;
        if (cs_scan_hex(buf + i + k + 2, buf + len, &v)) mask |= v;
    }
    return mask;
}

int cs_status_ns_levels(const char *buf, size_t len) {
    static const char key[] = "NSpid:";
    size_t k = sizeof key - 1;
    for (size_t i = 0; i + k <= len; i++) {
        if ((i > 0 && buf[i - 1] != '\n') || memcmp(buf + i, key, k) != 0) continue;
        const char *p = buf + i + k, *end = buf + len;
        int levels = 0;
        for (;;) {
            while (p < end && *p == '\t') p++;
            if (p == end || *p == '\n') return levels;
            uint64_t v;
            p = cs_scan_dec(p, end, &v);
            if (!p) return 0;
            levels++;
        }
    }
    return 0;
}

int cs_dirent_tid(const struct cs_dirent64 *d) {
    uint64_t tid;
    if (cs_parse_u64(d->d_name, &tid) != 0 || tid == 0 || tid > INT32_MAX) return 0;
    return (int)tid;
}
