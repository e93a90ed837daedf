import Foundation
import Testing
import TestSupport
import ObscuraControl

extension VirtualBoardTests {
/// The recorder as a kiosk runs it: systemd as init, Obscura installed by
/// deploy/install and enabled, buttons and LEDs on gpio-sim, vimc as camera.
@Suite struct ServiceBoardTests {


    @Test func theServiceStartsAtBootRecordsOnTheButtonAndSurvivesAKill() throws {
        let result = try KioskBoard.board.result(of: "service-boot")
        let out = result.stdout
        let lines = out.split(separator: "\n").map(String.init)
        #expect(lines.contains("active=active"), "\(out)\(result.stderr)")
        #expect(lines.contains("led-idle=0"))
        #expect(lines.contains("led-recording=1"))
        #expect(lines.contains("status: state: recording"))
        #expect(lines.contains("led-stopped=0"))
        let files = lines.filter { $0.hasPrefix("file=") }
        #expect(files.count == 1, "\(files)")
        let frames = files.first.flatMap { $0.split(separator: "=").last.flatMap { Int($0) } } ?? 0
        // Every frame the service said it recorded plays (the Debian 13
        // boards' vimc gives about 1.5 a second: a few frames in 4 s).
        let finished = lines.first { $0.hasPrefix("journal: obscura: recording finished: ") }
        let said = finished.flatMap { line in
            let words = line.split(separator: " ")
            return words.firstIndex(of: "frames,").flatMap { Int(words[$0 - 1]) }
        }
        #expect(frames >= 2 && said == frames, "the button's recording plays \(frames) frames: \(finished ?? "no finish line")")
        let photos = lines.filter { $0.hasPrefix("photo=") }
        let size = VirtualBoard.vimcSize(320, 240)  // the board profile's size
        #expect(photos.count == 1 && photos.first?.contains("Obscura \(size.width)x\(size.height)") == true, "\(photos)")
        #expect(out.contains("journal: obscura: photo /var/lib/obscura/photos/"))
        // The configured microphone (the loopback) under the service's sandbox: a second track.
        #expect(lines.contains("audio-config=1"), "\(out)")
        #expect(out.contains("journal: obscura: audio from hw:CARD=Loopback,DEV=1: 48000 Hz, mono, s16, aac at 96 kbit/s"), "\(out)")
        // Video, sound and the marks' timed text track (picture health).
        #expect(lines.contains("streams=h264,video aac,audio mov_text,subtitle "), "\(out)")
        // The profile asks for the hardware encoder first: vicodec has no H.264, so libx264, and the log says why.
        #expect(out.contains("journal: obscura: encoder libx264; frames converted"), "\(out)")
        #expect(out.contains("[software encoder libx264 (libavcodec); hardware: no V4L2 memory-to-memory encoder makes h264"))
        #expect(lines.contains("nobody-status=1"))
        #expect(lines.contains("socket=660:obscura dir=750:obscura"))
        #expect(lines.contains("flash-led=1"))  // auto → on: steady
        #expect(lines.contains("restarts=1 active=active"))
        #expect(out.contains("journal: obscura: recovered an interrupted recording"))
        #expect(lines.contains("usr1-state:recording"))
        #expect(lines.contains("usr1-again-state:idle"))
        let before = Set(lines.filter { $0.hasPrefix("pre-kill=") }.map { String($0.dropFirst("pre-kill=".count)) })
        #expect(before.count == 2)  // the button's recording and SIGUSR1's
        let recovered = lines.filter { line in
            line.hasPrefix("after-kill=") && !before.contains(String(line.dropFirst("after-kill=".count).split(separator: " ")[0]))
        }
        #expect(recovered.count == 1, "\(recovered)")
        let killedFrames = recovered.first.flatMap { $0.split(separator: "=").last.flatMap { Int($0) } } ?? 0
        let onDisk = lines.first { $0.hasPrefix("frames-on-disk-at-kill=") }.flatMap { $0.split(separator: "=").last.flatMap { Int($0) } } ?? 0
        #expect(onDisk >= 5, "the recording's file held \(onDisk) frames before the kill")
        // What the file held is all kept; the frames still being written may
        // be gone, but the recovered recording plays at least those.
        #expect(killedFrames >= onDisk, "the killed recording plays \(killedFrames) frames; \(onDisk) were on disk")
        #expect(!out.contains(".partial"))
        // Priorities: what happened is a notice, how it was done is info; the prefix never shows.
        #expect(lines.contains { $0.hasPrefix("notice: obscura: ready: ") }, "\(out)")
        #expect(lines.contains { $0.hasPrefix("notice: obscura: recording finished: ") })
        #expect(lines.contains { $0.hasPrefix("notice: obscura: recovered an interrupted recording") })
        #expect(lines.contains { $0.hasPrefix("info: obscura: encoder libx264") })
        // (The encoder's choice is info; its retuning to a frame interval a
        // loaded board measured is a notice of its own: "encoder NAME: frames every …".)
        #expect(!lines.contains { $0.hasPrefix("info: obscura: ready") || ($0.hasPrefix("notice: obscura: encoder ") && $0.contains("; frames ")) },
                "\(lines.filter { $0.hasPrefix("info: obscura: ready") || $0.hasPrefix("notice: obscura: encoder") })")
        #expect(!out.contains("journal: <"))
        // `man obscura`, `man obscura.toml` and `obscura re<TAB>` find what the install laid out.
        #expect(lines.contains("manual=0 OBSCURA(1) 1"), "\(out)")
        #expect(lines.contains("manual=0 OBSCURA.TOML(5) 1"), "\(out)")
        #expect(lines.contains("completion=record"), "\(out)")
    }

    @Test func theServiceShowsThePreviewAndStillRecords() throws {
        let result = try KioskBoard.board.result(of: "service-preview")
        let lines = result.stdout.split(separator: "\n").map(String.init)
        #expect(lines.contains("status: preview: showing on /dev/dri/card0 (vkms) Virtual-1 1024x768@60"), "\(result.stdout)\(result.stderr)")
        #expect(lines.contains("journal: obscura: preview on /dev/dri/card0 (vkms) Virtual-1 1024x768@60"))
        let frames = lines.first { $0.hasPrefix("file=") }.flatMap { $0.split(separator: "=").last.flatMap { Int($0) } } ?? 0
        // Four seconds of recording beside the preview, every frame the service
        // says it recorded in the file: two at least prove the path ran (a
        // starved board dropped 67 of 70 and kept 3, and said so).
        let finished = lines.first { $0.hasPrefix("journal: ") && $0.contains("recording finished") }
        let said = finished.flatMap { line in
            let words = line.split(separator: " ")
            return words.firstIndex(of: "frames,").flatMap { Int(words[$0 - 1]) }
        }
        #expect(frames >= 2 && said == frames, "the recording beside the preview plays \(frames) frames: \(finished ?? "no finish line")")
    }
}
}

extension VirtualBoardTests {
/// Photos while recording, from the service's buttons: each photo may cost
/// the recording at most what the recorder's queue holds (its capacity, which
/// the session says), beyond what the emulated board drops on its own. The
/// service says, for each photo, how long it took and how many frames the
/// recorder dropped meanwhile; the board's own rate of drops is measured in
/// the same recording outside the photos (it grows on a loaded machine), and
/// a photo may cost its queue's capacity plus what that rate gives over its
/// own length. The board's drops come by chance, in bursts (a rate of 2.4 a
/// second once gave 5 in a photo of 0.7 s), so they are counted as chance
/// events are: their mean over the photo's length and three standard
/// deviations (a Poisson count's, the square root of its mean). A photo that
/// held up the recorder for its length would cost every frame of it.
/// The recording is small (160x120), where the emulated camera and recorder
/// keep up. Each step waits for the service to say it happened.
@Suite struct PhotoWhileRecordingBoardTests {
    @Test func photosDuringARecordingCostNoMoreThanTheRecordersQueue() throws {
        let result = try VirtualBoard.run(scenario: "Service/photosDuringARecordingCostNoMoreThanTheRecordersQueue", timeout: 300)
        let out = result.stdout
        let lines = out.split(separator: "\n").map(String.init)
        #expect(!out.contains("timed out waiting"), "\(out)")
        #expect(lines.filter { $0.hasPrefix("photo-file ") && $0.hasSuffix(".jpg") }.count == 3, "\(out)\(result.stderr)")
        // photo.raw on a camera without a raw stream (vimc): said once at start and with each photo, JPEG only.
        #expect(lines.filter { $0.contains("the camera offers no raw stream") }.count == 1, "\(out)")
        #expect(lines.filter { $0.contains("photo.raw is set but the camera has no raw stream: JPEG only") }.count == 3, "\(out)")
        #expect(!lines.contains { $0.hasPrefix("photo-file ") && $0.hasSuffix(".dng") })
        // The recorder's queue capacity, as the session set it from the camera's buffers.
        let capacity = try #require(lines.lazy.compactMap { line -> Int? in
            guard let r = line.range(of: "an output queue holds ") else { return nil }
            return Int(line[r.upperBound...].prefix { $0.isNumber })
        }.first, "\(out)")
        // "…, the recording dropped N frames in the T ms it took"
        let costs = lines.filter { $0.contains("obscura: photo /tmp") }.compactMap { line -> (drops: Int, seconds: Double)? in
            guard let r = line.range(of: "the recording dropped ") else { return nil }
            let words = line[r.upperBound...].split(separator: " ")
            guard words.count > 4, let drops = Int(words[0]), let ms = Double(words[4]) else { return nil }
            return (drops, ms / 1000)
        }
        #expect(costs.count == 3, "each photo says what it cost the recording: \(out)")
        // "recording finished: PATH, F frames, S s, dropped D, …"
        let finished = try #require(lines.first { $0.contains("recording finished") }, "\(out)")
        let words = finished.split(separator: " ")
        let length = try #require(words.firstIndex(of: "s,").flatMap { Double(words[$0 - 1]) }, "\(finished)")
        let dropped = try #require(words.firstIndex(of: "dropped").flatMap { Int(words[$0 + 1].trimmingCharacters(in: .punctuationCharacters)) }, "\(finished)")
        let outside = max(0.001, length - costs.reduce(0) { $0 + $1.seconds })
        let ownRate = Double(max(0, dropped - costs.reduce(0) { $0 + $1.drops })) / outside
        for cost in costs {
            let chance = ownRate * cost.seconds
            let allowed = capacity + Int((chance + 3 * chance.squareRoot()).rounded(.up))
            #expect(cost.drops <= allowed, "a photo of \(cost.seconds) s cost the recording \(cost.drops) frames; its queue holds \(capacity), the board drops \(ownRate) per second on its own (\(allowed) allowed)")
        }
        // Every frame the service says it recorded plays.
        let frames = lines.first { $0.hasPrefix("frames=") }.flatMap { Int($0.dropFirst(7)) } ?? 0
        let said = words.firstIndex(of: "frames,").flatMap { Int(words[$0 - 1]) }
        #expect(frames >= 5 && said == frames, "the recording plays \(frames) frames: \(finished)")
    }
}
}

extension VirtualBoardTests {
/// A recorder that cannot keep up with its camera: the service on the
/// emulated board with the test pattern at 1280x720 and 30 fps through
/// libx264's medium preset. What it dropped is read from the run; given
/// drops, the camera must have been stepped down, said in the journal,
/// `obscura status` and the metrics, and the recording kept whole. vimc has
/// no frame-rate control: there the recording steps down by leaving frames
/// out evenly, counted apart from drops.
@Suite struct PaceBoardTests {
    enum Camera: String, CaseIterable, Sendable { case pattern, vimc }

    @Test(arguments: Camera.allCases)
    func aRecorderThatCannotKeepUpStepsTheCameraDown(camera: Camera) throws {
        let who = camera == .pattern ? "the camera steps down from 30 to "
            : "the recording steps (frames left out evenly: the camera has no frame-rate control) down from 30 to "
        let result = try VirtualBoard.run(scenario: "Service/aRecorderThatCannotKeepUpStepsTheCameraDown", [camera.rawValue], timeout: 400)
        let out = result.stdout
        let lines = out.split(separator: "\n").map(String.init)
        #expect(!out.contains("gave up after"), "\(out)\(result.stderr)")
        // The recorder was behind: it dropped frames (read from the run, not assumed).
        let finished = try #require(lines.first { $0.hasPrefix("log: ") && $0.contains("recording finished: ") }, "\(out)")
        let words = finished.split(separator: " ")
        let dropped = words.firstIndex(of: "dropped").flatMap { Int(words[$0 + 1].trimmingCharacters(in: .punctuationCharacters)) } ?? 0
        let said = words.firstIndex(of: "frames,").flatMap { Int(words[$0 - 1]) }
        try #require(dropped > 0, "the recorder kept up with 720p30 through x264's medium preset on the emulated board; nothing to step down: \(finished)")
        // So the camera was stepped down, and every place says so.
        let step = try #require(lines.first { $0.contains("the recorder is behind its camera (") && $0.contains(who) }, "\(out)")
        #expect(lines.contains { $0.hasPrefix("status: camera rate: ") && $0.contains("of 30 configured (stepped down: the recorder could not keep up; stepped down ") }, "\(out)")
        #expect(lines.contains("metric: obscura_configured_frame_rate 30"), "\(out)")
        #expect(lines.contains { $0.hasPrefix("metric: obscura_camera_frame_rate ") && (Double($0.split(separator: " ").last ?? "") ?? 30) < 30 }, "\(out)")
        #expect(lines.contains { $0.hasPrefix("metric: obscura_frame_rate_steps_total{direction=\"down\"} ") && !$0.hasSuffix(" 0") }, "\(out)")
        // The recording never stopped for it: one file, every frame it says it has.
        let frames = lines.filter { $0.hasPrefix("frames=") }.compactMap { Int($0.dropFirst(7)) }
        #expect(frames.count == 1 && frames.first == said, "\(frames) \(finished)")
        // What was left out for the pace is said apart from the drops (vimc's
        // only: the pattern camera is slowed itself).
        let thinned = words.firstIndex(of: "pace").flatMap { Int(words[$0 + 1].trimmingCharacters(in: .punctuationCharacters)) } ?? 0
        #expect((thinned > 0) == (camera == .vimc), "\(finished)")
        #expect(lines.contains { $0.hasPrefix("metric: obscura_paced_frames_total ") && !$0.hasSuffix(" 0") } == (camera == .vimc), "\(out)")
        print("PaceBoardTests (\(camera)): \(step.dropFirst(5)); \(finished.dropFirst(5))")
    }
}

/// A kiosk of the board's two cameras (vimc's own and board/virtual/second-camera):
/// the second not there at the start (the status and the doctor say which)
/// and joining when it comes; one command records both, each in its own
/// file from the press, each with its own live view; one camera taken away
/// mid-recording leaves the other's file whole.
@Suite struct TwoCameraKioskBoardTests {
    @Test func twoCamerasRecordTogetherAndOneLostLeavesTheOtherWhole() throws {
        let least = 4
        let result = try VirtualBoard.run(scenario: "Service/twoCamerasRecordTogether", ["\(least)"], timeout: 900)
        let out = result.stdout
        let lines = out.split(separator: "\n").map(String.init)
        #expect(result.status == 0, "\(out)\(result.stderr)")
        func status(_ prefix: String) throws -> ServiceStatus {
            let line = try #require(lines.first { $0.hasPrefix(prefix) }, "no \(prefix) in \(out)")
            return try JSONDecoder().decode(ServiceStatus.self, from: Data(line.dropFirst(prefix.count).utf8))
        }
        // Missing at the start: the front is ready, the back's status names the camera.
        let missing = try status("missing: ")
        #expect(missing.cameras?.first?.status.state == "idle", "\(out)")
        #expect(missing.cameras?.last?.status.state == "error"
                && missing.cameras?.last?.status.lastError?.contains("platform/vimc.1 Sensor B") == true, "\(out)")
        #expect(lines.contains { $0.hasPrefix("doctor: ") && $0.contains("camera back") && $0.contains("platform/vimc.1 Sensor B not listed") }, "\(out)")
        #expect(lines.contains { $0.hasPrefix("doctor: ") && $0.contains("camera front") && $0.contains("platform/vimc.0 Sensor B") && !$0.contains("not listed") }, "\(out)")
        // Together: both recording, each file begun with its camera's first
        // frame from the press (the one in flight at it, or a later one).
        let together = try status("together: ")
        let cameras = try #require(together.cameras, "\(out)")
        #expect(together.state == "recording" && cameras.map(\.status.state) == ["recording", "recording"], "\(out)")
        let pressed = try #require(together.recordPressed)
        for camera in cameras {
            let zero = try #require(camera.status.recordingTimeZero, "\(camera.name)")
            let interval = 1 / max(camera.status.framesPerSecond, 0.1)
            #expect(zero > pressed - interval, "\(camera.name): first frame \(zero - pressed) s after the press (frames every \(interval) s)")
            print("TwoCameraKioskBoardTests: \(camera.name) first frame \(String(format: "%.1f", (zero - pressed) * 1000)) ms after the press, frames every \(String(format: "%.1f", interval * 1000)) ms")
        }
        let skew = try #require(together.startSkewMilliseconds)
        print("TwoCameraKioskBoardTests: first frames \(String(format: "%.1f", skew)) ms apart")
        // Each live view came from its own camera (the service's journal names it).
        for (who, camera) in [("back", "back"), ("first", "front")] {
            let bytes = lines.first { $0.hasPrefix("live-\(who): ") }.flatMap { Int($0.split(separator: "=").last ?? "") } ?? 0
            #expect(bytes > 1000, "live-\(who): \(bytes) bytes: \(out)")
            #expect(lines.contains { $0.hasPrefix("log: ") && $0.contains("live view started: probe-\(who)") && $0.hasSuffix("camera=\(camera)") }, "\(out)")
        }
        // Apart: the back camera gone is its own error; the front records on.
        let apart = try status("apart: ")
        #expect(apart.state == "recording" && apart.cameras?.first?.status.state == "recording", "\(out)")
        #expect(apart.cameras?.last?.status.state != "recording", "\(out)")
        // Both files finished and playable, each with every frame its log
        // says it recorded; the front's more than when the back went away.
        let finished = lines.filter { $0.hasPrefix("log: ") && $0.contains("recording finished: ") }
        let files = lines.filter { $0.hasPrefix("file=") }
        #expect(files.filter { $0.contains("-front.mp4") }.count == 1 && files.filter { $0.contains("-back") }.count == 1, "\(out)")
        for line in files {
            let name = String(line.dropFirst(5).split(separator: " ")[0])
            let frames = Int(line.split(separator: "=").last ?? "") ?? 0
            let said = finished.first { $0.contains(name) }.flatMap { l -> Int? in
                let words = l.split(separator: " ")
                return words.firstIndex(of: "frames,").flatMap { Int(words[$0 - 1]) }
            }
            #expect(frames >= 1 && said == frames, "\(name): \(frames) frames, its log: \(String(describing: said))")
        }
        let unbound = lines.first { $0.hasPrefix("unbound at front=") }.flatMap { Int($0.split(separator: "=").last ?? "") } ?? .max
        let front = files.first { $0.contains("-front.mp4") }.flatMap { Int($0.split(separator: "=").last ?? "") } ?? 0
        #expect(front >= unbound + least, "the front file has \(front) frames; it had \(unbound) when the back camera went")
    }
}
}
