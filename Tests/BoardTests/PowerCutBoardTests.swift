import Foundation
import Testing
import TestSupport

extension VirtualBoardTests {
/// Power cuts while recording onto a real block device (bench/power-cut: an
/// ext4 filesystem on a virtio disk, the board's power cut at a random
/// moment with no sync): the filesystem is clean after every cut, and the
/// recording loses at most one second (on a starved board, the fragment, the
/// time its frames take to reach the file as the recorder says it, and two
/// of their intervals), with vimc and with the test pattern
/// at 10 and 30 fps, six cuts (BENCHMARKS.md has more). The fragments are synced as they complete:
/// the disk sees the flushes. The slow lane of `Tests/run` runs it with the
/// board at half speed too, where the recorder is starved: the same promise.
@Suite struct PowerCutBoardTests {
    @Test func aPowerCutLosesAtMostOneSecondAndLeavesACleanFilesystem() throws {
        // The build the board tests run (the benchmark's own default is the release build).
        let result = try runProgram(packageRoot + "/bench/power-cut", ["--cuts", "6", "--binary", ".build/debug/obscura"], cwd: packageRoot,
                                    environment: VirtualBoard.ledgerEnvironment)
        let lines = result.stdout.split(separator: "\n").map(String.init)
        let cuts = lines.filter { $0.hasPrefix("cut ") && $0.contains(": ") }
        #expect(cuts.count == 6, "\(result.stdout)\(result.stderr)")
        for cut in cuts {
            #expect(cut.contains("filesystem clean: yes"), "\(cut)")
            // At most a second; on a starved board (the slow lane's), the
            // fragment, the frames' way to the file (the recorder's own
            // "camera to file") and two of their intervals in the file.
            let lost = cut.components(separatedBy: "lost ").last?.split(separator: " ").first.flatMap { Double($0) }
            let bound = cut.components(separatedBy: "of at most ").last?.split(separator: " ").first.flatMap { Double($0) }
            #expect(bound.map { $0 >= 1.0 } == true, "\(cut)")
            #expect(lost != nil && bound != nil && lost! <= bound!, "\(cut)")
            #expect(!cut.contains("(0 frames)"), "\(cut)")
            // Each half-second fragment is synced: the disk sees about two
            // cache flushes a second (the journal's commits add some).
            let flushes = cut.components(separatedBy: "KiB/s written, ").last?.split(separator: " ").first.flatMap { Double($0) }
            #expect(flushes.map { $0 >= 1 } == true, "\(cut)")
        }
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        let slow = ["1", "true"].contains(ProcessInfo.processInfo.environment["OBSCURA_BOARD_SLOW"] ?? "")
        for line in lines where line.hasPrefix("cuts ") { print("PowerCutBoardTests\(slow ? " (slow mode)" : ""): \(line)") }
    }
}
}
