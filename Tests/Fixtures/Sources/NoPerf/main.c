/*
 * NoPerf [--errno NAME] [--] COMMAND [ARGS…]
 *
 * Runs COMMAND where perf_event_open(2) is refused, as a container's
 * default seccomp profile refuses it (Docker's and Kubernetes'
 * RuntimeDefault return EPERM for it without CAP_PERFMON or CAP_SYS_ADMIN).
 * A seccomp filter is the only way to see the refusal on this machine: its
 * stock kernel treats perf_event_paranoid 3 like 2, so an unprivileged user
 * may still open perf events on its own processes. The filter is inherited
 * across fork and exec, so COMMAND and everything it starts are refused.
 * NAME: EPERM (default), EACCES or ENOSYS.
 *
 * Like a container runtime, it sets no_new_privs only when it has no
 * CAP_SYS_ADMIN (the kernel asks one or the other): as root, a setuid or
 * file-capability program it runs keeps its privileges, as in a container.
 */
#include <errno.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define NOPERF_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define NOPERF_ARCH AUDIT_ARCH_AARCH64
#else
#error "NoPerf: add this architecture's AUDIT_ARCH_ value"
#endif

static int has_sys_admin(void) {
    struct __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct data[2];
    memset(data, 0, sizeof data);
    if (syscall(SYS_capget, &header, data) != 0) return 0;
    return (data[CAP_SYS_ADMIN / 32].effective >> (CAP_SYS_ADMIN % 32)) & 1;
}

int main(int argc, char **argv) {
    int refusal = EPERM;
    int first = 1;
    if (first + 1 < argc && strcmp(argv[first], "--errno") == 0) {
        const char *name = argv[first + 1];
        if (strcmp(name, "EPERM") == 0) refusal = EPERM;
        else if (strcmp(name, "EACCES") == 0) refusal = EACCES;
        else if (strcmp(name, "ENOSYS") == 0) refusal = ENOSYS;
        else {
            fprintf(stderr, "NoPerf: --errno takes EPERM, EACCES or ENOSYS, not %s\n", name);
            return 2;
        }
        first += 2;
    }
    if (first < argc && strcmp(argv[first], "--") == 0) first++;
    if (first >= argc) {
        fprintf(stderr, "usage: NoPerf [--errno EPERM|EACCES|ENOSYS] [--] COMMAND [ARGS...]\n");
        return 2;
    }
    struct sock_filter filter[] = {
        /* Another architecture's system call numbers mean other calls: refuse them all. */
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NOPERF_ARCH, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_perf_event_open, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (unsigned)refusal),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog program = {(unsigned short)(sizeof filter / sizeof filter[0]), filter};
    if (!has_sys_admin() && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
        perror("NoPerf: prctl(PR_SET_NO_NEW_PRIVS)");
        return 2;
    }
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program) != 0) {
        perror("NoPerf: prctl(PR_SET_SECCOMP)");
        return 2;
    }
    execvp(argv[first], argv + first);
    fprintf(stderr, "NoPerf: cannot run %s: %s\n", argv[first], strerror(errno));
    return 127;
}
