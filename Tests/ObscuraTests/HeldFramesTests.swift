import Foundation
import Testing
import TestSupport
@testable import ObscuraEncoding
import ObscuraCapture
import ObscuraMedia
import ObscuraRecording

/// A frame of a moving gradient at `nanoseconds` of the camera's clock.
private func gradient(_ index: Int, at nanoseconds: UInt64) -> VideoFrame {
    makeFrame(.yuv420, PixelSize(width: 320, height: 240), index: index, at: nanoseconds)
}

/// The encoder's held frames follow the interval frames really come at:
/// frame threads while they come often, slices when they come far apart.
@Suite struct HeldFramesTests {
    /// Four threads asked for, so that what is chosen does not depend on
    /// this machine's cores.
    let settings = VideoEncoderSettings(size: PixelSize(width: 320, height: 240), frameRate: 30, preset: "ultrafast",
                                        threads: 4, maxDelay: 0.1)

    /// Threads over parts of a frame: x264's slices, x265's one frame thread.
    private func sliced(_ parameters: String?) -> Bool {
        ["sliced-threads=1", "frame-threads=1"].contains { parameters?.contains($0) == true }
    }

    @Test func theHeldFramesComeFromTheMeasuredIntervalNotTheNominalRate() {
        var s = settings
        #expect(s.maxHeldFrames == 0, "not measured yet: none")
        s.frameInterval = 1.0 / 30
        #expect(s.maxHeldFrames == 3)
        s.frameInterval = 0.0334   // a camera's jitter around 30 fps
        #expect(s.maxHeldFrames == 3)
        s.frameInterval = 1.0 / 1.5  // a starved board's 1.5 fps, whatever its nominal 30
        #expect(s.maxHeldFrames == 0)
        s.maxDelay = nil
        #expect(s.maxHeldFrames == nil && s.boundParameters == nil)
    }

    @Test func theThreadingChangesWithTheMeasuredIntervalBothWays() {
        var governor = HeldFramesGovernor(budget: 0.1)
        var current = settings.boundParameters, holding = 0
        #expect(sliced(current), "\(String(describing: current))")
        var t: UInt64 = 1_000_000_000
        var changes: [(at: UInt64, parameters: String?)] = []
        func frames(_ count: Int, every interval: UInt64) {
            for _ in 0..<count {
                t += interval
                governor.frame(at: t)
                if let wanted = governor.retune(settings, holding: holding, current: current, at: t, keyframe: true) {
                    current = wanted.boundParameters
                    holding = wanted.maxHeldFrames ?? 0
                    changes.append((t, current))
                }
            }
        }
        frames(HeldFramesGovernor.window, every: 33_333_333)
        #expect(changes.isEmpty, "one frame short of a measure")
        frames(1, every: 33_333_333)
        #expect(changes.count == 1 && !sliced(changes.last?.parameters) && holding == 3, "frames every 33 ms: \(changes)")
        // One late frame (a skip) changes nothing; two frames a second apart: slices at once.
        frames(1, every: 1_000_000_000)
        frames(1, every: 33_333_333)
        #expect(changes.count == 1)
        frames(2, every: 1_000_000_000)
        #expect(changes.count == 2 && sliced(changes.last?.parameters) && holding == 0, "\(changes)")
        frames(10, every: 1_000_000_000)
        #expect(changes.count == 2)
        // Back to 30 fps: frame threads again once most of the window has seen it.
        frames(7, every: 33_333_333)
        #expect(changes.count == 2)
        frames(1, every: 33_333_333)
        #expect(changes.count == 3 && !sliced(changes.last?.parameters), "\(changes)")
        // Slow again, at once; fast again, not within `settle` of that.
        frames(2, every: 1_000_000_000)
        #expect(changes.count == 4 && sliced(changes.last?.parameters), "\(changes)")
        frames(20, every: 33_333_333)
        #expect(changes.count == 4 || changes[4].at - changes[3].at >= HeldFramesGovernor.settle, "\(changes)")
    }

    /// More frames held only at a frame the stream makes a keyframe anyway
    /// (the keyframes keep their interval); fewer, well over the budget, at
    /// once.
    @Test func moreFramesWaitForAKeyframeFewerDoNot() {
        var governor = HeldFramesGovernor(budget: 0.1)
        var t: UInt64 = 1_000_000_000
        for _ in 0...HeldFramesGovernor.window {
            t += 33_333_333
            governor.frame(at: t)
        }
        let start = settings.boundParameters
        #expect(governor.retune(settings, holding: 0, current: start, at: t, keyframe: false) == nil)
        let more = governor.retune(settings, holding: 0, current: start, at: t, keyframe: true)
        #expect(more?.maxHeldFrames == 3)
        for _ in 0..<2 {
            t += 1_000_000_000
            governor.frame(at: t)
        }
        let fewer = governor.retune(settings, holding: 3, current: more?.boundParameters, at: t, keyframe: false)
        #expect(fewer?.maxHeldFrames == 0)
    }

    /// Two late frames at a steady 30 fps (a loaded machine: 36 ms each)
    /// leave three frames held at a keyframe; so does a camera a few per
    /// cent slow; one at 25 fps (the window's median) makes it two there.
    @Test func lateFramesAtAKeyframeMakeNoFewerTheWindowDoes() {
        var governor = HeldFramesGovernor(budget: 0.1)
        var t: UInt64 = 1_000_000_000
        func frames(_ count: Int, every interval: UInt64) {
            for _ in 0..<count {
                t += interval
                governor.frame(at: t)
            }
        }
        frames(HeldFramesGovernor.window + 1, every: 33_333_333)
        let three = governor.retune(settings, holding: 0, current: settings.boundParameters, at: t, keyframe: true)
        #expect(three?.maxHeldFrames == 3)
        frames(60, every: 33_333_333)
        frames(2, every: 36_000_000)
        #expect(governor.retune(settings, holding: 3, current: three?.boundParameters, at: t, keyframe: true) == nil)
        // A camera a few per cent slow (every 36 ms: 108 ms held) keeps
        // three; one at 25 fps (every 40 ms: 120 ms) makes it two there.
        frames(HeldFramesGovernor.window, every: 36_000_000)
        #expect(governor.retune(settings, holding: 3, current: three?.boundParameters, at: t, keyframe: true) == nil)
        frames(HeldFramesGovernor.window, every: 40_000_000)
        let two = governor.retune(settings, holding: 3, current: three?.boundParameters, at: t, keyframe: true)
        #expect(two?.maxHeldFrames == 2, "frames every 40 ms: \(String(describing: two?.boundParameters))")
    }

    /// x264's stream headers are the same whichever threads it runs, so a
    /// recording can change them at a keyframe within one file.
    /// (Also at a preset with B-frames, veryfast, the Pi 5's: bounded, it
    /// takes none, from the start.)
    @Test(arguments: ["ultrafast", "veryfast"])
    func x264sHeadersAreTheSameWithFrameThreadsAndWithSlices(_ preset: String) throws {
        var start = settings
        start.preset = preset
        var threaded = start
        threaded.frameInterval = 1.0 / 30
        let a = try LibavVideoEncoder(settings: start, input: .yuv420)
        let b = try LibavVideoEncoder(settings: threaded, input: .yuv420)
        #expect(sliced(a.boundParameters) && !sliced(b.boundParameters), "\(a.boundParameters ?? "-") → \(b.boundParameters ?? "-")")
        #expect(a.codecParameters.describesSameStream(as: b.codecParameters))
    }

    /// x265's too: one frame thread while frames come far apart, its frame
    /// threads at 30 fps, the same stream headers.
    @Test func x265sHeadersAreTheSameWithFrameThreadsAndWithOne() throws {
        guard LibavVideoEncoder.availableEncoders().contains("libx265") else { return }
        var start = settings
        start.codec = .hevc
        var threaded = start
        threaded.frameInterval = 1.0 / 30
        let a = try LibavVideoEncoder(settings: start, input: .yuv420)
        let b = try LibavVideoEncoder(settings: threaded, input: .yuv420)
        #expect(a.boundParameters?.contains("frame-threads=1") == true && b.boundParameters?.contains("frame-threads=1") == false,
                "\(a.boundParameters ?? "-") → \(b.boundParameters ?? "-")")
        #expect(a.codecParameters.describesSameStream(as: b.codecParameters))
    }

    /// A recording whose frames come every 33 ms, then a second apart, then
    /// every 33 ms again: its encoder is changed each way at a keyframe, and
    /// the file holds every frame, decodable. With libx264 at ultrafast and
    /// at veryfast (a preset with B-frames: the Pi 5's), and with libx265.
    @Test(.timeLimit(.minutes(1)), arguments: [(VideoCodec.h264, "ultrafast"), (.h264, "veryfast"), (.hevc, "ultrafast")])
    func aRecordingChangesItsEncodersThreadsAtKeyframesAndKeepsEveryFrame(_ codec: VideoCodec, _ preset: String) async throws {
        guard codec == .h264 || LibavVideoEncoder.availableEncoders().contains("libx265") else { return }
        let output = MovieFileOutput()
        let file = scratchPath("held-frames", "retuned-\(codec)-\(preset).mp4")
        var movie = MovieSettings()
        movie.threads = 4
        movie.codec = codec
        movie.preset = preset
        let events = try output.startRecording(to: file, settings: movie)
        var t: UInt64 = 1_000_000_000, index = 0
        for (count, interval) in [(45, UInt64(33_333_333)), (12, 1_000_000_000), (60, 33_333_333)] {
            for _ in 0..<count {
                // One at a time: none is dropped for a full queue.
                #expect(await waitUntil(within: .seconds(20)) { output.queue.count == 0 }, "the recording took frame \(index - 1)")
                output.queue.push(gradient(index, at: t))
                index += 1
                t += interval
            }
        }
        // One more, taken once the last has gone through (a stop drops a frame just taken).
        #expect(await waitUntil(within: .seconds(20)) { output.queue.count == 0 }, "the recording took the last frame")
        output.queue.push(gradient(index, at: t))
        #expect(await waitUntil(within: .seconds(20)) { output.queue.count == 0 }, "the recording took one more")
        output.stopRecording()
        var said: [String] = [], final: RecordingProgress?
        for await event in events {
            if case .encoderRetuned(let line) = event { said.append(line) }
            if case .finished(_, _, let p) = event { final = p }
        }
        #expect(said.count == 3, "\(said)")
        #expect(said.allSatisfy { !$0.hasPrefix("kept as it is") }, "\(said)")
        // What it changed to is said before "; was".
        #expect(said.map { sliced($0.components(separatedBy: "; was").first) } == [false, true, false],
                "frame threads, then slices, then frame threads: \(said)")
        let video = try ProbedVideo.read(file)
        let recorded = try #require(final?.frames)
        #expect(recorded >= index && video.frameCount == recorded, "\(video.frameCount) in the file, \(recorded) said, \(index) sent")
        #expect(video.isMonotonic)
        let decoded = try runProgram("ffprobe", ["-v", "error", "-select_streams", "v:0", "-count_frames",
                                                 "-show_entries", "stream=nb_read_frames", "-of", "csv=p=0", file])
        #expect(Int(decoded.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) == recorded, "ffprobe decoded: \(decoded.stdout) \(decoded.stderr)")
    }
}
