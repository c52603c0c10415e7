#define _GNU_SOURCE
#include "bench_support.h"

#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t bench_time_to_line(const char *path, char *const argv[], char *const envp[], const char *marker) {
    int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (master < 0 || grantpt(master) != 0 || unlockpt(master) != 0) return -1;
    int slave = open(ptsname(master), O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (slave < 0) { close(master); return -1; }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, slave, STDOUT_FILENO);
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
    pid_t pid;
    int64_t start = now_ns();
    int rc = posix_spawn(&pid, path, &actions, NULL, argv, envp);
    posix_spawn_file_actions_destroy(&actions);
    close(slave);
    if (rc != 0) { close(master); return -1; }
    char buf[8192];
    size_t len = 0;
    int64_t found = -1;
    while (len < sizeof buf - 1) {
        ssize_t n = read(master, buf + len, sizeof buf - 1 - len);
        if (n <= 0) break;   // EIO once the child closed the terminal
        len += (size_t)n;
        buf[len] = 0;
        char *hit = strstr(buf, marker);
        if (hit && strchr(hit, '\n')) { found = now_ns() - start; break; }
    }
    while (read(master, buf, sizeof buf) > 0) {}
    close(master);
    int status = 0;
    waitpid(pid, &status, 0);
    return (WIFEXITED(status) && WEXITSTATUS(status) == 0) ? found : -1;
}
