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
// Without COLDSTART_HZ, sampling runs at CS_BOOST_HZ until the host's
// threads have had CS_BOOST_NS of CPU (a ~10 ms launch gets a few samples at
// 1 kHz, ~3× as many this way), then at CS_DEFAULT_HZ; the writer thins the
// boosted samples to one rate (docs/performance.md, "Sample rate of a short
// launch"). CPU, not wall time: a busy machine that stretches a 20 ms launch
// past 50 ms of wall time had its samples thinned to a third. 3 kHz, not 4:
// each sample costs a ~12 ms tool ~17 µs, and at 4 kHz its 19 samples took it
// past the ×1.10 budget (×1.107 against ×1.097 at 3 kHz with 14, same
// rounds). coldstart run samples a linked app's loader at this rate too
// (LoaderSampling.swift).
#define CS_BOOST_HZ 3000
#define CS_BOOST_NS 50000000ull
#define CS_DEFAULT_MAX_SAMPLES 10000
// Bytes of user stack the kernel copies with each sample, for the DWARF
// unwinder (docs/performance.md, "How much stack a sample copies").
#define CS_DEFAULT_STACK_BYTES 4096
#define CS_MAX_STACK_BYTES 16384
// A host that never calls ready() (a server) is sampled and watched this long,
// then left alone; its timeline is still written at exit.
#define CS_DEFAULT_LIMIT_MS 10000
// Production mode (docs/fleet.md): labels, the file's size bound.
#define CS_MAX_LABELS 16
#define CS_LABEL_KEY_MAX 64
#define CS_LABEL_VALUE_MAX 256
#define CS_DEFAULT_MAX_BYTES (32ull << 20)

// COLDSTART_LABELS, validated and copied at start-up (labels.c): pair i is
// buf[key_off[i], +key_len[i]] = buf[val_off[i], +val_len[i]].
struct cs_labels {
    uint32_t n;
    uint16_t key_off[CS_MAX_LABELS], key_len[CS_MAX_LABELS];
    uint16_t val_off[CS_MAX_LABELS], val_len[CS_MAX_LABELS];
    char buf[CS_MAX_LABELS * (CS_LABEL_KEY_MAX + CS_LABEL_VALUE_MAX)];
};

enum cs_sampler_mode { CS_SAMPLER_PERF, CS_SAMPLER_POSIX, CS_SAMPLER_WALL, CS_SAMPLER_OFF, CS_SAMPLER_SIGNALS };

struct cs_config {
    const char *value;          // COLDSTART: "1" or a path ending in .json (points into envp)
    const char *dir;            // COLDSTART_DIR, or NULL
    uint64_t spawn_boottime_ns; // COLDSTART_SPAWN_NS, 0 if absent
    uint64_t extend_ns;         // COLDSTART_EXTEND_MS
    uint64_t limit_ns;          // COLDSTART_LIMIT_MS: sampling and watching stop after this
    uint32_t hz;                // COLDSTART_HZ (sampler; the watcher caps it)
    bool hz_set;                // COLDSTART_HZ was given: no boosted start
    uint32_t max_samples;       // COLDSTART_MAX_SAMPLES
    enum cs_sampler_mode sampler; // COLDSTART_SAMPLER
    bool sampler_set;           // COLDSTART_SAMPLER was given (any value)
    bool unwind_fp;             // COLDSTART_UNWINDER=fp
    bool unwind_offline;        // COLDSTART_UNWINDER=offline: registers and stack copies into the timeline
    uint32_t stack_bytes;       // COLDSTART_STACK_BYTES: user stack copied per sample
    bool watch;                 // COLDSTART_WATCH is not 0
    bool bridge;                // COLDSTART_BRIDGE is not 0: CPU-wide events while a quiet kernel holds the task clocks back
    uint32_t sample_ppm;        // COLDSTART_SAMPLE, in millionths (default 1000000)
    bool sampled;               // this launch drew sampling (else sampler and watcher off)
    uint64_t max_bytes;         // COLDSTART_MAX_BYTES: the timeline file's size bound
    uint32_t keep;              // COLDSTART_KEEP: timelines kept in the directory; 0: no bound
    uint64_t keep_bytes;        // COLDSTART_KEEP_BYTES: their total size; 0: no bound
    struct cs_labels labels;    // COLDSTART_LABELS
};

/// Reads every COLDSTART_* variable from `envp` into cs_g.cfg, warning once
/// (one stderr line each) about a bad value, which then takes its default.
/// False when COLDSTART asks for no profiling. Async-signal-safe (runs from
/// .preinit_array, before libc's constructors). Off, with one line, in a
/// setuid or setgid program (AT_SECURE).
bool cs_config_read(char **envp);

// ---- labels.c ----
/// Parses "k=v,k=v" into `out`: keys [A-Za-z_][A-Za-z0-9_.]* of at most
/// CS_LABEL_KEY_MAX bytes, values of at most CS_LABEL_VALUE_MAX bytes without
/// control characters, at most CS_MAX_LABELS pairs, no key twice. On bad input
/// `out` is left empty and one stderr line says why. Async-signal-safe.
void cs_labels_parse(const char *spec, struct cs_labels *out);
/// Parses COLDSTART_SAMPLE ("0" … "1", at most 6 decimals used) into
/// millionths; false when it is not a fraction in [0, 1]. Async-signal-safe.
bool cs_parse_fraction(const char *s, uint32_t *ppm);

#endif
