@testable import ColdstartAnalysis
import XCTest

/// Stacks (leaf first) copied from real runs: the bundled example under
/// Coldstart (`coldstart symbolize`: display and linkage names), and
/// `swift-format format` under `perf record --call-graph dwarf` (perf prints
/// Swift names mangled, C++ names demangled without arguments). Long runs of
/// library frames between the two ends are shortened.
final class RuntimeCostsTests: XCTestCase {
    private func frame(_ function: String, _ module: String, linkage: String? = nil) -> NamedFrame {
        NamedFrame(function: function, linkageName: linkage, module: module)
    }

    private let core = "libswiftCore.so", loader = "ld-linux-x86-64.so.2", kernel = "[kernel.kallsyms]"

    private var exampleMainRoot: [NamedFrame] {
        [
            frame("static Coldstart.Coldstart.span<A>(String, () throws -> A) throws -> A", "ServiceStartup", linkage: "$s9ColdstartAAO4spanyxSS_xyKXEtKlFZ"),
            frame("ServiceStartup_main", "ServiceStartup"),
            frame("__libc_start_call_main", "libc.so.6"), frame("__libc_start_main", "libc.so.6"), frame("_start", "ServiceStartup"),
        ]
    }

    /// ServiceConfig.load() trims a string: an associated-type witness looked
    /// up by mangled name checks generic requirements, which scans conformances.
    private var conformanceScanUnderTypeLookup: [NamedFrame] {
        [
            frame("swift_conformsToProtocolMaybeInstantiateSuperclasses(swift::TargetMetadata<swift::InProcess> const*, swift::TargetProtocolDescriptor<swift::InProcess> const*, bool)", core),
            frame("swift_conformsToProtocolWithExecutionContext", core),
            frame("swift::_conformsToProtocol(swift::OpaqueValue const*, swift::TargetMetadata<swift::InProcess> const*, swift::TargetProtocolDescriptorRef<swift::InProcess>, swift::TargetWitnessTable<swift::InProcess> const**, swift::ConformanceExecutionContext*)", core),
            frame("swift::_checkGenericRequirements(__swift::__runtime::llvm::ArrayRef<swift::GenericParamDescriptor>)", core),
            frame("_gatherGenericParameters(swift::TargetContextDescriptor<swift::InProcess> const*)", core),
            frame("swift::Demangle::__runtime::TypeDecoder<(anonymous namespace)::DecodedMetadataBuilder>::decodeMangledType(swift::Demangle::__runtime::Node*, unsigned int, bool)", core),
            frame("swift_getTypeByMangledNode", core), frame("swift_getTypeByMangledName", core),
            frame("swift_getAssociatedTypeWitnessSlow", core),
            frame("static String._fromCodeUnits<A, B>(_: A, encoding: B.Type, repair: Bool) -> (String, repairsMade: Bool)?", core, linkage: "$sSS14_fromCodeUnits_8encoding6repairSS_Sb11repairsMadetSgx_q_mSbtSlRzs16_UnicodeEncodingR_8CodeUnitQy_7ElementRtzr0_lFZ"),
            frame("Foundation.NSString.trimmingCharacters(in: Foundation.CharacterSet) -> String", "libFoundation.so", linkage: "$s10Foundation8NSStringC18trimmingCharacters2inSSAA12CharacterSetV_tF"),
            frame("function signature specialization <Arg[0] = Dead> of static ServiceStartup.ServiceConfig.load() -> ServiceStartup.ServiceConfig", "ServiceStartup", linkage: "$s14ServiceStartup0A6ConfigV4loadACyFZTf4d_n"),
            frame("closure #1 () -> ServiceStartup.ServiceConfig in ServiceStartup", "ServiceStartup", linkage: "$s14ServiceStartupAA0A6ConfigVyXEfU_"),
        ] + exampleMainRoot
    }

    private var slowLazyGlobal: [NamedFrame] {
        [
            frame("ServiceStartup.buildRoutingTable() -> Array<UInt64>", "ServiceStartup", linkage: "$s14ServiceStartup17buildRoutingTable33_ECFF7A37B45B356AE040F4E4C8D1A5BELLSays6UInt64VGyF"),
            frame("one-time initialization function for routingTable", "ServiceStartup", linkage: "$s14ServiceStartup12routingTable_WZ"),
            frame("swift::threading_impl::once_slow(swift::threading_impl::once_t&, void (*)(void*), void*)", core, linkage: "_ZN5swift14threading_impl9once_slowERNS0_6once_tEPFvPvES3_"),
            frame("closure #4 () -> Int in ServiceStartup", "ServiceStartup", linkage: "$s14ServiceStartupSiyXEfU2_"),
        ] + exampleMainRoot
    }

    private let isExample: (String) -> Bool = { $0 == "ServiceStartup" }

    func testAConformanceScanUnderATypeLookupIsAScanNamedByTheAppFunction() throws {
        let stack = conformanceScanUnderTypeLookup
        let match = try XCTUnwrap(RuntimeCostClassifier.classify(stack))
        XCTAssertEqual(match.kind, .conformanceScan)
        XCTAssertEqual(stack[match.depth].function.prefix(25), "swift::_checkGenericRequi", "the outermost scan frame")
        let caller = RuntimeCostClassifier.appFrame(in: stack, from: match.depth, isAppModule: isExample)
        XCTAssertEqual(caller?.linkageName, "$s14ServiceStartup0A6ConfigV4loadACyFZTf4d_n")
        // Without the scan, the same look-up is a metadata look-up.
        XCTAssertEqual(RuntimeCostClassifier.classify(Array(stack.dropFirst(4)))?.kind, .metadataLookup)
    }

    func testASlowLazyGlobalIsNamedByItsInitializer() throws {
        let match = try XCTUnwrap(RuntimeCostClassifier.classify(slowLazyGlobal))
        XCTAssertEqual(match.kind, .lazyGlobal)
        XCTAssertEqual(RuntimeCostClassifier.appFrame(in: slowLazyGlobal, from: match.depth, isAppModule: isExample)?.function,
                       "one-time initialization function for routingTable")
        // Runtime work inside the initializer is that work, not the global.
        let inside = [frame("swift_allocObject", core)] + slowLazyGlobal
        XCTAssertEqual(RuntimeCostClassifier.classify(inside)?.kind, .arcAndAllocation)
        // A global initialised by another global's initializer counts for the inner one.
        let nested = [frame("one-time initialization function for inner", "ServiceStartup", linkage: "$s14ServiceStartup5inner_WZ"),
                      frame("swift_once", core)] + slowLazyGlobal.dropFirst()
        let nestedMatch = try XCTUnwrap(RuntimeCostClassifier.classify(nested))
        XCTAssertEqual(nested[nestedMatch.depth].linkageName, "$s14ServiceStartup5inner_WZ")
    }

    func testTheRuntimesOwnOneTimeSetUpIsNoLazyGlobal() {
        // libswiftCore's constructor finding its own path, through once_slow.
        let stack = [
            frame("_dl_addr", "libc.so.6"),
            frame("(anonymous namespace)::_swift_initRuntimePath(void*)", core, linkage: "_ZN12_GLOBAL__N_122_swift_initRuntimePathEPv"),
            frame("swift::threading_impl::once_slow(swift::threading_impl::once_t&, void (*)(void*), void*)", core),
            frame("swift_copyAuxiliaryExecutablePath", core), frame("_GLOBAL__sub_I_Backtrace.cpp", core),
            frame("call_init", loader), frame("_dl_init", loader), frame("_dl_start_user", loader),
        ]
        XCTAssertNil(RuntimeCostClassifier.classify(stack), "a library initializer, not a runtime cost; _dl_start_user is not the loader's own work")
        XCTAssertEqual(RuntimeCostClassifier.classify(Array(stack.suffix(3)))?.kind, .loader, "a sample in _dl_init itself is")
    }

    func testLazyBindingAfterMainIsNotTheLoadersStartUp() {
        let stack = [
            frame("do_lookup_x", loader), frame("_dl_lookup_symbol_x", loader), frame("_dl_fixup", loader),
            frame("_dl_runtime_resolve_xsavec", loader),
            frame("std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >::_M_append(char const*, unsigned long)", "libstdc++.so.6.0.30"),
        ]
        XCTAssertEqual(RuntimeCostClassifier.classify(stack)?.kind, .lazyBinding)
    }

    func testAPageFaultWhileRelocatingIsTheLoader() {
        // perf: kernel frames, then the loader's inlined relocation loop.
        let stack = [
            frame("exc_page_fault", kernel), frame("asm_exc_page_fault", kernel), frame("elf_machine_rela_relative", loader),
            frame("elf_dynamic_do_Rela", loader), frame("_dl_relocate_object", loader), frame("dl_main", loader),
            frame("_dl_sysdep_start", loader), frame("_dl_start_final", loader), frame("_dl_start", loader), frame("_start", loader),
        ]
        XCTAssertEqual(RuntimeCostClassifier.classify(stack)?.kind, .loader)
        XCTAssertEqual(RuntimeCostClassifier.classify(Array(stack.prefix(2)))?.kind, .kernel)
    }

    /// swift-format: ArgumentParser's `_commandName` calls `String(describing:)`,
    /// which casts to CustomStringConvertible and scans conformances.
    private var stringDescribingScan: [NamedFrame] {
        [
            frame("swift_conformsToProtocolMaybeInstantiateSuperclasses", core),
            frame("swift_conformsToProtocolWithExecutionContext", core), frame("swift::_conformsToProtocolInContext", core),
            frame("tryCastToConstrainedOpaqueExistential", core), frame("tryCast", core), frame("swift_dynamicCast", core),
            frame("$sSS10describingSSx_tclufC", core),
            frame("$s14ArgumentParser15ParsableCommandPAAE12_commandNameSSvgZ", "swift-format"),
            frame("$s14ArgumentParser4TreeCA2A15ParsableCommand_pXpRszlE4rootACyAaD_pXpGAaD_pXp_tKcfC", "swift-format"),
            frame("$s12swift_format18SwiftFormatCommandV5$mainyyFZ", "swift-format"), frame("swift_format_main", "swift-format"),
            frame("__libc_start_call_main", "libc.so.6"), frame("_start", "swift-format"),
        ]
    }

    func testMangledNamesFromPerfClassifyAlike() throws {
        let stack = stringDescribingScan
        let match = try XCTUnwrap(RuntimeCostClassifier.classify(stack))
        XCTAssertEqual(match.kind, .conformanceScan)
        XCTAssertEqual(RuntimeCostClassifier.appFrame(in: stack, from: match.depth, isAppModule: { $0 == "swift-format" })?.function,
                       "$s14ArgumentParser15ParsableCommandPAAE12_commandNameSSvgZ")
        // The same call when the cast finds a String: a dynamic cast under String(describing:).
        let cast = [frame("tryCastToString", core)] + stack.dropFirst(4)
        XCTAssertEqual(RuntimeCostClassifier.classify(cast)?.kind, .dynamicCast)
        XCTAssertEqual(RuntimeCostClassifier.classify(Array(stack.dropFirst(6)))?.kind, .reflection)
    }

    func testPageFaultsCountForTheRuntimeWorkThatTouchedThePage() {
        let fault = [
            frame("do_wp_page", kernel), frame("handle_mm_fault", kernel), frame("exc_page_fault", kernel), frame("asm_exc_page_fault", kernel),
        ]
        let witnessTable = fault + [
            frame("$s11SwiftSyntax04ExprB0VAA0B8ProtocolAAWI", "swift-format"), frame("instantiateWitnessTable", core),
            frame("swift_getWitnessTable", core), frame("$s11SwiftSyntax04ExprB0VAcA0B8ProtocolAAWl", "swift-format"),
            frame("$s11SwiftSyntax04ExprB8ProtocolPAAE2asyqd__Sgqd__mAaBRd__lFAA0cB0V_AA08SequencecB0VTt0g5", "swift-format"),
        ]
        XCTAssertEqual(RuntimeCostClassifier.classify(witnessTable)?.kind, .metadataLookup)
        let appCode = fault + [frame("$s12swift_format8FrontendC3runyyF", "swift-format"), frame("swift_format_main", "swift-format")]
        let match = RuntimeCostClassifier.classify(appCode)
        XCTAssertEqual(match?.kind, .kernel)
        XCTAssertEqual(RuntimeCostClassifier.appFrame(in: appCode, from: match?.depth ?? 0, isAppModule: { $0 == "swift-format" })?.function,
                       "$s12swift_format8FrontendC3runyyF")
    }

    func testTheAppsOwnWorkIsNoRuntimeCost() {
        let hashing = [
            frame("String.hash(into: inout Hasher) -> ()", core, linkage: "$sSS4hash4intoys6HasherVz_tF"),
            frame("_NativeDictionary._copyOrMoveAndResize(capacity: Int, moveElements: Bool) -> ()", core),
            frame("Dictionary.init(from: Decoder) throws -> Dictionary<A, B>", core, linkage: "$sSDsSeRzSeR_rlE4fromSDyxq_Gs7Decoder_p_tKcfC"),
        ] + exampleMainRoot
        XCTAssertNil(RuntimeCostClassifier.classify(hashing))
        XCTAssertNil(RuntimeCostClassifier.classify([frame("freelocale", "libc.so.6")]), "free is matched by its whole name")
    }

    func testSummaryGroupsSamplesWithTheirAppCallers() throws {
        let other = [frame("ServiceStartup.Store.warm(using: Array<UInt64>) -> Int", "ServiceStartup")] + exampleMainRoot
        let stacks = Array(repeating: slowLazyGlobal, count: 6) + Array(repeating: conformanceScanUnderTypeLookup, count: 3) + [other]
        let summary = RuntimeCostSummary(stacks: stacks, nsPerSample: 100_000, isAppModule: isExample)
        XCTAssertEqual(summary.totalSamples, 10)
        // The type look-up the scans are under is on their stacks: a row of its own, of no sample of its kind.
        XCTAssertEqual(summary.rows.map(\.kind), [.lazyGlobal, .conformanceScan, .metadataLookup])
        XCTAssertEqual(summary.rows.map(\.samples), [6, 3, 0])
        XCTAssertEqual(summary.rows.map(\.onStackSamples), [6, 3, 3])
        XCTAssertEqual(summary.rows[0].ms, 0.6, accuracy: 1e-9)
        XCTAssertEqual(summary.rows[1].percent, 30, accuracy: 1e-9)
        XCTAssertEqual(summary.rows[0].callers, [.init(function: "one-time initialization function for routingTable", samples: 6)])
        XCTAssertEqual(summary.rows[1].callers.first?.samples, 3)
        XCTAssertTrue(summary.rows[1].callers.first?.function.hasSuffix("ServiceConfig.load() -> ServiceStartup.ServiceConfig") == true)
    }

    func testEveryKindIsInTheTableWithAdvice() {
        for kind in RuntimeCostKind.allCases {
            XCTAssertTrue(RuntimeCostClassifier.rules.contains { $0.kind == kind }, "\(kind)")
            XCTAssertFalse(kind.advice.isEmpty)
        }
    }
}
