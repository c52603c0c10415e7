// The module table's check (ModuleTableTests), which mallocs and empties the
// live table: here, in a target only the test bundle links, not in the
// capture layer every host carries.
#include "internal.h"
#include "cs_test_only.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

int cs_modules_query_matches_text(void) {
    if (!cs_modules_query()) return -1;
    uint32_t n = S->nmodules;
    struct cs_module *queried = malloc(n * sizeof *queried + 1);
    if (!queried) return -1;
    memcpy(queried, S->modules, n * sizeof *queried);
    cs_modules_read_maps(true);
    // Both tables zero each entry before filling it: padding compares equal.
    int same = n == S->nmodules && memcmp(queried, S->modules, n * sizeof *queried) == 0;
    free(queried);
    S->nmodules = 0;
    return same;
}

// include/uapi/linux/fs.h (Linux 6.11), written out again rather than taken
// from modules.c: the probe must not share the code it decides to test.
struct probe_procmap_query {
    uint64_t size, query_flags, query_addr;
    uint64_t vma_start, vma_end, vma_flags, vma_page_size, vma_offset, inode;
    uint32_t dev_major, dev_minor, vma_name_size, build_id_size;
    uint64_t vma_name_addr, build_id_addr;
};

int cs_test_procmap_query_probe(void) {
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    // The first mapping covering or after address 0 (PROCMAP_QUERY_COVERING_OR_NEXT_VMA):
    // every process has one.
    struct probe_procmap_query q = {.size = sizeof q, .query_flags = 0x10};
    int r = ioctl(fd, _IOWR('f', 17, struct probe_procmap_query), &q);
    int saved = errno;
    close(fd);
    errno = saved;
    return r == 0 ? 1 : 0;
}
