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

// An allow-list for every thread of the process (SECCOMP_FILTER_FLAG_TSYNC),
// killing the process on anything else, as sandboxes do once set up: what
// the rest of HostPatterns' run needs (print, burn, exit) is allowed.
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#if defined(__x86_64__)
#define SANDBOX_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define SANDBOX_ARCH AUDIT_ARCH_AARCH64
#endif

#define ALLOW(nr) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)

int sandbox_seccomp_all_threads(void) {
    struct sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SANDBOX_ARCH, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        ALLOW(SYS_read), ALLOW(SYS_write), ALLOW(SYS_writev), ALLOW(SYS_close), ALLOW(SYS_fstat),
        ALLOW(SYS_newfstatat), ALLOW(SYS_lseek), ALLOW(SYS_ioctl), ALLOW(SYS_brk), ALLOW(SYS_mmap),
        ALLOW(SYS_munmap), ALLOW(SYS_mprotect), ALLOW(SYS_madvise), ALLOW(SYS_mremap), ALLOW(SYS_futex),
        ALLOW(SYS_clock_gettime), ALLOW(SYS_clock_nanosleep), ALLOW(SYS_nanosleep), ALLOW(SYS_rt_sigprocmask),
        ALLOW(SYS_rt_sigaction), ALLOW(SYS_rt_sigreturn), ALLOW(SYS_sigaltstack), ALLOW(SYS_getpid),
        ALLOW(SYS_gettid), ALLOW(SYS_sched_yield), ALLOW(SYS_exit), ALLOW(SYS_exit_group), ALLOW(SYS_getrandom),
        ALLOW(SYS_restart_syscall),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
    };
    struct sock_fprog program = {(unsigned short)(sizeof filter / sizeof filter[0]), filter};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return errno;
    long rc = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &program);
    return rc == 0 ? 0 : rc > 0 ? -(int)rc : errno;   // > 0: a thread that could not take it
}
