#define _GNU_SOURCE
#include "named_work.h"

#include <pthread.h>
#include <time.h>

static double thread_cpu_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

void named_work_burn(int ms) {
    double end = thread_cpu_ms() + ms;
    volatile unsigned long spin = 0;
    while (thread_cpu_ms() < end) spin++;
}

static void *parser(void *arg) {
    (void)arg;
    pthread_setname_np(pthread_self(), "parser-1");
    named_work_burn(30);
    return NULL;
}

static void *renamed(void *arg) {
    (void)arg;
    pthread_setname_np(pthread_self(), "early-name");
    named_work_burn(10);
    pthread_setname_np(pthread_self(), "late-name");
    named_work_burn(10);
    return NULL;
}

static void *unnamed(void *arg) {
    (void)arg;
    named_work_burn(10);
    return NULL;
}

int named_work_run(void) {
    void *(*bodies[])(void *) = {parser, renamed, unnamed};
    pthread_t threads[3];
    for (int i = 0; i < 3; i++) {
        int e = pthread_create(&threads[i], NULL, bodies[i], NULL);
        if (e) return e;
    }
    for (int i = 0; i < 3; i++) pthread_join(threads[i], NULL);
    return 0;
}
