// A thread that runs with little stack left, as deep recursion or a small
// thread stack leaves one: whatever interrupts it (a signal handler) has
// only what is left below its frame.
#define _GNU_SOURCE
#include "stack_edge.h"

#include <alloca.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define STACK_BYTES (64 * 1024)
#define GUARD 4096

static uintptr_t stack_low;          // lowest usable byte (above the guard)
static volatile uint64_t sink;

static uint64_t thread_cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

// A leaf with a small frame: it calls only clock_gettime (the vDSO).
__attribute__((noinline)) static void burn(uint64_t ms) {
    uint64_t end = thread_cpu_ns() + ms * 1000000ull, x = sink;
    while (thread_cpu_ns() < end)
        for (int i = 0; i < 10000; i++) x = x * 6364136223846793005ull + 1442695040888963407ull;
    sink = x;
}

struct job { size_t left; uint64_t ms; };

static void *body(void *arg) {
    const struct job *job = arg;
    uintptr_t here = (uintptr_t)__builtin_frame_address(0);
    // What lies between this frame and `left` above the guard goes to alloca,
    // touched so that it is mapped; burn's frame (~64 bytes) comes below it.
    size_t take = here - stack_low > job->left + 256 ? here - stack_low - job->left - 256 : 0;
    volatile char *pad = alloca(take);
    if (take) pad[0] = pad[take - 1] = 1;
    burn(job->ms);
    return NULL;
}

int stack_edge_burn(size_t left, uint64_t ms) {
    char *mem = mmap(NULL, STACK_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (mem == MAP_FAILED || mprotect(mem, GUARD, PROT_NONE) != 0) return -1;
    stack_low = (uintptr_t)mem + GUARD;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstack(&attr, mem + GUARD, STACK_BYTES - GUARD);
    pthread_attr_setguardsize(&attr, 0);
    struct job job = {left, ms};
    pthread_t t;
    if (pthread_create(&t, &attr, body, &job) != 0) return -1;
    pthread_join(t, NULL);
    pthread_attr_destroy(&attr);
    munmap(mem, STACK_BYTES);
    return 0;
}
