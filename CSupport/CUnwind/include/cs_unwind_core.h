/*
 * The one DWARF unwinder of the CLI's side (x86_64), shared by the tracer
 * of `coldstart run` (CLauncher's traceunwind.c: a stopped thread's
 * registers and stack copy, its files from /proc) and the offline unwinding
 * of a timeline's stack copies (offline.c: its module table): ELF files
 * mapped read-only, their PT_GNU_EH_FRAME tables, and libunwind's remote
 * API with accessors over a stack copy, the files' bytes and whatever else
 * the caller can read. Not async-signal-safe.
 */
#ifndef CS_UNWIND_CORE_H
#define CS_UNWIND_CORE_H

#include <elf.h>
#include <stddef.h>
#include <stdint.h>

#if defined(__x86_64__)
#include <libunwind.h>
#define CS_UW_SUPPORTED 1
#define CS_UW_LIBRARY "libunwind-x86_64.so.8"
#define CS_UW_NREGS 17   /* libunwind's RAX … R15, RIP */
#else
#define CS_UW_SUPPORTED 0
#endif

#if CS_UW_SUPPORTED

/* One ELF file, mapped read-only (or a copy of the vDSO's bytes). */
typedef struct {
    const uint8_t *bytes;
    size_t size;
    int is_copy;            /* bytes are malloc'd: freed on release */
    const Elf64_Phdr *ph;   /* its program headers, inside bytes; NULL: not a usable ELF file */
    int phnum;
    uint64_t eh_vaddr, eh_off;   /* PT_GNU_EH_FRAME (eh_vaddr 0: none) */
    uint8_t build_id[64];
    size_t build_id_len;    /* 0: none */
} cs_uw_image;

/* Maps `path` (a regular file only: a FIFO cannot block the reader) and
 * reads its headers; 0, or -1 when it cannot be read as a 64-bit ELF file. */
int cs_uw_image_map(cs_uw_image *im, const char *path);
/* Takes `bytes` (malloc'd, `size` of them: a vDSO read from its process). */
int cs_uw_image_adopt(cs_uw_image *im, uint8_t *bytes, size_t size);
void cs_uw_image_release(cs_uw_image *im);
/* The load bias of the image mapped at `start` from file offset `offset`:
 * the PT_LOAD that holds that offset. 0, or -1 when none does. */
int cs_uw_image_bias(const cs_uw_image *im, uint64_t start, uint64_t offset, int64_t *bias);
/* The eh_frame_hdr binary-search table for the code in [text_start,
 * text_end) of the image loaded at `bias`, as libunwind's
 * dwarf_search_unwind_table takes it; 0, or -1 without one. */
int cs_uw_image_table(const cs_uw_image *im, int64_t bias, uint64_t text_start, uint64_t text_end, unw_dyn_info_t *di);
/* Reads `n` bytes at ELF virtual address `vaddr` from the file's bytes of
 * a PT_LOAD segment (what the loader mapped from the file: code, read-only
 * data, unwind tables); 0, or -1 outside them. */
int cs_uw_image_read(const cs_uw_image *im, uint64_t vaddr, void *out, size_t n);
/* The span [lo, hi) of ELF virtual addresses its PT_LOAD segments cover. */
void cs_uw_image_span(const cs_uw_image *im, uint64_t *lo, uint64_t *hi);

/* libunwind's remote API over a caller's memory: the stack copy first, the
 * caller's reader for the rest, the caller's tables by address. */
typedef struct cs_uw_walker cs_uw_walker;
struct cs_uw_walker {
    void *lib;
    unw_addr_space_t as;
    int (*init_remote)(unw_cursor_t *, unw_addr_space_t, void *);
    int (*step)(unw_cursor_t *);
    int (*get_reg)(unw_cursor_t *, unw_regnum_t, unw_word_t *);
    void (*destroy_addr_space)(unw_addr_space_t);
    void (*flush_cache)(unw_addr_space_t, unw_word_t, unw_word_t);
    int (*search_table)(unw_addr_space_t, unw_word_t, unw_dyn_info_t *, unw_proc_info_t *, int, void *);
    /* The caller's: the unwind table of the code at `ip` (NULL: none), a
     * word of memory outside the copy (0, or -1 unreadable), and whether
     * `addr` lies in code (a return address outside code is no frame). */
    void *ctx;
    const unw_dyn_info_t *(*table_for)(void *ctx, uint64_t ip);
    int (*read_word)(void *ctx, uint64_t addr, uint64_t *val);
    int (*is_code)(void *ctx, uint64_t addr);
    /* The stack being unwound: registers in libunwind's numbering, the copy
     * of [stack_start, stack_start + stack_len). */
    uint64_t regs[CS_UW_NREGS];
    const uint8_t *stack;
    uint64_t stack_start;
    size_t stack_len;
};

/* How a walk ended: `stuck` when it stopped on an error (or a return
 * address outside code) rather than at the outermost frame; the last
 * frame's stack pointer and RBP. */
typedef struct {
    int stuck;
    uint64_t last_sp, last_bp;
} cs_uw_end;

/* dlopens libunwind and makes the address space (its rules cached by
 * address: code does not change); the caller's fields (ctx and the three
 * functions) are set before. 0, or -1 with the reason in `error`. */
int cs_uw_load(cs_uw_walker *w, char *error, size_t error_len);
void cs_uw_unload(cs_uw_walker *w);
/* Forgets the cached rules (the code changed: an exec). */
void cs_uw_forget(cs_uw_walker *w);
/* Up to `cap` frames (leaf first: the PC, then return addresses) from
 * w->regs over w->stack. */
int cs_uw_walk(cs_uw_walker *w, uint64_t *ips, int cap, cs_uw_end *end);
/* perf's user register `i` (sample_regs_user order: AX BX CX DX SI DI BP
 * SP IP R8–R15) in libunwind's numbering. */
int cs_uw_perf_reg(int i);

#endif /* CS_UW_SUPPORTED */
#endif /* CS_UNWIND_CORE_H */
