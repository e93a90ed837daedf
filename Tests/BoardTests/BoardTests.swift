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
        let result = try VirtualBoard.run("""
            \(obscura) record --duration 1 --output x.mp4 --camera nope; echo "status=$?"
            \(obscura) record --duration 1 --output x.mp4 --size 8000x8000; echo "status=$?"
            \(obscura) record --duration 1 --output x.mp4 --pixel-format NV12; echo "status=$?"
            """)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(!result.stdout.contains("status=0"))
        #expect(result.stdout.components(separatedBy: "status=1").count == 4)
        #expect(result.stderr.contains("no camera with id \"nope\"; available: \"platform/vimc.0 Sensor B\""))
        #expect(result.stderr.contains("does not offer 8000x8000"))
        #expect(result.stderr.contains("48x48 to 4096x2160"))
        #expect(result.stderr.contains("does not offer pixel format NV12; available: BGR888, RGB888"))
    }

    @Test func aGPIOInputIsReadBackWithBothEdges() throws {
        // The watcher runs in the background; the test pulls the simulated line
        // up then down once the watcher says it holds the line.
        let result = try VirtualBoard.run("""
            \(obscura) gpio watch --chip obscura-sim --line record-button --count 2 --timeout 60 > watch.out 2>&1 &
            watcher=$!
            . board/virtual/waiting.sh
            watching() { grep -q ready watch.out; }; wait_for 60 "the watcher to hold the line" watching
            gpio-sim press record-button; sleep 0.3; gpio-sim release record-button
            wait $watcher; status=$?
            cat watch.out; rm -f watch.out; exit $status
            """)
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
        let result = try VirtualBoard.run("""
            export PATH=$PATH:$(pwd)/board/virtual
            .build/debug/obscura gpio button --chip obscura-sim --line photo-button --count 12 --timeout 3600 > b.out 2>&1 &
            p=$!
            . board/virtual/waiting.sh
            button_ready() { grep -q ready b.out; }; wait_for 60 "the button to hold its line" button_ready
            for i in $(seq 5); do gpio-sim glitch photo-button; sleep 0.1; done
            for i in $(seq 12); do
                gpio-sim chatter photo-button 1 $((RANDOM % 6)); sleep 0.1
                gpio-sim chatter photo-button 0 $((RANDOM % 6)); sleep 0.1
            done
            # Counted from the last release, not from the start: each chatter
            # is processes started on the board (12 s a press on an emulated
            # arm64 board beside a build), so the presses' own pace sets the
            # wait, and a press lost ends it here, not at a timeout.
            counted() { ! kill -0 $p 2> /dev/null; }
            wait_for 30 "the button to count its 12 presses" counted || kill $p
            wait $p; echo "status=$?"; cat b.out; rm -f b.out
            """, timeout: 900)
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
        let result = try VirtualBoard.run("""
            export PATH=$PATH:$(pwd)/board/virtual
            .build/debug/obscura gpio button --chip obscura-sim --line record-button --count 2 --long-press 3000 --timeout 120 > b.out 2>&1 &
            p=$!
            . board/virtual/waiting.sh
            button_ready() { grep -q ready b.out; }; wait_for 60 "the button to hold its line" button_ready
            gpio-sim press record-button; sleep 5; gpio-sim release record-button
            sleep 0.5
            # The quick one by the shell's own writes (a gpio-sim per edge
            # took seconds on a starved board).
            pull=$(dirname "$(gpio-sim value-file record-button)")/pull
            echo pull-up > "$pull"; sleep 0.1; echo pull-down > "$pull"
            wait $p; echo "status=$?"; cat b.out; rm -f b.out
            """, timeout: 200)
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
        let result = try VirtualBoard.run("""
            export PATH=$PATH:$(pwd)/board/virtual
            \(check) obscura-sim flash-button flash-led 150 10 > c.out 2>&1 &
            p=$!
            . board/virtual/waiting.sh
            shim_ready() { grep -q ready c.out; }; wait_for 60 "the shim to hold its lines" shim_ready
            echo "led=$(gpio-sim get flash-led)"
            for i in $(seq 3); do gpio-sim glitch flash-button; sleep 0.1; done
            for i in $(seq 10); do
                gpio-sim chatter flash-button 1 3; sleep 0.1
                gpio-sim chatter flash-button 0 3; sleep 0.1
            done
            wait $p; echo "status=$?"; cat c.out; rm -f c.out
            """, timeout: 200)
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
