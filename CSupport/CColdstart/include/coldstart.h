// Coldstart capture layer: the C functions the Swift runtime library calls.
// Knows nothing of Swift. Every function here is safe to call from any thread;
// each says whether it is also async-signal-safe.
#ifndef COLDSTART_H
#define COLDSTART_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// True when profiling is on for this process (even after the launch ended).
/// Async-signal-safe.
bool cs_is_enabled(void);

/// CLOCK_MONOTONIC in nanoseconds. Async-signal-safe (vDSO).
uint64_t cs_monotonic_ns(void);

/// Records an instant mark. After ready() it is recorded as "extended" and is
/// never a phase boundary. Copies `name`. Lock-free; async-signal-safe.
void cs_mark(const char *name, bool phase_boundary);

/// Records the start of a span and returns its id (0 when not recording or
/// out of room). Lock-free; async-signal-safe.
uint32_t cs_span_begin(const char *name);

/// Ends the span `id` (0 is ignored). Lock-free; async-signal-safe.
void cs_span_end(uint32_t id);

/// The launch is complete. The first call wins; later calls are ignored.
/// Removes the abandonment signal handlers, then writes the timeline on a
/// background thread (after COLDSTART_EXTEND_MS). Not async-signal-safe.
void cs_ready(void);

/// Records the Swift version the recording library was compiled with.
/// Not async-signal-safe (first caller wins, later calls are cheap).
void cs_set_swift_version(const char *version);

#ifdef __cplusplus
}
#endif
#endif
