/*
 * The tracer's unwinding (trace.h): the program's mappings and files, read
 * from /proc and mapped here read-only, and libunwind's remote API over the
 * stopped thread's register and stack copy and those files' DWARF CFI.
 */
#include "trace.h"

#if CS_TRACE_SUPPORTED

/* ---- the program's mappings and files ---- */

/* One file per path and load: the LD_AUDIT module's namespace loads its own
 * libc beside the program's, at another address. Keyed by path alone, the
 * two shared one load bias and one unwind table, so every walk through the
 * program's libc (a constructor's clock_gettime, __libc_start_call_main)
 * ended there. A load is told by its mappings' address less file offset,
 * which its segments share where the linker laid them out at their offsets
 * (the rare segment that does not gets a file entry of its own, unwound
 * alike). */
static int file_index(cs_trace *t, const char *path, uint64_t load) {
    for (int i = 0; i < t->nfiles; i++)
        if (t->files[i].load == load && strcmp(t->files[i].path, path) == 0) return i;
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
    f->load = load;
    return t->nfiles++;
}

void trace_forget_files(cs_trace *t) {
    for (int i = 0; i < t->nfiles; i++) {
        trace_file *f = &t->files[i];
        if (f->is_copy) free((void *)f->bytes);
        else if (f->bytes) munmap((void *)f->bytes, f->size);
    }
    t->nfiles = 0;
    t->nmaps = 0;
}

/* Reads /proc/PID/maps again; new mappings get a PERF_RECORD_MMAP. */
void trace_refresh_maps(cs_trace *t) {
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
        if (name[0] == '/' || strcmp(name, "[vdso]") == 0) m->file = file_index(t, name, m->start - m->offset);
        for (int i = 0; i < nold; i++)
            if (old[i].start == m->start && old[i].end == m->end && old[i].offset == m->offset && old[i].file == m->file) {
                m->announced = old[i].announced;
                break;
            }
        if (!m->announced && (m->executable || name[0] == '/')) trace_emit_mmap(t, m, shown, ns);
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

/* The mapping holding the code address `address`, /proc read again once
 * when no executable mapping is known there (the program mapped it since,
 * maybe over an old one): new mappings are announced, so a frame in one is
 * in a module. */
static trace_map *code_map(cs_trace *t, uint64_t address) {
    trace_map *m = map_at(t, address);
    if (m && m->executable) return m;
    trace_refresh_maps(t);
    return map_at(t, address);
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
    trace_map *m = code_map(t, ip);
    if (!m || m->file < 0) return NULL;
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

int trace_load_unwinder(cs_trace *t, char *error, size_t error_len) {
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

void trace_unwind_and_emit(cs_trace *t, pid_t tid, uint64_t ns, int copies) {
    uint64_t ips[MAX_FRAMES];
    int n = 0;
    ips[n++] = t->regs.rip;
    /* Also when libunwind never asks for the leaf's table (a walk that fails at once). */
    (void)code_map(t, t->regs.rip);
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
            trace_map *m = code_map(t, ip - 1);
            if (!m || !m->executable) break;
            ips[n++] = ip;
        }
    } else {
        t->unwind_failures++;
    }
    for (int i = 0; i < copies; i++) trace_emit_sample(t, tid, ns, ips, n);
}

#endif /* CS_TRACE_SUPPORTED */
