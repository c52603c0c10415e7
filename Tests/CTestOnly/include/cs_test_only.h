// What only the tests may run: compiled into the test bundle alone (the
// ColdstartTests target depends on this target; no product and no host does).
#ifndef CS_TEST_ONLY_H
#define CS_TEST_ONLY_H

#ifdef __cplusplus
extern "C" {
#endif

/// Builds this process's module table both ways Coldstart can (one
/// PROCMAP_QUERY per executable mapping, and the /proc/self/maps text) and
/// compares them: 1 equal, 0 not, -1 the query gave no table (no
/// PROCMAP_QUERY, or a mapping the loader did not make). Leaves the table
/// empty: never in a process Coldstart profiles.
int cs_modules_query_matches_text(void);

/// Whether this kernel answers PROCMAP_QUERY (Linux 6.11), asked directly
/// with the uapi's own layout, none of the capture layer's code: 1 yes, 0
/// no (errno left as the ioctl set it), -1 /proc/self/maps unreadable.
int cs_test_procmap_query_probe(void);

#ifdef __cplusplus
}
#endif
#endif
