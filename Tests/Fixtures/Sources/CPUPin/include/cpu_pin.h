#ifndef CPU_PIN_H
#define CPU_PIN_H
/* CPU affinity for BlockedHost (Swift's Glibc module does not export
 * sched_setaffinity): threads made to compete for one CPU on any machine. */
/* The CPU this thread runs on now, or -1 with errno. */
int cpu_pin_current(void);
/* Pins this thread to `cpu` alone: 0, or -1 with errno. */
int cpu_pin_to(int cpu);
/* Gives this thread back the CPUs the process could use at its start: 0, or -1 with errno. */
int cpu_pin_release(void);
#endif
