// libcurl's easy interface, resolved at run time. Its ABI (soname 4, option
// numbers) has been stable since 2006; the numbers below are curl.h's, so
// no development package is needed to build the CLI.
#include "cs_http.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum {
    OPT_WRITEDATA = 10001, OPT_URL = 10002, OPT_ERRORBUFFER = 10010, OPT_POSTFIELDS = 10015,
    OPT_HTTPHEADER = 10023, OPT_HEADERDATA = 10029, OPT_WRITEFUNCTION = 20011, OPT_HEADERFUNCTION = 20079,
    OPT_POSTFIELDSIZE_LARGE = 30120, OPT_FOLLOWLOCATION = 52, OPT_NOSIGNAL = 99, OPT_TIMEOUT_MS = 155,
    OPT_PROTOCOLS = 181, OPT_REDIR_PROTOCOLS = 182, OPT_NOPROGRESS = 43,
    INFO_RESPONSE_CODE = 0x200002,
    PROTO_HTTP = 1, PROTO_HTTPS = 2,
    E_OK = 0, E_WRITE_ERROR = 23, E_OPERATION_TIMEDOUT = 28,
};

typedef struct curl_slist { char *data; struct curl_slist *next; } curl_slist;

// The functions, looked up per request (dlopen of a loaded library only
// counts a reference): no state outlives a call.
typedef struct {
    void *(*easy_init)(void);
    int (*easy_setopt)(void *, int, ...);
    int (*easy_perform)(void *);
    int (*easy_getinfo)(void *, int, ...);
    void (*easy_cleanup)(void *);
    const char *(*easy_strerror)(int);
    curl_slist *(*slist_append)(curl_slist *, const char *);
    void (*slist_free_all)(curl_slist *);
} curl_api;

// Loads libcurl; 0 on success. Not async-signal-safe (dlopen). libcurl's
// own one-time set-up runs in its first curl_easy_init.
static int load(curl_api *api, char *error, size_t size) {
    void *lib = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(error, size, "libcurl is not installed (libcurl.so.4: apt-get install libcurl4)");
        return -1;
    }
    *(void **)&api->easy_init = dlsym(lib, "curl_easy_init");
    *(void **)&api->easy_setopt = dlsym(lib, "curl_easy_setopt");
    *(void **)&api->easy_perform = dlsym(lib, "curl_easy_perform");
    *(void **)&api->easy_getinfo = dlsym(lib, "curl_easy_getinfo");
    *(void **)&api->easy_cleanup = dlsym(lib, "curl_easy_cleanup");
    *(void **)&api->easy_strerror = dlsym(lib, "curl_easy_strerror");
    *(void **)&api->slist_append = dlsym(lib, "curl_slist_append");
    *(void **)&api->slist_free_all = dlsym(lib, "curl_slist_free_all");
    if (!api->easy_init || !api->easy_setopt || !api->easy_perform || !api->easy_getinfo || !api->easy_cleanup ||
        !api->easy_strerror || !api->slist_append || !api->slist_free_all) {
        snprintf(error, size, "libcurl.so.4 lacks its easy interface");
        return -1;
    }
    return 0;
}

typedef struct {
    cs_http_result *result;
    size_t max_body;
} sink;

// Keeps the body up to the bound; returning less than given stops the
// transfer there, so nothing past the bound is ever read. Not async-signal-safe.
static size_t on_body(char *data, size_t size, size_t count, void *context) {
    sink *s = context;
    size_t length = size * count;
    size_t room = s->max_body - s->result->body_length;
    size_t kept = length < room ? length : room;
    if (kept > 0) {
        char *grown = realloc(s->result->body, s->result->body_length + kept);
        if (!grown) return 0;
        memcpy(grown + s->result->body_length, data, kept);
        s->result->body = grown;
        s->result->body_length += kept;
    }
    if (kept < length) {
        s->result->truncated = 1;
        return 0;
    }
    return length;
}

// The header's value when `line` is `name: value`, malloc'd, trimmed. Not async-signal-safe.
static char *header_value(const char *line, size_t length, const char *name) {
    size_t name_length = strlen(name);
    if (length <= name_length || strncasecmp(line, name, name_length) != 0 || line[name_length] != ':') return NULL;
    const char *start = line + name_length + 1, *end = line + length;
    while (start < end && (*start == ' ' || *start == '\t')) start++;
    while (end > start && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' ')) end--;
    char *value = malloc((size_t)(end - start) + 1);
    if (value) {
        memcpy(value, start, (size_t)(end - start));
        value[end - start] = 0;
    }
    return value;
}

// Keeps Location and Retry-After (capped at 4 KiB a line). Not async-signal-safe.
static size_t on_header(char *line, size_t size, size_t count, void *context) {
    cs_http_result *result = context;
    size_t length = size * count;
    if (length > 4096) return length;
    char *value;
    if ((value = header_value(line, length, "Location"))) {
        free(result->location);
        result->location = value;
    } else if ((value = header_value(line, length, "Retry-After"))) {
        free(result->retry_after);
        result->retry_after = value;
    }
    return length;
}

int cs_http_post(const char *url, const char *const *headers, size_t header_count, const void *body,
                 size_t body_length, long timeout_ms, size_t max_body, cs_http_result *result) {
    memset(result, 0, sizeof *result);
    curl_api functions, *api = &functions;
    if (load(api, result->error, sizeof result->error) != 0) return -1;
    void *easy = api->easy_init();
    if (!easy) {
        snprintf(result->error, sizeof result->error, "libcurl could not start a request");
        return -1;
    }
    curl_slist *list = NULL;
    for (size_t i = 0; i < header_count; i++) list = api->slist_append(list, headers[i]);
    // libcurl waits for "100 Continue" before a large body; collectors
    // rarely send it, and the wait would eat the timeout.
    list = api->slist_append(list, "Expect:");
    sink s = {result, max_body};
    char error[256] = "";
    api->easy_setopt(easy, OPT_URL, url);
    api->easy_setopt(easy, OPT_PROTOCOLS, (long)(PROTO_HTTP | PROTO_HTTPS));
    api->easy_setopt(easy, OPT_REDIR_PROTOCOLS, (long)(PROTO_HTTP | PROTO_HTTPS));
    api->easy_setopt(easy, OPT_FOLLOWLOCATION, 0L);
    api->easy_setopt(easy, OPT_NOSIGNAL, 1L);
    api->easy_setopt(easy, OPT_NOPROGRESS, 1L);
    api->easy_setopt(easy, OPT_TIMEOUT_MS, timeout_ms);
    api->easy_setopt(easy, OPT_HTTPHEADER, list);
    api->easy_setopt(easy, OPT_POSTFIELDS, body);
    api->easy_setopt(easy, OPT_POSTFIELDSIZE_LARGE, (int64_t)body_length);
    api->easy_setopt(easy, OPT_WRITEFUNCTION, on_body);
    api->easy_setopt(easy, OPT_WRITEDATA, &s);
    api->easy_setopt(easy, OPT_HEADERFUNCTION, on_header);
    api->easy_setopt(easy, OPT_HEADERDATA, result);
    api->easy_setopt(easy, OPT_ERRORBUFFER, error);
    int code = api->easy_perform(easy);
    api->easy_getinfo(easy, INFO_RESPONSE_CODE, &result->status);
    api->easy_cleanup(easy);
    api->slist_free_all(list);
    if (code == E_OK || (code == E_WRITE_ERROR && result->truncated)) return 0;
    result->timed_out = code == E_OPERATION_TIMEDOUT;
    snprintf(result->error, sizeof result->error, "%s", error[0] ? error : api->easy_strerror(code));
    return -1;
}

void cs_http_free(cs_http_result *result) {
    free(result->body);
    free(result->location);
    free(result->retry_after);
    result->body = result->location = result->retry_after = NULL;
}
