/// The Swift compiler that built this package, as "major.minor", decided at
/// compile time: the host library writes it into every timeline and the CLI
/// prints it in `--version`. Its own module so that both can use it while
/// the CLI links nothing of the host library.
package let swiftCompilerVersion: String = {
    #if compiler(>=6.5)
    return "6.5 or later"
    #elseif compiler(>=6.4)
    return "6.4"
    #elseif compiler(>=6.3)
    return "6.3"
    #elseif compiler(>=6.2)
    return "6.2"
    #elseif compiler(>=6.1)
    return "6.1"
    #elseif compiler(>=6.0)
    return "6.0"
    #else
    return "5.x"
    #endif
}()
