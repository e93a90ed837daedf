import Foundation
import Testing
import TestSupport

extension VirtualBoardTests {
/// Honest time on a board that boots without network time: the service is
/// started with the clock in 1970, records, and the clock is then set (as
/// systemd-timesyncd does: a step, then its `synchronized` flag).
@Suite struct TimeBoardTests {
    @Test func aBoardBootedIn1970NamesNothingWithAWrongTimeAndRenamesOnceTheClockIsSet() throws {
        let result = try VirtualBoard.run(scenario: "Time/aBoardBootedIn1970NamesNothingWithAWrongTimeAndRenamesOnceTheClockIsSet", timeout: 300, options: ["--systemd"])
        let out = result.stdout
        let lines = out.split(separator: "\n").map(String.init)
        func values(_ prefix: String) -> [String] { lines.filter { $0.hasPrefix(prefix) }.map { String($0.dropFirst(prefix.count)) } }
        #expect(lines.contains("before: clock: not synchronised (adjtimex)"), "\(out)\(result.stderr)")
        #expect(lines.contains("after: clock: synchronised (systemd-timesyncd)"))
        // While the clock was not known: a boot-relative name, never 1970.
        let partial = values("partial=").first ?? ""
        #expect(partial.hasPrefix("obscura-boot-") && partial.hasSuffix(".mp4.partial"), "\(out)")
        #expect(!out.contains("obscura-1970"))
        // Renamed, once the clock was known, to the wall-clock time of its start.
        let files = values("file=")
        #expect(files.count == 1, "\(out)")
        let name = String(files.first?.split(separator: " ").first ?? "")
        let expected = values("expected=")
        // (the recording's first segment: "-0001" after the stem)
        #expect(expected.contains { name == $0 + "-0001.mp4" }, "\(name) not one of \(expected) (\(values("offset=")))")
        #expect(out.contains("journal: obscura: renamed /var/lib/obscura/recordings/\(partial.dropLast(".partial".count)) to \(name): the clock is now known"))
        #expect(values("sum: ").allSatisfy { $0.hasSuffix(": OK") } && values("sum: ").count == 1, "\(values("sum: "))")
        // The step moved no timestamp inside the file: it spans no more than
        // the service's own journal saw between beginning the recording and
        // finishing it (a step of 56 years would show), and reaches to where
        // the stop was asked, less one of its own frame gaps and the
        // recorder's backlog. The times are the service's and the script's
        // in the same run: a starved board answers late, not wrongly.
        let pts = (values("pts=").first ?? "").split(separator: " ").compactMap { Double($0) }
        let gaps = zip(pts.dropFirst(), pts).map { $0 - $1 }
        let stem = partial.components(separatedBy: "-0001.mp4").first ?? partial
        func journalSecond(_ text: String) -> Double? {
            values("monotonic: ").first { $0.contains(text) }.flatMap { line in
                line.split(separator: "]").first.flatMap { Double($0.dropFirst().trimmingCharacters(in: .whitespaces)) }
            }
        }
        let began = journalSecond("recording /var/lib/obscura/recordings/\(stem).mp4")
        let firstFrame = journalSecond("\(stem).mp4: first frame taken")
        let finished = journalSecond("recording finished: /var/lib/obscura/recordings/\(stem).mp4")
        let run = values("started=").first.map { $0.split(separator: " ").compactMap { Double($0.split(separator: "=").last ?? "") } } ?? []
        try #require(began != nil && firstFrame != nil && finished != nil && run.count == 2, "\(out)")
        let span = pts.last ?? 0
        #expect(pts.count >= 5, "\(pts.count) frames")
        #expect(span <= finished! - began!, "the file spans \(span) s; the service recorded from \(began!) to \(finished!) s")
        #expect(span >= run[1] - firstFrame! - (gaps.max() ?? 0) - 0.25,
                "the file spans \(span) s; its first frame was said at \(firstFrame!) s and the stop asked at \(run[1]) s")
        // Its header has no time: when it began, the clock was not known.
        #expect(values("created=").first == "", "\(values("created="))")
        // The next recording: a wall-clock name and its first frame's time in the header.
        let second = values("second=").filter { !$0.hasPrefix(name + " ") }
        #expect(second.count == 1, "\(second)")
        // Its creation time (whole seconds) is between the start being asked
        // and the stop being answered.
        let asked = Double(values("asked=").first ?? "") ?? 0
        let now = Double(values("now=").first ?? "") ?? 0
        let created = second.first.flatMap { $0.components(separatedBy: "created=").last }.flatMap {
            let f = ISO8601DateFormatter()
            f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            return f.date(from: $0)
        }
        #expect(created.map { $0.timeIntervalSince1970 >= asked.rounded(.down) && $0.timeIntervalSince1970 <= now } == true,
                "creation time \(String(describing: created)), asked at \(asked), stopped by \(now)")
        #expect(second.first?.hasPrefix("obscura-20") == true)
    }
}
}
