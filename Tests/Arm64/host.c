// The arm64 test host: the capture layer linked into a C program, run on an
// emulated arm64 Debian kernel by scripts/test-arm64.sh. Known work in named
// functions, so the check can find the stacks the sampler took and the
// causes the watcher saw.
#include <coldstart.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static volatile uint64_t sink;

// User-space work only, counted in iterations: under emulation a clock read
// is a system call, and the sampler's task clock counts user time.
__attribute__((noinline, noclone)) static void arm64_step(uint64_t i) { sink += i * 2654435761u; }

__attribute__((noinline, noclone)) static void arm64_spin(uint64_t thousands) {
    for (uint64_t i = 0; i < thousands * 1000u; i++) arm64_step(i);
}

// Two callers below main whose shares follow their work: 1:3 in the span,
// 3200k:10080k steps with the last calls to arm64_open_store. They alternate
// in short turns, about a thousandth of the run each, so that any stretch of
// the run the samples come from (a clock armed late, a ring that lost a
// burst while the emulated scan thread fell behind) holds both in that
// ratio. A leaf's caller is in the link register, not on the stack, so the
// check asserts these callers of arm64_spin, which keeps a frame record. The
// sink update after each call keeps the compiler from turning it into a
// tail call.
__attribute__((noinline)) void arm64_load_config(void) { arm64_spin(20); sink++; }
__attribute__((noinline)) void arm64_open_store(void) { arm64_spin(60); sink++; }

// A worker that sleeps, then waits on a pipe: the watcher's "sleep" and "pipe".
static int pipe_fds[2];
static void *worker(void *arg) {
    (void)arg;
    struct timespec ts = {0, 80 * 1000000};
    nanosleep(&ts, NULL);
    char c;
    if (read(pipe_fds[0], &c, 1) != 1) return NULL;
    return NULL;
}

int main(void) {
    if (pipe(pipe_fds) != 0) return 2;
    pthread_t t;
    if (pthread_create(&t, NULL, worker, NULL) != 0) return 2;
    uint32_t span = cs_span_begin("load config");
    for (int i = 0; i < 160; i++) {
        arm64_load_config();
        arm64_open_store();
    }
    cs_span_end(span);
    cs_mark("config loaded", true);
    for (int i = 0; i < 8; i++)
        arm64_open_store();
    cs_mark("store opened", true);
    // Long enough for the watcher to see the worker in nanosleep, then read.
    struct timespec ts = {0, 300 * 1000000};
    nanosleep(&ts, NULL);
    if (write(pipe_fds[1], "x", 1) != 1) return 2;
    pthread_join(t, NULL);
    cs_ready();
    puts("arm64 host: done");
    return 0;
}
