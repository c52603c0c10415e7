#ifndef COLDSTART_AUDIT_H
#define COLDSTART_AUDIT_H

/*
 * libColdstartAudit.so: an LD_AUDIT module that `coldstart run` sets for the
 * program it launches, to time the dynamic loader's work per library. It
 * lives in the loader's audit namespace (its own copy of libc) and only
 * appends lines to the file named by COLDSTART_AUDIT_OUT:
 *
 *   V <ns>                                    la_version: the loader starts
 *   O <ns> <path>                             la_objopen: an object is mapped
 *   P <ns> <userNs> <systemNs> <minflt> <majflt> <nvcsw> <nivcsw>
 *                                             la_preinit: every object loaded
 *                                             and relocated, constructors next
 *
 * <ns> is CLOCK_MONOTONIC; the counters are getrusage(RUSAGE_SELF). V's
 * stamp is read once the file is open: from the module's first mmap (the
 * launcher's perf records) to it, ld.so was loading this module and its
 * namespace's libc and the module opening its file, work the program's own
 * launch never does, counted as Coldstart's (timeline-format.md). No
 * callback allocates: stack buffers and system calls only. The path
 * of the executable itself is written as "-". At la_preinit the file is
 * closed and LD_AUDIT and COLDSTART_AUDIT_OUT are removed from the
 * environment, so the program's own children are not audited.
 * The entry points are the rtld-audit(7) interface (<link.h>); this header
 * only documents the file.
 */

#endif
