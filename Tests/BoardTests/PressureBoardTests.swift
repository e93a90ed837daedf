import Foundation
import Testing
import TestSupport

extension VirtualBoardTests {
/// The service under system pressure on the virtual board: its profile is
/// the virtual board's with a [pressure] table naming a thermal zone and a
/// get_throttled file this test writes (the service reads them as it reads
/// sysfs; the board has neither). Heat makes the level fair: the recording
/// keeps to 20 of vimc's 30 fps (vimc has no frame-rate control, so frames
/// are left out evenly); under-voltage while throttled makes it critical:
/// the preview is paused and a recording started then is made at half the
/// configured bit rate. Cooled, the level comes back down a step at a time.
/// Each step is in the status, the metrics and the recordings' marks, read
/// back by ffmpeg; the recordings play throughout. The recorder's backlog is
/// left out as a source (`backlog = false`): the emulated board's own
/// slowness would make the level fair by itself. Where the recorder's pace
/// stepped the rate lower than the pressure's cap (it fell behind), the
/// lower rate is the one kept to.
@Suite struct PressureBoardTests {
    static let settle = 2.0

    @Test func theRecordingStepsDownUnderHeatAndUnderVoltageAndBackUp() throws {
        let result = try VirtualBoard.run(scenario: "Pressure/theRecordingStepsDownUnderHeatAndUnderVoltageAndBackUp", ["\(Self.settle)"], timeout: 600)
        let out = result.stdout
        let lines = out.split(separator: "\n").map(String.init)
        func value(_ prefix: String) -> String? { lines.first { $0.hasPrefix(prefix) }.map { String($0.dropFirst(prefix.count)) } }
        #expect(!out.contains("gave up after"), "\(out)\(result.stderr)")
        // "cameraFrameRate":R "pressureReason":"…" "rateStepsDown":N: the
        // pressure's cap, or lower where the recorder's own pace stepped down.
        func rate(_ prefix: String) -> (rate: Double, reason: String, paced: Bool)? {
            guard let v = value(prefix) else { return nil }
            let words = v.split(separator: " ", maxSplits: 1).map(String.init)
            let r = words.first.flatMap { Double($0.dropFirst("\"cameraFrameRate\":".count)) } ?? -1
            let paced = !v.contains("\"rateStepsDown\":0") && v.contains("\"rateStepsDown\":")
            return (r, words.count > 1 ? words[1] : "", paced)
        }
        let fair = try #require(rate("fair: "), "\(out)")
        #expect(fair.paced ? fair.rate <= 20 : fair.rate == 20, "\(out)")
        #expect(fair.reason.hasPrefix("\"pressureReason\":\"temperature 72.0 °C\""), "\(out)")
        #expect(value("metrics-fair=")?.contains("obscura_system_pressure{level=\"fair\"} 1") == true, "\(out)")
        let critical = try #require(rate("critical: "), "\(out)")
        #expect(critical.paced ? critical.rate <= 15 : critical.rate == 15, "\(out)")
        #expect(critical.reason.hasPrefix("\"pressureReason\":\"under-voltage and throttled\""), "\(out)")
        #expect(value("status-critical: pressure: ")?.hasPrefix("critical (under-voltage and throttled)") == true, "\(out)")
        #expect(value("status-critical: preview: ")?.hasPrefix("paused under system pressure (critical): showing on") == true, "\(out)")
        #expect(value("second: ") == "\"bitRate\":1000000", "\(out)")
        // Back to the configured 30 fps, unless the recorder's own pace holds
        // it lower: once the pace has stepped down it follows the frames the
        // board manages, and its steps are not of one size (down to what is
        // delivered, up a little at a time), so their counts do not say where
        // it is; the pressure's cap is gone all the same.
        let nominal = value("nominal: ") ?? ""
        func count(_ name: String) -> Int {   // a count the status leaves out is 0
            guard let r = nominal.range(of: "\"\(name)\":[0-9]+", options: .regularExpression) else { return 0 }
            return Int(nominal[r].split(separator: ":").last ?? "") ?? 0
        }
        let paceHolds = count("rateStepsDown") > 0
        #expect(paceHolds || nominal.hasPrefix("\"cameraFrameRate\":30 "), "\(out)")
        #expect(value("steps: ")?.contains("\"down\":3") == true && value("steps: ")?.contains("\"up\":2") == true, "\(out)")
        #expect(value("status-nominal: preview: ")?.hasPrefix("showing on") == true, "\(out)")
        // The recordings' marks, one file each side of the stop.
        var files: [(times: [Double], marks: [String])] = []
        for line in lines {
            if line.hasPrefix("file ") { files.append(([], [])) }
            if line.hasPrefix("frame-times="), !files.isEmpty {
                files[files.count - 1].times = line.dropFirst(12).split(separator: " ").compactMap { Double($0) }.sorted()
            }
            if line.hasPrefix("srt: system pressure "), !files.isEmpty {
                files[files.count - 1].marks.append(String(line.dropFirst(5)))
            }
        }
        try #require(files.count == 2, "\(out)")
        let names = files.map { $0.marks.map { $0.components(separatedBy: " (").first ?? "" } }
        #expect(names[0] == ["system pressure fair", "system pressure critical"], "\(files[0].marks)")
        #expect(names[1] == ["system pressure serious", "system pressure fair", "system pressure nominal"], "\(files[1].marks)")
        #expect(files[0].marks.last?.hasSuffix(" fps, preview paused, new recordings at half the bit rate") == true, "\(files[0].marks)")
        #expect(files[1].marks.last?.contains(": frame rate back to ") == true, "\(files[1].marks)")
        #expect(files[1].marks.dropFirst().first?.contains("preview back") == true, "\(files[1].marks)")
        // While fair, the first recording kept to 20 fps: at most 20 frames
        // a second (and a frame) between its two marks' times, found by the
        // frames' own times; read from ffmpeg's SubRip times.
        let cues = lines.filter { $0.hasPrefix("srt: ") && $0.contains(" --> ") }.compactMap { line -> Double? in
            let t = line.dropFirst(5).prefix(12).replacingOccurrences(of: ",", with: ":").split(separator: ":").compactMap { Double($0) }
            return t.count == 4 ? t[0] * 3600 + t[1] * 60 + t[2] + t[3] / 1000 : nil
        }
        if cues.count >= 2, let times = Optional(files[0].times), times.count > 10 {
            let span = times.filter { $0 >= cues[0] && $0 < cues[1] }
            if let first = span.first, let last = span.last, last > first + 1 {
                let rate = Double(span.count - 1) / (last - first)
                #expect(rate <= 20 * 1.05 + 1 / (last - first), "\(span.count) frames in \(last - first) s while fair: \(rate) fps")
            } else {
                Issue.record("too few frames while fair to measure the rate: \(span)")
            }
        }
    }
}
}
