import Foundation
import Testing
import TestSupport

extension VirtualBoardTests {
/// The picture watch on the real camera driver: vimc's sensor has a test
/// pattern control (its subdevice's `test_pattern`, set with v4l2-ctl, as
/// a kernel driver's control is set). Switched mid-recording to a plain
/// white (a cloth over the lens: no detail) and to black (a lens in the
/// dark), then back to its colour bars. The driver's text over the picture
/// (`show_information`: frame counters, which no lens sees) is off while
/// the lens is covered. Measured there (`obscura watch --measures`): bars
/// with the text mean 74.6, detail 21.6; white mean 255, detail 0; black
/// mean 0.
@Suite struct PictureBoardTests {
    static let hold = 2.0, clear = 1.0

    @Test func aCoveredAndADarkLensAreDeclaredWithinTheirHoldAndClearWhileTheRecordingGoesOn() throws {
        let result = try VirtualBoard.run(scenario: "Picture/aCoveredAndADarkLensAreDeclaredWithinTheirHoldAndClearWhileTheRecordingGoesOn", ["\(Self.hold)", "\(Self.clear)"], timeout: 600)
        let out = result.stdout
        let lines = out.split(separator: "\n").map(String.init)
        func value(_ prefix: String) -> String? { lines.first { $0.hasPrefix(prefix) }.map { String($0.dropFirst(prefix.count)) } }
        #expect(!(value("subdev=") ?? "").isEmpty, "no vimc sensor subdevice: \(out)\(result.stderr)")
        #expect(value("entries=")?.contains("white: ") == false, "\(out)")
        // The frames' own intervals bound how late a look can be.
        let times = (value("frame-times=") ?? "").split(separator: " ").compactMap { Double($0) }.sorted()
        try #require(times.count > 10, "the recording has \(times.count) frames: \(out)")
        let slowest = zip(times.dropFirst(), times).map { $0 - $1 }.max() ?? 0
        for condition in ["no_detail", "dark"] {
            // The wait sees a change at most one look at the log (and its
            // 0.2 s pause) after it happened: measured in the same run.
            let poll = (value("poll-\(condition)=").flatMap(Double.init) ?? 0) + 0.2
            #expect(value("listed-\(condition)=") == "yes", "the status does not list \(condition): \(out)")
            let bound = Self.hold + 2 + 2 * slowest + poll
            let declared = try #require(value("declared-\(condition)=").flatMap(Double.init), "\(condition) never declared: \(out)")
            #expect(declared <= bound, "\(condition) declared after \(declared) s (hold \(Self.hold) s + 2 s + two of the slowest frame interval \(slowest) s + a look at the status \(poll) s)")
            // (From a reading taken before the pattern changed: the hold can only look longer.)
            let early = try #require(value("declared-\(condition)-early=").flatMap(Double.init), "\(out)")
            #expect(early >= Self.hold, "\(condition) declared within \(early) s of the pattern's change (read before it), less than its \(Self.hold) s hold")
            let cleared = try #require(value("cleared-\(condition)=").flatMap(Double.init), "\(condition) never cleared: \(out)")
            #expect(cleared <= Self.clear + 2 + 2 * slowest + poll, "\(condition) cleared after \(cleared) s")
            #expect(value("metrics-\(condition)=")?.contains("obscura_picture_condition{condition=\"\(condition)\"} 1") == true, "\(out)")
            #expect(value("status-\(condition): ")?.contains(condition) == true, "\(out)")
        }
        // The status LED: steady while the picture is fine, blinking while a condition holds.
        #expect(value("led-fine=") == "1 ", "\(out)")
        #expect(value("led-no_detail=") == "0 1 ", "\(out)")
        #expect(value("metrics-dark=")?.contains("obscura_picture_condition_episodes_total{condition=\"no_detail\"} ") == true, "\(out)")
        // One recording, never interrupted, still recording after both.
        #expect(lines.contains("state=\"state\":\"recording\""), "\(out)")
        #expect(value("recordings=") == "1", "\(out)")
        #expect(lines.filter { $0.hasPrefix("log: ") && $0.contains("recording finished") }.count == 1, "\(out)")
        // Its marks, read back by ffmpeg: each condition declared and cleared, in order.
        // Black is also without detail: no_detail comes with dark, on the
        // same look (one cue) or a frame apart (its own).
        let marks = lines.filter { $0.hasPrefix("srt: picture: ") }.map { String($0.dropFirst(5)) }
        let said = marks.flatMap { $0.components(separatedBy: " · ") }.compactMap { mark -> String? in
            let words = mark.split(separator: " ")
            guard words.count > 2 else { return nil }
            return words[2] == "cleared" ? "\(words[1]) cleared" : String(words[1])
        }
        let dark = said.filter { $0.hasPrefix("dark") }, covered = said.filter { $0.hasPrefix("no_detail") }
        #expect(dark == ["dark", "dark cleared"] && covered == ["no_detail", "no_detail cleared", "no_detail", "no_detail cleared"], "marks: \(marks)\n\(out)")
        #expect(said.first == "no_detail" && said.last?.hasSuffix("cleared") == true && said.firstIndex(of: "dark") ?? 0 > 1, "marks: \(marks)")
    }

    /// A frozen camera on the real driver. vimc's picture is a still
    /// pattern (its frame counters fall between the grid's points: measured,
    /// it is declared frozen within the hold), so the test makes it live the
    /// way a scene is: its sensor's brightness control changed over and over
    /// (VIDIOC_S_CTRL on its subdevice), then left alone (frozen, while the
    /// camera's timestamps run on), then changed again.
    @Test func aFrozenCameraIsDeclaredWithinItsHoldAndClearsWhenThePictureMovesAgain() throws {
        let rate = 2.0
        let result = try VirtualBoard.run(scenario: "Picture/aFrozenCameraIsDeclaredWithinItsHoldAndClearsWhenThePictureMovesAgain", ["\(Self.hold)", "\(Self.clear)", "\(rate)"], timeout: 600)
        let out = result.stdout
        let lines = out.split(separator: "\n").map(String.init)
        func value(_ prefix: String) -> String? { lines.first { $0.hasPrefix(prefix) }.map { String($0.dropFirst(prefix.count)) } }
        #expect(!out.contains("gave up after"), "\(out)\(result.stderr)")
        #expect(value("live-lacks-frozen=") == "yes", "a live picture was declared frozen: \(out)")
        let times = (value("frame-times=") ?? "").split(separator: " ").compactMap { Double($0) }.sorted()
        try #require(times.count > 10, "the recording has \(times.count) frames: \(out)")
        let slowest = zip(times.dropFirst(), times).map { $0 - $1 }.max() ?? 0
        let declared = try #require(value("declared-frozen=").flatMap(Double.init), "\(out)")
        // The wait's own lag (one look at the log) and the look's spacing.
        let lag = try #require(value("poll-frozen=").flatMap(Double.init)) - declared + 0.2 + 1 / rate
        let early = try #require(value("declared-frozen-early=").flatMap(Double.init), "\(out)")
        #expect(early >= Self.hold, "frozen declared within \(early) s of the scene's last change (read before it), less than its \(Self.hold) s hold")
        #expect(declared <= Self.hold + 2 + 2 * slowest + lag,
                "frozen declared after \(declared) s (hold \(Self.hold) s + 2 s + two of the slowest frame interval \(slowest) s + \(lag) s)")
        let cleared = try #require(value("cleared-frozen=").flatMap(Double.init), "\(out)")
        #expect(cleared <= Self.clear + 2 + 2 * slowest + lag, "frozen cleared after \(cleared) s")
        #expect(value("status-frozen: ")?.hasPrefix("picture: frozen (watched for frozen") == true, "\(out)")
        #expect(value("metrics-frozen=")?.contains("obscura_picture_condition{condition=\"frozen\"} 1") == true, "\(out)")
        // vimc's still picture before the scene came alive may have been
        // declared and cleared too; then the test's own episode.
        let marks = lines.filter { $0.hasPrefix("srt: picture: ") }.map { String($0.dropFirst(5)) }
        let kinds = marks.map { $0.hasPrefix("picture: frozen cleared after") ? "cleared" : $0.hasPrefix("picture: frozen (the same picture") ? "declared" : $0 }
        #expect(kinds.suffix(2) == ["declared", "cleared"] && zip(kinds, kinds.dropFirst()).allSatisfy { $0 != $1 } && kinds.count <= 4,
                "marks: \(marks)\n\(out)")
    }
}
}
