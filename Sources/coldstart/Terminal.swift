import ColdstartAnalysis
import ColdstartText
import Foundation

/// What standard output is: its width and whether it takes colour.
enum Terminal {
    /// Width: `COLUMNS` when set, else the terminal's (TIOCGWINSZ), else none
    /// (a pipe or a file keeps whole names). Colour only on a terminal, never
    /// with `NO_COLOR` set (no-color.org) or `TERM=dumb`.
    static func style(environment: [String: String] = ProcessInfo.processInfo.environment) -> TextStyle {
        let isTerminal = isatty(STDOUT_FILENO) == 1
        var width = environment["COLUMNS"].flatMap { Int($0) }.flatMap { $0 > 0 ? $0 : nil }
        if width == nil, isTerminal {
            var size = winsize()
            if ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 { width = Int(size.ws_col) }
        }
        let noColor = !(environment["NO_COLOR"] ?? "").isEmpty || environment["TERM"] == "dumb"
        return TextStyle(width: width, color: isTerminal && !noColor)
    }
}
