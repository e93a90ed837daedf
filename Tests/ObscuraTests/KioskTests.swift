import Foundation
import Logging
import ObscuraFormats
import Testing
import TestSupport
@testable import ObscuraService
import ObscuraSystem

/// A kiosk of several cameras (`[cameras.NAME]`): each records its own
/// files at the same press, one missing camera leaves the others recording,
/// and the configuration refuses what cannot be.
@Suite(.serialized) struct KioskTests {
    /// Two test-pattern cameras, `front` and `back` (`back` with `backID`).
    private func kiosk(_ name: String, backID: String = "synthetic:1", segments: Int = 0, start: String = "button") throws -> (Kiosk, folder: String) {
        let folder = scratchPath("kiosk", name)
        try? FileManager.default.removeItem(atPath: folder)
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let path = try PatternService.writeConfiguration(in: folder, recording: "segment_seconds = \(segments)\nstart = \"\(start)\"", tables: """
            [cameras.front]
            id = "synthetic"
            [cameras.back]
            id = "\(backID)"
            frame_rate = 15
            """)
        let configuration = try ServiceConfiguration.load(path)
        let profile = try BoardProfile.load(configuration.board, from: configuration.file)
        return (try Kiosk(configuration: configuration, profile: profile, logger: Logger(label: "kiosk")), folder)
    }

    /// `body` with a started kiosk (`kiosk(…)`'s), shut down after it; then
    /// waits until the kiosk and its cameras are gone (their threads
    /// joined), so that nothing of one test runs on into the next.
    private func with(_ name: String, backID: String = "synthetic:1", segments: Int = 0, start: String = "button",
                      _ body: (Kiosk, String) async throws -> Void) async throws {
        var (made, folder): (Kiosk?, String) = try kiosk(name, backID: backID, segments: segments, start: start)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try await made!.start()
        try await body(made!, folder)
        await made!.shutdown()
        weak var kiosk = made, first = made!.members.first?.service, second = made!.members.last?.service
        made = nil
        #expect(await waitUntil(within: .seconds(10)) { kiosk == nil && first == nil && second == nil },
                "the kiosk or one of its cameras' services lived on after the shutdown")
    }

    private func reply(_ line: String) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any] ?? [:]
    }

    private func frames(_ file: String) throws -> (Int, String) {
        let probe = try runProgram("ffprobe", ["-v", "error", "-select_streams", "v:0", "-count_frames",
                                               "-show_entries", "stream=nb_read_frames", "-of", "csv=p=0", file])
        return (Int(probe.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1, probe.stdout + probe.stderr)
    }

    @Test func oneRecordCommandRecordsEveryCameraInItsOwnFilesFromThePress() async throws {
        try await with("together") { kiosk, _ in
            let started = reply(await kiosk.command("record start"))
            #expect(started["ok"] as? Bool == true, "\(started)")
            let status = { await kiosk.currentStatus() }
            var now = await status()
            for _ in 0..<3000 where (now.cameras ?? []).contains(where: { $0.status.frames < 10 }) {
                try await Task.sleep(for: .milliseconds(10))
                now = await status()
            }
            let cameras = try #require(now.cameras)
            #expect(now.state == "recording" && cameras.map(\.name) == ["front", "back"], "\(now.state) \(cameras.map(\.name))")
            // Each file begins with the frame its camera had in flight at the
            // press or the one after (never one from before: no pre-record).
            let pressed = try #require(now.recordPressed)
            let zeros = cameras.compactMap(\.status.recordingTimeZero)
            let intervals = cameras.map { 1 / ($0.status.cameraFrameRate ?? 1) }
            #expect(zeros.count == 2 && zip(zeros, intervals).allSatisfy { $0 > pressed - $1 }, "press \(pressed), first frames \(zeros)")
            let skew = try #require(now.startSkewMilliseconds)
            #expect(abs(skew - abs(zeros[0] - zeros[1]) * 1000) < 0.001)
            let files = cameras.compactMap(\.status.file)
            #expect(files.count == 2 && files[0].hasSuffix("-front.mp4") && files[1].hasSuffix("-back.mp4"), "\(files)")
            // The metrics: every family once, each camera under its label.
            var m = MetricsText()
            for c in cameras {
                m.labels = [("camera", c.name)]
                c.status.addMetrics(to: &m)
            }
            #expect(m.text.components(separatedBy: "# TYPE obscura_frames_total ").count == 2, "\(m.text.prefix(400))")
            #expect(m.text.contains("obscura_frames_total{camera=\"back\"}"))
            // One camera alone by name; a name that is not there is said.
            let unknown = reply(await kiosk.command("camera side record stop"))
            #expect((unknown["message"] as? String)?.contains("front, back") == true, "\(unknown)")
            let stopped = reply(await kiosk.command("camera back record stop"))
            #expect(stopped["ok"] as? Bool == true, "\(stopped)")
            #expect((await status()).cameras?.map(\.status.state) == ["recording", "idle"])
            _ = await kiosk.command("record stop")
            let finished = (await status()).cameras?.compactMap(\.status.lastRecording) ?? []
            #expect(finished.count == 2)
            for (file, camera) in zip(finished, cameras) {
                let (counted, said) = try frames(file)
                #expect(counted >= camera.status.frames && counted > 0, "\(file): \(counted) frames, its camera had \(camera.status.frames) when looked at: \(said)")
            }
        }
    }

    /// Every camera's segments are cut on one grid: the press that started
    /// the first, plus whole segment lengths; a camera started later cuts
    /// at the same instants (its first segment short), each at its camera's
    /// first frame from there, whatever the rates.
    @Test func segmentsOfEveryCameraAreCutAtTheSameInstants() async throws {
        try await with("segments", segments: 1) { kiosk, folder in
            _ = await kiosk.command("camera front record start")
            var now = await kiosk.currentStatus()
            for _ in 0..<3000 where (now.cameras?.first?.status.frames ?? 0) < 10 {
                try await Task.sleep(for: .milliseconds(10))
                now = await kiosk.currentStatus()
            }
            _ = await kiosk.command("camera back record start")
            try await expectSegmentsOnTheGrid(kiosk, folder)
        }
    }

    /// Recording from power-on: the grid is the service's start.
    @Test func camerasRecordingFromPowerOnCutTheirSegmentsTogether() async throws {
        try await with("power-on", segments: 1, start: "power-on") { kiosk, folder in
            try await expectSegmentsOnTheGrid(kiosk, folder)
        }
    }

    /// Once every camera has finished a segment: each first segment ended
    /// at the grid's first instant after its start, within its frame interval.
    private func expectSegmentsOnTheGrid(_ kiosk: Kiosk, _ folder: String) async throws {
        var now = await kiosk.currentStatus()
        for _ in 0..<3000 where (now.cameras ?? []).contains(where: { $0.status.recordings < 1 || $0.status.recordingTimeZero == nil }) {
            try await Task.sleep(for: .milliseconds(10))
            now = await kiosk.currentStatus()
        }
        let cameras = try #require(now.cameras)
        let pressed = try #require(now.recordPressed)
        _ = await kiosk.command("record stop")
        let files = try FileManager.default.contentsOfDirectory(atPath: folder + "/rec")
        for camera in cameras {
            let zero = try #require(camera.status.recordingTimeZero)
            let interval = 1 / (camera.status.cameraFrameRate ?? 1)
            let first = try #require(files.first { $0.hasSuffix("-\(camera.name)-0001.mp4") }, "\(files)")
            // Its last video frame, by its own time (the marks' text track
            // may run on past it; a loaded machine's frames are not evenly spaced).
            let probe = try runProgram("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries", "packet=pts_time",
                                                   "-of", "csv=p=0", folder + "/rec/" + first])
            let last = try #require(probe.stdout.split(whereSeparator: \.isNewline).compactMap { Double($0.trimmingCharacters(in: .whitespaces)) }.max(),
                                    "\(probe.stderr)")
            // The segment ends at the grid's first instant after its start:
            // its last frame is before it (the next file's first at or after
            // it), and it was cut there, not early.
            let grid = pressed + (max(0, zero - pressed).rounded(.down) + 1)
            let lastFrame = zero + last
            #expect(lastFrame < grid && lastFrame > grid - 0.5,
                    "\(camera.name): begun \(zero - pressed) s after the press, its first segment's last frame \(lastFrame - pressed) s after it (frames every \(interval) s)")
        }
    }

    @Test func aCameraThatIsNotThereLeavesTheOthersRecordingAndSaysWhich() async throws {
        try await with("missing", backID: "platform/nowhere Sensor Z") { kiosk, _ in
            let started = reply(await kiosk.command("record start"))
            #expect(started["ok"] as? Bool == true, "\(started)")
            #expect((started["message"] as? String)?.contains("back: not recording") == true, "\(started)")
            let now = await kiosk.currentStatus()
            #expect(now.state == "recording")
            let back = try #require(now.cameras?.last)
            #expect(back.status.state == "error" && back.status.lastError?.contains("platform/nowhere Sensor Z") == true,
                    "\(back.status.state): \(back.status.lastError ?? "")")
            _ = await kiosk.command("record stop")
            #expect((await kiosk.currentStatus()).cameras?.first?.status.lastRecording?.hasSuffix("-front.mp4") == true)
        }
    }

    @Test(arguments: [
        ("[cameras.a]\nid = \"x\"\n[cameras.b]\nid = \"x\"\n", "cameras.b.id", "already [cameras.a]"),
        ("[cameras.Door]\nid = \"x\"\n", "cameras.Door", "a-z, 0-9 and _"),
        ("[cameras.a]\nsize = \"640x480\"\n", "cameras.a.id", "required"),
        ("[cameras.a]\nid = \"x\"\nrecord_button = \"G1\"\n[cameras.b]\nid = \"y\"\nrecord_button = \"G1\"\n", "cameras.b.record_button", "record button"),
        ("[cameras.a]\nid = \"x\"\nlens = 2\n", "cameras.a.lens", "unknown"),
    ])
    func aWrongCameraTableNamesItsKey(text: String, key: String, says: String) throws {
        let error = try #require(thrown {
            let reader = TOMLReader(try TOMLDocument(file: "c.toml", text: text))
            _ = try ServiceConfiguration(reading: reader, file: "c.toml")
        })
        #expect("\(error)".contains(key) && "\(error)".lowercased().contains(says.lowercased()), "\(error)")
    }

    @Test func theCostCountsEveryCamera() throws {
        let reader = TOMLReader(try TOMLDocument(file: "c.toml", text: """
            [cameras.counter]
            id = "a"
            size = "1920x1080"
            [cameras.room]
            id = "b"
            size = "1920x1080"
            """))
        let configuration = try ServiceConfiguration(reading: reader, file: "c.toml")
        let profile = try BoardProfile.load("pi4b", from: "c.toml")
        let cost = try #require(profile.cost(of: configuration))
        #expect(cost.cameras.map(\.name) == ["counter", "room"] && !cost.fits, "\(cost.cameras)")
        let one = try #require(profile.cost(of: ServiceConfiguration()))
        #expect(one.cameras.count == 1 && abs(cost.encoderShare - 2 * one.encoderShare) < 1e-9)
    }
}
