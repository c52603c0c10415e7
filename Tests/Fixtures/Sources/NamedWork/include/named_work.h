#ifndef NAMED_WORK_H
#define NAMED_WORK_H

/* Starts the NamedThreads fixture's threads and waits for them: "parser-1"
 * (named by pthread_setname_np, 30 ms of CPU), one named "early-name" that
 * renames itself "late-name" halfway through its 20 ms, and one never named
 * (the kernel gives it its creator's name), 10 ms. Returns 0, or the errno
 * of a failed pthread call. */
int named_work_run(void);

/* Burns `ms` of the calling thread's CPU time. */
void named_work_burn(int ms);

#endif
