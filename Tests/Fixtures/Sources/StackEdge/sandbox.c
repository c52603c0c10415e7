// A sandboxing host's namespace calls, from its own C code as such hosts make
// them (Swift's Glibc module has neither unshare nor setns).
#define _GNU_SOURCE
#include "stack_edge.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

int sandbox_unshare_user(void) { return unshare(CLONE_NEWUSER) == 0 ? 0 : errno; }

int sandbox_setns_own_mount(void) {
    int fd = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return errno;
    int rc = setns(fd, CLONE_NEWNS) == 0 ? 0 : errno;
    close(fd);
    return rc;
}
