import Foundation
import struct Synchronization.Atomic
import Testing
import TestSupport
import ObscuraSystem
import ObscuraCamera
@testable import ObscuraCapture
@testable import ObscuraSoftwareCamera
@testable import ObscuraMedia

/// What a test keeps of a frame (keeping the frame would keep its buffer).
private struct Seen: Sendable {
    let sequence: UInt32
    let timestamp: UInt64
    let metadata: FrameMetadata
    init(_ frame: VideoFrame) {
        sequence = frame.sequence
        timestamp = frame.timestampNanoseconds
        metadata = frame.metadata
    }
}

/// Takes `count` frames from an output, releasing each at once (with a
/// deadline so a broken session fails rather than hangs).
private func take(_ count: Int, from output: VideoDataOutput, timeout: Duration = .seconds(10)) async throws -> [Seen] {
    try await withThrowingTaskGroup(of: [Seen].self) { group in
        group.addTask {
            var frames: [Seen] = []
            for await frame in output.frames {
                frames.append(Seen(frame))
                if frames.count == count { break }
            }
            if frames.count < count { throw ProbeTimeout() }
            return frames
        }
        group.addTask {
            try await Task.sleep(for: timeout)
            throw ProbeTimeout()
        }
        let result = try await group.next()!
        group.cancelAll()
        return result
    }
}

private struct ProbeTimeout: Error {}

private func session(_ camera: SyntheticCamera, outputs: [VideoDataOutput], preset: CaptureSession.Preset = .vga640x480) throws -> CaptureSession {
    try patternSession(outputs, camera: camera, preset: preset)
}

/// A running session on a test-pattern camera with one output, its events
/// followed from before the start, two frames taken.
private func running(clock: any WaitingClock = SystemWaitingClock()) async throws
    -> (SyntheticCamera, VideoDataOutput, CaptureSession, AsyncStream<CaptureSession.Event>) {
    let camera = SyntheticCamera()
    let output = VideoDataOutput()
    let s = try patternSession([output], camera: camera, clock: clock)
    let events = s.events()
    try s.startRunning()
    _ = try await take(2, from: output)
    return (camera, output, s, events)
}

@Suite struct CaptureSessionTests {
    /// A consumer keeps frames across an output added while running and a
    /// preset change: their pixels stay as they were (no buffer of theirs is
    /// unmapped, refilled or handed out again), frames of the new
    /// configuration are never given to two holders at once when the old
    /// ones come back, and the session keeps running.
    @Test func framesHeldAcrossReconfigurationsKeepTheirPixels() async throws {
        let camera = SyntheticCamera()
        let output = VideoDataOutput(alwaysDiscardsLateVideoFrames: false, queueDepth: 2)
        let s = try session(camera, outputs: [output])
        try s.startRunning()
        let watchdog = Task { try await Task.sleep(for: .seconds(30)); output.queue.close() }
        defer { watchdog.cancel() }
        func next() async throws -> VideoFrame {
            guard let frame = await output.queue.next() else { throw ProbeTimeout() }
            return frame
        }
        var held: [(frame: VideoFrame, digest: UInt64)] = []
        for _ in 0..<2 { let f = try await next(); held.append((f, f.pixelDigest())) }

        try s.addOutput(VideoDataOutput(alwaysDiscardsLateVideoFrames: true))
        for _ in 0..<8 { _ = try await next() }
        for (f, d) in held { #expect(f.pixelDigest() == d, "frame \(f.sequence) changed while held across addOutput") }

        // Frames of the new configuration are held while the old ones go back.
        var later: [(frame: VideoFrame, digest: UInt64)] = []
        for _ in 0..<2 { let f = try await next(); later.append((f, f.pixelDigest())) }
        held.removeAll()
        for _ in 0..<12 { _ = try await next() }
        for (f, d) in later { #expect(f.pixelDigest() == d, "frame \(f.sequence) was handed out again while held") }

        try s.setSessionPreset(.hd1280x720)
        // Frames queued before the change (the queue holds two) may still
        // come first; once a frame of the new configuration has come, only
        // such frames follow.
        var sizes = Set<PixelSize>()
        do {  // (the frame is let go at the end of this block)
            var first = try await next()
            for _ in 0..<2 where first.size != PixelSize(width: 1280, height: 720) { first = try await next() }
            sizes.insert(first.size)
        }
        for _ in 0..<8 { sizes.insert(try await next().size) }
        #expect(sizes == [PixelSize(width: 1280, height: 720)])
        for (f, d) in later {
            #expect(f.size == PixelSize(width: 640, height: 480))
            #expect(f.pixelDigest() == d, "frame \(f.sequence) changed while held across a preset change")
        }
        #expect(s.state == .running)
        #expect(camera.outstandingFrames >= 2)
        later.removeAll()
        try s.stopRunning()
        #expect(camera.outstandingFrames == 0)
    }

    @Test func framesArriveInOrderAndGoBackToTheCamera() async throws {
        let camera = SyntheticCamera()
        let output = VideoDataOutput(alwaysDiscardsLateVideoFrames: false, queueDepth: 2)
        let s = try session(camera, outputs: [output])
        try s.startRunning()
        #expect(s.isRunning)
        var sequences: [UInt32] = []
        var stamps: [UInt64] = []
        for await frame in output.frames {
            sequences.append(frame.sequence)
            stamps.append(frame.timestampNanoseconds)
            #expect(frame.format == .nv12)  // NV12 preferred when offered
            #expect(frame.size == PixelSize(width: 640, height: 480))
            #expect(frame.planes.count == 2)
            #expect(frame.dmabufs.count == 1)
            if sequences.count == 40 { break }
        }
        try s.stopRunning()
        #expect(camera.outstandingFrames == 0)
        // 40 frames through 4 buffers: only possible if each frame went back.
        #expect(zip(sequences, sequences.dropFirst()).allSatisfy { $0 < $1 })
        #expect(zip(stamps, stamps.dropFirst()).allSatisfy { $0 < $1 })
        #expect(s.activeConfiguration?.streams.first?.bufferCount == 4)
    }

    /// A frame rate set while the camera runs (the pace stepping down)
    /// takes effect on the frames that follow, as on a real sensor.
    @Test func aFrameRateSetWhileRunningSpacesTheFramesThatFollow() async throws {
        let camera = SyntheticCamera()
        let output = VideoDataOutput(alwaysDiscardsLateVideoFrames: false, queueDepth: 1)
        let s = try session(camera, outputs: [output])
        let device = try #require(s.inputs.first?.device)
        try s.startRunning()
        _ = try await take(3, from: output)
        try device.withConfigurationLock { try $0.setActiveVideoFrameRate(10) }
        let after = try await take(6, from: output)
        try s.stopRunning()
        // (The first may still be on the old schedule; never shorter than the new interval, less jitter.)
        let intervals = zip(after.dropFirst(2), after.dropFirst(3)).map { Double($1.timestamp - $0.timestamp) / 1e6 }
        #expect(intervals.allSatisfy { $0 > 80 }, "intervals after 10 fps was set: \(intervals) ms")
    }

    @Test func aSlowOutputDropsWithoutStallingAFastOne() async throws {
        let camera = SyntheticCamera()
        let fast = VideoDataOutput(alwaysDiscardsLateVideoFrames: false, queueDepth: 1)
        let slow = VideoDataOutput(alwaysDiscardsLateVideoFrames: false, queueDepth: 1) // never read
        let s = try session(camera, outputs: [fast, slow])
        try s.startRunning()
        let frames = try await take(30, from: fast)
        try s.stopRunning()
        #expect(frames.count == 30)
        // The slow output kept one frame and dropped, and counted, every other.
        #expect(slow.queue.offered >= 30)
        #expect(slow.droppedFrameCount == slow.queue.offered - 1)
        // Its held frame never starved the camera: a buffer was always free.
        #expect(camera.skippedFrames == 0)
    }

    @Test func latestOnlyKeepsTheNewestFrame() {
        let queue = FrameQueue(policy: .latestOnly)
        let released = Atomic<Int>(0)
        for i in 0..<5 {
            queue.push(VideoFrame(format: .nv12, size: PixelSize(width: 2, height: 2), planes: [], sequence: UInt32(i),
                                  timestampNanoseconds: UInt64(i), release: { released.add(1, ordering: .relaxed) }))
        }
        #expect(queue.count == 1)
        #expect(queue.drops == 4)
        #expect(released.load(ordering: .relaxed) == 4)  // replaced frames go back at once
    }

    /// A passing output (the picture watch's sampler) sees every frame and
    /// holds none: the recorder's queue keeps the share of the camera's
    /// buffers it has without it, and the camera never runs short.
    /// (The camera is paced by a clock the test moves on once the recorder
    /// has taken the frame before: a busy machine makes no frame late.)
    @Test func aPassingOutputSeesFramesAndHoldsNoCameraBuffer() async throws {
        func recorderCapacity(withTap: Bool) async throws -> (capacity: Int, looked: Int, ended: Int, skipped: Int) {
            let clock = ManualClock()
            let recorder = VideoDataOutput(alwaysDiscardsLateVideoFrames: false, queueDepth: 6)
            let latest = VideoDataOutput()
            let looked = Atomic<Int>(0), ended = Atomic<Int>(0)
            let tap = FrameTapOutput(look: { _ in looked.add(1, ordering: .relaxed) }, ended: { ended.add(1, ordering: .relaxed) })
            let (camera, s) = try pacedSession(withTap ? [recorder, latest, tap] : [recorder, latest], clock: clock)
            try s.startRunning()
            let driving = clock.drive(by: .nanoseconds(33_333_333)) { recorder.queue.count == 0 }
            defer { driving.cancel() }
            let frames = try await take(20, from: recorder)
            try s.stopRunning()
            #expect(frames.count == 20)
            return (recorder.queue.capacity, looked.load(ordering: .relaxed), ended.load(ordering: .relaxed), camera.skippedFrames)
        }
        let without = try await recorderCapacity(withTap: false)
        let with = try await recorderCapacity(withTap: true)
        #expect(with.capacity == without.capacity, "the tap took a buffer from the recorder: \(with.capacity) of \(without.capacity)")
        #expect(with.looked >= 20)
        #expect(with.ended == 1)
        #expect(with.skipped == 0)
    }

    @Test func aPassingQueueLooksAtEachFrameAndReleasesItAtOnce() {
        let released = Atomic<Int>(0), looked = Atomic<Int>(0), ended = Atomic<Int>(0)
        let queue = FrameQueue(passing: { _ in looked.add(1, ordering: .relaxed) }, ended: { ended.add(1, ordering: .relaxed) })
        for i in 0..<5 {
            queue.push(VideoFrame(format: .nv12, size: PixelSize(width: 2, height: 2), planes: [], sequence: UInt32(i),
                                  timestampNanoseconds: UInt64(i), release: { released.add(1, ordering: .relaxed) }))
        }
        #expect(looked.load(ordering: .relaxed) == 5)
        #expect(released.load(ordering: .relaxed) == 5)
        #expect(queue.count == 0 && queue.drops == 0 && queue.offered == 5)
        queue.close()
        queue.close()
        queue.push(VideoFrame(format: .nv12, size: PixelSize(width: 2, height: 2), planes: [], sequence: 9, timestampNanoseconds: 9))
        #expect(looked.load(ordering: .relaxed) == 5, "a closed queue looks at nothing")
        #expect(ended.load(ordering: .relaxed) == 1)
    }

    @Test func boundedQueueDropsArrivalsWhenFullAndCountsThem() async {
        let queue = FrameQueue(policy: .bounded(2))
        for i in 0..<5 {
            queue.push(VideoFrame(format: .nv12, size: PixelSize(width: 2, height: 2), planes: [], sequence: UInt32(i), timestampNanoseconds: 0))
        }
        #expect(queue.drops == 3)
        #expect(await queue.next()?.sequence == 0)
        #expect(await queue.next()?.sequence == 1)
        queue.close()
        #expect(await queue.next() == nil)
    }

    /// A consumer that falls behind (a starved encoder) is never handed a
    /// frame further behind the camera than the backlog bound, by the frames'
    /// own timestamps, whatever the capacity: older frames go, counted.
    @Test func aBoundedQueueHoldsAtMostItsBacklogOfCameraTime() async {
        let queue = FrameQueue(policy: .bounded(16))
        queue.maxBacklog = .milliseconds(250)
        #expect(queue.maxBacklog == .milliseconds(250))
        let released = Atomic<Int>(0)
        // 30 fps for a second, nobody taking frames.
        for i in 0..<30 {
            queue.push(VideoFrame(format: .nv12, size: PixelSize(width: 2, height: 2), planes: [], sequence: UInt32(i),
                                  timestampNanoseconds: 5_000_000_000 + UInt64(i) * 33_333_333,
                                  release: { released.add(1, ordering: .relaxed) }))
        }
        // 29 at 0.967 s: frames from 0.717 s on stay (22…29).
        #expect(queue.count == 8)
        #expect(queue.drops == 22)
        #expect(released.load(ordering: .relaxed) == 22)   // back to the camera at once
        #expect(queue.dropped(after: 0, before: 22) == 21)   // numbered, so the file counts them as drops
        #expect(await queue.next()?.sequence == 22)
        // Without the bound, the capacity alone decides.
        let plain = FrameQueue(policy: .bounded(16))
        for i in 0..<30 {
            plain.push(VideoFrame(format: .nv12, size: PixelSize(width: 2, height: 2), planes: [], sequence: UInt32(i),
                                  timestampNanoseconds: UInt64(i) * 33_333_333))
        }
        #expect(plain.count == 16 && plain.drops == 14)
    }

    /// A camera that cannot be asked for fewer frames is thinned evenly by
    /// the frames' own timestamps: 30 fps held to 20 keeps two frames of
    /// every three, held to 10 one of three; what is left out is counted
    /// apart from drops (nothing was behind), and the rate lifted passes all.
    @Test func aQueueHeldToALowerRateLeavesFramesOutEvenly() async {
        func run(_ rate: Double?, jitter: Bool = false) async -> (kept: [UInt32], queue: FrameQueue) {
            let queue = FrameQueue(policy: .bounded(64))
            queue.maxFrameRate = rate
            for i in 0..<30 {
                // (±2 ms of jitter, as a camera's timestamps have.)
                let wobble: Int64 = jitter ? (i % 2 == 0 ? 2_000_000 : -2_000_000) : 0
                queue.push(VideoFrame(format: .nv12, size: PixelSize(width: 2, height: 2), planes: [], sequence: UInt32(i),
                                      timestampNanoseconds: UInt64(Int64(7_000_000_000) + Int64(i) * 33_333_333 + wobble)))
            }
            var kept: [UInt32] = []
            while queue.count > 0, let f = await queue.next() { kept.append(f.sequence) }
            return (kept, queue)
        }
        let twenty = await run(20)
        #expect(twenty.kept.count == 20, "\(twenty.kept)")
        #expect(twenty.kept.prefix(6) == [0, 2, 3, 5, 6, 8])
        #expect(twenty.queue.thinned == 10 && twenty.queue.drops == 0 && twenty.queue.offered == 20)
        #expect(twenty.queue.thinned(after: 0, before: 2) == 1 && twenty.queue.dropped(after: 0, before: 30) == 0)
        let ten = await run(10, jitter: true)
        #expect(ten.kept == Array(stride(from: 0, to: 30, by: 3)), "\(ten.kept)")
        let all = await run(nil)
        #expect(all.kept.count == 30 && all.queue.thinned == 0)
        #expect(twenty.queue.maxFrameRate.map { abs($0 - 20) < 0.01 } == true)
    }

    @Test func oneShotTakesOneFrameWhenArmed() async {
        let queue = FrameQueue(policy: .oneShot)
        func frame(_ i: Int) -> VideoFrame {
            VideoFrame(format: .nv12, size: PixelSize(width: 2, height: 2), planes: [], sequence: UInt32(i), timestampNanoseconds: 0)
        }
        queue.push(frame(0))
        #expect(queue.count == 0)
        queue.arm()
        queue.push(frame(1))
        queue.push(frame(2))
        #expect(await queue.next()?.sequence == 1)
        #expect(queue.count == 0)
    }

    @Test func theStateMachineRefusesWrongCalls() throws {
        let s = CaptureSession()
        #expect(throws: CaptureError.noInput) { try s.startRunning() }
        #expect(throws: CaptureError.self) { try s.stopRunning() }
        #expect(throws: CaptureError.self) { try s.commitConfiguration() }
        let camera = SyntheticCamera()
        try s.addInput(CaptureDeviceInput(device: CaptureDevice(source: camera)))
        #expect(!s.canAddInput(CaptureDeviceInput(device: CaptureDevice(source: SyntheticCamera(id: "other")))))
        try s.startRunning()
        #expect(throws: CaptureError.wrongState(call: "startRunning", state: "running", allowed: "stopped")) { try s.startRunning() }
        try s.stopRunning()
        #expect(s.state == .stopped)
    }

    @Test func eventsTellStartStopAndInterruption() async throws {
        let (camera, output, s, events) = try await running()
        camera.setConnected(false)
        #expect(await waitUntil { s.isInterrupted })
        camera.setConnected(true)
        _ = try await take(2, from: output) // frames flow again by themselves
        #expect(s.isRunning)
        try s.stopRunning()
        var seen: [CaptureSession.Event] = []
        for await e in events {
            seen.append(e)
            if e == .didStopRunning { break }
        }
        #expect(seen.first == .didStartRunning)
        #expect(seen.contains(.wasInterrupted(.deviceUnavailable)))
        #expect(seen.contains(.interruptionEnded))
        #expect(seen.last == .didStopRunning)
    }

    /// An output whose consumer stopped taking frames (its thread blocked in
    /// a write to a storage that hangs) while holding three of them, one
    /// more than the two spare buffers the session asks the camera for: with
    /// its queue full, every buffer is held and the camera can deliver nothing.
    /// That silence is the session's own: the stalled queue's frames are
    /// dropped (counted) and go back to the camera, so another output goes
    /// on getting frames and the session is never interrupted.
    /// (The camera is paced by the session's clock, which the test drives
    /// on while it waits: the watchdog's limits pass without real time.)
    @Test func anOutputThatStoppedTakingFramesDoesNotStarveTheCamera() async throws {
        let clock = ManualClock()
        let stuck = VideoDataOutput(alwaysDiscardsLateVideoFrames: false, queueDepth: 4)
        let other = VideoDataOutput()
        let (_, s) = try pacedSession([stuck, other], clock: clock)
        let events = s.events()
        try s.startRunning()
        let driving = clock.drive(by: .nanoseconds(33_333_333))
        defer { driving.cancel() }
        var held: [VideoFrame] = []
        for await frame in stuck.frames {
            held.append(frame)
            if held.count == 3 { break }
        }
        // From when its queue is full, every buffer is held.
        #expect(await waitUntil { stuck.queue.count >= stuck.queue.capacity })
        let frames = try await take(6, from: other, timeout: .seconds(30))
        #expect(frames.count == 6)
        #expect(s.framesFreedFromStalledOutputs > 0)
        #expect(stuck.droppedFrameCount >= s.framesFreedFromStalledOutputs)
        try s.stopRunning()
        var iterator = events.makeAsyncIterator()
        while let e = await iterator.next() {
            #expect(e != .wasInterrupted(.noFrames))
            if e == .didStopRunning { break }
        }
        held.removeAll()
    }

    /// The interruption ends with the next frame, and the gap that frame
    /// ended counts: the limit now covers a gap like it (three of it, at
    /// most `longestStallLimit`), so a camera that is merely slow at times
    /// is not interrupted at each of its slow frames.
    /// (The camera is paced by the session's clock, moved on by hand: past
    /// its first frames, the silence is judged against the running limit.)
    @Test func aSilentCameraIsAnInterruptionThatEndsWhenFramesReturn() async throws {
        let clock = ManualClock()
        let (camera, s) = try pacedSession([VideoDataOutput()], clock: clock)
        let events = s.events()
        try s.startRunning()
        try #require(await s.frames(CaptureSession.framesToSettle + 2, on: clock))
        camera.setStalled(true)
        // (Frames still queued are freed first; past that, the silence is the camera's.)
        for _ in 0..<3 where !s.isInterrupted {
            try #require(await s.pass(s.currentStallLimit + .milliseconds(100), on: clock))
        }
        var iterator = events.makeAsyncIterator()
        var interrupted = false
        while let e = await iterator.next() {
            if e == .wasInterrupted(.noFrames) { interrupted = true; break }
        }
        #expect(interrupted)
        #expect(s.isInterrupted)
        camera.setStalled(false)
        try #require(await s.frames(1, on: clock))
        while let e = await iterator.next() { if e == .interruptionEnded { break } }
        #expect(s.isRunning)
        // The gap was longer than the 0.5 s limit; three of it, less a 64th
        // per frame since (under a second of frames at 30 fps).
        #expect(s.currentStallLimit >= .milliseconds(1000), "after a gap over 0.5 s: \(s.currentStallLimit)")
        try #require(await s.frames(2, on: clock))
        try s.stopRunning()
    }

    /// The watchdog judges the silence since the last frame on the session's
    /// clock: a camera that stopped delivering is an interruption once that
    /// clock has moved past the stall limit, however little real time has
    /// passed, and frames that return end it.
    @Test func theStallIsJudgedOnTheSessionsClock() async throws {
        let clock = ManualClock()
        let (camera, _, s, events) = try await running(clock: clock)
        camera.setStalled(true)
        // Frames still queued are freed first (the silence may be the outputs'
        // own); past that, a second stretch of silence is the camera's.
        for _ in 0..<3 where !s.isInterrupted {
            clock.advance(by: s.currentStallLimit + .seconds(1))
            _ = await waitUntil(within: .seconds(2)) { s.isInterrupted }
        }
        #expect(s.isInterrupted, "the clock moved past the stall limit three times without an interruption")
        camera.setStalled(false)
        var iterator = events.makeAsyncIterator()
        var seen: [CaptureSession.Event] = []
        while let e = await iterator.next() {
            seen.append(e)
            if e == .interruptionEnded { break }
        }
        #expect(seen.contains(.wasInterrupted(.noFrames)))
        #expect(s.isRunning)
        try s.stopRunning()
    }

    /// A camera that keeps time leaves the stall limit as configured; one
    /// that has been arriving in bursts (a starved board) gets three of its
    /// longest recent gaps, so a gap like those it has shown is no
    /// interruption, while real silence still is, naming the limit.
    /// (The camera is paced by the session's clock, moved on by hand: each
    /// gap is exactly what the test made it.)
    @Test func theStallLimitFollowsTheGapsTheCameraHasShown() async throws {
        let clock = ManualClock()
        let (camera, s) = try pacedSession([VideoDataOutput()], clock: clock)
        let events = s.events()
        try s.startRunning()
        try #require(await s.frames(12, on: clock))
        #expect(s.currentStallLimit == s.stallTimeout, "a camera keeping 30 fps: \(s.currentStallLimit)")
        // Gaps of 400 ms and a frame interval, each judged by the watchdog.
        var longestSeen = Duration.zero
        for _ in 0..<4 {
            let stalled = clock.now
            camera.setStalled(true)
            try #require(await s.pass(.milliseconds(400), on: clock))
            camera.setStalled(false)
            try #require(await s.frames(1, on: clock))
            longestSeen = max(longestSeen, clock.now - stalled)
            try #require(await s.frames(2, on: clock))
        }
        #expect(!s.isInterrupted)
        let limit = s.currentStallLimit
        #expect(limit >= .milliseconds(1050) && limit <= longestSeen * 3, "after gaps of 400 ms to \(longestSeen): \(limit)")
        // A gap twice as long as those shown, beyond the configured 0.5 s.
        camera.setStalled(true)
        try #require(await s.pass(.milliseconds(800), on: clock))
        #expect(!s.isInterrupted)
        camera.setStalled(false)
        try #require(await s.frames(2, on: clock))
        // Silence: an interruption after the limit, which now counts that gap
        // too. (The output's queued frames are freed first: the silence may
        // be the outputs' own; past that, a second stretch is the camera's.)
        let before = s.currentStallLimit
        #expect(before >= .milliseconds(2200), "after an 800 ms gap: \(before)")
        camera.setStalled(true)
        for _ in 0..<3 where !s.isInterrupted {
            try #require(await s.pass(before + .milliseconds(100), on: clock))
        }
        var iterator = events.makeAsyncIterator()
        var said: String?
        while let e = await iterator.next() {
            if case .runtimeError(let m) = e { said = m }
            if e == .wasInterrupted(.noFrames) { break }
        }
        #expect(said == "the camera delivered no frame for \(before)", "\(said ?? "nothing")")
        camera.setStalled(false)
        try s.stopRunning()
    }

    /// A camera slow to give its first frame (a pipeline starting on a busy
    /// board) is not taken for a silent one: the start has
    /// `firstFrameTimeout`, not the running stall limit.
    @Test func aSlowFirstFrameIsNoInterruption() async throws {
        let clock = ManualClock()
        let (camera, s) = try pacedSession([VideoDataOutput()], clock: clock)
        camera.setStalled(true)
        let events = s.events()
        try s.startRunning()
        // Four running stall limits pass on the session's clock without a
        // frame, each judged by the watchdog.
        for _ in 0..<4 { try #require(await s.pass(s.stallTimeout, on: clock)) }
        #expect(!s.isInterrupted)
        camera.setStalled(false)
        try #require(await s.frames(2, on: clock))
        try s.stopRunning()
        var seen: [CaptureSession.Event] = []
        for await e in events { seen.append(e); if e == .didStopRunning { break } }
        #expect(!seen.contains { if case .wasInterrupted = $0 { true } else { false } }, "\(seen)")
    }

    @Test func presetsPickFormatsAndInputPriorityKeepsTheActiveFormat() throws {
        let camera = SyntheticCamera()
        let device = CaptureDevice(source: camera)
        #expect(CaptureSession.format(for: .high, device: device)?.dimensions == PixelSize(width: 1920, height: 1080))
        #expect(CaptureSession.format(for: .hd1280x720, device: device)?.pixelFormat == .nv12)
        #expect(CaptureSession.format(for: .vga640x480, device: device, preferring: [.bgr888])?.pixelFormat == .bgr888)
        let chosen = device.formats.first { $0.pixelFormat == .yuyv && $0.dimensions.width == 320 }!
        #expect(throws: CaptureError.self) { try device.setActiveFormat(chosen) } // not locked
        try device.withConfigurationLock { try $0.setActiveFormat(chosen) }
        #expect(CaptureSession.format(for: .inputPriority, device: device) == chosen)
    }

    @Test func controlsReachTheCameraAndComeBackInMetadata() async throws {
        let camera = SyntheticCamera()
        let device = CaptureDevice(source: camera)
        let output = VideoDataOutput()
        let s = CaptureSession()
        try s.addInput(CaptureDeviceInput(device: device))
        try s.addOutput(output)
        try device.withConfigurationLock { d in
            try d.setImageAdjustment(.brightness, 0.5)
            try d.setExposureModeCustom(duration: .milliseconds(5), iso: 400)
            try d.setFocusMode(.continuousAutoFocus)
            try d.setVideoZoomFactor(2)
        }
        try s.startRunning()
        let frame = try #require(try await take(1, from: output).first)
        #expect(frame.metadata.values["Brightness"] == [0.5])
        #expect(frame.metadata.values["AeEnable"] == [0])
        #expect(frame.metadata.exposureTime == .microseconds(5000))
        #expect(frame.metadata.analogueGain == 4)
        #expect(frame.metadata.values["AfMode"] == [2])
        #expect(frame.metadata.values["ScalerCrop"] == [480, 270, 960, 540])
        // While running, a change reaches the camera at once.
        try device.withConfigurationLock { try $0.setImageAdjustment(.brightness, -0.25) }
        let later = try await take(3, from: output).last!
        #expect(later.metadata.values["Brightness"] == [-0.25])
        try s.stopRunning()
    }

    @Test func unsupportedAndOutOfRangeControlsAreClearErrors() throws {
        let device = CaptureDevice(source: SyntheticCamera())
        try device.withConfigurationLock { d in
            #expect(throws: CaptureError.outOfRange(name: "brightness", value: "3.0", allowed: "-1.0…1.0")) {
                try d.setImageAdjustment(.brightness, 3)
            }
            var error: CaptureError?
            do { try d.setExposurePointOfInterest(x: 0.5, y: 0.5) } catch let e as CaptureError { error = e } catch {}
            #expect(error?.description.contains("does not support exposure point of interest") == true)
        }
        // A camera without the controls (vimc-like) says so.
        let bare = CaptureDevice(source: BareCamera())
        #expect(!bare.isFocusModeSupported(.continuousAutoFocus))
        #expect(!bare.isExposureModeSupported(.custom))
        #expect(!bare.isZoomSupported)
        try bare.withConfigurationLock { d in
            var error: CaptureError?
            do { try d.setFocusMode(.continuousAutoFocus) } catch let e as CaptureError { error = e } catch {}
            #expect(error?.description == "camera \"bare\" does not support focus mode continuousAutoFocus: the camera has no autofocus (no AfMode control)")
            #expect(throws: CaptureError.self) { try d.setVideoZoomFactor(2) }
            #expect(throws: CaptureError.self) { try d.setActiveVideoFrameDurations(minimum: .milliseconds(33), maximum: .milliseconds(33)) }
        }
    }
}

/// A camera with no controls at all.
private final class BareCamera: FrameSource, @unchecked Sendable {
    let inner = SyntheticCamera(id: "bare")
    var id: String { "bare" }
    var cameraDescription: CameraDescription {
        let d = inner.cameraDescription
        return CameraDescription(id: "bare", model: "bare", position: .unspecified, rotation: nil, frameDurationRange: nil,
                                 pixelArraySize: nil, formats: d.formats, controls: [])
    }
    func open() throws { try inner.open() }
    func configure(_ r: [StreamRequest], rotation: Int, mirrored: Bool) throws -> CameraConfiguration {
        try inner.configure(r, rotation: rotation, mirrored: mirrored)
    }
    func start(handler: @escaping @Sendable (CameraFrame) -> Void, failed: @escaping @Sendable (UInt32) -> Void) throws {
        try inner.start(handler: handler, failed: failed)
    }
    func stop() throws { try inner.stop() }
    func setControl(_ name: String, _ values: [Double]) throws { try inner.setControl(name, values) }
    func close() { inner.close() }
    func observeAvailability(_ o: @escaping @Sendable (Bool) -> Void) -> Int { inner.observeAvailability(o) }
    func stopObservingAvailability(_ t: Int) { inner.stopObservingAvailability(t) }
    var outstandingFrames: Int { inner.outstandingFrames }
    func abandonAndRecover() -> Bool { inner.abandonAndRecover() }
    var isListed: Bool { inner.isListed }
}
