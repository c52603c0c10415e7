// Everything in the capture layer that differs between x86_64 and aarch64,
// in one place: registers, the thread pointer, a raw system call, libunwind's
// per-architecture names, and return addresses. Every function here is
// async-signal-safe (inline, no calls).
//
// aarch64 notes (docs/arm64.md):
// - A frame record is {x29 saved, x30 saved} at x29, as x86_64's {rbp, ret}
//   at rbp, so the frame-pointer walk is the same once the registers are named.
// - Pointer authentication (ARMv8.3 PAC, on Graviton 3+/Apple-silicon hosts,
//   used by code built with -mbranch-protection) signs return addresses in
//   their top bits. A return address read from a stack is stripped with
//   XPACLRI, which is a NOP on cores without PAC, before it is recorded.
#ifndef COLDSTART_ARCH_H
#define COLDSTART_ARCH_H

#include <errno.h>
#include <stdint.h>
#include <ucontext.h>

#if defined(__x86_64__)
#define CS_ARCH_NAME "x86_64"
#define CS_UNW_LIBRARY "libunwind-x86_64.so.8"
#define CS_UNW_NAME(fn) ("_Ux86_64_" fn)
#define CS_UNW_LOCAL_NAME(fn) ("_ULx86_64_" fn)
#define CS_ARCH_SUPPORTED 1
#elif defined(__aarch64__)
#define CS_ARCH_NAME "aarch64"
#define CS_UNW_LIBRARY "libunwind-aarch64.so.8"
#define CS_UNW_NAME(fn) ("_Uaarch64_" fn)
#define CS_UNW_LOCAL_NAME(fn) ("_ULaarch64_" fn)
#define CS_ARCH_SUPPORTED 1
#else
#define CS_ARCH_NAME "unsupported"
#define CS_ARCH_SUPPORTED 0  // no sampler, no blocked stacks: phases and marks only
#endif

/// The calling thread's thread pointer (x86_64 %fs base, aarch64 TPIDR_EL0):
/// glibc's TCB, which identifies the thread without a system call.
static inline uintptr_t cs_thread_pointer(void) {
    uintptr_t v = 0;
#if defined(__x86_64__)
    __asm__ volatile("mov %%fs:0, %0" : "=r"(v));
#elif defined(__aarch64__)
    __asm__ volatile("mrs %0, tpidr_el0" : "=r"(v));
#endif
    return v;
}

/// A system call that sets no errno: for code running on a thread with no
/// TLS of its own (a raw clone), and for the C library's `syscall` that
/// Coldstart takes the place of (end.c). Returns -errno on failure.
static inline long cs_raw_syscall6(long n, long a1, long a2, long a3, long a4, long a5, long a6) {
    long ret;
#if defined(__x86_64__)
    register long r10 __asm__("r10") = a4;
    register long r8 __asm__("r8") = a5;
    register long r9 __asm__("r9") = a6;
    __asm__ volatile("syscall" : "=a"(ret) : "a"(n), "D"(a1), "S"(a2), "d"(a3), "r"(r10), "r"(r8), "r"(r9) : "rcx", "r11", "memory");
#elif defined(__aarch64__)
    register long x8 __asm__("x8") = n;
    register long x0 __asm__("x0") = a1;
    register long x1 __asm__("x1") = a2;
    register long x2 __asm__("x2") = a3;
    register long x3 __asm__("x3") = a4;
    register long x4 __asm__("x4") = a5;
    register long x5 __asm__("x5") = a6;
    __asm__ volatile("svc #0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5) : "memory");
    ret = x0;
#else
    (void)n; (void)a1; (void)a2; (void)a3; (void)a4; (void)a5; (void)a6;
    ret = -38;  // ENOSYS
#endif
    return ret;
}

static inline long cs_raw_syscall(long n, long a1, long a2, long a3, long a4, long a5) {
    return cs_raw_syscall6(n, a1, a2, a3, a4, a5, 0);
}

/// The C library's syscall(2) for Coldstart's own calls: -1 and errno on
/// failure. Not `syscall` itself, whose place Coldstart takes (end.c: it may
/// step aside before a call), so that none of its own calls go there.
static inline long cs_sys6(long n, long a1, long a2, long a3, long a4, long a5, long a6) {
    long rc = cs_raw_syscall6(n, a1, a2, a3, a4, a5, a6);
    if (rc < 0 && rc > -4096) {
        errno = (int)-rc;
        return -1;
    }
    return rc;
}
#define CS_SYS_ARGS(n, a1, a2, a3, a4, a5, a6, ...) \
    cs_sys6((long)(n), (long)(a1), (long)(a2), (long)(a3), (long)(a4), (long)(a5), (long)(a6))
/// cs_syscall(SYS_x, args…): up to six arguments, integers or pointers.
#define cs_syscall(...) CS_SYS_ARGS(__VA_ARGS__, 0, 0, 0, 0, 0, 0, 0)

/// The interrupted program counter, stack pointer and frame pointer of a
/// signal's ucontext.
static inline void cs_ucontext_regs(const void *ucv, uintptr_t *pc, uintptr_t *sp, uintptr_t *fp) {
    const ucontext_t *uc = ucv;
#if defined(__x86_64__)
    *pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
    *sp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
    *fp = (uintptr_t)uc->uc_mcontext.gregs[REG_RBP];
#elif defined(__aarch64__)
    *pc = (uintptr_t)uc->uc_mcontext.pc;
    *sp = (uintptr_t)uc->uc_mcontext.sp;
    *fp = (uintptr_t)uc->uc_mcontext.regs[29];
#else
    (void)uc;
    *pc = *sp = *fp = 0;
#endif
}

/// A return address as read from a stack, without a pointer-authentication
/// code (aarch64); unchanged elsewhere.
static inline uint64_t cs_strip_return_address(uint64_t ra) {
#if defined(__aarch64__)
    register uint64_t x30 __asm__("x30") = ra;
    __asm__("hint #7" : "+r"(x30));  // XPACLRI
    return x30;
#else
    return ra;
#endif
}

// libunwind's register numbers (the DWARF ones) of the program counter, stack
// pointer and frame pointer, and how many registers a remote unwind may ask
// for (base/remoteunwind.c); and the user registers a kernel sample carries
// (perf_regs.h; sample_regs_user, in ascending bit order), with where its
// stack and frame pointers are among them (sampler/smpunwind.c).
#if defined(__aarch64__)
#define CS_UNW_NREGS 33          // X0–X30, SP, PC
#define CS_UNW_REG_FP 29
#define CS_UNW_REG_SP 31
#define CS_UNW_REG_PC 32
#define CS_PERF_REGS_MASK ((1ull << 33) - 1)   // X0–X30, SP, PC: libunwind's order
#define CS_PERF_NREGS 33
#define CS_PERF_SP 31
#define CS_PERF_FP 29
/// libunwind's number of the `i`th register of a kernel sample.
static inline int cs_perf_reg_to_unw(int i) { return i; }
#else
#define CS_UNW_NREGS 17          // RAX RDX RCX RBX RSI RDI RBP RSP R8–R15, RIP
#define CS_UNW_REG_FP 6
#define CS_UNW_REG_SP 7
#define CS_UNW_REG_PC 16
#define CS_PERF_REGS_MASK 0xff01ffull          // AX BX CX DX SI DI BP SP IP, R8–R15 (not flags, segments)
#define CS_PERF_NREGS 17
#define CS_PERF_SP 7
#define CS_PERF_FP 6
/// libunwind's number of the `i`th register of a kernel sample.
static inline int cs_perf_reg_to_unw(int i) {
    static const int8_t to_unw[CS_PERF_NREGS] = {0, 3, 2, 1, 4, 5, 6, 7, CS_UNW_REG_PC, 8, 9, 10, 11, 12, 13, 14, 15};
    return to_unw[i];
}
#endif

#endif
