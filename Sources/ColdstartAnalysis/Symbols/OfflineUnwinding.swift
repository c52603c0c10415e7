import CUnwind
import Foundation

/// What reading a timeline did with its stack copies (`rawStacks`,
/// `COLDSTART_UNWINDER=offline`): each copy unwound with DWARF CFI from the
/// modules' files on this machine (CSupport/CUnwind, libunwind's remote
/// API), its frames replacing the sample's frame-pointer chain, completed
/// with that chain past the copy's end as the sampler does online. A sample
/// whose walk needs a module file that is missing or another build keeps
/// its chain, and `note` says so once.
package struct OfflineUnwinding: Sendable, Equatable {
    /// Stack copies in the file.
    package var copies: Int
    /// Samples whose frames are now the CFI's ...
    package var unwound: Int
    /// ... of which completed with the frame-pointer chain past the copy.
    package var chainTails: Int
    /// Samples that kept their chain: a module's file missing or changed ...
    package var missingFiles: Int
    /// ... or the CFI failed at the leaf.
    package var failures: Int
    /// Why nothing was unwound (libunwind missing, another architecture).
    package var unavailable: String?
    /// This process's CPU time for the unwinding, ns.
    package var cpuNs: UInt64

    /// One line for the report, or nil when every copy was unwound or failed
    /// as the online unwinder's would.
    package var note: String? {
        if let unavailable { return "the timeline's \(copies) stack copies were not unwound (\(unavailable)): samples keep their frame-pointer chains" }
        guard missingFiles > 0 else { return nil }
        return "\(missingFiles) of \(copies) stack copies kept their frame-pointer chains: a module's file is missing or not the build that ran"
    }

    /// Unwinds `raw` over `modules`, replacing the frames of the samples
    /// they name (indices checked by the caller).
    static func apply(_ raw: RawStacks, to samples: inout [Timeline.Sample], modules: [Timeline.Module]) -> OfflineUnwinding {
        var summary = OfflineUnwinding(copies: raw.stacks.count, unwound: 0, chainTails: 0, missingFiles: 0, failures: 0, unavailable: nil, cpuNs: 0)
        guard !raw.stacks.isEmpty else { return summary }
        #if arch(x86_64)
        guard raw.arch == "x86_64" else {
            summary.unavailable = "recorded on \(raw.arch)"
            return summary
        }
        #else
        summary.unavailable = "recorded on \(raw.arch); this coldstart unwinds x86_64 stacks on x86_64"
        return summary
        #endif
        var error = [CChar](repeating: 0, count: 256)
        guard let unwinder = cs_offline_new(&error, error.count) else {
            summary.unavailable = String(cString: error)
            return summary
        }
        defer { cs_offline_free(unwinder) }
        let start = Self.threadCPU()
        for module in modules {
            let id = module.buildId.map(Self.bytes(hex:)) ?? []
            if cs_offline_add_module(unwinder, module.path, id, id.count, module.base, module.start, module.end) != 0 {
                summary.unavailable = "out of memory"
                return summary
            }
        }
        // Module lookup by address: starts in order.
        let order = modules.indices.sorted { modules[$0].start < modules[$1].start }
        func module(of address: UInt64) -> Int {
            var lo = 0, hi = order.count
            while lo < hi {
                let mid = (lo + hi) / 2
                if modules[order[mid]].start <= address { lo = mid + 1 } else { hi = mid }
            }
            guard lo > 0, address < modules[order[lo - 1]].end else { return -1 }
            return order[lo - 1]
        }
        let cap = 128
        var out = [UInt64](repeating: 0, count: cap)
        for stack in raw.stacks where stack.sample < samples.count {
            let chain = samples[stack.sample].frames.map { frame -> UInt64 in
                frame.module >= 0 && frame.module < modules.count ? frame.address &+ modules[frame.module].base : frame.address
            }
            var flags: Int32 = 0
            let n = stack.bytes.withUnsafeBytes { copy in
                cs_offline_unwind(unwinder, stack.registers, stack.registers.count, copy.bindMemory(to: UInt8.self).baseAddress, copy.count,
                                  chain, Int32(chain.count), &out, Int32(cap), &flags)
            }
            if flags & Int32(CS_OFFLINE_NO_FILE) != 0 { summary.missingFiles += 1 }
            if flags & Int32(CS_OFFLINE_FAILED) != 0 { summary.failures += 1 }
            guard flags & Int32(CS_OFFLINE_DWARF) != 0, n > 0 else { continue }
            summary.unwound += 1
            if flags & Int32(CS_OFFLINE_CHAIN_TAIL) != 0 { summary.chainTails += 1 }
            // Placed as the recorder places frames: a return address by the
            // call before it (address − 1).
            samples[stack.sample].frames = (0..<Int(n)).map { i in
                let address = out[i]
                let m = module(of: i == 0 ? address : address &- 1)
                return m >= 0 ? Timeline.Frame(module: m, address: address &- modules[m].base) : Timeline.Frame(module: -1, address: address)
            }
        }
        summary.cpuNs = Self.threadCPU() &- start
        return summary
    }

    private static func bytes(hex: String) -> [UInt8] {
        let digits = Array(hex.utf8)
        guard digits.count % 2 == 0 else { return [] }
        var out: [UInt8] = []
        for i in stride(from: 0, to: digits.count, by: 2) {
            guard let byte = UInt8(String(decoding: digits[i..<i + 2], as: UTF8.self), radix: 16) else { return [] }
            out.append(byte)
        }
        return out
    }

    private static func threadCPU() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }
}
