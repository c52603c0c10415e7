/*
 * LD_AUDIT module (coldstart_audit.h). Called by the dynamic loader on the
 * program's only thread, before any constructor: no locks are needed, and a
 * failure only loses timestamps, never the program's start.
 */
#include "coldstart_audit.h"

#include <fcntl.h>
#include <link.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

/* The module's only state: the output descriptor, -1 once closed. */
static struct {
    int fd;
} cs_audit = {-1};

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Appends the decimal digits of `v` to `p`; returns the new end. */
static char *put_u64(char *p, uint64_t v) {
    char tmp[24];
    int n = 0;
    do { tmp[n++] = (char)('0' + v % 10); v /= 10; } while (v);
    while (n) *p++ = tmp[--n];
    return p;
}

static void emit(const char *line, size_t len) {
    if (cs_audit.fd < 0) return;
    if (write(cs_audit.fd, line, len) != (ssize_t)len) {
        close(cs_audit.fd);
        cs_audit.fd = -1;
    }
}

/* Called first, as the loader starts. None of these callbacks is called
 * from a signal handler: the loader calls them synchronously on the
 * program's only thread; they use only getenv, open, write, close,
 * clock_gettime, getrusage and unsetenv of the audit namespace's libc. */
unsigned int la_version(unsigned int version) {
    const char *out = getenv("COLDSTART_AUDIT_OUT");
    if (out && *out) cs_audit.fd = open(out, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    char line[32] = "V ";
    char *p = put_u64(line + 2, now_ns());
    *p++ = '\n';
    emit(line, (size_t)(p - line));
    return version < LAV_CURRENT ? version : LAV_CURRENT;
}

/* After each object (the executable, ld.so, every library) is mapped. */
unsigned int la_objopen(struct link_map *map, Lmid_t lmid, uintptr_t *cookie) {
    (void)cookie;
    if (lmid != LM_ID_BASE || cs_audit.fd < 0) return 0;
    char line[4200] = "O ";
    char *p = put_u64(line + 2, now_ns());
    *p++ = ' ';
    const char *name = map->l_name && *map->l_name ? map->l_name : "-";
    size_t len = strnlen(name, 4096);
    for (size_t i = 0; i < len; i++) *p++ = name[i] == '\n' ? '?' : name[i];
    *p++ = '\n';
    emit(line, (size_t)(p - line));
    /* No symbol-binding callbacks: they would slow every binding. */
    return 0;
}

/* Every object is loaded and relocated; constructors run next. */
void la_preinit(uintptr_t *cookie) {
    (void)cookie;
    uint64_t t = now_ns();
    struct rusage ru;
    memset(&ru, 0, sizeof ru);
    getrusage(RUSAGE_SELF, &ru);
    char line[160] = "P ";
    char *p = put_u64(line + 2, t);
    *p++ = ' ';
    p = put_u64(p, (uint64_t)ru.ru_utime.tv_sec * 1000000000u + (uint64_t)ru.ru_utime.tv_usec * 1000u);
    *p++ = ' ';
    p = put_u64(p, (uint64_t)ru.ru_stime.tv_sec * 1000000000u + (uint64_t)ru.ru_stime.tv_usec * 1000u);
    *p++ = ' ';
    p = put_u64(p, (uint64_t)ru.ru_minflt);
    *p++ = ' ';
    p = put_u64(p, (uint64_t)ru.ru_majflt);
    *p++ = ' ';
    p = put_u64(p, (uint64_t)ru.ru_nvcsw);
    *p++ = ' ';
    p = put_u64(p, (uint64_t)ru.ru_nivcsw);
    *p++ = '\n';
    emit(line, (size_t)(p - line));
    if (cs_audit.fd >= 0) close(cs_audit.fd);
    cs_audit.fd = -1;
    /* This namespace's libc shares the process's environment array, so the
     * program (and whatever it starts) no longer sees them. */
    unsetenv("LD_AUDIT");
    unsetenv("COLDSTART_AUDIT_OUT");
}
