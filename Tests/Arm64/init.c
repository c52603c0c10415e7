// PID 1 of the emulated arm64 system (scripts/test-arm64.sh): mounts /proc,
// runs the test host once per line of /runs ("NAME VAR=VALUE ..."), prints
// each timeline between markers on the console, and powers off. Static, so
// it needs nothing else in the image.
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/perf_event.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static void print_file(const char *path) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) { printf("(no file %s)\n", path); return; }
    char buf[4096];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0) fwrite(buf, 1, (size_t)n, stdout);
    close(fd);
}

static void run(const char *name, char **settings, int count) {
    char out[128];
    snprintf(out, sizeof out, "/tmp/%s.json", name);
    pid_t pid = fork();
    if (pid == 0) {
        static char coldstart[160];
        snprintf(coldstart, sizeof coldstart, "COLDSTART=%s", out);
        char *env[20] = {coldstart, "PATH=/bin"};
        for (int i = 0; i < count && i < 17; i++) env[2 + i] = settings[i];
        char *argv[] = {"/host", NULL};
        execve("/host", argv, env);
        _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    fflush(stdout);
    printf("\n=== coldstart-arm64 run %s exit %d\n", name, WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
    print_file(out);
    printf("\n=== coldstart-arm64 end %s\n", name);
    fflush(stdout);
}

int main(void) {
    mkdir("/proc", 0555);
    mkdir("/tmp", 01777);
    mount("proc", "/proc", "proc", 0, NULL);
    mount("tmpfs", "/tmp", "tmpfs", 0, NULL);
    // A task-bound perf event held open for the whole run, as `coldstart run`
    // keeps one: the kernel's first such event waits for an RCU grace period
    // (long under emulation), which would leave each launch's start unsampled.
    struct perf_event_attr warm = {
        .type = PERF_TYPE_SOFTWARE, .size = sizeof warm, .config = PERF_COUNT_SW_DUMMY,
        .disabled = 1, .exclude_kernel = 1, .exclude_hv = 1,
    };
    if (syscall(SYS_perf_event_open, &warm, 0, -1, -1, 0) < 0) puts("=== coldstart-arm64 note: no warm perf event");
    FILE *runs = fopen("/runs", "r");
    char line[512];
    while (runs && fgets(line, sizeof line, runs)) {
        char *words[18];
        int n = 0;
        for (char *w = strtok(line, " \n"); w && n < 18; w = strtok(NULL, " \n")) words[n++] = w;
        if (n > 0) run(words[0], words + 1, n - 1);
    }
    puts("=== coldstart-arm64 done");
    fflush(stdout);
    sync();
    reboot(RB_POWER_OFF);
    return 0;
}
