import Foundation
import Testing
import TestSupport

extension VirtualBoardTests {
/// The live view on an installed kiosk, watched through the board's own
/// sshd with `obscura view` and a view key (`obscura keys add --view`):
/// while idle (the encoder started for the viewer and stopped after), then
/// while recording vimc (the recording's own stream, its file keeping every
/// frame it took). Nothing new listens. The view key gets nothing else: a
/// command, a shell, SFTP and forwarding are refused.
@Suite struct LiveViewBoardTests {

    @Test func aKioskIsWatchedThroughItsSSHServerIdleAndRecordingWithNothingNewListening() throws {
        let result = try KioskBoard.board.result(of: "live-view")
        let out = result.stdout
        let board = BoardLines(out)
        let lines = board.lines
        #expect(!out.contains("gave up after"), "\(out)\(result.stderr)")
        func value(_ prefix: String) -> String? { lines.first { $0.hasPrefix(prefix) }.map { String($0.dropFirst(prefix.count)) } }
        func frames(_ prefix: String) -> (count: Int, key: Bool) {
            let text = value(prefix) ?? ""
            let count = Int(text.split(separator: " ").first ?? "") ?? 0
            // (ffprobe may add a field after the first frame's key flag: "1,".)
            return (count, text.contains("first-key=1"))
        }
        #expect(value("recording-rc=") == "0", "\(out)")
        // A few frames prove the path ran; the first is a key frame, so
        // what a viewer gets decodes from its start.
        let idle = frames("idle-frames="), recording = frames("recording-frames=")
        #expect(idle.count >= 5 && idle.key, "\(out)")
        #expect(recording.count >= 5 && recording.key, "\(out)")
        #expect(lines.contains("listening: unchanged"), "\(out)")
        #expect(lines.contains("idle-state=state: idle"), "\(out)")
        // The recording took what it always takes: its file holds every
        // frame its summary counts.
        let summary = try #require(lines.first { $0.hasPrefix("journal: ") && $0.contains("recording finished: ") }, "\(out)")
        let taken = summary.components(separatedBy: ", ").first { $0.hasSuffix(" frames") }.flatMap { Int($0.split(separator: " ")[0]) }
        #expect(taken != nil && value("file-frames=").flatMap { Int($0) } == taken, "\(summary); \(value("file-frames=") ?? "no file")")
        // Who watched: the view key's comment, from the key sshd accepted
        // (not what the viewer's side said).
        #expect(lines.contains { $0.hasPrefix("keys: added SHA256:") && $0.hasSuffix("viewer@test") }, "\(out)")
        #expect(lines.filter { $0.hasPrefix("journal: obscura: live view started: viewer@test") }.count == 2, "\(out)")
        #expect(lines.filter { $0.hasPrefix("journal: obscura: live view ended: viewer@test") }.count == 2, "\(out)")
        // The view key's other asks: refused, nothing sent, and no view started by them.
        for (ask, says) in [("command", "may only watch the live view"), ("shell", "it asked for a shell"), ("sftp", "Connection closed"),
                            ("remote", "remote port forwarding failed"), ("stdio", "administratively prohibited")] {
            let line = try #require(value("refusal-\(ask): "), "\(out)")
            #expect(!line.hasPrefix("rc=0 ") && line.contains("out=0 ") && line.contains(says), "\(ask): \(line)")
        }
        #expect(value("views-after-refusals: ") == "2", "\(out)")
    }
}
}
