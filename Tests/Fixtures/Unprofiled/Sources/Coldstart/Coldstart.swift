/// The Coldstart API with nothing behind it: what the example compiles
/// against when it is built without the profiler.
public enum Coldstart {
    @inline(__always)
    public static func mark(_ name: String, isPhaseBoundary: Bool = false) {}

    @inline(__always)
    public static func span<Result>(_ name: String, _ body: () throws -> Result) rethrows -> Result { try body() }

    @inline(__always)
    public static func ready() {}
}
