import Foundation
import Testing
import TestSupport

extension VirtualBoardTests {
/// Self-healing under the service: a stage that vanishes mid-recording is
/// restarted without losing the recording chain.
@Suite struct StageBoardTests {
    /// A few frames prove the path ran; no rate is assumed (the board's
    /// scenarios, scenarios/Kiosk/stage*.sh, are given it).
    static let least = 5

    /// vimc's driver unbound mid-recording, bound again: the first file is
    /// finalized and plays, the recording goes on in a second file as soon as
    /// the camera is listed again (looked for every half second once the
    /// kernel and udev are done with it), the gap is journaled and counted, and systemd
    /// never sees the service leave its running state.
    @Test func aCameraThatVanishesMidRecordingGoesOnInANewFileWhenItIsBack() throws {
        let least = Self.least
        let result = try KioskBoard.board.result(of: "stage-camera")
        let out = result.stdout
        let board = BoardLines(out)
        let lines = board.lines
        #expect(!out.contains("gave up after"), "\(out)\(result.stderr)")
        func monotonic(_ text: String) -> Double? {
            lines.first { $0.hasPrefix("mono: ") && $0.contains(text) }.flatMap(BoardLines.monotonic(of:))
        }
        #expect(lines.contains { $0.hasPrefix("gone-state=state: error") && $0.hasSuffix("active=active") }, "\(out)\(result.stderr)")
        #expect(lines.contains("active=active restarts=0"), "\(out)")
        let files = lines.filter { $0.hasPrefix("file=") }
        #expect(files.count == 2, "\(files)")
        for file in files {
            let frames = Int(file.split(separator: "=").last ?? "") ?? 0
            #expect(frames >= least, "\(file): both play, each with what it recorded")
        }
        #expect(out.contains("journal: obscura: recording finished: ") && out.contains("camera lost"))
        // The camera's return after the bind is journaled with how long it was gone
        // (a board starved for a moment may add a stall of its own before).
        let unbound = try #require(board.number(after: "unbind uptime="))
        let bound = try #require(board.number(after: "bind uptime="))
        let settled = try #require(board.number(after: "settled uptime="))
        let resumed = try #require(monotonic("recording goes on after"), "\(out)")
        let listedLine = try #require(lines.first { $0.hasPrefix("mono: ") && $0.contains("listed again") && (BoardLines.monotonic(of: $0) ?? 0) > bound }, "\(out)")
        let listed = try #require(BoardLines.monotonic(of: listedLine))
        // How long one look costs on this board in this run (the camera
        // backend started afresh and listing what is there): the unit the
        // bounds below are in, so a slower board gets proportionally longer.
        let look = try #require(listedLine.components(separatedBy: "started afresh in ").last?.split(separator: " ").first.flatMap { Double($0) })
        for line in lines where line.hasPrefix("mono: ") { print("StageBoardTests: \(line)") }
        print(String(format: "StageBoardTests: bound %.2f, udev settled %.2f, listed again %.2f (a look took %.2f s), recording went on %.2f",
                     bound, settled, listed, look, resumed))
        // Found by the next look once the kernel and udev are done with the
        // device: a look in flight may miss it, the next starts half a second
        // after it, and one more look's time is the board's own scheduling.
        #expect(listed > bound && listed - max(bound, settled) <= 0.5 + 3 * look,
                "listed again \(listed - settled) s after udev settled; a look takes \(look) s")
        // Then reopened and recording with nothing waited for in between.
        #expect(resumed > listed && resumed - listed <= 3 * look,
                "the recording went on \(resumed - listed) s after the camera was listed; a look takes \(look) s")
        let back = lines.first { $0.hasPrefix("mono: ") && $0.contains("camera back after ") && (BoardLines.monotonic(of: $0) ?? 0) > bound }
        let gone = back.flatMap { $0.components(separatedBy: "camera back after ").last?.split(separator: " ").first.flatMap { Double($0) } }
        #expect(gone.map { $0 >= bound - unbound - 1 } == true, "camera back line: \(back ?? "none"); gone \(bound - unbound) s")
        // Counted: at least this restart, and the time it left unrecorded.
        let restarts = lines.first { $0.hasPrefix("metric: obscura_stage_restarts_total{stage=\"camera\"} ") }
            .flatMap { Int($0.split(separator: " ").last ?? "") } ?? 0
        let gap = lines.first { $0.hasPrefix("metric: obscura_stage_gap_seconds_total{stage=\"camera\"} ") }
            .flatMap { Double($0.split(separator: " ").last ?? "") } ?? 0
        #expect(restarts >= 1 && gap >= bound - unbound - 1, "restarts \(restarts), gap \(gap) s\n\(out)")
        #expect(lines.contains("metric: obscura_recordings_failed_total 1"))
        // The status, read after the metrics file was written, counts at
        // least as many (a starved board's camera may stall once more by then).
        let said = lines.first { $0.hasPrefix("status: restarts: camera ") }
            .flatMap { Int($0.dropFirst("status: restarts: camera ".count).prefix { $0.isNumber }) } ?? 0
        #expect(said >= restarts, "status says \(said) camera restarts, the metrics \(restarts)\n\(out)")
    }

    /// vicodec's driver unbound mid-recording (the service recording FWHT
    /// through it), bound again: the first file is finalized with what the
    /// encoder gave back and decodes, the recording goes on in a second file
    /// with the next try (every half second) once udev is done with the
    /// encoder's return, the gap is journaled and counted,
    /// and systemd never sees the service leave its running state.
    @Test func anEncoderThatVanishesMidRecordingGoesOnInANewFileWhenItIsBack() throws {
        let least = Self.least
        let result = try KioskBoard.board.result(of: "stage-encoder")
        let out = result.stdout
        let board = BoardLines(out)
        let lines = board.lines
        #expect(!out.contains("gave up after"), "\(out)\(result.stderr)")
        #expect(lines.contains { $0.hasPrefix("gone-state=state: error") && $0.hasSuffix("active=active") }, "\(out)\(result.stderr)")
        // While the encoder is gone, tries make no file.
        #expect(lines.contains("still-files=1"), "\(out)")
        #expect(lines.contains("active=active restarts=0"), "\(out)")
        let files = lines.filter { $0.hasPrefix("file=") }
        #expect(files.count == 2, "\(files)")
        for file in files {
            let decoded = file.components(separatedBy: "decoded ").last.flatMap { Int($0.split(separator: " ")[0]) } ?? 0
            #expect(file.contains(" decoded ") && decoded >= least, "\(file): both decode, each with what it recorded")
        }
        #expect(lines.filter { $0.hasPrefix("sum: ") && $0.hasSuffix(": OK") }.count == 2, "\(out)")
        #expect(lines.contains { $0.hasPrefix("journal: obscura: encoder failed: ") && $0.contains("No such device") }, "\(out)")
        let unbound = try #require(board.number(after: "unbind uptime="))
        let bound = try #require(board.number(after: "bind uptime="))
        let settled = try #require(board.number(after: "settled uptime="))
        let resumedLine = try #require(lines.first { $0.hasPrefix("mono: ") && $0.contains("recording goes on after the encoder") }, "\(out)")
        let resumed = try #require(BoardLines.monotonic(of: resumedLine))
        // How long the try that succeeded took, from its file's opening to
        // its first packet: the unit of the bound, so a slower board gets
        // proportionally longer.
        let attempt = try #require(resumedLine.components(separatedBy: "its first packet ").last?.split(separator: " ").first.flatMap { Double($0) })
        print(String(format: "StageBoardTests: bound %.2f, udev settled %.2f, the recording went on %.2f (its try took %.2f s)", bound, settled, resumed, attempt))
        for line in lines where line.hasPrefix("journal: obscura: encoder") { print("StageBoardTests: \(line.dropFirst(9))") }
        // Tried every half second: a try in flight when udev is done may
        // miss the encoder, the next one starts half a second later and
        // takes what the successful one took; one more for the board's own
        // scheduling.
        #expect(resumed > bound && resumed - max(bound, settled) <= 0.5 + 3 * max(attempt, 0.1),
                "the recording went on \(resumed - settled) s after udev settled; the try took \(attempt) s")
        let back = lines.first { $0.hasPrefix("journal: obscura: encoder back after ") }
        let gone = back.flatMap { $0.components(separatedBy: "encoder back after ").last?.split(separator: " ").first.flatMap { Double($0) } }
        // Read on the right side of each end: the loss comes after the
        // unbind's reading and is reported within a second of it
        // (CaptureBoardTests asserts that bound), the return comes after
        // the bind's reading and before the journal's line saying so.
        let backLogged = try #require(lines.first { $0.hasPrefix("mono: ") && $0.contains("encoder back after ") }.flatMap { BoardLines.monotonic(of: $0) }, "\(out)")
        #expect(gone.map { $0 >= bound - unbound - 1 && $0 <= backLogged - unbound + 0.1 } == true,
                "\(back ?? "none"); the unbind read at \(unbound), the bind at \(bound), the return journaled at \(backLogged)")
        #expect(lines.contains("metric: obscura_stage_restarts_total{stage=\"encoder\"} 1"), "\(out)")
        let gap = lines.first { $0.hasPrefix("metric: obscura_stage_gap_seconds_total{stage=\"encoder\"} ") }
            .flatMap { Double($0.split(separator: " ").last ?? "") } ?? 0
        #expect(gap >= bound - unbound - 1, "gap \(gap) s")
        #expect(lines.contains("metric: obscura_recordings_failed_total 1"), "\(out)")
    }
}
}
