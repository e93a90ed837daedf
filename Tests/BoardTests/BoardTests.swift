import Foundation
import Testing
import TestSupport

/// Integration tests on the virtual board: real kernel drivers (vimc through
/// libcamera, gpio-sim through libgpiod), the real `obscura` binary.
/// One board boot per test; every suite nests here, serialized, so two guests
/// never share the 2 cores.
@Suite(.serialized, .enabled(if: VirtualBoard.isAvailable, Comment(rawValue: VirtualBoard.unavailableReason ?? "")))
enum VirtualBoardTests {}

extension VirtualBoardTests {
@Suite struct BoardTests {
    let obscura = ".build/debug/obscura"

    @Test func theCameraIsListed() throws {
        let result = try VirtualBoard.run("\(obscura) devices")
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("camera \"platform/vimc.0 Sensor B\""))
        #expect(result.stdout.contains("model: Sensor B"))
        // vimc's smallest size: 48x48 through libcamera 0.0.3 (Debian 12), 16x16 from 0.4 (Debian 13).
        #expect(result.stdout.contains("BGR888 [BG24]: \(VirtualBoard.suite == "bookworm" ? "48x48" : "16x16") to 4096x2160"), "\(result.stdout)")
    }

    @Test func aThreeSecondRecordingIsPlayableWithTheRightFrameCount() throws {
        let folder = ".build/board-tests"
        try FileManager.default.createDirectory(atPath: packageRoot + "/" + folder, withIntermediateDirectories: true)
        let clip = "\(folder)/clip-\(getpid()).mp4"
        defer { try? FileManager.default.removeItem(atPath: packageRoot + "/" + clip) }
        let result = try VirtualBoard.run("\(obscura) record --duration 3 --size 640x480 --output \(clip)")
        #expect(result.status == 0, "\(result.stderr)")
        // vimc takes widths in its own steps: the adjustment is reported, not hidden.
        let size = VirtualBoard.vimcSize(640, 480)
        #expect(size == (640, 480) || result.stderr.contains("size 640x480 → \(size.width)x\(size.height)"))
        #expect(result.stdout.contains("CPU copies per frame 1.00")) // BGR888 → yuv420p, counted

        let video = try ProbedVideo.read(packageRoot + "/" + clip)
        #expect(video.codec == "h264")
        #expect(video.width == size.width && video.height == size.height)
        #expect(video.isMonotonic)
        // What the camera delivered in this run, not a rate assumed: every
        // frame the recorder took is in the file, and the file's own frame
        // times span the three seconds asked for.
        let summary = try #require(RecordingSummary.find(in: result.stdout), "\(result.stdout)")
        // (Two at least: the Debian 13 boards' vimc gives about 1.5 a second.)
        #expect(video.frameCount >= 2 && video.frameCount == summary.frames, "\(summary.line)")
        // The recording ended on the camera's clock at three seconds: never
        // more; and all of them in the file when the recorder kept up (a
        // starved one drops frames, the last ones too, and says so).
        #expect(summary.line.hasSuffix("finished: maximum duration reached"), "\(summary.line)")
        let interval = 1 / video.measuredFrameRate
        let span = (video.frameTimes.last ?? 0) - (video.frameTimes.first ?? 0) + interval
        #expect(span <= 3 + interval + 0.05, "the file spans \(span) s of frames \(interval) s apart; 3 s were asked for")
        // (The progress lines count every drop, those after the last frame too.)
        let droppedAny = summary.dropped > 0 || result.stderr.range(of: "dropped [1-9]", options: .regularExpression) != nil
        if !droppedAny {
            let said = result.stderr.split(separator: "\n").suffix(12).joined(separator: "\n")
            #expect(abs(span - 3) <= interval + 0.05, "the file spans \(span) s of frames \(interval) s apart; 3 s were asked for: \(summary.line)\n\(said)")
        }
        #expect(!FileManager.default.fileExists(atPath: packageRoot + "/" + clip + ".partial"))
    }

    @Test func badCameraRequestsListWhatIsAvailable() throws {
        let result = try VirtualBoard.run(scenario: "Board/badCameraRequestsListWhatIsAvailable")
        #expect(result.status == 0, "\(result.stderr)")
        #expect(!result.stdout.contains("status=0"))
        #expect(result.stdout.components(separatedBy: "status=1").count == 4)
        #expect(result.stderr.contains("no camera with id \"nope\"; available: \"platform/vimc.0 Sensor B\""))
        #expect(result.stderr.contains("does not offer 8000x8000"))
        #expect(result.stderr.contains("48x48 to 4096x2160"))
        #expect(result.stderr.contains("does not offer pixel format NV12; available: BGR888, RGB888"))
    }

    /// The board's second camera (board/virtual/second-camera: a second vimc
    /// device, bound by the same driver) is listed beside the first, and each
    /// records by its id while the other does: every frame its camera gave
    /// is in its file.
    @Test func twoCamerasEachRecordByTheirId() throws {
        let folder = ".build/board-two-cameras-\(getpid())"
        try FileManager.default.createDirectory(atPath: packageRoot + "/" + folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: packageRoot + "/" + folder) }
        let result = try VirtualBoard.run(scenario: "Board/twoCamerasEachRecordByTheirId", [folder], timeout: 400)
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.contains("camera \"platform/vimc.0 Sensor B\"\ncamera \"platform/vimc.1 Sensor B\""), "\(result.stdout)")
        for name in ["first", "second"] {
            let said = (try? String(contentsOfFile: "\(packageRoot)/\(folder)/\(name).out", encoding: .utf8)) ?? ""
            let errors = (try? String(contentsOfFile: "\(packageRoot)/\(folder)/\(name).err", encoding: .utf8)) ?? ""
            #expect(result.stdout.contains("\(name) status=0"), "\(name): \(errors)")
            let summary = try #require(RecordingSummary.find(in: said), "\(name): \(said)\(errors)")
            let video = try ProbedVideo.read("\(packageRoot)/\(folder)/\(name).mp4")
            #expect(video.codec == "h264" && video.isMonotonic, "\(name)")
            #expect(video.frameCount >= 2 && video.frameCount == summary.frames, "\(name): \(summary.line)")
        }
        #expect(((try? String(contentsOfFile: "\(packageRoot)/\(folder)/second.err", encoding: .utf8)) ?? "").contains("platform/vimc.1 Sensor B"))
    }

    @Test func aGPIOInputIsReadBackWithBothEdges() throws {
        // The watcher runs in the background; the test pulls the simulated line
        // up then down once the watcher says it holds the line.
        let result = try VirtualBoard.run(scenario: "Board/aGPIOInputIsReadBackWithBothEdges")
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        let lines = result.stdout.split(separator: "\n").map(String.init)
        #expect(lines.first?.hasPrefix("ready obscura-sim/record-button") == true)
        let edges = lines.filter { $0.hasPrefix("edge ") }
        #expect(edges.count == 2)
        #expect(edges.first?.hasPrefix("edge rising") == true)
        #expect(edges.last?.hasPrefix("edge falling") == true)
        let stamps = edges.compactMap { $0.split(separator: " ").last.flatMap { UInt64($0) } }
        #expect(stamps.count == 2 && stamps[1] > stamps[0] + 200_000_000, "kernel timestamps \(stamps)")
    }

    @Test func aHungGuestIsReportedWithWhatItWaitsOn() throws {
        let result = try runProgram(VirtualBoard.runner, ["--timeout", "5", "--", "sleep", "600"], cwd: packageRoot,
                                    environment: VirtualBoard.ledgerEnvironment)
        #expect(result.status == 124)
        // 5 s, or more on a board slowed on purpose (the bound grows with it).
        let said = result.stderr.components(separatedBy: "the command timed out after ").dropFirst().first?.split(separator: " ").first
        #expect((said.flatMap { Int($0) } ?? 0) >= 5, "\(result.stderr)")
        #expect(result.stderr.contains("sleep state=S wchan=hrtimer_nanosleep"))
    }
}
}

extension VirtualBoardTests {
/// Buttons on gpio-sim: bouncing contacts and spikes, through the Swift
/// button (software debounce on libgpiod 1.6) and through the shim built
/// against libgpiod v1 and v2 (the kernel debounces for v2).
@Suite struct ButtonBoardTests {
    @Test func chatteringPressesGiveOnePressEachAndSpikesNone() throws {
        let result = try VirtualBoard.run(scenario: "Board/chatteringPressesGiveOnePressEachAndSpikesNone", timeout: 900)
        let lines = result.stdout.split(separator: "\n")
        #expect(lines.contains("status=0"), "\(result.stdout)\(result.stderr)")
        // libgpiod 1 (Debian 12) has no kernel debounce: the button debounces
        // in software; with libgpiod 2 (Debian 13) the kernel does it.
        let debouncer = VirtualBoard.suite == "bookworm" ? "libgpiod-v1 debounced-by=software" : "libgpiod-v2 debounced-by=kernel"
        #expect(lines.first { $0.hasPrefix("ready") }?.contains(debouncer) == true, "\(result.stdout)")
        #expect(lines.filter { $0.hasPrefix("press ") }.count == 12, "\(result.stdout)")
        #expect(lines.filter { $0.hasPrefix("release ") }.count == 12, "\(result.stdout)")
    }

    @Test func aHeldButtonIsALongPressAndAQuickOneShort() throws {
        let result = try VirtualBoard.run(scenario: "Board/aHeldButtonIsALongPressAndAQuickOneShort", timeout: 200)
        let lines = result.stdout.split(separator: "\n").map(String.init)
        #expect(lines.contains("status=0"), "\(result.stdout)\(result.stderr)")
        let events = lines.filter { $0.hasPrefix("press ") || $0.hasPrefix("release") || $0.hasSuffix(" press") }
            .map { $0.split(separator: " ").prefix(2).joined(separator: " ") }
        // Held five seconds (long press at three): long press while still down,
        // no short press; then a quick one, a short press, unless the board
        // was so starved that it was in fact held three seconds: the hold the
        // button measured says which.
        let held = lines.last { $0.hasPrefix("release held=") }
            .flatMap { Double($0.dropFirst("release held=".count).split(separator: " ").first ?? "") } ?? 0
        let second = held < 3 ? ["press 2", "release held=", "short press"] : ["press 2", "long press", "release held="]
        #expect(events.count == 6 && events[0] == "press 1" && events[1] == "long press" && events[2].hasPrefix("release held=")
                && events[3] == second[0] && events[4].hasPrefix(second[1]) && events[5].hasPrefix(second[2]), "\(events)\n\(result.stdout)")
    }

    @Test(arguments: [1, 2])
    func theShimDebouncesInTheKernelWithLibgpiodV2(api: Int) throws {
        let check = ".build/library-versions/gpio-shim-check-v\(api)"
        try #require(FileManager.default.isExecutableFile(atPath: packageRoot + "/" + check), "run Tests/check-library-versions first")
        let result = try VirtualBoard.run(scenario: "Board/theShimDebouncesInTheKernelWithLibgpiodV2", [check], timeout: 200)
        let out = result.stdout
        #expect(out.contains("status=0"), "\(out)\(result.stderr)")
        #expect(out.contains("led=1"))  // the output line is driven
        #expect(out.contains("api=\(api) debounced=\(api == 2 ? 1 : 0)"))
        let counts = out.split(separator: "\n").first { $0.hasPrefix("rising=") }.map { line in
            line.split(separator: " ").compactMap { $0.split(separator: "=").last.flatMap { Int($0) } }
        } ?? []
        #expect(counts.count == 2, "\(out)")
        if api == 2 {
            // The kernel's debounce (10 ms): one edge per press and release,
            // nothing for spikes, unless the board was so starved that a spike
            // or a bounce lasted the period (gpio-sim says how long each took):
            // that is a press, and counted as one.
            let stretched = out.split(separator: "\n").filter { $0.hasPrefix("span_us=") }
                .filter { Int($0.dropFirst("span_us=".count)).map { $0 >= 10_000 } ?? true }.count
            #expect(counts.count == 2 && counts.allSatisfy { (10...10 + stretched).contains($0) }, "\(out)")
        } else {
            // Raw edges: every press and release, and whatever bounces the
            // kernel saw apart (the Swift button debounces those).
            #expect((counts.first ?? 0) >= 10 && (counts.last ?? 0) >= 10, "\(out)")
        }
    }
}
}
