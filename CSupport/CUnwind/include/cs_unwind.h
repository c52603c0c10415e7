/*
 * Offline unwinding of the stack copies a timeline carries (`rawStacks`,
 * COLDSTART_UNWINDER=offline): the registers and the top of the user stack
 * the kernel copied at each sample, unwound with DWARF CFI when the CLI
 * reads the file, from the modules' files on disk (docs/performance.md,
 * "Offline unwinding"). CLI only; nothing here is async-signal-safe.
 */
#ifndef CS_UNWIND_H
#define CS_UNWIND_H

#include <stddef.h>
#include <stdint.h>

typedef struct cs_offline cs_offline;

/* What an unwind gave (cs_offline_unwind's flags). */
enum {
    CS_OFFLINE_DWARF = 1,       /* the frames are the CFI's, from the copy */
    CS_OFFLINE_CHAIN_TAIL = 2,  /* ... completed with the frame-pointer chain past the copy */
    CS_OFFLINE_NO_FILE = 4,     /* a module's file is missing or not the one recorded: the chain kept */
    CS_OFFLINE_FAILED = 8,      /* the CFI failed at the leaf: the chain kept */
};

/* Loads libunwind (x86_64's remote API) and makes an unwinder for one
 * timeline's modules; NULL with the reason in `error` (another
 * architecture, libunwind missing). */
cs_offline *cs_offline_new(char *error, size_t error_len);
void cs_offline_free(cs_offline *u);
/* The timeline's module table, in order: a module's file, its GNU build-id
 * (none: `id_len` 0), its load bias (run-time address − ELF vaddr) and its
 * executable mapping [start, end). A file is opened the first time a walk
 * needs it, and only a regular file whose build-id matches. Returns 0, or
 * -1 when out of memory. */
int cs_offline_add_module(cs_offline *u, const char *path, const uint8_t *id, size_t id_len, uint64_t base, uint64_t start,
                          uint64_t end);
/* The frames (leaf first, absolute addresses) of one sample: `regs` in
 * perf's sample_regs_user order for x86_64 (AX BX CX DX SI DI BP SP IP
 * R8–R15; `nregs` 17), `stack` the `len` bytes copied from SP up, `chain`
 * the frame-pointer chain the file has for it (PC first). The CFI's walk,
 * joined to the chain where the copy ends before the outermost frame; the
 * chain itself where the walk fails at the leaf or needs a module whose
 * file is missing or changed (*flags says which). Returns the count. */
int cs_offline_unwind(cs_offline *u, const uint64_t *regs, size_t nregs, const uint8_t *stack, size_t len,
                      const uint64_t *chain, int nchain, uint64_t *out, int cap, int *flags);

#endif
