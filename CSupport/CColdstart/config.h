// Coldstart's configuration: every COLDSTART_* variable, read once from envp
// into cs_g.cfg (config.c) before anything starts. Format and meaning:
// README.md, "Settings".
#ifndef COLDSTART_CONFIG_H
#define COLDSTART_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#define CS_MIN_HZ 10
#define CS_MAX_HZ 10000
#define CS_DEFAULT_HZ 1000
#define CS_DEFAULT_MAX_SAMPLES 10000
// A host that never calls ready() (a server) is sampled and watched this long,
// then left alone; its timeline is still written at exit.
#define CS_DEFAULT_LIMIT_MS 10000

enum cs_sampler_mode { CS_SAMPLER_PERF, CS_SAMPLER_POSIX, CS_SAMPLER_WALL, CS_SAMPLER_OFF };

struct cs_config {
    const char *value;          // COLDSTART: "1" or a path ending in .json (points into envp)
    const char *dir;            // COLDSTART_DIR, or NULL
    uint64_t spawn_boottime_ns; // COLDSTART_SPAWN_NS, 0 if absent
    uint64_t extend_ns;         // COLDSTART_EXTEND_MS
    uint64_t limit_ns;          // COLDSTART_LIMIT_MS: sampling and watching stop after this
    uint32_t hz;                // COLDSTART_HZ (sampler; the watcher caps it)
    uint32_t max_samples;       // COLDSTART_MAX_SAMPLES
    enum cs_sampler_mode sampler; // COLDSTART_SAMPLER
    bool sampler_set;           // COLDSTART_SAMPLER was given (any value)
    bool unwind_fp;             // COLDSTART_UNWINDER=fp
    bool watch;                 // COLDSTART_WATCH is not 0
};

/// Reads every COLDSTART_* variable from `envp` into cs_g.cfg, warning once
/// (one stderr line each) about a bad value, which then takes its default.
/// False when COLDSTART asks for no profiling. Async-signal-safe (runs from
/// .preinit_array, before libc's constructors). Off, with one line, in a
/// setuid or setgid program (AT_SECURE).
bool cs_config_read(char **envp);

#endif
