#include "jsonw.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

void cs_jw_begin(struct cs_jw *w, int fd, uint64_t limit) {
    w->fd = fd;
    w->failed = 0;
    w->over = 0;
    w->limit = limit;
    w->total = 0;
    w->not_utf8 = 0;
    w->len = 0;
}

int cs_jw_flush(struct cs_jw *w) {
    size_t off = 0;
    while (!w->failed && off < w->len) {
        ssize_t n = write(w->fd, w->buf + off, w->len - off);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) { w->failed = 1; break; }
        off += (size_t)n;
    }
    w->len = 0;
    return w->failed ? -1 : 0;
}

static void put(struct cs_jw *w, const char *p, size_t n) {
    if (w->limit && !w->failed && w->total + n > w->limit) {
        w->over = 1;
        w->failed = 1;
        w->len = 0;   // what is buffered is never written: the caller starts over or gives up
    }
    w->total += n;
    while (n > 0 && !w->failed) {
        size_t room = sizeof w->buf - w->len;
        if (room == 0) { cs_jw_flush(w); continue; }
        size_t k = n < room ? n : room;
        memcpy(w->buf + w->len, p, k);
        w->len += k;
        p += k;
        n -= k;
    }
}

void cs_jw_raw(struct cs_jw *w, const char *s) { put(w, s, strlen(s)); }

void cs_jw_bytes(struct cs_jw *w, const char *p, size_t n) { put(w, p, n); }

// The length of the well-formed UTF-8 sequence at s[0, n) (n ≥ 1, s[0] ≥
// 0x80), or 0 if none starts there (RFC 3629, table 3-7 of Unicode).
static size_t utf8_sequence(const unsigned char *s, size_t n) {
    unsigned char c = s[0];
    size_t len;
    unsigned char lo = 0x80, hi = 0xbf;   // bounds of the second byte
    if (c >= 0xc2 && c <= 0xdf) len = 2;
    else if (c >= 0xe0 && c <= 0xef) { len = 3; if (c == 0xe0) lo = 0xa0; else if (c == 0xed) hi = 0x9f; }
    else if (c >= 0xf0 && c <= 0xf4) { len = 4; if (c == 0xf0) lo = 0x90; else if (c == 0xf4) hi = 0x8f; }
    else return 0;
    if (n < len || s[1] < lo || s[1] > hi) return 0;
    for (size_t i = 2; i < len; i++)
        if ((s[i] & 0xc0) != 0x80) return 0;
    return len;
}

size_t cs_utf8_cut(const char *s, size_t n) {
    const unsigned char *u = (const unsigned char *)s;
    // The last lead byte within the longest sequence's reach.
    for (size_t back = 1; back <= 3 && back <= n; back++) {
        unsigned char c = u[n - back];
        if ((c & 0xc0) == 0x80) continue;    // a continuation byte: look further back
        size_t want = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
        return want > back ? n - back : n;
    }
    return n;
}

// Whether all of p[0, 8) are printable ASCII other than '"' and '\\'
// (bit tricks: a byte of x is 0 where (x - 0x01…) & ~x & 0x80… is set).
static bool plain8(const unsigned char *p) {
    const uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
    uint64_t x;
    memcpy(&x, p, 8);
    uint64_t quote = x ^ (ones * '"'), backslash = x ^ (ones * '\\');
    uint64_t bad = (x & high)                              // ≥ 0x80
        | ((x - ones * 0x20) & ~x & high)                  // < 0x20
        | ((quote - ones) & ~quote & high)
        | ((backslash - ones) & ~backslash & high);
    return bad == 0;
}

void cs_jw_str(struct cs_jw *w, const char *s, size_t n) {
    static const char hex[] = "0123456789abcdef";
    const unsigned char *u = (const unsigned char *)s;
    put(w, "\"", 1);
    size_t run = 0;  // start of the pending run of bytes that need no escape
    for (size_t i = 0; i < n; i++) {
        // Eight bytes at a time over what most strings are made of, printable
        // ASCII (the writer runs on the host's exit path).
        while (n - i >= 8 && plain8(u + i)) i += 8;
        if (i == n) break;
        unsigned char c = u[i];
        if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') continue;
        if (c >= 0x80) {
            size_t len = utf8_sequence(u + i, n - i);
            if (len) { i += len - 1; continue; }
            put(w, s + run, i - run);
            run = i + 1;
            put(w, "\xef\xbf\xbd", 3);   // U+FFFD REPLACEMENT CHARACTER
            w->not_utf8++;
            continue;
        }
        put(w, s + run, i - run);
        run = i + 1;
        char esc[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
        if (c == '"' || c == '\\') { esc[1] = (char)c; put(w, esc, 2); }
        else if (c == '\n') put(w, "\\n", 2);
        else if (c == '\t') put(w, "\\t", 2);
        else put(w, esc, 6);
    }
    put(w, s + run, n - run);
    put(w, "\"", 1);
}

size_t cs_json_string(const char *s, size_t n, char *out, size_t cap, uint64_t *replaced) {
    struct cs_jw w;   // no descriptor: what fits in its buffer is never flushed
    cs_jw_begin(&w, -1, sizeof w.buf);
    cs_jw_str(&w, s, n);
    size_t len = w.over || cap == 0 ? 0 : w.len < cap - 1 ? w.len : cap - 1;
    memcpy(out, w.buf, len);
    if (cap) out[len] = 0;
    *replaced = w.not_utf8;
    return len;
}

void cs_jw_cstr(struct cs_jw *w, const char *s) { cs_jw_str(w, s, strlen(s)); }

// Two digits per division: the writer formats thousands of numbers (each
// sample's frames) while the host waits for its exit.
size_t cs_format_u64(uint64_t v, char *out) {
    static const char pairs[] =
        "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
        "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
        "8081828384858687888990919293949596979899";
    char tmp[24];
    size_t n = sizeof tmp;
    while (v >= 100) {
        size_t d = (size_t)(v % 100) * 2;
        v /= 100;
        tmp[--n] = pairs[d + 1];
        tmp[--n] = pairs[d];
    }
    if (v >= 10) {
        tmp[--n] = pairs[v * 2 + 1];
        tmp[--n] = pairs[v * 2];
    } else {
        tmp[--n] = (char)('0' + v);
    }
    size_t len = sizeof tmp - n;
    memcpy(out, tmp + n, len);
    out[len] = 0;
    return len;
}

void cs_jw_u64(struct cs_jw *w, uint64_t v) {
    char b[24];
    put(w, b, cs_format_u64(v, b));
}

void cs_jw_i64(struct cs_jw *w, int64_t v) {
    if (v < 0) { put(w, "-", 1); cs_jw_u64(w, (uint64_t)0 - (uint64_t)v); }
    else cs_jw_u64(w, (uint64_t)v);
}

void cs_jw_milli(struct cs_jw *w, int64_t v) {
    uint64_t a = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    if (v < 0) put(w, "-", 1);
    cs_jw_u64(w, a / 1000);
    char frac[4] = {'.', (char)('0' + a % 1000 / 100), (char)('0' + a % 100 / 10), (char)('0' + a % 10)};
    put(w, frac, 4);
}

void cs_jw_key(struct cs_jw *w, const char *key) {
    put(w, "\"", 1);
    cs_jw_raw(w, key);
    put(w, "\":", 2);
}
