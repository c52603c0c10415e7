// Reads the configuration once (config.h). Calls only the leaf helpers and
// the number parser.
#include "internal.h"

#include <string.h>
#include <sys/auxv.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <unistd.h>

// The value of `name` when it lies in [lo, hi], else `fallback` (and one
// warning if it was set).
static uint64_t bounded(char **envp, const char *name, uint64_t lo, uint64_t hi, uint64_t fallback, const char *want) {
    const char *v = cs_env_get(envp, name);
    uint64_t x;
    if (v == NULL || *v == 0) return fallback;
    if (cs_parse_u64(v, &x) != 0 || x < lo || x > hi) {
        char msg[160] = "ignoring ";
        strcat(msg, name);
        strcat(msg, " (want ");
        strcat(msg, want);
        strcat(msg, "): ");
        cs_warn(msg, v);
        return fallback;
    }
    return x;
}

// Whether this launch is one of the fraction that is sampled: one getrandom
// call (a clock-derived value if the pool is not ready yet; fairness, not
// secrecy, is what matters here).
static bool draw(uint32_t ppm) {
    if (ppm >= 1000000) return true;
    if (ppm == 0) return false;
    uint64_t r = 0;
    if (cs_syscall(SYS_getrandom, &r, sizeof r, GRND_NONBLOCK) != (long)sizeof r)
        r = (cs_monotonic_ns() ^ (uint64_t)cs_syscall(SYS_getpid) << 32) * 0x9e3779b97f4a7c15ull;
    return (r >> 11) % 1000000 < ppm;
}

// The production settings (docs/fleet.md): which launches are sampled,
// labels, the file's size bound and the directory's rotation.
static void read_production(char **envp, struct cs_config *c) {
    const char *sample = cs_env_get(envp, "COLDSTART_SAMPLE");
    c->sample_ppm = 1000000;
    if (sample && *sample && !cs_parse_fraction(sample, &c->sample_ppm)) {
        cs_warn("ignoring COLDSTART_SAMPLE (want a fraction from 0 to 1): ", sample);
        c->sample_ppm = 1000000;
    }
    c->sampled = draw(c->sample_ppm);
    if (!c->sampled) {
        // Phases and marks only: neither the sampler nor the watcher starts.
        c->sampler = CS_SAMPLER_OFF;
        c->watch = false;
    }
    const char *labels = cs_env_get(envp, "COLDSTART_LABELS");
    if (labels && *labels) cs_labels_parse(labels, &c->labels);
    c->max_bytes = bounded(envp, "COLDSTART_MAX_BYTES", 4096, 1ull << 40, CS_DEFAULT_MAX_BYTES, "4096 to 2^40 bytes");
    c->keep = (uint32_t)bounded(envp, "COLDSTART_KEEP", 1, 1000000, 0, "1 to 1000000 files");
    c->keep_bytes = bounded(envp, "COLDSTART_KEEP_BYTES", 65536, 1ull << 50, 0, "65536 to 2^50 bytes");
    if ((c->keep || c->keep_bytes) && strcmp(c->value, "1") != 0) {
        cs_warn("ignoring COLDSTART_KEEP and COLDSTART_KEEP_BYTES (they rotate the directory of COLDSTART=1)", NULL);
        c->keep = 0;
        c->keep_bytes = 0;
    }
}

bool cs_config_read(char **envp) {
    struct cs_config *c = &cs_g.cfg;
    c->value = cs_env_get(envp, "COLDSTART");
    if (c->value == NULL || c->value[0] == 0 || strcmp(c->value, "0") == 0) return false;
    // A setuid or setgid program must not obey its caller's environment (the
    // loader ignores LD_* variables there for the same reason): the caller
    // could make it write where only the program's owner may.
    if (getauxval(AT_SECURE)) {
        cs_warn("ignoring COLDSTART in a setuid or setgid program; profiling off", NULL);
        c->value = NULL;
        return false;
    }
    c->dir = cs_env_get(envp, "COLDSTART_DIR");

    const char *spawn = cs_env_get(envp, "COLDSTART_SPAWN_NS");
    if (spawn && cs_parse_u64(spawn, &c->spawn_boottime_ns) != 0) {
        cs_warn("ignoring COLDSTART_SPAWN_NS (not a CLOCK_BOOTTIME nanosecond count): ", spawn);
        c->spawn_boottime_ns = 0;
    }
    c->extend_ns = bounded(envp, "COLDSTART_EXTEND_MS", 0, 600000, 0, "0 to 600000 ms") * 1000000ull;
    c->limit_ns = bounded(envp, "COLDSTART_LIMIT_MS", 100, 3600000, CS_DEFAULT_LIMIT_MS, "100 to 3600000 ms") * 1000000ull;
    c->hz = (uint32_t)bounded(envp, "COLDSTART_HZ", CS_MIN_HZ, CS_MAX_HZ, 0, "10 to 10000");
    c->hz_set = c->hz != 0;
    if (!c->hz_set) c->hz = CS_DEFAULT_HZ;
    c->max_samples = (uint32_t)bounded(envp, "COLDSTART_MAX_SAMPLES", 100, 1000000, CS_DEFAULT_MAX_SAMPLES, "100 to 1000000");

    const char *mode = cs_env_get(envp, "COLDSTART_SAMPLER");
    c->sampler = CS_SAMPLER_PERF;
    c->sampler_set = mode != NULL;
    if (mode && *mode) {
        if (strcmp(mode, "off") == 0) c->sampler = CS_SAMPLER_OFF;
        else if (strcmp(mode, "posix") == 0) c->sampler = CS_SAMPLER_POSIX;
        else if (strcmp(mode, "wall") == 0) c->sampler = CS_SAMPLER_WALL;
        else if (strcmp(mode, "signals") == 0) c->sampler = CS_SAMPLER_SIGNALS;
        else if (strcmp(mode, "perf") != 0) cs_warn("ignoring COLDSTART_SAMPLER (want perf, signals, posix, wall or off): ", mode);
    }
    const char *unw = cs_env_get(envp, "COLDSTART_UNWINDER");
    c->unwind_fp = unw && strcmp(unw, "fp") == 0;
    c->unwind_offline = unw && strcmp(unw, "offline") == 0;
    if (unw && *unw && !c->unwind_fp && !c->unwind_offline && strcmp(unw, "libunwind") != 0)
        cs_warn("ignoring COLDSTART_UNWINDER (want libunwind, offline or fp): ", unw);
    // A multiple of 8, as the kernel wants.
    c->stack_bytes = (uint32_t)bounded(envp, "COLDSTART_STACK_BYTES", 512, CS_MAX_STACK_BYTES, CS_DEFAULT_STACK_BYTES,
                                       "512 to 16384 bytes") & ~7u;
    const char *watch = cs_env_get(envp, "COLDSTART_WATCH");
    c->watch = !(watch && strcmp(watch, "0") == 0);
    const char *bridge = cs_env_get(envp, "COLDSTART_BRIDGE");
    c->bridge = !(bridge && strcmp(bridge, "0") == 0);
    read_production(envp, c);
    return true;
}
