// PID 1 of the emulated arm64 system (scripts/test-arm64.sh) and of the
// Debian x86_64 guest (scripts/check-debian-kernel.sh): mounts /proc, prints
// perf_event_paranoid, runs the test host once per line of /runs
// ("NAME [uid=N] VAR=VALUE ..."), prints each timeline between markers on
// the console, and powers off. Static, so it needs nothing else in the
// image. No function here runs in a signal handler: the process installs
// none.
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/perf_event.h>
#include <grp.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

// The markers' prefix, which the checks look for: the Debian guest's script
// sets its own, so that neither check reads the other's console.
#ifndef GUEST_TAG
#define GUEST_TAG "coldstart-arm64"
#endif

static void print_file(const char *path) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) { printf("(no file %s)\n", path); return; }
    char buf[4096];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0) fwrite(buf, 1, (size_t)n, stdout);
    close(fd);
}

// What the host's own sampler asks of the kernel (task clock on itself, user
// mode only), asked here first with the host's credentials, so that the
// console says what the kernel answers that user before the host runs.
static void probe_perf(const char *name) {
    struct perf_event_attr attr = {
        .type = PERF_TYPE_SOFTWARE, .size = sizeof attr, .config = PERF_COUNT_SW_TASK_CLOCK,
        .disabled = 1, .exclude_kernel = 1, .exclude_hv = 1,
    };
    long fd = syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0);
    int err = fd < 0 ? errno : 0;
    if (fd >= 0) close((int)fd);
    printf("=== " GUEST_TAG " perf %s uid %d errno %d\n", name, (int)getuid(), err);
    fflush(stdout);
}

static void run(const char *name, char **settings, int count) {
    char out[128];
    snprintf(out, sizeof out, "/tmp/%s.json", name);
    pid_t pid = fork();
    if (pid == 0) {
        static char coldstart[160];
        snprintf(coldstart, sizeof coldstart, "COLDSTART=%s", out);
        char *env[20] = {coldstart, "PATH=/bin"};
        int n = 2;
        for (int i = 0; i < count && n < 19; i++) {
            // uid=N: the host runs as that user and group, without
            // supplementary groups or capabilities (a user's own process).
            if (strncmp(settings[i], "uid=", 4) == 0) {
                unsigned id = (unsigned)strtoul(settings[i] + 4, NULL, 10);
                if (setgroups(0, NULL) != 0 || setresgid(id, id, id) != 0 || setresuid(id, id, id) != 0) {
                    printf("=== " GUEST_TAG " note: %s: cannot become uid %u: %s\n", name, id, strerror(errno));
                    _exit(126);
                }
                continue;
            }
            env[n++] = settings[i];
        }
        probe_perf(name);
        char *argv[] = {"/host", NULL};
        execve("/host", argv, env);
        _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    fflush(stdout);
    printf("\n=== " GUEST_TAG " run %s exit %d\n", name, WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
    print_file(out);
    printf("\n=== " GUEST_TAG " end %s\n", name);
    fflush(stdout);
}

int main(void) {
    mkdir("/proc", 0555);
    mkdir("/tmp", 01777);
    mount("proc", "/proc", "proc", 0, NULL);
    mount("tmpfs", "/tmp", "tmpfs", 0, NULL);
    printf("=== " GUEST_TAG " paranoid ");
    print_file("/proc/sys/kernel/perf_event_paranoid");
    fflush(stdout);
    // A task-bound perf event held open for the whole run, as `coldstart run`
    // keeps one: the kernel's first such event waits for an RCU grace period
    // (long under emulation), which would leave each launch's start unsampled.
    struct perf_event_attr warm = {
        .type = PERF_TYPE_SOFTWARE, .size = sizeof warm, .config = PERF_COUNT_SW_DUMMY,
        .disabled = 1, .exclude_kernel = 1, .exclude_hv = 1,
    };
    if (syscall(SYS_perf_event_open, &warm, 0, -1, -1, 0) < 0) puts("=== " GUEST_TAG " note: no warm perf event");
    FILE *runs = fopen("/runs", "r");
    char line[512];
    while (runs && fgets(line, sizeof line, runs)) {
        char *words[18];
        int n = 0;
        for (char *w = strtok(line, " \n"); w && n < 18; w = strtok(NULL, " \n")) words[n++] = w;
        if (n > 0) run(words[0], words + 1, n - 1);
    }
    puts("=== " GUEST_TAG " done");
    fflush(stdout);
    sync();
    reboot(RB_POWER_OFF);
    return 0;
}
