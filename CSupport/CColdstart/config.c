// Reads the configuration once (config.h). Calls only the leaf helpers and
// the number parser.
#include "internal.h"

#include <string.h>
#include <sys/auxv.h>

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
    c->hz = (uint32_t)bounded(envp, "COLDSTART_HZ", CS_MIN_HZ, CS_MAX_HZ, CS_DEFAULT_HZ, "10 to 10000");
    c->max_samples = (uint32_t)bounded(envp, "COLDSTART_MAX_SAMPLES", 100, 1000000, CS_DEFAULT_MAX_SAMPLES, "100 to 1000000");

    const char *mode = cs_env_get(envp, "COLDSTART_SAMPLER");
    c->sampler = CS_SAMPLER_PERF;
    c->sampler_set = mode != NULL;
    if (mode && *mode) {
        if (strcmp(mode, "off") == 0) c->sampler = CS_SAMPLER_OFF;
        else if (strcmp(mode, "posix") == 0) c->sampler = CS_SAMPLER_POSIX;
        else if (strcmp(mode, "wall") == 0) c->sampler = CS_SAMPLER_WALL;
        else if (strcmp(mode, "perf") != 0) cs_warn("ignoring COLDSTART_SAMPLER (want perf, posix, wall or off): ", mode);
    }
    const char *unw = cs_env_get(envp, "COLDSTART_UNWINDER");
    c->unwind_fp = unw && strcmp(unw, "fp") == 0;
    if (unw && *unw && !c->unwind_fp && strcmp(unw, "libunwind") != 0)
        cs_warn("ignoring COLDSTART_UNWINDER (want libunwind or fp): ", unw);
    const char *watch = cs_env_get(envp, "COLDSTART_WATCH");
    c->watch = !(watch && strcmp(watch, "0") == 0);
    return true;
}
