// One HTTP POST through libcurl, bounded in time and memory, for
// `coldstart push`. CLI only: the host never links it.
#ifndef CS_HTTP_H
#define CS_HTTP_H

#include <stddef.h>

/// What one request returned. `body` holds at most the bound asked for;
/// `truncated` says the server sent more (the rest was not read).
typedef struct {
    long status;            // HTTP status, 0 when no response came
    char *body;             // malloc'd, `body_length` bytes; free with cs_http_free
    size_t body_length;
    int truncated;
    char *location;         // malloc'd Location header of a redirect, or NULL
    char *retry_after;      // malloc'd Retry-After header, or NULL
    int timed_out;          // the whole request outlasted `timeout_ms`
    char error[256];        // why it failed ("" on a response)
} cs_http_result;

/// POSTs `body` to `url` (http or https only) with `headers` ("Name: value",
/// `header_count` of them). The request ends within `timeout_ms` whole
/// (connection, upload, and a body dripped a byte at a time); at most
/// `max_body` bytes of the response are kept, and reading stops there; no
/// redirect is followed. libcurl is loaded on first use (`libcurl.so.4`,
/// the runtime package `libcurl4`): the CLI links nothing of it. Returns 0
/// when a response came (any status), -1 with `error` set otherwise.
/// Not async-signal-safe (allocates; runs in the CLI only).
int cs_http_post(const char *url, const char *const *headers, size_t header_count, const void *body,
                 size_t body_length, long timeout_ms, size_t max_body, cs_http_result *result);

/// Frees what `cs_http_post` allocated in `result`. Not async-signal-safe.
void cs_http_free(cs_http_result *result);

#endif
