import Foundation
import ObscuraFFmpeg
import ObscuraCamera
import ObscuraEncoding
import Testing
import TestSupport
@testable import ObscuraCapture
@testable import ObscuraSoftwareCamera
@testable import ObscuraMedia
@testable import ObscuraRecording
import ObscuraFiles

private func finish(_ events: AsyncStream<RecordingEvent>) async -> (RecordingFinishReason, RecordingProgress)? {
    for await event in events {
        if case .finished(_, let reason, let progress) = event { return (reason, progress) }
    }
    return nil
}

private func path(_ name: String) -> String { scratchPath("recording", name) }

/// A movie output (set up by `configure`) recording to `name` on a running
/// test-pattern session; its camera as fast as the recording takes frames
/// (`fastPatternCamera`), or at its rate in real time.
private func recording(_ name: String, realTime: Bool = false, _ configure: (MovieFileOutput) -> Void = { _ in }) throws
    -> (MovieFileOutput, CaptureSession, String, AsyncStream<RecordingEvent>) {
    let output = MovieFileOutput()
    configure(output)
    let session = try patternSession([output], camera: realTime ? SyntheticCamera() : fastPatternCamera())
    let file = path(name)
    let events = try output.startRecording(to: file)
    try session.startRunning()
    return (output, session, file, events)
}

@Suite(.serialized) struct MovieFileOutputTests {
    /// A storage call that does not return (here the open of the file: a
    /// FIFO with no reader holds it, as a hung drive holds a write) is
    /// shown as the time the recording has waited in it (the service's
    /// watchdog takes that for waiting, not a wedge), and no longer once
    /// the call returns.
    @Test func aRecordingHeldInsideAStorageCallSaysHowLongItHasWaited() async throws {
        let output = MovieFileOutput()
        let session = try patternSession([output])
        let file = path("held.mp4")
        let partial = file + ".partial"
        unlink(partial)
        try #require(mkfifo(partial, 0o600) == 0, "mkfifo: \(String(cString: strerror(errno)))")
        defer { unlink(partial) }
        #expect(output.storageWait == nil)
        let events = try output.startRecording(to: file)
        try session.startRunning()
        _ = await waitUntil(every: .milliseconds(20)) { (output.storageWait ?? .zero) >= .milliseconds(500) }
        let held = try #require(output.storageWait, "the recording never entered a storage call")
        #expect(held >= .milliseconds(500))
        // A reader lets the open return; it drains what comes until the end.
        signal(SIGPIPE, SIG_IGN)
        let reader = open(partial, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        try #require(reader >= 0)
        let drained = Thread {
            var buffer = [UInt8](repeating: 0, count: 1 << 16)
            var idle = 0
            while idle < 200 {
                let n = buffer.withUnsafeMutableBytes { read(reader, $0.baseAddress, $0.count) }
                if n > 0 { idle = 0 } else { idle += 1; usleep(10_000) }
            }
            close(reader)
        }
        drained.start()
        output.stopRecording()
        _ = await finish(events)
        try session.stopRunning()
        #expect(output.storageWait == nil)
    }

    @Test func aMaximumDurationEndsTheRecordingWithThatReason() async throws {
        let (_, session, file, events) = try recording("duration.mp4") { $0.maxRecordedDuration = .seconds(2) }
        let (reason, progress) = try #require(await finish(events))
        try session.stopRunning()
        #expect(reason == .maximumDurationReached)
        #expect(progress.copiesPerFrame == 0)  // NV12 straight into libx264
        let video = try ProbedVideo.read(file)
        #expect(video.codec == "h264" && video.width == 640 && video.height == 480)
        #expect(video.frameCount == progress.frames)  // every encoded frame is in the file
        let size = try #require(try FileManager.default.attributesOfItem(atPath: file)[.size] as? Int)
        #expect(progress.bytes == size, "the bytes reported are the file's, its index and trailer included")
        #expect(video.isMonotonic)
        #expect(try #require(video.frameTimes.last) < 2.0)  // nothing at or past the limit
        #expect(try #require(video.frameTimes.last) > 1.5)
        #expect(!FileManager.default.fileExists(atPath: file + ".partial"))
    }

    @Test func aMaximumSizeEndsTheRecordingWithThatReason() async throws {
        let (_, session, file, events) = try recording("size.mp4") { $0.maxRecordedFileSize = 100_000 }
        let (reason, progress) = try #require(await finish(events))
        try session.stopRunning()
        #expect(reason == .maximumFileSizeReached)
        #expect(progress.bytes >= 100_000)
        #expect(try ProbedVideo.read(file).frameCount == progress.frames)
    }

    @Test func stoppingTheSessionEndsTheRecordingAndKeepsTheFile() async throws {
        let (_, session, file, events) = try recording("session.mp4")
        #expect(await session.delivers(30))
        try session.stopRunning()
        let (reason, progress) = try #require(await finish(events))
        #expect(reason == .sessionStopped)
        #expect(progress.frames > 0)
        #expect(try ProbedVideo.read(file).frameCount == progress.frames)
    }

    @Test func stopRecordingFinishesAndASecondStartIsRefusedWhileRecording() async throws {
        let output = MovieFileOutput()
        let session = try patternSession([output], camera: fastPatternCamera())
        let file = path("stop.mp4")
        let events = try output.startRecording(to: file)
        #expect(throws: RecordingError.alreadyRecording) { _ = try output.startRecording(to: path("other.mp4")) }
        try session.startRunning()
        #expect(await session.delivers(21))
        output.stopRecording()
        let (reason, _) = try #require(await finish(events))
        #expect(reason == .stopped)
        #expect(!output.isRecording)
        #expect(try ProbedVideo.read(file).frameCount > 5)
        // The output records again, its counts starting afresh.
        let again = try output.startRecording(to: path("again.mp4"))
        #expect(await session.delivers(15))
        output.stopRecording()
        let (secondReason, second) = try #require(await finish(again))
        #expect(secondReason == .stopped)
        #expect(second.frames > 0 && second.droppedFrames <= second.frames)
        #expect(try ProbedVideo.read(path("again.mp4")).frameCount == second.frames)
        try session.stopRunning()
    }

    /// (Real time: what is left out is judged against the time the test
    /// itself saw pass between pause and resume.)
    @Test func pauseAndResumeLeaveNoGapInTheTimeline() async throws {
        let (output, session, file, events) = try recording("pause.mp4", realTime: true)
        let clock = ContinuousClock()
        let started = clock.now
        #expect(await session.delivers(24))
        output.pauseRecording()
        let paused = clock.now
        #expect(output.isRecordingPaused)
        #expect(await session.delivers(30))
        output.resumeRecording()
        let resumed = clock.now
        #expect(await session.delivers(24))
        output.stopRecording()
        let stopped = clock.now
        let expected = (started.duration(to: stopped) - paused.duration(to: resumed)).seconds
        let (reason, progress) = try #require(await finish(events))
        try session.stopRunning()
        #expect(reason == .stopped)
        // Frames left out while paused (about 30) are not camera skips; a
        // loaded machine may make the camera skip a few on its own.
        #expect(progress.skippedFrames < 10, "\(progress.skippedFrames) skipped")
        let video = try ProbedVideo.read(file)
        #expect(video.frameCount == progress.frames)
        #expect(video.isMonotonic)
        let gaps = zip(video.frameTimes, video.frameTimes.dropFirst()).map { $1 - $0 }
        let median = gaps.sorted()[gaps.count / 2]
        // The pause is gone: no step is much longer than the usual one, and the
        // file is as long as the time recorded minus the time paused.
        let allowed = median * Double(3 + progress.skippedFrames) + 0.02  // a skipped frame is a longer step
        #expect(try #require(gaps.max()) < allowed, "largest step \(gaps.max()!) s, usual \(median) s")
        let length = try #require(video.frameTimes.last)
        #expect(length < expected + 0.3 && length > expected - 0.6, "file \(length) s, recorded \(expected) s")
    }

    @Test func segmentsSplitAtKeyframesWithoutLosingOrRepeatingAFrame() async throws {
        let (_, session, file, events) = try recording("segmented.mp4") { $0.maxRecordedDuration = .milliseconds(3500); $0.segmentDuration = .seconds(1) }
        var finished: [String] = []
        var result: (RecordingFinishReason, RecordingProgress)?
        for await event in events {
            if case .segmentFinished(let p) = event { finished.append(p) }
            if case .finished(_, let reason, let progress) = event { result = (reason, progress) }
        }
        try session.stopRunning()
        let (reason, progress) = try #require(result)
        #expect(reason == .maximumDurationReached)
        let base = (file as NSString).deletingPathExtension
        let names = (1...4).map { base + "-" + String(format: "%04d", $0) + ".mp4" }
        #expect(finished == Array(names.prefix(3)))
        var total = 0, bytes = 0
        for name in names {
            bytes += try #require(try FileManager.default.attributesOfItem(atPath: name)[.size] as? Int)
            let video = try ProbedVideo.read(name)
            #expect(video.codec == "h264")
            #expect(video.isMonotonic)
            #expect(try #require(video.frameTimes.first) < 0.001, "\(name) starts at \(video.frameTimes.first!)")
            total += video.frameCount
            // Each segment but the last holds a second of media time: its last
            // frame a usual interval before the second, give or take the frame
            // the key frame came at, and the frames a loaded machine's camera
            // skipped or the recorder dropped (its frame count alone is not
            // the check: those leave fewer frames in the same second).
            if name != names.last {
                let interval = try #require(video.medianFrameInterval)
                let end = try #require(video.frameTimes.last) + interval
                let slack = interval * Double(2 + progress.skippedFrames + progress.droppedFrames) + 0.001
                #expect(abs(end - 1) <= slack, "\(name) ends at \(end) s (frames every \(interval) s, \(progress.skippedFrames) skipped, \(progress.droppedFrames) dropped)")
            }
            let keyframes = try runProgram("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries", "packet=flags",
                                                       "-of", "csv=p=0", name])
            #expect(keyframes.stdout.split(separator: "\n").first?.hasPrefix("K") == true, "\(name) must start with a keyframe")
        }
        #expect(total == progress.frames)  // every frame in exactly one file
        #expect(progress.bytes == bytes, "the bytes reported are the segments' sizes together")
        #expect(!FileManager.default.fileExists(atPath: base + "-0005.mp4"))
    }

    @Test func tooLittleFreeSpaceStopsWithDiskFull() async throws {
        let (_, session, file, events) = try recording("full.mp4") { $0.minFreeDiskSpace = Int.max }  // no disk has that much
        let (reason, progress) = try #require(await finish(events))
        try session.stopRunning()
        #expect(reason == .diskFull)
        #expect(try ProbedVideo.read(file).frameCount == progress.frames)
    }
}

@Suite(.serialized) struct PreRecordTests {
    @Test func aRecordingBeginsAtTheKeyframeAtOrBeforeTheTriggerMinusThePreRecordTime() async throws {
        let output = MovieFileOutput()
        output.maxRecordedDuration = .seconds(1)
        let session = try patternSession([output], camera: fastPatternCamera())
        try output.armPreRecording(duration: .seconds(2))
        try session.startRunning()
        // Until the buffer holds its two seconds (and a little).
        #expect(await waitUntil(within: .seconds(60)) { output.preRecordStatus.held >= .milliseconds(2100) })
        let status = output.preRecordStatus
        // Two seconds plus at most one group of pictures (30 frames: a second,
        // longer when a loaded machine makes the camera skip frames).
        #expect(status.held >= .milliseconds(1900) && status.held <= .seconds(6), "buffer holds \(status.held)")
        #expect(status.groupsDroppedForBytes == 0)
        let file = path("prerecord.mp4")
        let events = try output.startRecording(to: file)
        let (reason, progress) = try #require(await finish(events))
        #expect(reason == .maximumDurationReached)
        #expect(progress.preRoll >= .seconds(2), "pre-roll \(progress.preRoll)")
        let video = try ProbedVideo.read(file)
        #expect(video.frameCount == progress.frames)
        #expect(video.isMonotonic)
        #expect(try #require(video.frameTimes.first) < 0.001)
        // Pre-roll plus the one second recorded after the trigger.
        let length = try #require(video.frameTimes.last)
        let expected = progress.preRoll.seconds + 1
        #expect(abs(length - expected) < 0.1, "file \(length) s, expected \(expected) s")
        let packets = try runProgram("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries", "packet=pts_time,flags",
                                                 "-of", "csv=p=0", file]).stdout.split(separator: "\n")
        #expect(packets.first?.split(separator: ",").last?.hasPrefix("K") == true, "the file must start with a keyframe")
        // It starts at the LAST keyframe at or before trigger − 2 s: the next
        // keyframe in the file comes after that moment.
        let keyframes = packets.filter { $0.split(separator: ",").last?.hasPrefix("K") == true }
            .compactMap { $0.split(separator: ",").first.flatMap { Double($0) } }
        #expect(keyframes.count >= 2)
        if keyframes.count >= 2 {
            #expect(keyframes[1] > progress.preRoll.seconds - 2, "keyframe at \(keyframes[1]) s is at or before trigger − 2 s")
        }

        // Still armed: a second recording also gets its pre-roll.
        #expect(await waitUntil(within: .seconds(60)) { output.preRecordStatus.held >= .milliseconds(2100) })
        let second = try output.startRecording(to: path("prerecord-2.mp4"))
        let (_, again) = try #require(await finish(second))
        #expect(again.preRoll >= .seconds(2))
        output.disarmPreRecording()
        #expect(!output.isPreRecording)
        try session.stopRunning()
    }

    @Test func armingRefusesNonsense() throws {
        let output = MovieFileOutput()
        #expect(throws: RecordingError.preRecordDuration(.zero)) { try output.armPreRecording(duration: .zero) }
        #expect(throws: RecordingError.preRecordBytes(1000)) { try output.armPreRecording(duration: .seconds(1), byteLimit: 1000) }
        try output.armPreRecording(duration: .seconds(1))
        #expect(throws: RecordingError.alreadyPreRecording) { try output.armPreRecording(duration: .seconds(2)) }
        output.disarmPreRecording()
    }

    @Test func losingTheCameraFinalizesTheRecordingWithThatReason() async throws {
        let output = MovieFileOutput()
        let camera = fastPatternCamera()
        let session = try patternSession([output], camera: camera)
        let file = path("lost.mp4")
        let events = try output.startRecording(to: file)
        try session.startRunning()
        #expect(await session.delivers(30))
        camera.setConnected(false)
        let (reason, progress) = try #require(await finish(events))
        #expect(reason == .cameraLost)
        #expect(progress.frames > 10)
        #expect(try ProbedVideo.read(file).frameCount == progress.frames)
        #expect(!FileManager.default.fileExists(atPath: file + ".partial"))
        try session.stopRunning()
    }
}

/// An encoder that works for `healthy` frames, then takes frames and gives
/// back nothing (`stalls`) or fails every call as a vanished device does.
private final class FaultyEncoder: VideoEncoder {
    let inner: any VideoEncoder
    let healthy: Int
    let stalls: Bool
    private var frames = 0
    init(_ inner: any VideoEncoder, healthy: Int, stalls: Bool) {
        self.inner = inner
        self.healthy = healthy
        self.stalls = stalls
    }
    var name: String { "faulty \(inner.name)" }
    var codecParameters: CodecParameters { inner.codecParameters }
    var isZeroCopy: Bool { inner.isZeroCopy }
    var copies: CopyCounter { inner.copies }
    func encode(_ frame: VideoFrame, ptsMicroseconds: Int64, keyframe: Bool) throws -> [EncodedPacket] {
        frames += 1
        guard frames > healthy else { return try inner.encode(frame, ptsMicroseconds: ptsMicroseconds, keyframe: keyframe) }
        if stalls { return [] }
        throw V4L2EncoderError.call("vicodec (/dev/video3): No such device (coded queue)")
    }
    func finish() throws -> [EncodedPacket] {
        Issue.record("a failed encoder is not drained")
        return try inner.finish()
    }
}

/// A stalled or vanished encoder ends the recording with `.encoderFailed`,
/// naming what happened; the file is finalized with every packet the
/// encoder gave back, and plays.
@Suite(.serialized) struct EncoderStageTests {
    @Test(.timeLimit(.minutes(1)), arguments: [true, false])
    func aFailedEncoderEndsTheRecordingWithAPlayableFile(stalls: Bool) async throws {
        let output = MovieFileOutput()
        output.wrapEncoder = { FaultyEncoder($0, healthy: 30, stalls: stalls) }
        var settings = MovieSettings()
        settings.encoderStallFrames = 20
        let session = try patternSession([output], camera: fastPatternCamera())
        let file = path(stalls ? "stalled.mp4" : "vanished.mp4")
        let events = try output.startRecording(to: file, settings: settings)
        try session.startRunning()
        let (reason, progress) = try #require(await finish(events))
        try session.stopRunning()
        guard case .encoderFailed(let why) = reason else {
            Issue.record("reason: \(reason)")
            return
        }
        if stalls {
            #expect(why.hasPrefix("faulty libx264 took 20 frames and gave back no packet ("), "\(why)")
        } else {
            #expect(why == "vicodec (/dev/video3): No such device (coded queue)")
        }
        // x264 (ultrafast, delay bounded) gives back nearly every healthy frame.
        #expect(progress.frames >= 25 && progress.frames <= 30, "\(progress.frames)")
        let video = try ProbedVideo.read(file)
        #expect(video.frameCount == progress.frames)
        #expect(video.isMonotonic)
        #expect(!FileManager.default.fileExists(atPath: file + ".partial"))
    }

    @Test func packetsOutResetTheStallCount() {
        var latency = EncoderLatency()
        for _ in 0..<5 { latency.frameIn() }
        #expect(latency.framesSincePacket == 5)
        latency.packetsOut(0)
        #expect(latency.framesSincePacket == 5)
        latency.packetsOut(1)
        #expect(latency.framesSincePacket == 0 && latency.framesInside == 4)
    }
}

@Suite struct RecordingTimelineTests {
    private func frame(_ sequence: UInt32, ms: UInt64) -> VideoFrame {
        VideoFrame(format: .nv12, size: PixelSize(width: 2, height: 2), planes: [], sequence: sequence,
                   timestampNanoseconds: 1_000_000_000 + ms * 1_000_000)
    }

    /// A frame missing from a recording is counted once: as dropped when the
    /// output's own queue dropped it, else as skipped by the camera; drops
    /// outside the recorded frames (before the first, after the last) are
    /// not holes in the file and count as neither.
    @Test func aMissingFrameIsCountedOnceAsDroppedOrSkipped() async throws {
        let queue = FrameQueue(policy: .bounded(2))
        // Frames 0 and 1 wait in the queue; 2 and 3 are dropped; 5 never came.
        for n: UInt32 in [0, 1, 2, 3] { queue.push(frame(n, ms: UInt64(n) * 40)) }
        #expect(queue.drops == 2)
        var t = RecordingTimeline()
        var placed: [UInt32] = []
        func offer(_ f: VideoFrame) {
            if let pts = t.pts(for: f), t.place(f, at: pts, dropped: { queue.dropped(after: $0, before: $1) }) { placed.append(f.sequence) }
        }
        while queue.count > 0, let f = await queue.next() { offer(f) }
        for n: UInt32 in [4, 6, 7] { offer(frame(n, ms: UInt64(n) * 40)) }
        queue.push(frame(8, ms: 320))
        queue.push(frame(9, ms: 360))
        queue.push(frame(10, ms: 400))   // dropped after the last frame placed
        #expect(placed == [0, 1, 4, 6, 7])
        #expect(t.droppedFrames == 2)    // 2 and 3
        #expect(t.skippedFrames == 1)    // 5
        #expect(queue.drops == 3)
        queue.reopen()                   // a restarted camera numbers afresh
        #expect(queue.dropped(after: 0, before: 100) == 0)
    }

    /// Frames left out to keep to a lower rate are no hole: counted as
    /// thinned, neither dropped nor skipped.
    @Test func framesLeftOutForALowerRateAreNeitherDroppedNorSkipped() {
        var t = RecordingTimeline()
        let thinned: Set<UInt32> = [1, 3, 5]
        for n: UInt32 in [0, 2, 4, 6, 8] {
            let f = frame(n, ms: UInt64(n) * 40)
            let pts = t.pts(for: f)
            let placed = pts.map { t.place(f, at: $0, thinned: { a, b in thinned.filter { $0 > a && $0 < b }.count }) }
            #expect(placed == true)
        }
        #expect(t.thinnedFrames == 3 && t.droppedFrames == 0 && t.skippedFrames == 1)   // 7 never came
    }

    /// The stage the movie output, its pre-record buffer and the asset
    /// writer share: pauses cut out whole, camera skips counted, time never
    /// backwards.
    @Test func pausesAreCutSkipsCountedAndTimeNeverRunsBackwards() throws {
        var t = RecordingTimeline()
        var placed: [Int64] = []
        func offer(_ f: VideoFrame) {
            if let pts = t.pts(for: f), t.place(f, at: pts) { placed.append(pts) }
        }
        offer(frame(1, ms: 0))
        offer(frame(2, ms: 40))
        offer(frame(4, ms: 120))          // the camera skipped frame 3
        offer(frame(4, ms: 120))          // the same instant again: refused
        t.framePaused()                   // frames 5…9 arrive paused
        offer(frame(10, ms: 400))         // resumes one usual interval (80 ms) after 120
        offer(frame(11, ms: 440))
        #expect(placed == [0, 40_000, 120_000, 200_000, 240_000])
        #expect(t.skippedFrames == 1)     // the pause's frames are no camera skips
        // (Unwrapped first: comparing an optional UInt64 inside #expect trips
        // AddressSanitizer in the compiler's AnyHashable thunk.)
        let zero = try #require(t.timeZero(dts: 0))
        #expect(zero == 1_000_000_000 + 200_000_000)  // the 200 ms paused are behind time zero
        let sound = try #require(t.audioTime(1_000_000_000 + 440_000_000))
        #expect(sound == 240_000_000)
        t.framePaused()
        #expect(t.audioTime(1_000_000_000 + 500_000_000) == nil)   // no sound while paused
        // With a session start as epoch, a frame from before it is refused.
        var session = RecordingTimeline(epoch: 1_000_000_000 + 100_000_000)
        #expect(session.pts(for: frame(1, ms: 50)) == nil)
        #expect(session.pts(for: frame(2, ms: 150)) == 50_000)
    }
}
