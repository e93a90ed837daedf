import Foundation
import Testing
import TestSupport
import ObscuraCapture
@testable import ObscuraSoftwareCamera
import ObscuraMuxing
import ObscuraSystem
@testable import ObscuraRecording
@testable import ObscuraService
import ObscuraFiles

@Suite struct HonestTimeTests {
    @Test func namesCarryTheWallClockOnlyOnceItIsKnown() {
        let date = Date(timeIntervalSince1970: 1_795_000_000)   // 2026-11-18
        let wall = FileNames.stem(clockSynchronized: true, date: date, monotonic: 0, bootID: "0badf00d")
        #expect(wall.hasPrefix("obscura-2026111") && wall.count == "obscura-YYYYmmdd-HHMMSS".count)
        #expect(FileNames.stem(clockSynchronized: false, date: date, monotonic: 127_900_000_000, bootID: "0badf00d")
                == "obscura-boot-0badf00d-0000127")
        // This boot's names map through the clocks' offset; the rest of the name stays.
        let map: (UInt64) -> Date = { Date(timeIntervalSince1970: 1_795_000_000 + Double($0) / 1e9) }
        let at127 = FileNames.wallClockStem(Date(timeIntervalSince1970: 1_795_000_127))
        for rest in [".mp4", "-0002.mkv", "-2.jpg", ".dng"] {
            #expect(FileNames.wallClockName(for: "obscura-boot-0badf00d-0000127" + rest, bootID: "0badf00d", wallClock: map) == at127 + rest)
        }
        // Another boot's, or anything else, is left alone.
        #expect(FileNames.wallClockName(for: "obscura-boot-12345678-0000127.mp4", bootID: "0badf00d", wallClock: map) == nil)
        #expect(FileNames.wallClockName(for: "obscura-boot-0badf00d-12x.mp4", bootID: "0badf00d", wallClock: map) == nil)
        #expect(FileNames.wallClockName(for: "obscura-20261118-101010.mp4", bootID: "0badf00d", wallClock: map) == nil)
    }

    /// Recordings begun within one second get names of their own (a stop
    /// and a start within a second would otherwise replace the first file).
    @Test func recordingsBegunInOneSecondGetNamesOfTheirOwn() {
        var stems = RecordingStems()
        #expect(["obscura-20261118-101010", "obscura-20261118-101010", "obscura-20261118-101010", "obscura-20261118-101011",
                 "obscura-20261118-101011"].map { stems.next($0) }
                == ["obscura-20261118-101010", "obscura-20261118-101010-2", "obscura-20261118-101010-3", "obscura-20261118-101011",
                    "obscura-20261118-101011-2"])
    }

    /// Once the clock is known the service renames this boot's files; each
    /// checksum follows its file and still verifies with sha256sum.
    @Test func bootNamedFilesAreRenamedWithTheirChecksums() throws {
        let dir = try TemporaryDirectory()
        let boot = SystemClock.bootID
        let files = ["obscura-boot-\(boot)-0000100.mp4", "obscura-boot-\(boot)-0000100-0002.mp4", "obscura-boot-\(boot)-0000200.jpg",
                     "obscura-boot-99999999-0000100.mp4"]
        for name in files {
            try Data("frames of \(name)".utf8).write(to: URL(fileURLWithPath: dir.path + "/" + name))
            try Checksum.write(for: dir.path + "/" + name)
        }
        let map: (UInt64) -> Date = { Date(timeIntervalSince1970: 1_795_000_000 + Double($0) / 1e9) }
        let result = FileNames.renameBootNamed(in: [dir.path], wallClock: map)
        #expect(result.problems.isEmpty, "\(result.problems)")
        #expect(result.renamed.count == 3)
        let at100 = FileNames.wallClockStem(Date(timeIntervalSince1970: 1_795_000_100))
        let at200 = FileNames.wallClockStem(Date(timeIntervalSince1970: 1_795_000_200))
        let now = Set(try FileManager.default.contentsOfDirectory(atPath: dir.path))
        #expect(now == [at100 + ".mp4", at100 + ".mp4.sha256", at100 + "-0002.mp4", at100 + "-0002.mp4.sha256",
                        at200 + ".jpg", at200 + ".jpg.sha256",
                        "obscura-boot-99999999-0000100.mp4", "obscura-boot-99999999-0000100.mp4.sha256"], "\(now)")
        let sums = try runProgram("/usr/bin/sha256sum", ["-c"] + now.filter { $0.hasSuffix(".sha256") }.sorted(), cwd: dir.path)
        #expect(sums.status == 0, "\(sums.stdout)\(sums.stderr)")
        // A second pass finds nothing to do.
        #expect(FileNames.renameBootNamed(in: [dir.path], wallClock: map).renamed.isEmpty)
    }

    /// The header carries the first frame's wall-clock time (from its
    /// CLOCK_MONOTONIC timestamp) when asked, and none when not.
    @Test(arguments: [(CreationTimePolicy.always, MovieContainer.mp4), (.always, .mkv), (.never, .mp4)])
    func theMoviesCreationTimeIsItsFirstFramesWallClock(policy: CreationTimePolicy, container: MovieContainer) async throws {
        let output = MovieFileOutput()
        output.maxRecordedDuration = .seconds(1)
        let session = try patternSession([output])
        try session.startRunning()
        defer { try? session.stopRunning() }
        let dir = try TemporaryDirectory()
        let file = dir.path + "/t." + container.rawValue
        var settings = MovieSettings()
        settings.creationTime = policy
        settings.recordsAudio = false
        let asked = Date()
        var zero: UInt64?
        for await event in try output.startRecording(to: file, settings: settings) {
            if case .finished(_, _, let p) = event { zero = p.timeZeroNanoseconds }
        }
        let tag = try runProgram("/usr/bin/ffprobe", ["-v", "error", "-show_entries", "format_tags=creation_time", "-of", "csv=p=0", file])
        let text = tag.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        guard policy == .always else {
            #expect(text.isEmpty, "\(text)")
            return
        }
        let format = ISO8601DateFormatter()
        format.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let created = try #require(format.date(from: text), "creation_time \"\(text)\"")
        let first = SystemClock.wallClock(ofMonotonic: try #require(zero))
        // MP4 keeps whole seconds; Matroska nanoseconds.
        #expect(abs(created.timeIntervalSince(first)) < (container == .mp4 ? 1.001 : 0.001), "\(created) vs first frame \(first)")
        #expect(created.timeIntervalSince(asked) > -1 && created.timeIntervalSince(asked) < 2)
    }
}
