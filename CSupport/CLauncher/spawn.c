/* Children held before exec (spawn.h). */
#include "spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The forked child: waits for the parent's byte on `go`, then execs.
 * Async-signal-safe calls only (it runs between fork and exec). */
static void run_child(int go, int failed, const char *path, char *const argv[], char *const envp[], char *digits,
                      int stdout_fd, int stderr_fd) {
    char c;
    ssize_t n;
    do n = read(go, &c, 1); while (n < 0 && errno == EINTR);
    if (n != 1) _exit(127);
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    int defaults[] = {SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGPIPE};
    for (size_t i = 0; i < sizeof defaults / sizeof defaults[0]; i++) sigaction(defaults[i], &dfl, NULL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    if (stdout_fd >= 0) dup2(stdout_fd, STDOUT_FILENO);
    if (stderr_fd >= 0) dup2(stderr_fd, STDERR_FILENO);
    if (digits) {
        struct timespec ts;
        clock_gettime(CLOCK_BOOTTIME, &ts);
        uint64_t v = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
        char tmp[24];
        int len = 0;
        do { tmp[len++] = (char)('0' + v % 10); v /= 10; } while (v);
        for (int i = 0; i < len; i++) digits[1 + i] = tmp[len - 1 - i];
        digits[1 + len] = 0;
    }
    execve(path, argv, envp);
    int e = errno;
    ssize_t ignored = write(failed, &e, sizeof e);
    (void)ignored;
    _exit(127);
}

pid_t cs_spawn_held(const char *path, char *const argv[], char *const envp[], char *digits, int stdout_fd, int stderr_fd,
                       int *go_out, int *failed_out) {
    int go[2], failed[2];
    if (pipe2(go, O_CLOEXEC) < 0) return -1;
    if (pipe2(failed, O_CLOEXEC) < 0) {
        int e = errno;
        close(go[0]);
        close(go[1]);
        errno = e;
        return -1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(go[0]); close(go[1]); close(failed[0]); close(failed[1]);
        errno = e;
        return -1;
    }
    if (pid == 0) {
        close(go[1]);
        close(failed[0]);
        run_child(go[0], failed[1], path, argv, envp, digits, stdout_fd, stderr_fd);
    }
    close(go[0]);
    close(failed[1]);
    *go_out = go[1];
    *failed_out = failed[0];
    return pid;
}

int cs_spawn_release(cs_launch *l, int go, int failed) {
    char c = 1;
    ssize_t w;
    l->release_ns = cs_launch_monotonic_ns();
    do w = write(go, &c, 1); while (w < 0 && errno == EINTR);
    close(go);
    int child_errno = 0;
    ssize_t n;
    do n = read(failed, &child_errno, sizeof child_errno); while (n < 0 && errno == EINTR);
    close(failed);
    if (n == (ssize_t)sizeof child_errno) {
        int status;
        /* A traced child's exit is still reaped; the tracer goes with it. */
        while (waitpid(l->pid, &status, 0) < 0 && errno == EINTR) {}
        return child_errno ? child_errno : ENOEXEC;
    }
    return 0;
}
