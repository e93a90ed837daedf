import Dispatch
import Foundation
import ObscuraSystem
import Testing
import TestSupport
@testable import ObscuraCapture
@testable import ObscuraSoftwareCamera
@testable import ObscuraEncoding
@testable import ObscuraConversion
@testable import ObscuraMedia
import ObscuraMuxing
@testable import ObscuraRecording


private func scratch(_ name: String) -> String { scratchPath("writer", name) }

@Suite(.serialized) struct VideoDataOutputTests {
    @Test func aFormatTheCameraLacksIsConvertedOnlyWhenAsked() async throws {
        // The synthetic camera offers NV12, BGR888, YUYV and XRGB8888, not I420.
        let plain = VideoDataOutput(pixelFormat: .yuv420)
        let session = try patternSession([plain])
        #expect(!plain.availableVideoPixelFormats.contains(.yuv420))
        try session.startRunning()
        var iterator = plain.frames.makeAsyncIterator()
        let native = try #require(await iterator.next())
        #expect(native.format == .nv12)
        #expect(plain.copies.copies == 0)
        // Convert that very frame: the luma plane must be the same bytes, the
        // chroma de-interleaved.
        let converter = try FrameConverter(to: .yuv420, copies: CopyCounter())
        let converted = try converter.convert(native)
        #expect(converted.format == .yuv420 && converted.planes.count == 3)
        let w = native.size.width, h = native.size.height
        native.withCPUAccess { src in
            let y0 = src[0].base.assumingMemoryBound(to: UInt8.self), y1 = converted.planes[0].base.assumingMemoryBound(to: UInt8.self)
            var same = true
            for row in stride(from: 0, to: h, by: 37) { for x in stride(from: 0, to: w, by: 13) where y0[row * src[0].stride + x] != y1[row * converted.planes[0].stride + x] { same = false } }
            #expect(same, "luma changed in the conversion")
            let uv = src[1].base.assumingMemoryBound(to: UInt8.self)
            let u = converted.planes[1].base.assumingMemoryBound(to: UInt8.self), v = converted.planes[2].base.assumingMemoryBound(to: UInt8.self)
            let row = h / 4, x = w / 4
            #expect(abs(Int(uv[row * src[1].stride + 2 * x]) - Int(u[row * converted.planes[1].stride + x])) <= 1)
            #expect(abs(Int(uv[row * src[1].stride + 2 * x + 1]) - Int(v[row * converted.planes[2].stride + x])) <= 1)
        }
        try session.stopRunning()

        let converting = VideoDataOutput(pixelFormat: .yuv420, convertsToRequestedFormat: true)
        let second = try patternSession([converting])
        #expect(converting.availableVideoPixelFormats.first == .nv12)
        #expect(converting.availableVideoPixelFormats.contains(.yuv420))
        try second.startRunning()
        var count = 0
        for await frame in converting.frames {
            #expect(frame.format == .yuv420)
            count += 1
            if count == 5 { break }
        }
        try second.stopRunning()
        #expect(converting.copies.copies == 5)  // one counted copy per converted frame
    }

    @Test func aDelegateGetsFramesOnItsQueue() async throws {
        final class Collector: VideoDataOutputDelegate, @unchecked Sendable {
            let count = Mutex(0)
            let onQueue = Mutex(true)
            let key = DispatchSpecificKey<Int>()
            func videoDataOutput(_ output: VideoDataOutput, didOutput frame: VideoFrame) {
                if DispatchQueue.getSpecific(key: key) != 7 { onQueue.withLock { $0 = false } }
                count.withLock { $0 += 1 }
            }
        }
        let output = VideoDataOutput()
        let collector = Collector()
        let queue = DispatchQueue(label: "frames")
        queue.setSpecific(key: collector.key, value: 7)
        output.setDelegate(collector, queue: queue)
        let session = try patternSession([output])
        try session.startRunning()
        #expect(await waitUntil { collector.count.withLock { $0 } >= 10 }, "ten frames reached the delegate")
        try session.stopRunning()
        output.setDelegate(nil, queue: queue)
        #expect(collector.onQueue.withLock { $0 })
    }
}

@Suite(.serialized) struct AssetWriterTests {
    /// (The camera is paced by a clock the test drives on a frame at a time
    /// while the input is ready and the frame before was taken: a machine
    /// busy with other tests makes no frame late, and none is refused for
    /// a busy encoder.)
    @Test func appendedFramesBecomeAPlayableFileFromTheSessionStart() async throws {
        let output = VideoDataOutput(alwaysDiscardsLateVideoFrames: false, queueDepth: 3)
        let clock = ManualClock()
        let (_, session) = try pacedSession([output], clock: clock)
        #expect(throws: AssetWriterError.noActiveFormat) { _ = try output.recommendedVideoSettings(for: .h264, fileType: .mp4) }
        try session.startRunning()
        let settings = try output.recommendedVideoSettings(for: .h264, fileType: .mp4)
        #expect(settings.size == PixelSize(width: 640, height: 480))
        #expect(settings.maxKeyFrameInterval == 30 && settings.profile == "high")
        #expect(settings.averageBitRate == Int(640 * 480 * 30 * 0.1))

        let file = scratch("writer.mp4")
        let writer = try AssetWriter(path: file)
        let input = AssetWriterInput(outputSettings: settings)
        input.expectsMediaDataInRealTime = true
        #expect(writer.canAdd(input))
        try writer.add(input)
        #expect(throws: AssetWriterError.oneVideoInput) { try writer.add(AssetWriterInput(outputSettings: settings)) }
        #expect(!input.isReadyForMoreMediaData)  // not writing yet
        try writer.startWriting()
        #expect(writer.status == .writing)
        let driving = clock.drive(by: .nanoseconds(33_333_333)) {
            output.queue.count == 0 && (input.isReadyForMoreMediaData || writer.status != .writing)
        }
        defer { driving.cancel() }
        var started: UInt64?
        var skipped = 0
        for await frame in output.frames {
            if started == nil {
                // The session begins half a second into the frames.
                started = frame.timestampNanoseconds + 500_000_000
                writer.startSession(atSourceTime: started!)
            }
            if frame.timestampNanoseconds < started! { skipped += 1 }
            // Frames up to 1.5 s into the session; the first after it ends the loop.
            if frame.timestampNanoseconds > started! + 1_500_000_000 { break }
            if input.isReadyForMoreMediaData { input.append(frame) }
        }
        await writer.finishWriting()
        try session.stopRunning()
        #expect(writer.status == .completed, "\(writer.error ?? "")")
        #expect(skipped >= 1)
        #expect(input.refusedFrameCount >= skipped)  // frames before the session start are not written
        let video = try ProbedVideo.read(file)
        #expect(video.codec == "h264" && video.width == 640)
        #expect(video.frameCount == input.appendedFrameCount)
        #expect(input.encoderName == "libx264", "\(input.encoderName ?? "none")")
        #expect(video.isMonotonic)
        #expect(try #require(video.frameTimes.first) < 0.04)
        // The last frame appended is the last at or before 1.5 s (a real-time
        // input refuses frames while busy, so it may be a little earlier).
        let last = try #require(video.frameTimes.last)
        #expect(last <= 1.51 && last > 1.2, "last frame at \(last) s")
        #expect(!FileManager.default.fileExists(atPath: file + ".partial"))
    }

    @Test func aNonRealTimeSourceIsPacedByReadiness() async throws {
        // Frames from memory (not a camera), written as fast as the encoder takes them.
        let camera = SyntheticCamera()
        let output = VideoDataOutput(alwaysDiscardsLateVideoFrames: false, queueDepth: 4)
        let session = try patternSession([output], camera: camera)
        try session.startRunning()
        var frames: [VideoFrame] = []
        for await frame in output.frames {
            frames.append(frame)
            if frames.count == 3 { break }
        }
        try session.stopRunning()
        let file = scratch("paced.mkv")
        let writer = try AssetWriter(path: file)
        let input = AssetWriterInput(outputSettings: VideoEncoderSettings(codec: .mjpeg, size: frames[0].size, frameRate: 30))
        input.expectsMediaDataInRealTime = false
        try writer.add(input)
        try writer.startWriting()
        writer.startSession(atSourceTime: frames[0].timestampNanoseconds)
        let source = frames
        frames = []
        let next = Mutex(0)
        input.requestMediaDataWhenReady(on: DispatchQueue(label: "feed")) {
            while input.isReadyForMoreMediaData {
                let i = next.withLock { n -> Int in defer { n += 1 }; return n }
                guard i < 90 else {
                    input.markAsFinished()
                    return
                }
                // The same three buffers, stamped as a 30 fps sequence.
                let f = source[i % 3]
                let stamped = VideoFrame(format: f.format, size: f.size, planes: f.planes, sequence: UInt32(i),
                                         timestampNanoseconds: source[0].timestampNanoseconds + UInt64(i) * 33_333_333,
                                         release: { _ = f })
                #expect(input.append(stamped))
            }
        }
        _ = await waitUntil { next.withLock({ $0 }) > 90 || writer.status != .writing }
        await writer.finishWriting()
        #expect(writer.status == .completed, "\(writer.error ?? "")")
        let video = try ProbedVideo.read(file)
        #expect(video.codec == "mjpeg")
        #expect(video.frameCount == 90)
        #expect(abs(try #require(video.frameTimes.last) - 89.0 / 30) < 0.002)
    }

    @Test func misuseGetsErrorsThatSayWhatIsAllowed() async throws {
        let prores = AssetWriterInput(outputSettings: VideoEncoderSettings(codec: .prores422, size: PixelSize(width: 64, height: 64), frameRate: 30))
        let mp4 = try AssetWriter(path: scratch("x.mp4"))
        #expect(!mp4.canAdd(prores))
        #expect(throws: AssetWriterError.codecNotInContainer(.prores422, .mp4, allowed: [.mov, .mkv])) { try mp4.add(prores) }
        #expect(throws: AssetWriterError.noInput) { try mp4.startWriting() }
        #expect(throws: RecordingError.unknownContainer("clip.avi")) { _ = try AssetWriter(path: "clip.avi") }
        let mov = try AssetWriter(path: scratch("x.mov"))
        try mov.add(prores)
        try mov.startWriting()
        #expect(throws: AssetWriterError.wrongStatus("start writing", .writing)) { try mov.startWriting() }
        await mov.finishWriting()
        #expect(mov.status == .failed)
        #expect(mov.error?.contains("nothing was appended") == true)

        let output = VideoDataOutput()
        let session = try patternSession([output])
        try session.startRunning()
        #expect(throws: EncoderError.codecNeedsFormat(.prores422, given: .nv12, allowed: [.p210])) {
            _ = try output.recommendedVideoSettings(for: .prores422, fileType: .mov)
        }
        try session.stopRunning()
    }
}

/// An hour of frames from a sensor whose clock runs at 29.97 fps with jitter,
/// written as fast as the encoder goes: the file's last frame sits at exactly
/// the camera's elapsed time (no drift from a nominal frame rate).
@Suite struct TimelineTests {
    @Test func anHourOfCameraTimestampsStaysExactInTheFile() async throws {
        let size = PixelSize(width: 48, height: 48)
        let luma = UnsafeMutableRawBufferPointer.allocate(byteCount: 48 * 48 * 3 / 2, alignment: 64)
        defer { luma.deallocate() }
        luma.initializeMemory(as: UInt8.self, repeating: 128)
        let base = UnsafeRawPointer(luma.baseAddress!)
        let planes = [FramePlane(base: base, stride: 48, length: 48 * 48),
                      FramePlane(base: base + 48 * 48, stride: 48, length: 48 * 24)]
        let file = scratch("hour.mp4")
        let writer = try AssetWriter(path: file)
        let input = AssetWriterInput(outputSettings: VideoEncoderSettings(codec: .h264, size: size, frameRate: 30, threads: 1))
        input.expectsMediaDataInRealTime = false
        try writer.add(input)
        try writer.startWriting()
        let start: UInt64 = 5_000_000_000_000  // the sensor clock does not start at zero
        writer.startSession(atSourceTime: start)
        let frames = 3600 * 2997 / 100
        var last = start
        var generator = SystemRandomNumberGenerator()
        var i = 0
        while i < frames {
            if !input.isReadyForMoreMediaData {
                _ = await waitUntil(every: .microseconds(200)) { input.isReadyForMoreMediaData }
                continue
            }
            // 29.97 fps from a clock that is not the encoder's, ±1 ms of jitter.
            let ideal = start + UInt64(Double(i) * 1e9 / 29.97)
            let t = i == 0 ? start : ideal + UInt64.random(in: 0...2_000_000, using: &generator) - 1_000_000
            last = t
            input.append(VideoFrame(format: .nv12, size: size, planes: planes, sequence: UInt32(i), timestampNanoseconds: t))
            i += 1
        }
        await writer.finishWriting()
        #expect(writer.status == .completed, "\(writer.error ?? "")")
        let probe = try runProgram("ffprobe", ["-v", "error", "-select_streams", "v:0", "-count_packets",
                                               "-show_entries", "stream=nb_read_packets", "-of", "csv=p=0", file])
        #expect(Int(probe.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) == frames)
        let tail = try runProgram("ffprobe", ["-v", "error", "-select_streams", "v:0", "-read_intervals", "3595%",
                                              "-show_entries", "packet=pts_time", "-of", "csv=p=0", file])
        let lastInFile = try #require(tail.stdout.split(separator: "\n").compactMap { Double($0.trimmingCharacters(in: .whitespaces)) }.max())
        let elapsed = Double(last - start) / 1e9
        #expect(abs(lastInFile - elapsed) < 0.000_002, "last frame at \(lastInFile) s in the file, \(elapsed) s on the camera")
        try? FileManager.default.removeItem(atPath: file)
    }
}
