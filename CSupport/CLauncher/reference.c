/*
 * Reference launches (cs_launch_reference, cs_launch_statistics_wait in
 * cs_launcher.h): a program started with nothing attached, whose glibc loader
 * writes its statistics into a FIFO named after its pid, stamped as they
 * arrive.
 */
#include "cs_launcher.h"
#include "spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int cs_launch_reference(cs_launch *l, const char *path, char *const argv[], char *const envp[], const char *fifo_prefix,
                        int *fifo_fd) {
    memset(l, 0, sizeof *l);
    for (int i = 0; i < CS_LAUNCH_MAX_CPUS; i++) l->clock_fds[i] = l->fault_fds[i] = l->name_fds[i] = -1;
    *fifo_fd = -1;
    int null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (null_fd < 0) return errno;
    int go, failed;
    pid_t pid = cs_spawn_held(path, argv, envp, NULL, null_fd, null_fd, &go, &failed);
    int e = errno;
    close(null_fd);
    if (pid < 0) return e;
    l->pid = pid;
    /* ld.so opens LD_DEBUG_OUTPUT.<its pid> with O_WRONLY|O_CREAT|O_APPEND,
     * without O_NONBLOCK: a FIFO of that name whose read end is already open
     * lets that open return at once. Made after the fork (the name holds the
     * child's pid) and before the child may exec. */
    char name[4096];
    int len = snprintf(name, sizeof name, "%s.%d", fifo_prefix, (int)pid);
    int fd = -1;
    e = ENAMETOOLONG;
    if (len > 0 && (size_t)len < sizeof name) {
        if (mkfifo(name, 0600) < 0) {
            e = errno;
        } else if ((fd = open(name, O_RDONLY | O_NONBLOCK | O_CLOEXEC)) < 0) {
            e = errno;
            unlink(name);
        }
    }
    if (fd < 0) {
        /* Never let the child exec without its reader: ld.so would block in
         * open, or write a regular file. It has not exec'd yet. */
        close(go);
        close(failed);
        kill(pid, SIGKILL);
        int status;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
        return e;
    }
    e = cs_spawn_release(l, go, failed);
    if (e) {
        close(fd);
        unlink(name);
        return e;
    }
    *fifo_fd = fd;
    return 0;
}

int cs_launch_statistics_wait(cs_launch *l, int fifo_fd, int timeout_ms, uint64_t *arrival_ns, char *text, size_t cap,
                              size_t *length, int *status, struct rusage *usage) {
    uint64_t deadline = cs_launch_monotonic_ns() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0) * 1000000u;
    for (;;) {
        pid_t r = wait4(l->pid, status, WNOHANG, usage);
        if (r == l->pid || (r < 0 && errno != EINTR && errno != EAGAIN)) return 1;
        uint64_t now = cs_launch_monotonic_ns();
        if (now >= deadline) return 0;
        long left_ms = (long)((deadline - now + 999999u) / 1000000u);
        struct pollfd p = {.fd = fifo_fd, .events = POLLIN};
        int ready = poll(&p, 1, left_ms < 5 ? (int)left_ms : 5);
        uint64_t stamp = cs_launch_monotonic_ns();
        if (ready <= 0) continue;
        if (p.revents & POLLIN) {
            char scratch[4096];
            ssize_t n;
            while ((n = read(fifo_fd, scratch, sizeof scratch)) > 0) {
                if (*arrival_ns == 0) *arrival_ns = stamp;
                size_t room = cap > *length ? cap - *length : 0;
                size_t take = (size_t)n < room ? (size_t)n : room;
                memcpy(text + *length, scratch, take);
                *length += take;
            }
        } else if (p.revents & (POLLHUP | POLLERR)) {
            /* Every writer closed (the child is exiting): poll would return
             * at once until it is reaped. */
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
        }
    }
}
