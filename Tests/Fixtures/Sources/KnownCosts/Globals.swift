import Glibc

/// Set by `slowGlobalTable`'s initializer: the CPU time it took.
nonisolated(unsafe) var slowGlobalInitializerNs: UInt64 = 0

/// A global outside main.swift, so Swift initialises it lazily, on first use.
nonisolated(unsafe) var slowGlobalTable: [UInt64] = {
    slowGlobalInitializerNs = measure { burnCPU(milliseconds: 20) }
    return [1, 2, 3]
}()
