/*
 * The launcher's sampler when the kernel refuses perf events (cs_launcher.h,
 * "Tracing"): the launcher is the program's parent, and a parent may trace
 * its child under Yama's default scope and a container's default seccomp
 * profile. Every thread (PTRACE_O_TRACECLONE) is interrupted once per period
 * while it is running, its registers and the top of its stack are copied
 * (process_vm_readv), and it is let go; the copy is then unwound here, with
 * libunwind's DWARF CFI over the stack copy and the program's mapped files,
 * while the program runs on. Samples and mappings are written as the perf
 * records the perf path produces (PERF_RECORD_SAMPLE / PERF_RECORD_MMAP), so
 * the rest of `coldstart run` reads both alike.
 *
 * The program must not see the tracer: every signal it is sent is given
 * back at its delivery stop, group stops are kept (PTRACE_LISTEN), only
 * threads in state R are interrupted (a sleeping one is left asleep), and a
 * system call that an interrupt ended with EINTR is restarted.
 */
#include "cs_launcher.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <libunwind.h>
#define CS_TRACE_SUPPORTED 1
#define CS_UNWIND_LIBRARY "libunwind-x86_64.so.8"
#else
#define CS_TRACE_SUPPORTED 0
#endif

#define STR2(x) #x
#define STR(x) STR2(x)

/* Bytes of stack copied per sample from the stack pointer up (perf's DWARF
 * mode copies 8 KiB by default; Swift's frames are larger than C's). */
#define STACK_COPY 16384
#define MAX_FRAMES 128
/* A sample stands for at most this many periods (64 ms at 4 kHz: a tracer
 * descheduled longer than that on a loaded machine loses the rest). */
#define MAX_COPIES 256
#define ERESTARTNOHAND_ 514

#if CS_TRACE_SUPPORTED

typedef struct {
    uint64_t start, end, offset;
    int writable, executable;
    int file;              /* index into files, -1 for anonymous mappings */
    int announced;         /* a PERF_RECORD_MMAP was written for it */
} trace_map;

typedef struct {
    char path[256];
    const uint8_t *bytes;  /* the whole file, read-only, or the vDSO's copy */
    size_t size;
    int is_copy;           /* bytes are malloc'd (the vDSO) */
    int parsed;
    int64_t bias;          /* load address less ELF vaddr */
    uint64_t hdr_vaddr;    /* PT_GNU_EH_FRAME, 0 when none */
    uint64_t text_start, text_end;
    unw_dyn_info_t di;
    int has_di;
} trace_file;

typedef struct {
    pid_t tid;
    int stat_fd, sched_fd;
    uint64_t credited_ns;  /* CPU time the samples so far stand for */
    int interrupted;       /* PTRACE_INTERRUPT sent, its stop not seen */
    int started;           /* its first stop was seen and let go */
    char comm[16];         /* the kernel's name at the last look ("" before the first) */
} trace_thread;

struct cs_trace {
    pid_t pid;
    uint64_t period_ns;
    uint64_t next_tick_ns;
    int execed;            /* sampling starts at exec */
    int sampling;
    trace_thread *threads;
    int nthreads, cthreads;
    trace_map *maps;
    int nmaps, cmaps;
    trace_file *files;
    int nfiles, cfiles;
    /* The sample being unwound. */
    struct user_regs_struct regs;
    uint8_t stack[STACK_COPY];
    uint64_t stack_start;
    size_t stack_len;
    cs_records *out;
    uint64_t samples, unwind_failures;
    uint64_t stopped_ns;   /* the child's threads' time spent stopped by the sampler */
    void *unwind_lib;
    unw_addr_space_t as;
    unw_accessors_t acc;
    unw_addr_space_t (*create_addr_space)(unw_accessors_t *, int);
    void (*destroy_addr_space)(unw_addr_space_t);
    int (*init_remote)(unw_cursor_t *, unw_addr_space_t, void *);
    int (*step)(unw_cursor_t *);
    int (*get_reg)(unw_cursor_t *, unw_regnum_t, unw_word_t *);
    int (*set_caching_policy)(unw_addr_space_t, unw_caching_policy_t);
    void (*flush_cache)(unw_addr_space_t, unw_word_t, unw_word_t);
    int (*search_table)(unw_addr_space_t, unw_word_t, unw_dyn_info_t *, unw_proc_info_t *, int, void *);
    int exit_status;
    int exited;
    struct rusage usage;
};

static uint64_t now_ns(void) { return cs_launch_monotonic_ns(); }

/* ---- records: the perf path's layout (linux/perf_event.h) ---- */

static int records_append(cs_records *out, const void *bytes, size_t n) {
    if (cs_records_reserve(out, n) < 0) return -1;
    memcpy(out->bytes + out->count, bytes, n);
    out->count += n;
    return 0;
}

/* PERF_RECORD_SAMPLE, IDENTIFIER|IP|TID|TIME|CALLCHAIN, user mode. */
static void emit_sample(cs_trace *t, pid_t tid, uint64_t ns, const uint64_t *ips, int n) {
    struct { struct perf_event_header h; uint64_t id, ip; uint32_t pid, tid; uint64_t time, nr; } head;
    head.h.type = PERF_RECORD_SAMPLE;
    head.h.misc = PERF_RECORD_MISC_USER;
    head.h.size = (uint16_t)(sizeof head + (size_t)n * 8);
    head.id = CS_TRACE_SAMPLE_ID;
    head.ip = ips[0];
    head.pid = (uint32_t)t->pid;
    head.tid = (uint32_t)tid;
    head.time = ns;
    head.nr = (uint64_t)n;
    if (records_append(t->out, &head, sizeof head) == 0) records_append(t->out, ips, (size_t)n * 8);
}

/* PERF_RECORD_MMAP with sample_id_all's TID|TIME|IDENTIFIER trailer. */
static void emit_mmap(cs_trace *t, const trace_map *m, const char *path, uint64_t ns) {
    uint8_t record[8 + 32 + 264 + 24];
    size_t name = strlen(path) + 1;
    if (name > 256) name = 256;
    size_t padded = (name + 7) & ~(size_t)7;
    struct perf_event_header h = {PERF_RECORD_MMAP, (uint16_t)(PERF_RECORD_MISC_USER | (m->executable ? 0 : PERF_RECORD_MISC_MMAP_DATA)),
                                  (uint16_t)(8 + 32 + padded + 24)};
    memset(record, 0, sizeof record);
    memcpy(record, &h, 8);
    uint32_t ids[2] = {(uint32_t)t->pid, (uint32_t)t->pid};
    uint64_t range[3] = {m->start, m->end - m->start, m->offset};
    memcpy(record + 8, ids, 8);
    memcpy(record + 16, range, 24);
    memcpy(record + 40, path, name - 1);
    uint64_t trailer[3];
    memcpy(trailer, ids, 8);
    trailer[1] = ns;
    trailer[2] = CS_TRACE_SAMPLE_ID;
    memcpy(record + 40 + padded, trailer, 24);
    records_append(t->out, record, h.size);
}

/* A record of the task events' layout: `u32s` (pid, tid for COMM; pid,
 * ppid, tid, ptid for FORK), then for COMM the name, NUL-padded to 8 bytes,
 * for FORK the time, then sample_id_all's TID|TIME|IDENTIFIER trailer. */
static void emit_task(cs_trace *t, uint32_t type, const uint32_t *u32s, int n, const char *name, pid_t tid, uint64_t ns) {
    uint8_t record[8 + 16 + 16 + 8 + 24];
    size_t at = 8;
    memset(record, 0, sizeof record);
    memcpy(record + at, u32s, (size_t)n * 4);
    at += (size_t)n * 4;
    if (name) {
        size_t len = strnlen(name, 15);
        memcpy(record + at, name, len);
        at += (len + 1 + 7) & ~(size_t)7;
    } else {
        memcpy(record + at, &ns, 8);
        at += 8;
    }
    uint32_t ids[2] = {(uint32_t)t->pid, (uint32_t)tid};
    uint64_t id = CS_TRACE_SAMPLE_ID;
    memcpy(record + at, ids, 8);
    memcpy(record + at + 8, &ns, 8);
    memcpy(record + at + 16, &id, 8);
    at += 24;
    struct perf_event_header h = {type, PERF_RECORD_MISC_USER, (uint16_t)at};
    memcpy(record, &h, 8);
    records_append(t->out, record, at);
}

/* PERF_RECORD_COMM: the thread's kernel name, as perf's comm records give it. */
static void emit_comm(cs_trace *t, pid_t tid, const char *name, uint64_t ns) {
    uint32_t ids[2] = {(uint32_t)t->pid, (uint32_t)tid};
    emit_task(t, PERF_RECORD_COMM, ids, 2, name, tid, ns);
}

/* PERF_RECORD_FORK: a new thread, named as its creator until it renames itself. */
static void emit_fork(cs_trace *t, pid_t tid, pid_t parent, uint64_t ns) {
    uint32_t ids[4] = {(uint32_t)t->pid, (uint32_t)t->pid, (uint32_t)tid, (uint32_t)parent};
    emit_task(t, PERF_RECORD_FORK, ids, 4, NULL, tid, ns);
}

/* ---- the program's mappings and files ---- */

static int file_index(cs_trace *t, const char *path) {
    for (int i = 0; i < t->nfiles; i++)
        if (strcmp(t->files[i].path, path) == 0) return i;
    if (t->nfiles == t->cfiles) {
        int cap = t->cfiles ? t->cfiles * 2 : 64;
        trace_file *grown = realloc(t->files, (size_t)cap * sizeof *grown);
        if (!grown) return -1;
        t->files = grown;
        t->cfiles = cap;
    }
    trace_file *f = &t->files[t->nfiles];
    memset(f, 0, sizeof *f);
    snprintf(f->path, sizeof f->path, "%s", path);
    return t->nfiles++;
}

static void forget_files(cs_trace *t) {
    for (int i = 0; i < t->nfiles; i++) {
        trace_file *f = &t->files[i];
        if (f->is_copy) free((void *)f->bytes);
        else if (f->bytes) munmap((void *)f->bytes, f->size);
    }
    t->nfiles = 0;
    t->nmaps = 0;
}

/* Reads /proc/PID/maps again; new mappings get a PERF_RECORD_MMAP. */
static void refresh_maps(cs_trace *t) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/maps", (int)t->pid);
    FILE *in = fopen(path, "re");
    if (!in) return;
    uint64_t ns = now_ns();
    trace_map *old = t->maps;
    int nold = t->nmaps;
    t->maps = NULL;
    t->nmaps = t->cmaps = 0;
    char line[512];
    while (fgets(line, sizeof line, in)) {
        unsigned long long start, end, offset;
        char perms[8], name[320];
        name[0] = 0;
        if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %319[^\n]", &start, &end, perms, &offset, name) < 4) continue;
        if (t->nmaps == t->cmaps) {
            int cap = t->cmaps ? t->cmaps * 2 : 256;
            trace_map *grown = realloc(t->maps, (size_t)cap * sizeof *grown);
            if (!grown) break;
            t->maps = grown;
            t->cmaps = cap;
        }
        trace_map *m = &t->maps[t->nmaps++];
        m->start = start;
        m->end = end;
        m->offset = offset;
        m->writable = perms[1] == 'w';
        m->executable = perms[2] == 'x';
        m->file = -1;
        m->announced = 0;
        const char *shown = name[0] ? name : "//anon";
        if (name[0] == '/' || strcmp(name, "[vdso]") == 0) m->file = file_index(t, name);
        for (int i = 0; i < nold; i++)
            if (old[i].start == m->start && old[i].end == m->end && old[i].offset == m->offset && old[i].file == m->file) {
                m->announced = old[i].announced;
                break;
            }
        if (!m->announced && (m->executable || name[0] == '/')) emit_mmap(t, m, shown, ns);
        m->announced = 1;
    }
    fclose(in);
    free(old);
}

static trace_map *map_at(cs_trace *t, uint64_t address) {
    int lo = 0, hi = t->nmaps - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        trace_map *m = &t->maps[mid];
        if (address < m->start) hi = mid - 1;
        else if (address >= m->end) lo = mid + 1;
        else return m;
    }
    return NULL;
}

/* Maps the file (or copies the vDSO) and reads where its unwind table is. */
static int parse_file(cs_trace *t, trace_file *f, const trace_map *seen) {
    if (f->parsed) return f->hdr_vaddr != 0;
    f->parsed = 1;
    if (f->path[0] == '/') {
        int fd = open(f->path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) return 0;
        struct stat st;
        if (fstat(fd, &st) == 0 && st.st_size > (off_t)sizeof(Elf64_Ehdr)) {
            void *bytes = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
            if (bytes != MAP_FAILED) {
                f->bytes = bytes;
                f->size = (size_t)st.st_size;
            }
        }
        close(fd);
    } else {
        size_t size = (size_t)(seen->end - seen->start);
        uint8_t *copy = malloc(size);
        struct iovec local = {copy, size}, remote = {(void *)(uintptr_t)seen->start, size};
        if (copy && process_vm_readv(t->pid, &local, 1, &remote, 1, 0) == (ssize_t)size) {
            f->bytes = copy;
            f->size = size;
            f->is_copy = 1;
        } else {
            free(copy);
        }
    }
    if (!f->bytes) return 0;
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)f->bytes;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
        eh->e_phoff + (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr) > f->size)
        return 0;
    const Elf64_Phdr *ph = (const Elf64_Phdr *)(f->bytes + eh->e_phoff);
    int have_bias = 0;
    for (int i = 0; i < eh->e_phnum; i++) {
        if (ph[i].p_type == PT_GNU_EH_FRAME) f->hdr_vaddr = ph[i].p_vaddr;
        /* The load bias from the mapping we saw: its file offset lies in a PT_LOAD. */
        if (!have_bias && ph[i].p_type == PT_LOAD && f->path[0] == '/' &&
            (ph[i].p_offset & ~(uint64_t)4095) <= seen->offset && seen->offset < ph[i].p_offset + (ph[i].p_filesz ? ph[i].p_filesz : 1)) {
            f->bias = (int64_t)(seen->start - (ph[i].p_vaddr + seen->offset - ph[i].p_offset));
            have_bias = 1;
        }
    }
    if (f->path[0] != '/') f->bias = (int64_t)seen->start;  /* the vDSO is linked at 0 */
    return f->hdr_vaddr != 0;
}

/* The unwind table of the module holding `ip` (cs_trace's own eh_frame_hdr lookup). */
static unw_dyn_info_t *table_for(cs_trace *t, uint64_t ip) {
    trace_map *m = map_at(t, ip);
    if (!m || m->file < 0) {
        refresh_maps(t);
        m = map_at(t, ip);
        if (!m || m->file < 0) return NULL;
    }
    trace_file *f = &t->files[m->file];
    if (f->has_di) return &f->di;
    if (!parse_file(t, f, m)) return NULL;
    uint64_t hdr = (uint64_t)((int64_t)f->hdr_vaddr + f->bias);
    /* The header's fields, read through the mapped file. */
    uint64_t hdr_off = 0;
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)f->bytes;
    const Elf64_Phdr *ph = (const Elf64_Phdr *)(f->bytes + eh->e_phoff);
    for (int i = 0; i < eh->e_phnum; i++)
        if (ph[i].p_type == PT_GNU_EH_FRAME) hdr_off = ph[i].p_offset;
    if (hdr_off + 12 > f->size) return NULL;
    const uint8_t *h = f->bytes + hdr_off;
    /* version 1, eh_frame_ptr any, fde_count udata4, table datarel|sdata4 */
    if (h[0] != 1 || h[2] != 0x03 || h[3] != 0x3b) return NULL;
    uint32_t fde_count;
    memcpy(&fde_count, h + 8, 4);
    f->text_start = UINT64_MAX;
    f->text_end = 0;
    for (int i = 0; i < t->nmaps; i++)
        if (t->maps[i].file == m->file && t->maps[i].executable) {
            if (t->maps[i].start < f->text_start) f->text_start = t->maps[i].start;
            if (t->maps[i].end > f->text_end) f->text_end = t->maps[i].end;
        }
    memset(&f->di, 0, sizeof f->di);
    f->di.format = UNW_INFO_FORMAT_REMOTE_TABLE;
    f->di.start_ip = f->text_start;
    f->di.end_ip = f->text_end;
    f->di.u.rti.segbase = hdr;
    f->di.u.rti.table_data = hdr + 12;
    f->di.u.rti.table_len = (unw_word_t)fde_count * 8 / sizeof(unw_word_t);
    f->has_di = 1;
    return &f->di;
}

/* ---- libunwind's accessors over the stack copy and the mapped files ---- */

static int acc_find_proc_info(unw_addr_space_t as, unw_word_t ip, unw_proc_info_t *pi, int need, void *arg) {
    cs_trace *t = arg;
    unw_dyn_info_t *di = table_for(t, ip);
    if (!di) return -UNW_ENOINFO;
    return t->search_table(as, ip, di, pi, need, arg);
}

static void acc_put_unwind_info(unw_addr_space_t as, unw_proc_info_t *pi, void *arg) {
    (void)as; (void)pi; (void)arg;  /* DWARF tables are freed by libunwind itself */
}

static int acc_get_dyn_info_list_addr(unw_addr_space_t as, unw_word_t *addr, void *arg) {
    (void)as; (void)addr; (void)arg;
    return -UNW_ENOINFO;
}

static int acc_access_mem(unw_addr_space_t as, unw_word_t addr, unw_word_t *val, int write, void *arg) {
    (void)as;
    cs_trace *t = arg;
    if (write) return -UNW_EINVAL;
    if (addr >= t->stack_start && addr + sizeof *val <= t->stack_start + t->stack_len) {
        memcpy(val, t->stack + (addr - t->stack_start), sizeof *val);
        return 0;
    }
    /* Read-only file contents (unwind tables, code) come from the file. */
    trace_map *m = map_at(t, addr);
    if (m && m->file >= 0 && !m->writable) {
        trace_file *f = &t->files[m->file];
        if (!f->parsed) parse_file(t, f, m);
        uint64_t off = f->is_copy ? addr - m->start : addr - m->start + m->offset;
        if (f->bytes && off + sizeof *val <= f->size) {
            memcpy(val, f->bytes + off, sizeof *val);
            return 0;
        }
    }
    /* Anything else (beyond the copy, writable data) from the live program. */
    struct iovec local = {val, sizeof *val}, remote = {(void *)(uintptr_t)addr, sizeof *val};
    return process_vm_readv(t->pid, &local, 1, &remote, 1, 0) == (ssize_t)sizeof *val ? 0 : -UNW_EINVAL;
}

static int acc_access_reg(unw_addr_space_t as, unw_regnum_t reg, unw_word_t *val, int write, void *arg) {
    (void)as;
    cs_trace *t = arg;
    if (write) return -UNW_EREADONLYREG;
    const struct user_regs_struct *r = &t->regs;
    switch (reg) {
    case UNW_X86_64_RAX: *val = r->rax; break;
    case UNW_X86_64_RDX: *val = r->rdx; break;
    case UNW_X86_64_RCX: *val = r->rcx; break;
    case UNW_X86_64_RBX: *val = r->rbx; break;
    case UNW_X86_64_RSI: *val = r->rsi; break;
    case UNW_X86_64_RDI: *val = r->rdi; break;
    case UNW_X86_64_RBP: *val = r->rbp; break;
    case UNW_X86_64_RSP: *val = r->rsp; break;
    case UNW_X86_64_R8: *val = r->r8; break;
    case UNW_X86_64_R9: *val = r->r9; break;
    case UNW_X86_64_R10: *val = r->r10; break;
    case UNW_X86_64_R11: *val = r->r11; break;
    case UNW_X86_64_R12: *val = r->r12; break;
    case UNW_X86_64_R13: *val = r->r13; break;
    case UNW_X86_64_R14: *val = r->r14; break;
    case UNW_X86_64_R15: *val = r->r15; break;
    case UNW_X86_64_RIP: *val = r->rip; break;
    default: return -UNW_EBADREG;
    }
    return 0;
}

static int acc_access_fpreg(unw_addr_space_t as, unw_regnum_t reg, unw_fpreg_t *val, int write, void *arg) {
    (void)as; (void)reg; (void)val; (void)write; (void)arg;
    return -UNW_EBADREG;
}

static int acc_resume(unw_addr_space_t as, unw_cursor_t *c, void *arg) {
    (void)as; (void)c; (void)arg;
    return -UNW_EINVAL;
}

static int acc_get_proc_name(unw_addr_space_t as, unw_word_t addr, char *buf, size_t len, unw_word_t *off, void *arg) {
    (void)as; (void)addr; (void)buf; (void)len; (void)off; (void)arg;
    return -UNW_ENOINFO;
}

static int load_unwinder(cs_trace *t, char *error, size_t error_len) {
    t->unwind_lib = dlopen(CS_UNWIND_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    if (!t->unwind_lib) {
        snprintf(error, error_len, "cannot load %s (install libunwind8): %s", CS_UNWIND_LIBRARY, dlerror());
        return -1;
    }
#define LOOK(field, name) *(void **)&t->field = dlsym(t->unwind_lib, STR(UNW_OBJ(name)))
    LOOK(create_addr_space, create_addr_space);
    LOOK(destroy_addr_space, destroy_addr_space);
    LOOK(init_remote, init_remote);
    LOOK(step, step);
    LOOK(get_reg, get_reg);
    LOOK(set_caching_policy, set_caching_policy);
    LOOK(flush_cache, flush_cache);
    LOOK(search_table, dwarf_search_unwind_table);
#undef LOOK
    if (!t->create_addr_space || !t->destroy_addr_space || !t->init_remote || !t->step || !t->get_reg ||
        !t->set_caching_policy || !t->flush_cache || !t->search_table) {
        snprintf(error, error_len, "%s lacks the remote unwinding functions", CS_UNWIND_LIBRARY);
        return -1;
    }
    t->acc.find_proc_info = acc_find_proc_info;
    t->acc.put_unwind_info = acc_put_unwind_info;
    t->acc.get_dyn_info_list_addr = acc_get_dyn_info_list_addr;
    t->acc.access_mem = acc_access_mem;
    t->acc.access_reg = acc_access_reg;
    t->acc.access_fpreg = acc_access_fpreg;
    t->acc.resume = acc_resume;
    t->acc.get_proc_name = acc_get_proc_name;
    t->as = t->create_addr_space(&t->acc, 0);
    if (!t->as) {
        snprintf(error, error_len, "libunwind: cannot create an address space");
        return -1;
    }
    t->set_caching_policy(t->as, UNW_CACHE_GLOBAL);
    return 0;
}

/* ---- threads ---- */

static trace_thread *thread_of(cs_trace *t, pid_t tid, int add) {
    for (int i = 0; i < t->nthreads; i++)
        if (t->threads[i].tid == tid) return &t->threads[i];
    if (!add) return NULL;
    if (t->nthreads == t->cthreads) {
        int cap = t->cthreads ? t->cthreads * 2 : 16;
        trace_thread *grown = realloc(t->threads, (size_t)cap * sizeof *grown);
        if (!grown) return NULL;
        t->threads = grown;
        t->cthreads = cap;
    }
    trace_thread *th = &t->threads[t->nthreads++];
    memset(th, 0, sizeof *th);
    th->tid = tid;
    char path[80];
    snprintf(path, sizeof path, "/proc/%d/task/%d/stat", (int)t->pid, (int)tid);
    th->stat_fd = open(path, O_RDONLY | O_CLOEXEC);
    snprintf(path, sizeof path, "/proc/%d/task/%d/schedstat", (int)t->pid, (int)tid);
    th->sched_fd = open(path, O_RDONLY | O_CLOEXEC);
    return th;
}

static void drop_thread(cs_trace *t, pid_t tid) {
    for (int i = 0; i < t->nthreads; i++) {
        if (t->threads[i].tid != tid) continue;
        if (t->threads[i].stat_fd >= 0) close(t->threads[i].stat_fd);
        if (t->threads[i].sched_fd >= 0) close(t->threads[i].sched_fd);
        t->threads[i] = t->threads[--t->nthreads];
        return;
    }
}

/* 'R' (running or runnable) from /proc/PID/task/TID/stat; 0 when unreadable.
 * The same read gives the thread's name (between the first '(' and the
 * last ')': a name may hold either), so a rename is seen within a tick at
 * no cost of its own, and written as a COMM record when it changed. */
static char thread_state(cs_trace *t, trace_thread *th) {
    char buf[512];
    ssize_t n = th->stat_fd >= 0 ? pread(th->stat_fd, buf, sizeof buf - 1, 0) : -1;
    if (n <= 0) return 0;
    buf[n] = 0;
    char *close_paren = strrchr(buf, ')');
    char *open_paren = strchr(buf, '(');
    if (t->execed && open_paren && close_paren && close_paren > open_paren && close_paren - open_paren <= 16) {
        size_t len = (size_t)(close_paren - open_paren - 1);
        if (strncmp(th->comm, open_paren + 1, len) != 0 || th->comm[len] != 0) {
            memcpy(th->comm, open_paren + 1, len);
            th->comm[len] = 0;
            emit_comm(t, th->tid, th->comm, now_ns());
        }
    }
    return close_paren && close_paren[1] == ' ' ? close_paren[2] : 0;
}

/* The thread's CPU time in ns (schedstat's first field: exact while it is stopped). */
static uint64_t thread_cpu_ns(const trace_thread *th) {
    char buf[128];
    ssize_t n = th->sched_fd >= 0 ? pread(th->sched_fd, buf, sizeof buf - 1, 0) : -1;
    if (n <= 0) return 0;
    buf[n] = 0;
    return strtoull(buf, NULL, 10);
}

/* ---- one sample of a stopped thread ---- */

/* Returns how many periods of CPU the sample stands for (0: none taken):
 * registers and stack copied, to be unwound. */
static int sample_stopped(cs_trace *t, trace_thread *th) {
    struct iovec regs = {&t->regs, sizeof t->regs};
    if (ptrace(PTRACE_GETREGSET, th->tid, (void *)NT_PRSTATUS, &regs) != 0) return 0;
    /* An interrupt that ended a system call which does not restart itself
     * (epoll_wait, an inotify read) would show the program EINTR: have the
     * kernel restart it, as it restarts the others. */
    if ((int64_t)t->regs.orig_rax >= 0 && (int64_t)t->regs.rax == -EINTR) {
        t->regs.rax = (unsigned long long)-ERESTARTNOHAND_;
        ptrace(PTRACE_SETREGSET, th->tid, (void *)NT_PRSTATUS, &regs);
        t->regs.rax = (unsigned long long)-EINTR;
    }
    uint64_t cpu = thread_cpu_ns(th);
    /* One sample per period of the thread's CPU time, as a CPU clock would
     * take them: a thread that waited for a CPU (state R too) is not due
     * yet; one whose tracer was late by k periods gets its sample k times. */
    if (!t->sampling || !t->execed || cpu < th->credited_ns + t->period_ns) return 0;
    uint64_t periods = (cpu - th->credited_ns) / t->period_ns;
    if (periods > MAX_COPIES) periods = MAX_COPIES;
    th->credited_ns = cpu - (cpu - th->credited_ns) % t->period_ns;
    /* The stack copy, page by page so that the stack's top ends it. */
    uint64_t sp = t->regs.rsp;
    struct iovec local = {t->stack, STACK_COPY};
    struct iovec remote[STACK_COPY / 4096 + 1];
    int nremote = 0;
    uint64_t at = sp, end = sp + STACK_COPY;
    while (at < end) {
        uint64_t page_end = (at & ~(uint64_t)4095) + 4096;
        if (page_end > end) page_end = end;
        remote[nremote].iov_base = (void *)(uintptr_t)at;
        remote[nremote].iov_len = (size_t)(page_end - at);
        nremote++;
        at = page_end;
    }
    ssize_t got = process_vm_readv(t->pid, &local, 1, remote, (unsigned long)nremote, 0);
    t->stack_start = sp;
    t->stack_len = got > 0 ? (size_t)got : 0;
    t->samples += periods;
    return (int)periods;
}

static void unwind_and_emit(cs_trace *t, pid_t tid, uint64_t ns, int copies) {
    uint64_t ips[MAX_FRAMES];
    int n = 0;
    ips[n++] = t->regs.rip;
    unw_cursor_t cursor;
    if (t->init_remote(&cursor, t->as, t) == 0) {
        while (n < MAX_FRAMES) {
            int r = t->step(&cursor);
            if (r <= 0) {
                if (r < 0 && n == 1) t->unwind_failures++;
                break;
            }
            unw_word_t ip;
            if (t->get_reg(&cursor, UNW_REG_IP, &ip) < 0 || ip == 0) break;
            /* A return address outside any code mapping is no frame: a
             * value read beyond the stack copy, which the thread has since
             * overwritten. The walk ends there. */
            trace_map *m = map_at(t, ip - 1);
            if (!m || !m->executable) {
                refresh_maps(t);
                m = map_at(t, ip - 1);
                if (!m || !m->executable) break;
            }
            ips[n++] = ip;
        }
    } else {
        t->unwind_failures++;
    }
    for (int i = 0; i < copies; i++) emit_sample(t, tid, ns, ips, n);
}

/* ---- events ---- */

static int is_stop_signal(int sig) { return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU; }

/* Handles one wait status of a traced thread. Whatever the stop, it answers
 * an interrupt of ours still pending: the kernel's ptrace_stop() clears a
 * pending PTRACE_INTERRUPT on any trap ("any trap clears pending STOP trap"),
 * so a thread interrupted on its way into a clone event or a signal's stop
 * reports that stop and never the interrupt's. Waiting on for it stalled the
 * tracer until the program ended (1 launch in ~10 of KnownCosts, whose
 * Coldstart start-up clones a thread 7 ms in). */
static void handle(cs_trace *t, pid_t tid, int status, const struct rusage *ru) {
    if (WIFEXITED(status) || WIFSIGNALED(status)) {
        if (tid == t->pid) {
            t->exited = 1;
            t->exit_status = status;
            if (ru) t->usage = *ru;
        }
        drop_thread(t, tid);
        return;
    }
    if (!WIFSTOPPED(status)) return;
    trace_thread *th = thread_of(t, tid, 1);
    int event = status >> 16, sig = WSTOPSIG(status);
    int interrupted = th && th->interrupted;
    if (th) th->interrupted = 0;
    switch (event) {
    case PTRACE_EVENT_CLONE: {
        unsigned long child = 0;
        if (ptrace(PTRACE_GETEVENTMSG, tid, 0, &child) == 0 && thread_of(t, (pid_t)child, 1) && t->execed)
            emit_fork(t, (pid_t)child, tid, now_ns());
        ptrace(PTRACE_CONT, tid, 0, 0);
        return;
    }
    case PTRACE_EVENT_EXEC:
        /* A new image: the old threads and mappings are gone. */
        for (int i = t->nthreads - 1; i >= 0; i--)
            if (t->threads[i].tid != tid) drop_thread(t, t->threads[i].tid);
        forget_files(t);
        if (t->as) t->flush_cache(t->as, 0, 0);
        t->execed = 1;
        refresh_maps(t);
        if (th) {
            th->started = 1;
            th->credited_ns = thread_cpu_ns(th);  /* the fork child's time is not the program's */
        }
        ptrace(PTRACE_CONT, tid, 0, 0);
        return;
    case PTRACE_EVENT_STOP:
        if (is_stop_signal(sig)) {
            /* A group stop (SIGSTOP, ^Z): kept, as without a tracer. */
            siginfo_t si;
            if (ptrace(PTRACE_GETSIGINFO, tid, 0, &si) != 0 && errno == EINVAL) {
                ptrace(PTRACE_LISTEN, tid, 0, 0);
                return;
            }
        }
        if (interrupted) {
            uint64_t ns = now_ns();
            int took = sample_stopped(t, th);
            ptrace(PTRACE_CONT, tid, 0, 0);
            t->stopped_ns += now_ns() - ns;
            if (took) unwind_and_emit(t, tid, ns, took);
            return;
        }
        if (th) th->started = 1;
        ptrace(PTRACE_CONT, tid, 0, 0);
        return;
    default:
        break;
    }
    if (event != 0) {
        ptrace(PTRACE_CONT, tid, 0, 0);
        return;
    }
    /* A signal on its way to the program: given back, untouched. */
    ptrace(PTRACE_CONT, tid, 0, (void *)(uintptr_t)sig);
}

/* Whether an interrupt of ours has not been answered yet. Counted afresh
 * each time: an exec drops threads whose answers never come. */
static int interrupts_pending(const cs_trace *t) {
    for (int i = 0; i < t->nthreads; i++)
        if (t->threads[i].interrupted) return 1;
    return 0;
}

/* Interrupts every running thread once and samples it. */
static void tick(cs_trace *t) {
    for (int i = 0; i < t->nthreads; i++) {
        trace_thread *th = &t->threads[i];
        if (!th->started || th->interrupted || thread_state(t, th) != 'R') continue;
        if (ptrace(PTRACE_INTERRUPT, th->tid, 0, 0) == 0) th->interrupted = 1;
    }
    while (!t->exited && interrupts_pending(t)) {
        int status;
        struct rusage ru;
        pid_t tid = wait4(-1, &status, __WALL, &ru);
        if (tid < 0) {
            if (errno == EINTR) continue;
            break;
        }
        handle(t, tid, status, &ru);
    }
}

#endif /* CS_TRACE_SUPPORTED */

int cs_trace_supported(void) { return CS_TRACE_SUPPORTED; }

int cs_trace_attach(cs_launch *l, unsigned hz) {
#if CS_TRACE_SUPPORTED
    cs_trace *t = calloc(1, sizeof *t);
    if (!t) {
        snprintf(l->error, sizeof l->error, "out of memory for the tracer");
        return -1;
    }
    t->pid = l->pid;
    t->period_ns = 1000000000u / (hz ? hz : 1000);
    t->sampling = 1;
    if (load_unwinder(t, l->error, sizeof l->error) != 0) {
        cs_trace_free(t);
        return -1;
    }
    long options = PTRACE_O_TRACECLONE | PTRACE_O_TRACEEXEC;
    if (ptrace(PTRACE_SEIZE, l->pid, 0, (void *)options) != 0) {
        snprintf(l->error, sizeof l->error, "ptrace(PTRACE_SEIZE): %s", strerror(errno));
        cs_trace_free(t);
        return -1;
    }
    thread_of(t, l->pid, 1)->started = 1;
    l->trace = t;
    return 0;
#else
    (void)hz;
    snprintf(l->error, sizeof l->error, "tracing is not built for this architecture");
    return -1;
#endif
}

int cs_trace_wait(cs_launch *l, cs_records *out, int timeout_ms, int *status, struct rusage *usage) {
#if CS_TRACE_SUPPORTED
    cs_trace *t = l->trace;
    t->out = out;
    uint64_t deadline = now_ns() + (uint64_t)timeout_ms * 1000000u;
    for (;;) {
        int st;
        struct rusage ru;
        pid_t tid;
        while (!t->exited && (tid = wait4(-1, &st, __WALL | WNOHANG, &ru)) > 0) handle(t, tid, st, &ru);
        if (t->exited) {
            *status = t->exit_status;
            *usage = t->usage;
            return 1;
        }
        uint64_t now = now_ns();
        if (t->sampling && t->execed && now >= t->next_tick_ns) {
            tick(t);
            uint64_t after = now_ns();
            t->next_tick_ns = t->next_tick_ns + t->period_ns > after ? t->next_tick_ns + t->period_ns : after + t->period_ns;
            continue;
        }
        if (now >= deadline) return 0;
        /* Wake for the next period, and often enough to give a signal back quickly. */
        uint64_t wake = t->sampling && t->execed ? t->next_tick_ns : deadline;
        if (wake > now + 100000) wake = now + 100000;
        if (wake > deadline) wake = deadline;
        struct timespec ts = {(time_t)(wake / 1000000000u), (long)(wake % 1000000000u)};
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
    }
#else
    (void)l; (void)out; (void)timeout_ms; (void)status; (void)usage;
    return -1;
#endif
}

void cs_trace_stop_sampling(cs_launch *l) {
#if CS_TRACE_SUPPORTED
    if (l->trace) l->trace->sampling = 0;
#else
    (void)l;
#endif
}

void cs_trace_counts(const cs_launch *l, uint64_t *samples, uint64_t *unwind_failures, uint64_t *stopped_ns) {
    *samples = *unwind_failures = *stopped_ns = 0;
#if CS_TRACE_SUPPORTED
    if (!l->trace) return;
    *samples = l->trace->samples;
    *unwind_failures = l->trace->unwind_failures;
    *stopped_ns = l->trace->stopped_ns;
#endif
}

void cs_trace_free(cs_trace *t) {
#if CS_TRACE_SUPPORTED
    if (!t) return;
    for (int i = 0; i < t->nthreads; i++) {
        if (t->threads[i].stat_fd >= 0) close(t->threads[i].stat_fd);
        if (t->threads[i].sched_fd >= 0) close(t->threads[i].sched_fd);
    }
    free(t->threads);
    forget_files(t);
    free(t->files);
    free(t->maps);
    if (t->as) t->destroy_addr_space(t->as);
    if (t->unwind_lib) dlclose(t->unwind_lib);
    free(t);
#else
    (void)t;
#endif
}
