// A buffered JSON emitter over a file descriptor that never allocates: every
// function is async-signal-safe (memcpy and write(2) only). An I/O error sets
// `failed` and turns later calls into no-ops; so does reaching `limit` (then
// `over` is set too, and nothing past the limit reaches the file).
#ifndef COLDSTART_JSONW_H
#define COLDSTART_JSONW_H

#include <stddef.h>
#include <stdint.h>

struct cs_jw {
    int fd;
    int failed;
    int over;           // the output reached `limit`
    uint64_t limit;     // bytes the file may hold; 0: no limit
    uint64_t total;     // bytes accepted so far
    uint64_t not_utf8;  // bytes of strings that were not UTF-8, each written as U+FFFD
    size_t len;
    char buf[64 * 1024];
};

/// Starts output to `fd`, with at most `limit` bytes (0: unlimited).
void cs_jw_begin(struct cs_jw *w, int fd, uint64_t limit);
/// Writes `s` verbatim.
void cs_jw_raw(struct cs_jw *w, const char *s);
/// Writes `n` bytes verbatim.
void cs_jw_bytes(struct cs_jw *w, const char *p, size_t n);
/// Writes `n` bytes as a JSON string, quoted and escaped, always valid
/// UTF-8: each byte that does not belong to a well-formed UTF-8 sequence
/// (RFC 3629: no overlong forms, surrogates or code points past U+10FFFF) is
/// written as U+FFFD and counted in `not_utf8`.
void cs_jw_str(struct cs_jw *w, const char *s, size_t n);
/// Writes a NUL-terminated C string as a JSON string.
void cs_jw_cstr(struct cs_jw *w, const char *s);
void cs_jw_u64(struct cs_jw *w, uint64_t v);
void cs_jw_i64(struct cs_jw *w, int64_t v);
/// Writes v / 1000 with exactly three decimals (ns → µs, or ms ×1000).
void cs_jw_milli(struct cs_jw *w, int64_t v);
/// Writes `"key":` (key must need no escaping).
void cs_jw_key(struct cs_jw *w, const char *key);
/// Flushes the buffer; returns 0 unless a write failed.
int cs_jw_flush(struct cs_jw *w);

/// cs_utf8_cut (coldstart_testing.h): where a string was cut at a byte bound
/// (a kernel's 15-byte thread name, a 255-byte mark), the cut moves back to a
/// character boundary. Async-signal-safe (pure).
#include "include/coldstart_testing.h"

/// Formats v in decimal into out (at least 21 bytes); returns the length.
size_t cs_format_u64(uint64_t v, char *out);

#endif
