// The process start: from COLDSTART_SPAWN_NS when the launcher set it, else
// /proc/self/stat's starttime (in clock ticks).
#include "internal.h"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

uint64_t cs_ticks_to_ns(uint64_t ticks, uint64_t ticks_per_second) {
    if (ticks_per_second == 0) return 0;
    // Split to avoid overflow: whole seconds, then the remainder.
    return ticks / ticks_per_second * 1000000000ull
        + ticks % ticks_per_second * 1000000000ull / ticks_per_second;
}

uint64_t cs_boottime_to_monotonic(uint64_t boottime_ns, uint64_t boot_minus_mono_ns) {
    return boottime_ns > boot_minus_mono_ns ? boottime_ns - boot_minus_mono_ns : 0;
}

int cs_process_start(uint64_t *start_mono_ns, uint64_t *precision_ns,
                     uint64_t *boot_minus_mono_ns, bool *from_spawn_env) {
    // Bracket the BOOTTIME read with MONOTONIC reads so the offset is good to
    // about a microsecond even if the thread is preempted between the calls.
    uint64_t m0 = cs_clock_ns(CLOCK_MONOTONIC);
    uint64_t b = cs_clock_ns(CLOCK_BOOTTIME);
    uint64_t m1 = cs_clock_ns(CLOCK_MONOTONIC);
    uint64_t mono = m0 + (m1 - m0) / 2;
    uint64_t offset = b > mono ? b - mono : 0;
    *boot_minus_mono_ns = offset;

    if (cs_g.cfg.spawn_boottime_ns != 0) {
        *start_mono_ns = cs_boottime_to_monotonic(cs_g.cfg.spawn_boottime_ns, offset);
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
    uint64_t hz = cs_g.proc.ticks_per_second ? cs_g.proc.ticks_per_second : 100;
    *start_mono_ns = cs_boottime_to_monotonic(cs_ticks_to_ns(ticks, hz), offset);
    *precision_ns = 1000000000ull / hz;
    return 0;
}
