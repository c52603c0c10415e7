/*
 * The shared unwinder (cs_unwind_core.h): ELF files mapped read-only and
 * libunwind's remote API over a stack copy. Its users: the tracer of
 * `coldstart run` (CLauncher's traceunwind.c) and the offline unwinding of
 * a timeline's stack copies (offline.c).
 */
#include "cs_unwind_core.h"

#if CS_UW_SUPPORTED

#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define STR2(x) #x
#define STR(x) STR2(x)

/* ---- ELF files ---- */

/* The GNU build-id among the PT_NOTE segments' notes. */
static void read_build_id(cs_uw_image *im) {
    for (int i = 0; i < im->phnum; i++) {
        const Elf64_Phdr *p = &im->ph[i];
        if (p->p_type != PT_NOTE || p->p_offset > im->size || p->p_filesz > im->size - p->p_offset) continue;
        const uint8_t *at = im->bytes + p->p_offset, *end = at + p->p_filesz;
        while ((size_t)(end - at) >= sizeof(Elf64_Nhdr)) {
            Elf64_Nhdr n;
            memcpy(&n, at, sizeof n);
            size_t name = (n.n_namesz + 3) & ~3u, desc = (n.n_descsz + 3) & ~3u;
            if (name > (size_t)(end - at) - sizeof n || desc > (size_t)(end - at) - sizeof n - name) break;
            if (n.n_type == NT_GNU_BUILD_ID && n.n_namesz == 4 && memcmp(at + sizeof n, "GNU", 4) == 0 &&
                n.n_descsz <= sizeof im->build_id) {
                memcpy(im->build_id, at + sizeof n + name, n.n_descsz);
                im->build_id_len = n.n_descsz;
                return;
            }
            at += sizeof n + name + desc;
        }
    }
}

/* The headers of the bytes taken: 0 for a 64-bit ELF file. */
static int parse_headers(cs_uw_image *im) {
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)im->bytes;
    if (im->size < sizeof *eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
        eh->e_phoff > im->size || (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr) > im->size - eh->e_phoff)
        return -1;
    im->ph = (const Elf64_Phdr *)(im->bytes + eh->e_phoff);
    im->phnum = eh->e_phnum;
    for (int i = 0; i < im->phnum; i++)
        if (im->ph[i].p_type == PT_GNU_EH_FRAME) {
            im->eh_vaddr = im->ph[i].p_vaddr;
            im->eh_off = im->ph[i].p_offset;
        }
    read_build_id(im);
    return 0;
}

int cs_uw_image_map(cs_uw_image *im, const char *path) {
    memset(im, 0, sizeof *im);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) return -1;
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > (off_t)sizeof(Elf64_Ehdr)) {
        void *bytes = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (bytes != MAP_FAILED) {
            im->bytes = bytes;
            im->size = (size_t)st.st_size;
        }
    }
    close(fd);
    if (!im->bytes) return -1;
    if (parse_headers(im) == 0) return 0;
    cs_uw_image_release(im);
    return -1;
}

int cs_uw_image_adopt(cs_uw_image *im, uint8_t *bytes, size_t size) {
    memset(im, 0, sizeof *im);
    im->bytes = bytes;
    im->size = size;
    im->is_copy = 1;
    if (parse_headers(im) == 0) return 0;
    cs_uw_image_release(im);
    return -1;
}

void cs_uw_image_release(cs_uw_image *im) {
    if (im->is_copy) free((void *)im->bytes);
    else if (im->bytes) munmap((void *)im->bytes, im->size);
    memset(im, 0, sizeof *im);
}

int cs_uw_image_bias(const cs_uw_image *im, uint64_t start, uint64_t offset, int64_t *bias) {
    for (int i = 0; i < im->phnum; i++) {
        const Elf64_Phdr *p = &im->ph[i];
        if (p->p_type == PT_LOAD && (p->p_offset & ~(uint64_t)4095) <= offset && offset < p->p_offset + (p->p_filesz ? p->p_filesz : 1)) {
            *bias = (int64_t)(start - (p->p_vaddr + offset - p->p_offset));
            return 0;
        }
    }
    return -1;
}

int cs_uw_image_table(const cs_uw_image *im, int64_t bias, uint64_t text_start, uint64_t text_end, unw_dyn_info_t *di) {
    if (!im->eh_vaddr || im->eh_off > im->size || im->size - im->eh_off < 12) return -1;
    const uint8_t *h = im->bytes + im->eh_off;
    /* version 1, eh_frame_ptr any, fde_count udata4, table datarel|sdata4 */
    if (h[0] != 1 || h[2] != 0x03 || h[3] != 0x3b) return -1;
    uint32_t fde_count;
    memcpy(&fde_count, h + 8, 4);
    uint64_t hdr = (uint64_t)((int64_t)im->eh_vaddr + bias);
    memset(di, 0, sizeof *di);
    di->format = UNW_INFO_FORMAT_REMOTE_TABLE;
    di->start_ip = text_start;
    di->end_ip = text_end;
    di->u.rti.segbase = hdr;
    di->u.rti.table_data = hdr + 12;
    di->u.rti.table_len = (unw_word_t)fde_count * 8 / sizeof(unw_word_t);
    return 0;
}

int cs_uw_image_read(const cs_uw_image *im, uint64_t vaddr, void *out, size_t n) {
    for (int i = 0; i < im->phnum; i++) {
        const Elf64_Phdr *p = &im->ph[i];
        if (p->p_type != PT_LOAD || vaddr < p->p_vaddr || vaddr - p->p_vaddr > p->p_filesz || n > p->p_filesz - (vaddr - p->p_vaddr))
            continue;
        uint64_t off = p->p_offset + (vaddr - p->p_vaddr);
        if (off > im->size || n > im->size - off) return -1;
        memcpy(out, im->bytes + off, n);
        return 0;
    }
    return -1;
}

void cs_uw_image_span(const cs_uw_image *im, uint64_t *lo, uint64_t *hi) {
    *lo = UINT64_MAX;
    *hi = 0;
    for (int i = 0; i < im->phnum; i++) {
        const Elf64_Phdr *p = &im->ph[i];
        if (p->p_type != PT_LOAD) continue;
        if (p->p_vaddr < *lo) *lo = p->p_vaddr;
        if (p->p_vaddr + p->p_memsz > *hi) *hi = p->p_vaddr + p->p_memsz;
    }
    if (*lo > *hi) *lo = *hi = 0;
}

/* ---- libunwind's accessors over the copy and the caller's memory ---- */

static int acc_find_proc_info(unw_addr_space_t as, unw_word_t ip, unw_proc_info_t *pi, int need, void *arg) {
    cs_uw_walker *w = arg;
    const unw_dyn_info_t *di = w->table_for(w->ctx, ip);
    if (!di) return -UNW_ENOINFO;
    /* libunwind takes the table by a non-const pointer and only reads it. */
    unw_dyn_info_t copy = *di;
    return w->search_table(as, ip, &copy, pi, need, arg);
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
    cs_uw_walker *w = arg;
    if (write) return -UNW_EINVAL;
    if (addr >= w->stack_start && addr - w->stack_start <= w->stack_len && w->stack_len - (addr - w->stack_start) >= sizeof *val) {
        memcpy(val, w->stack + (addr - w->stack_start), sizeof *val);
        return 0;
    }
    uint64_t v;
    if (w->read_word(w->ctx, addr, &v) != 0) return -UNW_EINVAL;
    *val = v;
    return 0;
}

static int acc_access_reg(unw_addr_space_t as, unw_regnum_t reg, unw_word_t *val, int write, void *arg) {
    (void)as;
    cs_uw_walker *w = arg;
    if (write) return -UNW_EREADONLYREG;
    if (reg < 0 || reg >= CS_UW_NREGS) return -UNW_EBADREG;
    *val = w->regs[reg];
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

int cs_uw_load(cs_uw_walker *w, char *error, size_t error_len) {
    w->lib = dlopen(CS_UW_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    if (!w->lib) {
        snprintf(error, error_len, "cannot load %s (install libunwind8): %s", CS_UW_LIBRARY, dlerror());
        return -1;
    }
    unw_addr_space_t (*create_addr_space)(unw_accessors_t *, int);
    int (*set_caching_policy)(unw_addr_space_t, unw_caching_policy_t);
#define LOOK(field, name) *(void **)&(field) = dlsym(w->lib, STR(UNW_OBJ(name)))
    LOOK(create_addr_space, create_addr_space);
    LOOK(set_caching_policy, set_caching_policy);
    LOOK(w->destroy_addr_space, destroy_addr_space);
    LOOK(w->flush_cache, flush_cache);
    LOOK(w->init_remote, init_remote);
    LOOK(w->step, step);
    LOOK(w->get_reg, get_reg);
    LOOK(w->search_table, dwarf_search_unwind_table);
#undef LOOK
    if (!create_addr_space || !set_caching_policy || !w->destroy_addr_space || !w->flush_cache || !w->init_remote || !w->step || !w->get_reg ||
        !w->search_table) {
        snprintf(error, error_len, "%s lacks the remote unwinding functions", CS_UW_LIBRARY);
        cs_uw_unload(w);
        return -1;
    }
    unw_accessors_t acc = {   /* copied by create_addr_space */
        .find_proc_info = acc_find_proc_info, .put_unwind_info = acc_put_unwind_info,
        .get_dyn_info_list_addr = acc_get_dyn_info_list_addr, .access_mem = acc_access_mem,
        .access_reg = acc_access_reg, .access_fpreg = acc_access_fpreg, .resume = acc_resume,
        .get_proc_name = acc_get_proc_name,
    };
    w->as = create_addr_space(&acc, 0);
    if (!w->as) {
        snprintf(error, error_len, "libunwind: cannot create an address space");
        cs_uw_unload(w);
        return -1;
    }
    /* Rules cached by address: the code does not change under a walk. */
    set_caching_policy(w->as, UNW_CACHE_GLOBAL);
    return 0;
}

void cs_uw_unload(cs_uw_walker *w) {
    if (w->as) w->destroy_addr_space(w->as);
    if (w->lib) dlclose(w->lib);
    w->as = NULL;
    w->lib = NULL;
}

void cs_uw_forget(cs_uw_walker *w) {
    if (w->as) w->flush_cache(w->as, 0, 0);
}

int cs_uw_walk(cs_uw_walker *w, uint64_t *ips, int cap, cs_uw_end *end) {
    memset(end, 0, sizeof *end);
    end->stuck = 1;
    if (cap <= 0) return 0;
    int n = 0;
    ips[n++] = w->regs[UNW_X86_64_RIP];
    end->last_sp = w->regs[UNW_X86_64_RSP];
    end->last_bp = w->regs[UNW_X86_64_RBP];
    unw_cursor_t cursor;
    if (!w->as || w->init_remote(&cursor, w->as, w) != 0) return n;
    while (n < cap) {
        int r = w->step(&cursor);
        if (r == 0) end->stuck = 0;   /* the outermost frame: its CFI ends the chain */
        if (r <= 0) break;
        unw_word_t ip, sp, bp;
        if (w->get_reg(&cursor, UNW_REG_IP, &ip) < 0 || ip == 0) break;
        /* A return address outside code is no frame: a value read beyond
         * the stack copy, which the thread has since overwritten. */
        if (!w->is_code(w->ctx, ip - 1)) break;
        ips[n++] = ip;
        if (w->get_reg(&cursor, UNW_REG_SP, &sp) == 0) end->last_sp = sp;
        if (w->get_reg(&cursor, UNW_X86_64_RBP, &bp) == 0) end->last_bp = bp;
    }
    if (n >= cap) end->stuck = 0;
    return n;
}

int cs_uw_perf_reg(int i) {
    /* perf: AX BX CX DX SI DI BP SP IP R8–R15; libunwind: RAX RDX RCX RBX RSI RDI RBP RSP R8–R15 RIP */
    static const int8_t to_unw[17] = {0, 3, 2, 1, 4, 5, 6, 7, 16, 8, 9, 10, 11, 12, 13, 14, 15};
    return i >= 0 && i < 17 ? to_unw[i] : -1;
}

#endif /* CS_UW_SUPPORTED */
