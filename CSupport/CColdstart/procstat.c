#include "internal.h"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

int cs_parse_u64(const char *s, uint64_t *out) {
    if (s == NULL || *s == 0) return -1;
    uint64_t v = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9') return -1;
        uint64_t d = (uint64_t)(*s - '0');
        if (v > (UINT64_MAX - d) / 10) return -1;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

int cs_parse_proc_stat_starttime(const char *buf, size_t len, uint64_t *ticks) {
    // The command name (field 2) is "(comm)" and comm may hold ')' and spaces,
    // so fields are counted from the last ')' in the line.
    size_t close = len;
    for (size_t i = len; i > 0; i--) {
        if (buf[i - 1] == ')') { close = i - 1; break; }
    }
    if (close == len) return -1;
    int field = 2;  // the ')' ends field 2
    size_t i = close + 1;
    while (i < len) {
        while (i < len && buf[i] == ' ') i++;
        if (i >= len || buf[i] == '\n') return -1;
        field++;
        if (field == 22) {
            uint64_t v = 0;
            size_t start = i;
            for (; i < len && buf[i] >= '0' && buf[i] <= '9'; i++) {
                if (v > (UINT64_MAX - 9) / 10) return -1;
                v = v * 10 + (uint64_t)(buf[i] - '0');
            }
            if (i == start || (i < len && buf[i] != ' ' && buf[i] != '\n')) return -1;
            *ticks = v;
            return 0;
        }
        while (i < len && buf[i] != ' ' && buf[i] != '\n') i++;
    }
    return -1;
}

uint64_t cs_ticks_to_ns(uint64_t ticks, uint64_t ticks_per_second) {
    if (ticks_per_second == 0) return 0;
    // Split to avoid overflow: whole seconds, then the remainder.
    return ticks / ticks_per_second * 1000000000ull
        + ticks % ticks_per_second * 1000000000ull / ticks_per_second;
}

uint64_t cs_boottime_to_monotonic(uint64_t boottime_ns, uint64_t boot_minus_mono_ns) {
    return boottime_ns > boot_minus_mono_ns ? boottime_ns - boot_minus_mono_ns : 0;
}

static uint64_t clock_ns(clockid_t id) {
    struct timespec ts;
    if (clock_gettime(id, &ts) != 0) return 0;
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t cs_monotonic_ns(void) { return clock_ns(CLOCK_MONOTONIC); }

int cs_process_start(uint64_t *start_mono_ns, uint64_t *precision_ns,
                     uint64_t *boot_minus_mono_ns, bool *from_spawn_env) {
    // Bracket the BOOTTIME read with MONOTONIC reads so the offset is good to
    // about a microsecond even if the thread is preempted between the calls.
    uint64_t m0 = clock_ns(CLOCK_MONOTONIC);
    uint64_t b = clock_ns(CLOCK_BOOTTIME);
    uint64_t m1 = clock_ns(CLOCK_MONOTONIC);
    uint64_t mono = m0 + (m1 - m0) / 2;
    uint64_t offset = b > mono ? b - mono : 0;
    *boot_minus_mono_ns = offset;

    if (cs_g.spawn_boottime_ns != 0) {
        *start_mono_ns = cs_boottime_to_monotonic(cs_g.spawn_boottime_ns, offset);
        *precision_ns = 0;
        *from_spawn_env = true;
        return 0;
    }
    *from_spawn_env = false;
    char buf[1024];
    int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = read(fd, buf, sizeof buf);
    close(fd);
    uint64_t ticks;
    if (n <= 0 || cs_parse_proc_stat_starttime(buf, (size_t)n, &ticks) != 0) return -1;
    uint64_t hz = cs_g.ticks_per_second ? cs_g.ticks_per_second : 100;
    *start_mono_ns = cs_boottime_to_monotonic(cs_ticks_to_ns(ticks, hz), offset);
    *precision_ns = 1000000000ull / hz;
    return 0;
}
