// The `coldstart` command line: reads timelines, never touches a live process
// except to spawn the one it is asked to run.
import Foundation

/// The commands, in the order `coldstart --help` lists them.
let commands: [any Command.Type] = [
    ReportCommand.self,
    RunCommand.self,
    KeepWarmCommand.self,
    CompareCommand.self,
    InspectCommand.self,
    SymbolizeCommand.self,
    ExportCommand.self,
    CompletionCommand.self,
    ManCommand.self,
    AggregateCommand.self,
    PushCommand.self,
]

StandardOutput.holdClosedDescriptors()
exit(CommandLineTool(commands: commands).run(Array(CommandLine.arguments.dropFirst())))
