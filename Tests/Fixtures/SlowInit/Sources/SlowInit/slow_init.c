#define _GNU_SOURCE
#include "slow_init.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t measured_ns;
static int saw_environment;
static volatile uint64_t sink;

static uint64_t thread_cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

// Burns CPU until `ms` of this thread's CPU time have passed.
__attribute__((noinline)) static void slow_init_burn(uint64_t ms) {
    uint64_t start = thread_cpu_ns(), x = sink;
    while (thread_cpu_ns() - start < ms * 1000000ull) {
        for (int i = 0; i < 20000; i++) x = x * 6364136223846793005ull + 1442695040888963407ull;
    }
    sink = x;
}

__attribute__((constructor)) static void slow_init_constructor(void) {
    uint64_t start = thread_cpu_ns();
    slow_init_burn(30);
    measured_ns = thread_cpu_ns() - start;
    saw_environment = getenv("PATH") != NULL && program_invocation_short_name != NULL
        && strcmp(program_invocation_short_name, "KnownCosts") == 0;
}

int slow_init_saw_environment(void) { return saw_environment; }

uint64_t slow_init_constructor_cpu_ns(void) { return measured_ns; }
