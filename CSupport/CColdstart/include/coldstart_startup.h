// The two start-up entry points of the capture layer, for the ColdstartEarly
// target only (it places them in .preinit_array and the first constructor);
// hosts and the Swift library never call them.
#ifndef COLDSTART_STARTUP_H
#define COLDSTART_STARTUP_H

#ifdef __cplusplus
extern "C" {
#endif

/// Decides from envp whether to profile and records the earliest timestamp.
/// Runs from .preinit_array before libc's constructors: raw syscalls only.
void cs_preinit(int argc, char **argv, char **envp);
/// Records the before-main time and arms exit and signal handling.
/// Runs as the executable's first constructor. Not async-signal-safe.
void cs_before_main(void);

#ifdef __cplusplus
}
#endif
#endif
