/*
 * Starting a child held before exec, which the launcher's recording launches
 * (launcher.c) and its reference launches (reference.c) share: the parent
 * sets up what must exist before the program's first instruction (perf
 * events, a FIFO named after the child's pid), then releases it. Private to
 * CLauncher.
 */
#ifndef CS_SPAWN_H
#define CS_SPAWN_H

#include "cs_launcher.h"

#include <sys/types.h>

/* Forks a child that waits on a pipe before it execs `path` (`*go_out` the
 * parent's end of that pipe, `*failed_out` the read end of the exec error's
 * pipe). `digits`, when not NULL, is overwritten in the child with
 * CLOCK_BOOTTIME in nanoseconds just before exec. stdout_fd and stderr_fd
 * (-1: inherited) are dup'ed onto 1 and 2 in the child. Returns the pid, or
 * -1 with errno set. Not async-signal-safe (fork, pipes); the child runs only
 * async-signal-safe calls until exec. */
pid_t cs_spawn_held(const char *path, char *const argv[], char *const envp[], char *digits, int stdout_fd, int stderr_fd,
                    int *go_out, int *failed_out);

/* Stamps `l->release_ns`, lets the held child `l->pid` exec, and waits for the
 * exec (the `failed` pipe closes on it). Closes both descriptors. Returns 0,
 * or the exec's errno (the child is then reaped). Not async-signal-safe. */
int cs_spawn_release(cs_launch *l, int go, int failed);

#endif
