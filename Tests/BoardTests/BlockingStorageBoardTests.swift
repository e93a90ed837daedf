import Foundation
import Testing
import TestSupport

extension VirtualBoardTests {
/// A card that stops answering: the recordings' filesystem on a
/// device-mapper target swapped, mid-recording, for `delay` (every read and
/// write held 10 s by the kernel). The recorder's writes and syncs wait; the
/// service's status, its control socket and its buttons must not.
@Suite struct BlockingStorageBoardTests {
    @Test func aStorageThatBlocksHoldsUpNeitherStatusNorSocketNorButtons() throws {
        let result = try VirtualBoard.run(scenario: "BlockingStorage/aStorageThatBlocksHoldsUpNeitherStatusNorSocketNorButtons", timeout: 600)
        let out = result.stdout
        let lines = out.split(separator: "\n").map(String.init)
        #expect(lines.contains("card=slow") && lines.contains("card=fast"), "\(out)\(result.stderr)")
        #expect(lines.contains("probe-running-after-measures=yes"), "the card blocked all through the measures: \(out)")
        let probe = lines.first { $0.hasPrefix("probe-sync-ms=") }.flatMap { Int($0.dropFirst(14)) } ?? 0
        #expect(probe >= 10_000, "a sync of the card's filesystem took \(probe) ms")
        #expect(!out.contains("-failed"), "\(out)")
        #expect(!out.contains("led-changed=no") && !out.contains("led-never-on"), "the flash LED followed every command and press: \(out)")
        /// The longest of a measure, by phase.
        func longest(_ phase: String, _ what: String) -> Int {
            lines.filter { $0.hasPrefix(phase + " ") }.compactMap { line in
                line.split(separator: " ").first { $0.hasPrefix(what + "=") }.flatMap { Int($0.dropFirst(what.count + 1)) }
            }.max() ?? -1
        }
        // Each answer while the card blocks (its writes held 10 s each) comes
        // within 100 ms of the slowest the same question took with the card
        // answering, in this run (the board's own pace, not an assumed one).
        for what in ["status-ms", "ctl-ms", "button-ms"] {
            let free = longest("free", what), blocked = longest("blocked", what)
            #expect(free >= 0 && blocked >= 0, "\(what): \(out)")
            #expect(blocked <= free + 100, "\(what): \(blocked) ms with the card blocked, \(free) ms with it free")
            print("BlockingStorageBoardTests: \(what) \(free) ms free, \(blocked) ms blocked")
        }
        let frames = lines.compactMap { $0.hasPrefix("frames=") ? Int($0.dropFirst(7)) : nil }
        #expect(frames.count == 1 && frames[0] > 0, "the recording plays: \(out)")
    }


    /// The card's syncs fail (the target swapped for `error`) under the
    /// service: the recording ends as a storage failure, said in the
    /// journal, `obscura status` and the metrics (reason "storage"), and
    /// the service goes on.
    @Test func aStorageThatFailsItsSyncsIsAStorageFailureOfTheService() throws {
        let result = try VirtualBoard.run(scenario: "BlockingStorage/aStorageThatFailsItsSyncsIsAStorageFailureOfTheService", timeout: 400)
        let out = result.stdout
        let lines = out.split(separator: "\n").map(String.init)
        #expect(lines.contains("card=dead"), "\(out)\(result.stderr)")
        #expect(lines.contains { $0.hasPrefix("log: ") && $0.contains("storage failed: ") && $0.contains("failed") }, "the journal says it: \(out)")
        #expect(lines.contains { $0.hasPrefix("status: ") && $0.contains("storage failed") }, "status shows it: \(out)")
        #expect(lines.contains { $0.hasPrefix("metric: obscura_errors_total{reason=\"storage\"} ") && !$0.hasSuffix(" 0") }, "the metrics count it: \(out)")
        #expect(lines.contains { $0.hasPrefix("metric: obscura_last_error_timestamp_seconds{reason=\"storage\"}") }, "\(out)")
        #expect(lines.contains("alive=yes"), "the service goes on: \(out)")
        print("BlockingStorageBoardTests: \(lines.first { $0.hasPrefix("log: ") && $0.contains("storage failed") } ?? "no storage failure said")")
    }
}
}
