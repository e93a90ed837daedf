import Foundation
import Testing
import TestSupport

extension VirtualBoardTests {
/// The service's metrics as a kiosk owner collects them: Debian's
/// prometheus-node-exporter serves the file the service writes, Debian's
/// prometheus scrapes it, and PromQL through its HTTP API reads them back.
@Suite struct MetricsBoardTests {
    /// The alert rules in docs/metrics.md, as an owner would load them into Prometheus,
    /// checked by Debian's promtool on the board: they load, and the stale
    /// rule fires for a kiosk whose metrics file stopped changing a minute
    /// in (killed: node_exporter still serves its last file) and not for one
    /// whose file is rewritten all along; the picture rule fires for a lens
    /// covered ten minutes and not for one covered two.
    @Test func theDocumentedAlertRulesFireWhenTheMetricsFileGoesStale() throws {
        let readme = try String(contentsOfFile: packageRoot + "/docs/metrics.md", encoding: .utf8)
        let after = try #require(readme.range(of: "A sample alert rule"))
        let rest = readme[after.upperBound...]
        let start = try #require(rest.range(of: "```yaml\n"))
        let end = try #require(rest[start.upperBound...].range(of: "```"))
        let rules = String(rest[start.upperBound..<end.lowerBound])
        #expect(rules.contains("alert: ObscuraMetricsStale"))
        #expect(rules.contains("alert: ObscuraPictureUseless") && rules.contains("alert: ObscuraSoundUseless") && rules.contains("alert: ObscuraUnderPressure"))
        let folder = packageRoot + "/.build/promtool-test"
        try? FileManager.default.removeItem(atPath: folder)
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try rules.write(toFile: folder + "/rules.yml", atomically: true, encoding: .utf8)
        let file = "/var/lib/prometheus/node-exporter/obscura.prom"
        let summary = "the recorder has not written its metrics for over a minute (stopped, killed or hung)"
        try """
            rule_files: [rules.yml]
            evaluation_interval: 15s
            tests:
              - interval: 15s
                input_series:
                  # Written every 15 s for a minute, then never again (killed).
                  - series: 'node_textfile_mtime_seconds{file="\(file)",instance="kiosk-1"}'
                    values: '0+15x4 60x40'
                  # Written every 15 s all along.
                  - series: 'node_textfile_mtime_seconds{file="\(file)",instance="kiosk-2"}'
                    values: '0+15x44'
                  # A lens covered for eleven minutes, and one covered for two.
                  - series: 'obscura_picture_condition{condition="no_detail",instance="kiosk-3"}'
                    values: '1x44'
                  - series: 'obscura_picture_condition{condition="no_detail",instance="kiosk-4"}'
                    values: '1x8 0x36'
                  # A microphone silent for eleven minutes, one clipping for a minute.
                  - series: 'obscura_sound_condition{condition="silent",instance="kiosk-5"}'
                    values: '1x44'
                  - series: 'obscura_sound_condition{condition="clipping",instance="kiosk-6"}'
                    values: '0x20 1x4 0x20'
                  # A board serious for twenty minutes, one fair all along.
                  - series: 'obscura_system_pressure{level="serious",instance="kiosk-7"}'
                    values: '0x4 1x80'
                  - series: 'obscura_system_pressure{level="fair",instance="kiosk-8"}'
                    values: '1x84'
                alert_rule_test:
                  - eval_time: 5m
                    alertname: ObscuraPictureUseless
                    exp_alerts: []
                  - eval_time: 11m
                    alertname: ObscuraPictureUseless
                    exp_alerts:
                      - exp_labels: {condition: no_detail, instance: kiosk-3}
                        exp_annotations: {summary: "kiosk-3: the picture has been no_detail for ten minutes (covered, tampered with, dark or frozen): the recordings show nothing"}
                  - eval_time: 11m
                    alertname: ObscuraSoundUseless
                    exp_alerts:
                      - exp_labels: {condition: silent, instance: kiosk-5}
                        exp_annotations: {summary: "kiosk-5: the microphone has been silent for ten minutes: the recordings' sound is lost or distorted"}
                  - eval_time: 21m
                    alertname: ObscuraUnderPressure
                    exp_alerts:
                      - exp_labels: {level: serious, instance: kiosk-7}
                        exp_annotations: {summary: "kiosk-7: system pressure serious for a quarter of an hour (heat or a weak supply): the recordings are stepped down"}
                  - eval_time: 1m
                    alertname: ObscuraMetricsStale
                    exp_alerts: []
                  - eval_time: 2m
                    alertname: ObscuraMetricsStale
                    exp_alerts: []
                  - eval_time: 5m
                    alertname: ObscuraMetricsStale
                    exp_alerts:
                      - exp_labels: {file: "\(file)", instance: kiosk-1}
                        exp_annotations: {summary: "kiosk-1: \(summary)"}
            """.write(toFile: folder + "/test.yml", atomically: true, encoding: .utf8)
        let result = try VirtualBoard.run(scenario: "Metrics/theDocumentedAlertRulesFireWhenTheMetricsFileGoesStale", [folder])
        let lines = result.stdout.split(separator: "\n").map(String.init)
        #expect(lines.contains("check-rc=0"), "\(result.stdout)\(result.stderr)")
        #expect(lines.contains("test-rc=0"), "\(result.stdout)")
    }


    @Test func prometheusScrapesTheRecordingsFrameRateAndFramesThroughNodeExporter() throws {
        let result = try KioskBoard.board.result(of: "metrics-prometheus")
        let out = result.stdout
        let lines = out.split(separator: "\n").map(String.init)
        func value(_ prefix: String) -> String? { lines.first { $0.hasPrefix(prefix) }.map { String($0.dropFirst(prefix.count)) } }
        #expect(lines.contains("active=active"), "\(out)\(result.stderr)")
        #expect(lines.contains("link=/run/obscura-metrics/obscura.prom"), "\(out)")
        #expect(lines.contains("folder=755:obscura"))
        #expect(lines.contains("file-mode=644"))
        // node_exporter parsed the file (a malformed one sets this to 1).
        #expect(lines.contains("exporter: node_textfile_scrape_error 0"), "\(out)")
        #expect(lines.contains("exporter: obscura_state{state=\"recording\"} 1"), "\(out)")

        // PromQL through Prometheus' HTTP API: one sample each, from the node job.
        func sample(_ key: String) -> Double? {
            guard let json = value(key), let object = try? JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any],
                  object["status"] as? String == "success",
                  let data = object["data"] as? [String: Any], let result = data["result"] as? [[String: Any]],
                  let first = result.first, (first["metric"] as? [String: Any])?["job"] as? String == "node",
                  let pair = first["value"] as? [Any], let text = pair.last as? String else { return nil }
            return Double(text)
        }
        let frames = sample("promql-frames=")
        let fps = sample("promql-fps=")
        #expect((frames ?? 0) > 0, "obscura_frames_total through Prometheus: \(value("promql-frames=") ?? "none")\n\(out)")
        // The rate of the frames going into the file over the last report
        // window (from the frame of one report to the first frame half a
        // second after it, or as long as the next frame took): what the
        // file's own frame times give over a window of that kind in this
        // run, from each frame to the first one at least 0.4 s later,
        // between the slowest and the fastest of them (the pace follows the
        // machine's load, and a starved recorder drops frames; a board
        // starved to a frame every few seconds has windows that long).
        let pts = (value("file-pts=") ?? "").split(separator: " ").compactMap { Double($0) }.sorted()
        try #require(pts.count >= 3, "the recording's frame times: \(value("file-pts=") ?? "none")\n\(out)")
        var windows: [Double] = []
        for i in pts.indices {
            if let j = ((i + 1)..<pts.count).first(where: { pts[$0] - pts[i] >= 0.4 }) {
                windows.append(Double(j - i) / (pts[j] - pts[i]))
            }
        }
        let average = Double(pts.count - 1) / (pts[pts.count - 1] - pts[0])
        let slowest = windows.min() ?? average, fastest = windows.max() ?? average
        #expect((fps ?? 0) >= slowest * 0.8 && (fps ?? 0) <= fastest * 1.25,
                "obscura_recording_frames_per_second: \(value("promql-fps=") ?? "none"); the file's windows gave \(slowest) to \(fastest) fps (average \(average))")
        #expect(sample("promql-latency=") != nil, "obscura_encoder_latency_seconds: \(value("promql-latency=") ?? "none")")

        // `obscura status --json` carries the same figures.
        let status = value("status-json=").flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] } ?? [:]
        #expect((status["framesTotal"] as? Int ?? 0) >= Int(frames ?? 1), "\(status)")
        let storages = status["storages"] as? [[String: Any]] ?? []
        #expect(storages.first?["path"] as? String == "/var/lib/obscura/recordings", "\(status)")
        #expect((storages.first?["freeBytes"] as? Int ?? 0) > 0)
        #expect(out.contains("journal: obscura: metrics every 5 s in /run/obscura-metrics/obscura.prom"), "\(out)")
    }
}
}
