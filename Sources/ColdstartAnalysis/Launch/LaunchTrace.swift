import Foundation

/// The launch as timed intervals on the clock's nanoseconds, with the facts
/// of its process: what a trace format (OTLP) renders. It needs neither the
/// samples nor their names, so `coldstart push` reads any number of launches
/// without reading a module.
package struct LaunchTrace: Sendable {
    package var process: Timeline.Process
    /// The executable's file name, and its GNU build-id when the module
    /// table has it.
    package var executableName: String
    package var executableBuildId: String?
    /// `coldstart.labels`: what the launch was tagged with.
    package var labels: [String: String]
    package var launch: Timeline.Launch
    /// Each thread's name, the first the timeline gives it.
    package var threadNames: [Int: String]
    /// In the timeline's order.
    package var phases: [Timeline.Phase]
    package var marks: [Timeline.Mark]
    package var spans: [Timeline.Span]

    package init(_ timeline: Timeline) {
        process = timeline.process
        executableName = timeline.executableName
        executableBuildId = timeline.executableBuildId
        labels = timeline.labels
        launch = timeline.launch
        threadNames = Dictionary(timeline.threads.map { ($0.tid, $0.name) }, uniquingKeysWith: { first, _ in first })
        phases = timeline.phases
        marks = timeline.marks
        spans = timeline.spans
    }
}
