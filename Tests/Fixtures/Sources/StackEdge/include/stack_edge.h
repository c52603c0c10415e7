#ifndef STACK_EDGE_H
#define STACK_EDGE_H

#include <stddef.h>
#include <stdint.h>

/// Runs a thread whose stack (64 KiB, a PROT_NONE guard page below it) has
/// only `left` bytes below the frame of the function that burns `ms` of CPU
/// there; returns 0 once it ended normally (the process dies of SIGSEGV if
/// anything running on that thread needs more).
int stack_edge_burn(size_t left, uint64_t ms);

/// unshare(CLONE_NEWUSER): 0, or its errno (sandbox.c).
int sandbox_unshare_user(void);
/// setns into the process's own mount namespace: 0, or its errno.
int sandbox_setns_own_mount(void);
/// A seccomp allow-list on every thread (TSYNC), killing the process on
/// any other call: 0, an errno, or minus the id of a thread that could not
/// take it.
int sandbox_seccomp_all_threads(void);

#endif
