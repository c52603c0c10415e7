@testable import ColdstartAnalysis
@testable import ColdstartExport
@testable import ColdstartText
import Foundation
import XCTest

/// `coldstart report --html`: one self-contained page a browser shows
/// without errors, with the report's phases and functions on it.
final class HTMLReportTests: XCTestCase {

    /// The page for the known profile, through the CLI.
    private func knownPage(in directory: URL) throws -> (path: String, html: String) {
        let output = directory.appendingPathComponent("report.html").path
        let result = try coldstart(["report", try KnownProfile.timelinePath(), "--html", output])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertTrue(result.stdout.hasPrefix("\(output): HTML report, "), result.stdout)
        return (output, try String(contentsOfFile: output, encoding: .utf8))
    }

    /// A launch whose names try to break out of the page or point elsewhere.
    private func hostileTimeline() throws -> Timeline {
        var builder = SampledTimelineBuilder()
        let app = builder.module("/opt//app/App")
        let main = SampledTimelineBuilder.Frame(module: app, name: "main")
        let evil = SampledTimelineBuilder.Frame(module: app, name: "</script><script src=\"http://example.invalid/x.js\"></script>")
        let slashes = SampledTimelineBuilder.Frame(module: app, name: "fetch(url: \"https://cdn.invalid//lib\") <T> & 'quotes'")
        for index in 0..<5 { builder.sample(at: 21 + Double(index), [main, evil]) }
        for index in 0..<3 { builder.sample(at: 30 + Double(index), [main, slashes]) }
        builder.phases[2].0 = "main → <b>config</b> //loaded"
        builder.phases[3].0 = "<b>config</b> //loaded → ready"
        return try builder.timeline()
    }

    /// Everything a page could fetch: script, style, font, image, frame, link.
    private func assertSelfContained(_ html: String, file: StaticString = #filePath, line: UInt = #line) {
        for needle in ["http", "//", "src=", "url(", "@import", "<link", "<iframe", "<img", "<object", "<embed"] {
            XCTAssertFalse(html.lowercased().contains(needle), "the page contains \(needle)", file: file, line: line)
        }
        let hrefs = html.components(separatedBy: "href=\"").dropFirst().map { $0.prefix { $0 != "\"" } }
        XCTAssertFalse(hrefs.isEmpty, file: file, line: line)
        for href in hrefs { XCTAssertTrue(href.hasPrefix("#"), "href=\"\(href)\" stays on the page", file: file, line: line) }
        XCTAssertEqual(html.components(separatedBy: "<script").count - 1, 2, "the data block and the page's own script", file: file, line: line)
    }

    func testPageIsSelfContainedEvenWithHostileNames() throws {
        let directory = try makeTemporaryDirectory(for: self)
        assertSelfContained(try knownPage(in: directory).html)

        let timeline = try hostileTimeline()
        let html = HTMLReport.render(try LaunchAnalysis(timeline: timeline, path: "hostile.json"), source: "hostile.json")
        assertSelfContained(html)
        XCTAssertTrue(html.contains("&lt;b&gt;config&lt;/b&gt; /&#47;loaded"), "names are text, never markup")
        // In the embedded data the name survives exactly, once parsed.
        let data = try XCTUnwrap(html.components(separatedBy: "id=\"coldstart-data\">").last?.components(separatedBy: "</script>").first)
        let json = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(data.utf8)) as? [String: Any])
        let names = (json["functions"] as? [[Any]] ?? []).compactMap { $0.first as? String }
        XCTAssertTrue(names.contains("</script><script src=\"http://example.invalid/x.js\"></script>"), "\(names)")
    }

    func testStaticPartsCarryTheReportsFigures() throws {
        let directory = try makeTemporaryDirectory(for: self)
        let html = try knownPage(in: directory).html
        let report = try JSONSerialization.jsonObject(
            with: Data(try coldstart(["report", try KnownProfile.timelinePath(), "--json"]).stdout.utf8)) as? [String: Any]
        let phases = report?["phases"] as? [[String: Any]] ?? []
        // Shares as printed: rounded so that they add up as the phases do.
        let raw = phases.map { $0["sharePercent"] as! Double }
        let shares = LaunchReport.roundedParts(raw, total: raw.reduce(0, +), decimals: 1)
        for (phase, share) in zip(phases, shares) {
            let name = try XCTUnwrap(phase["name"] as? String)
            let duration = String(format: "%.2f ms · %.1f%%", phase["durationMs"] as! Double, share)
            XCTAssertTrue(html.contains(HTMLTable.escape(name)), "phase \(name) is on the page")
            XCTAssertTrue(html.contains(duration), "its bar says \(duration)")
        }
        for leaf in KnownProfile.leaves {
            XCTAssertTrue(html.contains("data-v=\"\(leaf.samples).0\">\(leaf.samples)</td>"), "\(leaf.name): \(leaf.samples) self samples in a table")
        }
        XCTAssertTrue(html.contains("<svg class=\"waterfall\""), "the waterfall is drawn on the server")
        XCTAssertTrue(html.contains("<table class=\"sortable\">"))
    }

    func testChromiumLoadsThePageWithoutErrorsAndShowsPhasesAndTopFunction() throws {
        let chromium = try ExternalTool.path(ExternalTool.chromium)
        let directory = try makeTemporaryDirectory(for: self)
        let (path, _) = try knownPage(in: directory)
        let url = URL(fileURLWithPath: path).absoluteString
        let flags = ["--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr", "--v=0", "--window-size=1280,800",
                     "--user-data-dir=\(directory.appendingPathComponent("profile").path)"]
        let screenshot = directory.appendingPathComponent("report.png").path
        let shot = try runProcess(chromium, flags + ["--screenshot=\(screenshot)", url], timeout: 120)
        let dump = try runProcess(chromium, flags + ["--dump-dom", url], timeout: 120)
        for run in [shot, dump] {
            let console = run.stderr.split(separator: "\n").filter { $0.contains(":CONSOLE") || $0.contains("Uncaught") }
            XCTAssertEqual(console, [], "the page logs nothing and throws nothing")
        }
        let png = try Data(contentsOf: URL(fileURLWithPath: screenshot))
        XCTAssertEqual(Array(png.prefix(4)), [0x89, 0x50, 0x4E, 0x47], "a PNG screenshot")
        XCTAssertGreaterThan(png.count, 20_000, "the screenshot shows a page, not a blank")
        // For a person to look at: COLDSTART_KEEP_SCREENSHOT=/tmp/report.png keeps it and the page beside it.
        if let keep = ProcessInfo.processInfo.environment["COLDSTART_KEEP_SCREENSHOT"] {
            for (from, to) in [(screenshot, keep), (path, keep + ".html")] {
                try? FileManager.default.removeItem(atPath: to)
                try FileManager.default.copyItem(atPath: from, toPath: to)
            }
        }

        let dom = dump.stdout
        let timeline = try Timeline(contentsOf: try KnownProfile.timelinePath())
        for phase in timeline.phases {
            XCTAssertTrue(dom.contains(HTMLTable.escape(phase.name).replacingOccurrences(of: "&#39;", with: "'")), "phase '\(phase.name)' in the DOM")
        }
        let report = try profileReport(timeline)
        let top = try XCTUnwrap(report.overall.bySelf.first)
        XCTAssertTrue(top.name.contains(KnownProfile.leaves[0].name))
        let domName = top.name.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;")
        XCTAssertTrue(dom.contains(domName), "the top function \(top.name) in the DOM")
        // The script ran to the end: it fills in the views' ranges.
        XCTAssertTrue(dom.contains("showing 0.00 → "), "the flame chart was drawn")
        XCTAssertTrue(dom.contains("all \(report.selection.samples) samples"), "the flame graph was drawn")
    }

    func testWaterfallLabelsNearTheLaunchsEndStayInsideTheSVGAsChromiumLaysThemOut() throws {
        let chromium = try ExternalTool.path(ExternalTool.chromium)
        var builder = SampledTimelineBuilder()
        let app = builder.module("/opt/app/App")
        for index in 0..<20 { builder.sample(at: 20 + Double(index) * 4, [.init(module: app, name: "main")]) }
        var document = builder.document
        var section = try XCTUnwrap(document["coldstart"] as? [String: Any])
        let late = "configuration loaded from disk", last = "caches warmed up"
        section["marks"] = [
            ["name": late, "ns": 98_000_000, "tid": builder.pid, "phaseBoundary": false, "extended": false],
            ["name": last, "ns": 99_900_000, "tid": builder.pid, "phaseBoundary": false, "extended": false],
        ]
        section["spans"] = [["name": "warm caches", "beginNs": 99_000_000, "endNs": 99_950_000, "tid": builder.pid,
                             "endTid": builder.pid, "unfinished": false]]
        document["coldstart"] = section
        let timeline = try Timeline(data: try JSONSerialization.data(withJSONObject: document))
        let html = HTMLReport.render(try LaunchAnalysis(timeline: timeline, path: "late.json"), source: "late.json")
        // The page plus a probe that writes where Chromium put each of the
        // waterfall's texts, in the SVG's own units.
        let probe = """
            <script>
            var svg = document.querySelector("svg.waterfall"), rows = [svg.viewBox.baseVal.width];
            svg.querySelectorAll("text").forEach(function (t) { var b = t.getBBox(); rows.push(b.x + "|" + (b.x + b.width) + "|" + t.textContent); });
            var pre = document.createElement("pre"); pre.id = "measured"; pre.textContent = rows.join("\\n"); document.body.appendChild(pre);
            </script>
            """
        let directory = try makeTemporaryDirectory(for: self)
        let path = directory.appendingPathComponent("late.html")
        try html.replacingOccurrences(of: "</body>", with: probe + "</body>").write(to: path, atomically: true, encoding: .utf8)
        let dump = try runProcess(chromium, ["--headless", "--no-sandbox", "--disable-gpu", "--window-size=1280,800",
                                             "--user-data-dir=\(directory.appendingPathComponent("profile").path)",
                                             "--dump-dom", path.absoluteString], timeout: 120)
        let measured = try XCTUnwrap(dump.stdout.components(separatedBy: "<pre id=\"measured\">").last?.components(separatedBy: "</pre>").first,
                                     dump.stderr)
        let lines = measured.components(separatedBy: "\n")
        let width = try XCTUnwrap(Double(lines[0]))
        var seen: [String] = []
        for line in lines.dropFirst() {
            let fields = line.split(separator: "|", maxSplits: 2).map(String.init)
            guard fields.count == 3, let from = Double(fields[0]), let to = Double(fields[1]) else { continue }
            seen.append(fields[2])
            XCTAssertGreaterThanOrEqual(from, 0, "'\(fields[2])' starts inside the SVG")
            XCTAssertLessThanOrEqual(to, width, "'\(fields[2])' ends inside the SVG (\(to) of \(width))")
        }
        for label in [late, last, "0.95 ms"] { XCTAssertTrue(seen.contains(label), "\(label) was measured: \(seen)") }
    }

    func testFlameLabelsFitTheirSlicesAndFallBackToTheBareFunctionName() throws {
        let chromium = try ExternalTool.path(ExternalTool.chromium)
        var builder = SampledTimelineBuilder()
        let app = builder.module("/opt/app/App")
        let main = SampledTimelineBuilder.Frame(module: app, name: "main")
        let long = "StartupConfigurationModule.ConfigurationStore.loadEverythingFromDisk(path: Swift.String, validating: Swift.Bool) -> ()"
        let short = SampledTimelineBuilder.Frame(module: app, name: "ShortName.x")
        for index in 0..<15 { builder.sample(at: 20 + Double(index), [main, .init(module: app, name: long)]) }
        for index in 0..<60 { builder.sample(at: 36 + Double(index) * 0.1, [main, short]) }
        let html = HTMLReport.render(try LaunchAnalysis(timeline: try builder.timeline(), path: "f.json"), source: "f.json")
        // Before the page's script: record every text drawn on a canvas.
        let probe = """
            <script>
            var drawn = [], fill = CanvasRenderingContext2D.prototype.fillText;
            CanvasRenderingContext2D.prototype.fillText = function (text, x, y) {
              drawn.push([this.canvas.parentNode.id || this.canvas.closest("section").id, text, x, x + this.measureText(text).width, this.canvas.clientWidth].join("|"));
              return fill.apply(this, arguments);
            };
            window.addEventListener("load", function () {
              var pre = document.createElement("pre"); pre.id = "drawn"; pre.textContent = drawn.join("\\n"); document.body.appendChild(pre);
            });
            </script>
            """
        let directory = try makeTemporaryDirectory(for: self)
        let path = directory.appendingPathComponent("flame.html")
        try html.replacingOccurrences(of: "<meta charset=\"utf-8\">", with: "<meta charset=\"utf-8\">" + probe)
            .write(to: path, atomically: true, encoding: .utf8)
        let dump = try runProcess(chromium, ["--headless", "--no-sandbox", "--disable-gpu", "--window-size=1280,800",
                                             "--user-data-dir=\(directory.appendingPathComponent("profile").path)",
                                             "--dump-dom", path.absoluteString], timeout: 120)
        let drawn = try XCTUnwrap(dump.stdout.components(separatedBy: "<pre id=\"drawn\">").last?.components(separatedBy: "</pre>").first,
                                  dump.stderr)
        var labels: [String] = []
        for line in drawn.components(separatedBy: "\n") {
            let fields = line.components(separatedBy: "|")
            guard fields.count == 5, let x0 = Double(fields[2]), let x1 = Double(fields[3]), let width = Double(fields[4]) else { continue }
            labels.append(fields[1])
            XCTAssertGreaterThanOrEqual(fields[1].count, 4, "'\(fields[1])': no label of fewer than four characters")
            XCTAssertLessThanOrEqual(x1, width + 0.5, "'\(fields[1])' ends inside its canvas")
            XCTAssertGreaterThanOrEqual(x0, 0)
        }
        // 15 ms of a 100 ms launch is ~180 px: too narrow for the whole
        // name, wide enough for the function's own.
        XCTAssertTrue(labels.contains("loadEverythingFromDisk"), "\(labels)")
        XCTAssertTrue(labels.contains("ShortName.x"), "\(labels)")
    }

    func testHTMLFollowsThePhaseAndThreadSelection() throws {
        let directory = try makeTemporaryDirectory(for: self)
        let path = try KnownProfile.timelinePath()
        let output = directory.appendingPathComponent("worker.html").path
        let result = try coldstart(["report", path, "--thread", "worker", "--html", output])
        XCTAssertEqual(result.status, 0, result.stderr)
        let html = try String(contentsOfFile: output, encoding: .utf8)
        XCTAssertTrue(html.contains("Sampled sections show thread \(getpid() + 1) only: \(KnownProfile.workerSamples) samples"), "the selection is stated")
        XCTAssertTrue(html.contains("Flame chart of worker (tid \(getpid() + 1))"), "the chart shows the selected thread")
        XCTAssertFalse(html.contains(KnownProfile.leaves[0].name), "no main-thread function")
    }

    /// The mode line printed "under `coldstart run`" with its backticks on the page.
    func testTheReportsOwnBackticksAreCodeOnThePage() {
        XCTAssertEqual(HTMLPage.prose("not linked with Coldstart, under `coldstart run`: sampled <from> exec"),
                       "not linked with Coldstart, under <code>coldstart run</code>: sampled &lt;from&gt; exec")
        XCTAssertEqual(HTMLPage.prose("no code"), "no code")
    }


    /// The function cells of each table of a page, as the page shows them
    /// (the tooltip, `title`, keeps the whole name).
    static func functionCells(_ html: String) -> [[(shown: String, whole: String)]] {
        func unescaped(_ text: Substring) -> String {
            var text = String(text)
            for (entity, character) in [("&lt;", "<"), ("&gt;", ">"), ("&quot;", "\""), ("&#39;", "'"), ("&#47;", "/"), ("&amp;", "&")] {
                text = text.replacingOccurrences(of: entity, with: character)
            }
            return text
        }
        return html.components(separatedBy: "<table").dropFirst().map { table in
            // A name cell with its whole name as tooltip (`fn`; `name` before the page clipped them itself).
            table.components(separatedBy: "<td class=\"").dropFirst().filter { $0.hasPrefix("fn\" title=\"") || $0.hasPrefix("name\" title=\"") }
                .map { $0.drop { $0 != "\"" }.dropFirst(#"" title=""#.count) }.compactMap { cell in
                guard let quote = cell.firstIndex(of: "\""), let end = cell.range(of: "</td>") else { return nil }
                let text = cell[cell.index(quote, offsetBy: 2)..<end.lowerBound]
                return (unescaped(text), unescaped(cell[..<quote]))
            }
        }.filter { !$0.isEmpty }
    }

    /// The page named functions by their raw names where the text report
    /// reads them (`LaunchReport.functionName`): libswiftCore's
    /// conformance-scan lambda was `swift_conformsToProtocol…(…)::$_2::…::{lambda(…)#1}::operator()(…) const`,
    /// clipped by the browser to the same text as the function it is in.
    func testFunctionsAreNamedAsTheTextReportNamesThem() throws {
        var builder = SampledTimelineBuilder()
        let app = builder.module("/opt/app/App")
        let core = builder.module("/usr/lib/swift/linux/libswiftCore.so")
        let main = SampledTimelineBuilder.Frame(module: app, name: "App_main")
        let run = SampledTimelineBuilder.Frame(module: app, name: "App.run() -> ()")
        let function = "swift_conformsToProtocolMaybeInstantiateSuperclasses(swift::TargetMetadata<swift::InProcess> const*, "
            + "swift::TargetProtocolDescriptor<swift::InProcess> const*, bool)"
        let lambda = function + "::$_2::operator()((anonymous namespace)::ConformanceSection const&) const::"
            + "{lambda(swift::TargetProtocolConformanceDescriptor<swift::InProcess> const&)#1}::operator()("
            + "swift::TargetProtocolConformanceDescriptor<swift::InProcess> const&) const"
        let human = "conformance scan: lambda #1 in $_2 in swift_conformsToProtocolMaybeInstantiateSuperclasses"
        for index in 0..<30 {
            builder.sample(at: 20 + Double(index) * 0.5, [main, run, .init(module: core, name: function), .init(module: core, name: lambda)])
        }
        for index in 0..<20 { builder.sample(at: 40 + Double(index) * 0.5, [main, run, .init(module: core, name: function)]) }
        let analysis = try LaunchAnalysis(timeline: try builder.timeline(), path: "f.json")
        let html = HTMLReport.render(analysis, source: "f.json")

        let tables = Self.functionCells(html)
        XCTAssertFalse(tables.isEmpty)
        for cells in tables {
            XCTAssertEqual(Set(cells.map(\.shown)).count, cells.count, "rows that read the same: \(cells.map(\.shown))")
            for cell in cells {
                XCTAssertFalse(cell.shown.contains("{lambda(") || cell.shown.contains("operator()"), cell.shown)
                XCTAssertEqual(cell.shown, Table.clip(LaunchReport.functionName(cell.whole), to: HTMLTable.nameWidth))
            }
        }
        let functions = try XCTUnwrap(tables.first)
        let lambdaCell = try XCTUnwrap(functions.first { $0.whole == lambda }, "the lambda in the first table: \(functions.map(\.whole))")
        XCTAssertTrue(human.hasPrefix(lambdaCell.shown.replacingOccurrences(of: "…", with: "")), lambdaCell.shown)
        XCTAssertTrue(lambdaCell.shown.hasPrefix("conformance scan: lambda #1 in $_2"), lambdaCell.shown)
        XCTAssertTrue(analysis.report.text(full: true).contains("conformance scan: lambda #1 in"), "the text names it so too")

        // The flame chart and graph draw, search and show the same name.
        let data = try XCTUnwrap(html.components(separatedBy: "id=\"coldstart-data\">").last?.components(separatedBy: "</script>").first)
        let json = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(data.utf8)) as? [String: Any])
        let names = (json["functions"] as? [[Any]] ?? []).compactMap { $0.first as? String }
        XCTAssertTrue(names.contains(human), "\(names)")
        XCTAssertFalse(names.contains { $0.contains("{lambda(") }, "\(names)")
    }

    /// A finding's figure read "12.2 ms" in the text and "12.20 ms" on the page.
    func testFindingsPrintTheSameFiguresAsTheText() throws {
        let analysis = try LaunchAnalysis(timeline: try Timeline(contentsOf: try KnownProfile.timelinePath()))
        let findings = try XCTUnwrap(analysis.report.findings)
        XCTAssertFalse(findings.isEmpty)
        let text = analysis.report.text(full: false)
        let page = HTMLReport.render(analysis, source: "known.json")
        for finding in findings {
            let figure = String(format: "%.1f ms", finding.ms)
            XCTAssertTrue(text.contains(figure + " "), figure)
            XCTAssertTrue(page.contains("</b> — \(figure), "), "\(finding.title): \(figure) on the page")
        }
    }

}
