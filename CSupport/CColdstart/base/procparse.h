// Parsing what /proc says (procparse.c): one decimal and one hex scanner, the
// fields after the last ')' of a stat line, and the formats built on them.
// Pure functions over buffers: no I/O, no state, all async-signal-safe. The
// ones tests call are declared in include/coldstart_testing.h.
#ifndef COLDSTART_PROCPARSE_H
#define COLDSTART_PROCPARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "include/coldstart_testing.h"

/// Skips spaces, then reads decimal digits up to `end`. Returns the position
/// after the digits, or NULL when there are none or the value overflows.
const char *cs_scan_dec(const char *p, const char *end, uint64_t *out);
/// The first byte after the last ')' of a stat line (the command name, field
/// 2, may hold ')' and spaces), or NULL when there is none.
const char *cs_stat_after_comm(const char *buf, size_t len);

/// One line of /proc/<pid>/maps (NUL-terminated, without '\n').
struct cs_maps_line {
    uint64_t start, end, offset;
    const char *perms;   // "r-xp": points into the line
    const char *path;    // "" for anonymous mappings
};
/// Parses a maps line; false if malformed.
bool cs_parse_maps_line(const char *line, struct cs_maps_line *out);

/// The union of the masks on the "<key>:\t" lines of /proc/<pid>/status
/// (e.g. "Pnd" matches SigPnd and ShdPnd; "SigBlk" one line). 0 if absent.
uint64_t cs_status_mask(const char *buf, size_t len, const char *key);

/// How many ids the "NSpid:" line of /proc/<pid>/status holds: one per pid
/// namespace from the one that /proc belongs to down to the task's own. 1:
/// /proc is the task's own namespace's; more: an ancestor's; 0: no such
/// line (before Linux 4.1) or not a number.
int cs_status_ns_levels(const char *buf, size_t len);

/// A record of getdents64.
struct cs_dirent64 {
    uint64_t d_ino;
    int64_t d_off;
    unsigned short d_reclen;
    unsigned char d_type;
    char d_name[];
};
/// The thread id a /proc/<pid>/task entry names, or 0 ("." and "..").
int cs_dirent_tid(const struct cs_dirent64 *d);

#endif
