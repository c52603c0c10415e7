import CColdstart
import ColdstartBuildInfo

/// Marks the phases of an app's launch for the Coldstart profiler.
///
/// Profiling is decided once, before any library initializer runs, from the
/// `COLDSTART` environment variable. When it is off every call here returns
/// after one memory load.
///
///     Coldstart.mark("config loaded", isPhaseBoundary: true)
///     let store = Coldstart.span("open store") { try Store.open() }
///     Coldstart.ready()
public enum Coldstart {
    /// Whether this launch is being recorded.
    public static var isProfiling: Bool { cs_is_enabled() }

    /// Records an instant on the current thread.
    ///
    /// A phase boundary ends the current phase: the launch's phases run from
    /// `main` through each boundary to `ready()`. Marks made after `ready()`
    /// belong to the extended launch and are never boundaries.
    public static func mark(_ name: String, isPhaseBoundary: Bool = false) {
        guard cs_is_enabled() else { return }
        registerSwiftVersion()
        name.withCString { cs_mark($0, isPhaseBoundary) }
    }

    /// Runs `body` inside a span named `name` and returns its result.
    public static func span<Result>(_ name: String, _ body: () throws -> Result) rethrows -> Result {
        let span = beginSpan(name)
        defer { span.end() }
        return try body()
    }

    #if compiler(>=6.0)
    /// Runs the asynchronous `body` inside a span named `name`, on the
    /// caller's actor.
    public static func span<Result>(
        _ name: String,
        isolation: isolated (any Actor)? = #isolation,
        _ body: () async throws -> Result
    ) async rethrows -> Result {
        let span = beginSpan(name)
        defer { span.end() }
        return try await body()
    }
    #else
    /// Runs the asynchronous `body` inside a span named `name`.
    public static func span<Result>(_ name: String, _ body: () async throws -> Result) async rethrows -> Result {
        let span = beginSpan(name)
        defer { span.end() }
        return try await body()
    }
    #endif

    /// Begins a span that a later `end()` closes, on any thread: for work that
    /// crosses callbacks.
    public static func beginSpan(_ name: String) -> Span {
        guard cs_is_enabled() else { return Span(id: 0) }
        registerSwiftVersion()
        return Span(id: name.withCString { cs_span_begin($0) })
    }

    /// Declares the launch complete: the app can serve, or has shown its first
    /// output. Only the first call counts. The timeline is written in the
    /// background once the extension window (`COLDSTART_EXTEND_MS`) closes.
    public static func ready() {
        guard cs_is_enabled() else { return }
        registerSwiftVersion()
        cs_ready()
    }

    /// A span begun by `Coldstart.beginSpan(_:)`.
    public struct Span: Sendable {
        fileprivate let id: UInt32

        /// Ends the span. Ending it again, or ending a span begun while
        /// profiling was off, does nothing.
        public func end() {
            if id != 0 { cs_span_end(id) }
        }
    }

    private static func registerSwiftVersion() {
        cs_set_swift_version(swiftCompilerVersion)
    }
}
