import Foundation
import Testing
import TestSupport

extension VirtualBoardTests {
/// The service's microphone is the ALSA loopback's capture end (snd-aloop),
/// so what `obscura beep` plays on the other end is what it hears: bursts
/// of tone (never half a second without one), nothing at all (digital
/// silence: the loopback gives zeros), and tone 6 dB over full scale
/// (clipped). Each condition is declared within its hold + 2 s + one look
/// at the log (measured in the run), shows in the status, the metrics
/// and the status LED, clears, and is marked in the one recording, which
/// goes on throughout and is read back by ffmpeg.
@Suite struct SoundBoardTests {
    static let hold = 2.0, clear = 1.0

    @Test func aSilentAndAClippingMicrophoneAreDeclaredWithinTheirHoldAndClear() throws {
        let result = try VirtualBoard.run(scenario: "Sound/aSilentAndAClippingMicrophoneAreDeclaredWithinTheirHoldAndClear", ["\(Self.hold)", "\(Self.clear)"], timeout: 600)
        let out = result.stdout
        let lines = out.split(separator: "\n").map(String.init)
        func value(_ prefix: String) -> String? { lines.first { $0.hasPrefix(prefix) }.map { String($0.dropFirst(prefix.count)) } }
        #expect(!out.contains("gave up after"), "\(out)\(result.stderr)")
        for condition in ["silent", "clipping"] {
            // A look at the log after the change was seen: the wait's own lag.
            let declared = try #require(value("declared-\(condition)=").flatMap(Double.init), "\(condition) never declared: \(out)")
            let poll = try #require(value("poll-\(condition)=").flatMap(Double.init)) - declared + 0.2
            #expect(declared <= Self.hold + 2 + poll, "\(condition) declared after \(declared) s (hold \(Self.hold) s + 2 s + a look at the log \(poll) s): \(out)")
            #expect(value("listed-\(condition)=") == "yes", "the status does not list \(condition): \(out)")
            // (From a reading taken before the cause: the hold can only look longer.)
            let early = try #require(value("declared-\(condition)-early=").flatMap(Double.init))
            #expect(early >= Self.hold, "\(condition) declared within \(early) s of its cause (read before it), less than its \(Self.hold) s hold: \(out)")
            let cleared = try #require(value("cleared-\(condition)=").flatMap(Double.init), "\(condition) never cleared: \(out)")
            #expect(cleared <= Self.clear + 2 + poll, "\(condition) cleared after \(cleared) s: \(out)")
            #expect(value("metrics-\(condition)=")?.contains("obscura_sound_condition{condition=\"\(condition)\"} 1") == true, "\(out)")
            #expect(value("status-\(condition): ")?.hasPrefix("sound: \(condition) (listened for clipping, silent") == true, "\(out)")
        }
        #expect(value("led-fine=") == "1 ", "\(out)")
        #expect(value("led-silent=") == "0 1 ", "\(out)")
        // One recording, with its sound, never interrupted.
        #expect(lines.contains("state=\"state\":\"recording\""), "\(out)")
        #expect(value("recordings=") == "1", "\(out)")
        #expect(value("streams=")?.contains("audio,16000") == true, "\(out)")
        #expect(!out.contains("sample_rate line has changed"), "\(out)")
        #expect(lines.filter { $0.hasPrefix("log: ") && $0.contains("recording finished") }.count == 1, "\(out)")
        // Its marks, read back by ffmpeg, in order (silence comes again once
        // the clipped tone stops, and may before the service hears the tone).
        let said = lines.filter { $0.hasPrefix("srt: sound: ") }.flatMap { $0.dropFirst(5).components(separatedBy: " · ") }.map { mark -> String in
            let words = mark.split(separator: " ")
            return words.count > 2 && words[2] == "cleared" ? "\(words[1]) cleared" : String(words.count > 1 ? words[1] : "")
        }
        #expect(said.filter { $0.hasPrefix("clipping") } == ["clipping", "clipping cleared"], "marks: \(said)\n\(out)")
        let silent = said.filter { $0.hasPrefix("silent") }
        #expect(silent.count >= 2 && zip(silent, silent.dropFirst()).allSatisfy { $0 != $1 }, "silent declared and cleared in turn: \(said)")
        if let cleared = said.lastIndex(of: "silent cleared"), let clipping = said.firstIndex(of: "clipping") {
            #expect(cleared < clipping, "the silence cleared as the clipped tone began: \(said)")
        }
    }
}
}
