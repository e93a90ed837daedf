import Foundation
import Testing
import TestSupport
@testable import ObscuraEncoding
@testable import ObscuraConversion
@testable import ObscuraMedia
@testable import ObscuraMuxing
import ObscuraFiles

/// Synthetic frames: a gradient that moves one pixel per frame, stamped at
/// `nanoseconds` of the camera's clock (by default 30 a second from 1 s).
func makeFrame(_ format: PixelFormat, _ size: PixelSize, index: Int, at nanoseconds: UInt64? = nil) -> VideoFrame {
    let info = format.info!
    var planes: [FramePlane] = []
    for p in info.planes.indices {
        let stride = info.stride(plane: p, width: size.width)
        let length = stride * info.rows(plane: p, height: size.height)
        let memory = UnsafeMutableRawPointer.allocate(byteCount: length, alignment: 64)
        let bytes = memory.assumingMemoryBound(to: UInt8.self)
        for i in 0..<length { bytes[i] = UInt8(truncatingIfNeeded: (i % stride) + index * 3 + p * 40) }
        planes.append(FramePlane(base: UnsafeRawPointer(memory), stride: stride, length: length))
    }
    let owned = planes.map { UnsafeMutableRawPointer(mutating: $0.base) }
    nonisolated(unsafe) let toFree = owned
    return VideoFrame(format: format, size: size, planes: planes, sequence: UInt32(index),
                      timestampNanoseconds: nanoseconds ?? 1_000_000_000 + UInt64(index) * 33_333_333,
                      release: { toFree.forEach { $0.deallocate() } })
}

private func temporaryPath(_ name: String) -> String {
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("obscura-tests-\(getpid())")
    try? FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    return dir.appendingPathComponent(name).path
}

@discardableResult
private func record(_ format: PixelFormat, frames: Int, to path: String, finish: Bool = true,
                    copies: CopyCounter = CopyCounter(), container: MovieContainer = .mp4,
                    writerOut: ((MovieWriter) -> Void)? = nil) throws -> LibavVideoEncoder {
    let size = PixelSize(width: 320, height: 240)
    let encoder = try LibavVideoEncoder(settings: VideoEncoderSettings(codec: .h264, size: size, frameRate: 30),
                                        input: format, copies: copies)
    let writer = try MovieWriter(path: path, container: container, video: encoder.codecParameters,
                                 fragmentDuration: .milliseconds(500))
    writerOut?(writer)
    for i in 0..<frames {
        let frame = makeFrame(format, size, index: i)
        for packet in try encoder.encode(frame, ptsMicroseconds: Int64(i) * 33_333) { try writer.write(packet) }
    }
    if finish {
        for packet in try encoder.finish() { try writer.write(packet) }
        try writer.finish()
    }
    return encoder
}

/// Open descriptors, threads and resident pages of this process.
func processResources() -> (fds: Int, threads: Int, residentKiB: Int) {
    let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? -1
    let threads = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task").count) ?? -1
    let statm = (try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8)) ?? ""
    let pages = statm.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? -1
    return (fds, threads, pages * Int(sysconf(Int32(_SC_PAGESIZE))) / 1024)
}

@Suite struct EncoderLeakTests {
    /// An encoder whose init fails after libavcodec opened the codec (x264
    /// with its threads, here refused because the input has no FFmpeg pixel
    /// format) frees all of it: 1000 failing opens leave descriptors,
    /// threads and resident memory where they were.
    @Test func aThousandFailedOpensLeakNothing() throws {
        let settings = VideoEncoderSettings(codec: .h264, size: PixelSize(width: 320, height: 240), frameRate: 30)
        func failOpen() {
            do {
                _ = try LibavVideoEncoder(settings: settings, input: .sbggr10CSI2Packed)
                Issue.record("the encoder opened for an input it cannot take")
            } catch {}
        }
        for _ in 0..<50 { failOpen() }  // the allocator's and libx264's one-time state
        let before = processResources()
        for _ in 0..<1000 { failOpen() }
        let after = processResources()
        // Nothing that grows with the opens. One failed open leaks x264's
        // whole thread pool (or its descriptors), so 1000 would be thousands
        // of threads; the process's count also moves with the suites that run
        // beside this one (their threads, pipes and children's descriptors
        // come and go meanwhile), by a few dozen at most.
        #expect(after.fds <= before.fds + 32, "descriptors \(before.fds) → \(after.fds)")
        #expect(after.threads <= before.threads + 32, "threads \(before.threads) → \(after.threads)")
        // A leaked x264 context at 320x240 is over 1 MiB: 1000 of them would be a gigabyte.
        #expect(after.residentKiB - before.residentKiB < 16 * 1024, "resident \(before.residentKiB) → \(after.residentKiB) KiB")
    }
}

@Suite struct EncodingTests {
    /// The checksum beside a finished movie is its SHA-256 (sha256sum agrees).
    /// MP4 and MOV only grow while written, so it is hashed as written; the
    /// Matroska muxer rewrites its header at the end, so that file is read again.
    @Test(arguments: [MovieContainer.mp4, .mov, .mkv])
    func aFinishedMoviesChecksumIsItsSha256(_ container: MovieContainer) throws {
        let path = temporaryPath("sum.\(container.rawValue)")
        var made: MovieWriter?
        try record(.nv12, frames: 75, to: path, container: container) { made = $0 }
        let writer = try #require(made)
        #expect(writer.checksumHashedWhileWriting == (container != .mkv))
        let check = try runProgram("/usr/bin/sha256sum", ["-c", (path as NSString).lastPathComponent + ".sha256"],
                                   cwd: (path as NSString).deletingLastPathComponent)
        #expect(check.status == 0, "\(check.stdout)\(check.stderr)")
        #expect(try ProbedVideo.read(path).frameCount == 75)
    }

    /// Nettle's SHA-256, fed in uneven pieces, against sha256sum.
    @Test func sha256AgreesWithSha256sum() throws {
        let dir = try TemporaryDirectory()
        var generator = SystemRandomNumberGenerator()
        for length in [0, 1, 55, 56, 63, 64, 65, 1_000_003] {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let file = dir.path + "/b\(length)"
            try Data(bytes).write(to: URL(fileURLWithPath: file))
            let expected = String(try runProgram("/usr/bin/sha256sum", [file]).stdout.prefix(64))
            let hash = SHA256()
            var at = 0, piece = 1
            while at < length {
                let end = min(length, at + piece)
                bytes[at..<end].withUnsafeBytes { hash.update($0) }
                at = end
                piece = piece * 3 + 1
            }
            #expect(hash.count == length)
            #expect(SHA256.hex(hash.finalize()) == expected, "\(length) bytes")
            #expect(try Checksum.sha256(of: file) == expected)
        }
    }

    @Test func rgbFramesAreConvertedCountedAndPlayable() throws {
        let path = temporaryPath("rgb.mp4")
        let copies = CopyCounter()
        let encoder = try record(.bgr888, frames: 30, to: path, copies: copies)
        #expect(!encoder.isZeroCopy)
        #expect(copies.copies == 30)
        // Each conversion writes an I420 picture and reads the source's last
        // row from a staged copy (SwscaleStaging): 960 bytes, 256 or more.
        #expect(copies.bytes == 30 * (320 * 240 * 3 / 2 + 320 * 3))
        let probe = try ProbedVideo.read(path)
        #expect(probe.codec == "h264")
        #expect(probe.width == 320 && probe.height == 240)
        #expect(probe.frameCount == 30)
        #expect(probe.isMonotonic)
        #expect(abs(probe.measuredFrameRate - 30) < 0.1)
        #expect(!FileManager.default.fileExists(atPath: path + ".partial"))
    }

    @Test func yuv420FramesAreWrappedWithoutCopies() throws {
        let path = temporaryPath("yuv.mp4")
        let copies = CopyCounter()
        let encoder = try record(.yuv420, frames: 10, to: path, copies: copies)
        #expect(encoder.isZeroCopy)
        #expect(copies.copies == 0)
        #expect(copies.frames == 10)
        #expect(try ProbedVideo.read(path).frameCount == 10)
    }

    @Test func wrappedFramesAreReleasedAfterEncoding() throws {
        let size = PixelSize(width: 64, height: 64)
        let encoder = try LibavVideoEncoder(settings: VideoEncoderSettings(size: size, frameRate: 30), input: .yuv420)
        final class Flag: @unchecked Sendable { var released = false }
        let flag = Flag()
        do {
            let base = makeFrame(.yuv420, size, index: 0)
            let frame = VideoFrame(format: base.format, size: size, planes: base.planes, sequence: 0,
                                   timestampNanoseconds: 0, release: { [base] in _ = base; flag.released = true })
            _ = try encoder.encode(frame, ptsMicroseconds: 0)
        }
        #expect(flag.released)
    }

    @Test func aKilledRecordingLeavesAPlayablePartialFile() throws {
        let path = temporaryPath("killed.mp4")
        // 90 frames with 1 s fragments, never finished: as if the process died.
        _ = try record(.yuv420, frames: 90, to: path, finish: false)
        #expect(!FileManager.default.fileExists(atPath: path))
        let probe = try ProbedVideo.read(path + ".partial")
        #expect(probe.codec == "h264")
        #expect(probe.frameCount >= 30) // at most the last fragment is lost
    }

    @Test func proResIsRefusedOnEightBitFormats() throws {
        for format in [PixelFormat.nv12, .yuv420, .bgr888] {
            let error = thrown {
                _ = try LibavVideoEncoder(settings: VideoEncoderSettings(codec: .prores422, size: PixelSize(width: 64, height: 64), frameRate: 30),
                                          input: format)
            } as? EncoderError
            #expect(error?.description.hasPrefix("prores422 needs the camera's active format to be P210 ('x422')") == true)
        }
        #expect(VideoCodec.prores422.accepts(.p210))
        #expect(VideoCodec.h264.accepts(.bgr888))
    }

    @Test func proResRecordsFromTenBitFourTwoTwo() throws {
        let path = temporaryPath("prores.mov")
        let size = PixelSize(width: 320, height: 240)
        let encoder = try LibavVideoEncoder(settings: VideoEncoderSettings(codec: .prores422, size: size, frameRate: 30),
                                            input: .p210)
        let writer = try MovieWriter(path: path, container: .mov, video: encoder.codecParameters)
        for i in 0..<5 {
            for packet in try encoder.encode(makeFrame(.p210, size, index: i), ptsMicroseconds: Int64(i) * 33_333) { try writer.write(packet) }
        }
        for packet in try encoder.finish() { try writer.write(packet) }
        try writer.finish()
        let video = try ProbedVideo.read(path)
        #expect(video.codec == "prores")
        #expect(video.frameCount == 5)
    }

    /// An encoder changed mid-recording: the old one's frames end a
    /// fragment of their own at once (`endFragmentNow`), in the file before
    /// the new encoder gives its first packet; the new one's stream goes on
    /// in the same file, every frame decoded.
    @Test(arguments: [MovieContainer.mp4, .mov, .mkv])
    func theOldEncodersFramesReachTheFileWhenItIsReplaced(_ container: MovieContainer) throws {
        let path = temporaryPath("replaced.\(container.rawValue)")
        let size = PixelSize(width: 320, height: 240)
        let settings = VideoEncoderSettings(codec: .h264, size: size, frameRate: 30)
        let old = try LibavVideoEncoder(settings: settings, input: .nv12)
        let writer = try MovieWriter(path: path, container: container, video: old.codecParameters,
                                     fragmentDuration: .milliseconds(500))
        for i in 0..<8 {
            for packet in try old.encode(makeFrame(.nv12, size, index: i), ptsMicroseconds: Int64(i) * 33_333) { try writer.write(packet) }
        }
        for packet in try old.finish() { try writer.write(packet) }
        // Eight frames, less than a fragment: only the first (a fragment of its own) is in the file.
        #expect(MovieReader.countPackets(writer.partialPath)?.video == 1)
        try writer.endFragmentNow()
        #expect(MovieReader.countPackets(writer.partialPath)?.video == 8, "the old encoder's frames are in the file at once")
        try writer.endFragmentNow()  // (nothing more to end: no empty fragment)
        let next = try LibavVideoEncoder(settings: settings, input: .nv12)
        for i in 8..<20 {
            for packet in try next.encode(makeFrame(.nv12, size, index: i), ptsMicroseconds: Int64(i) * 33_333) { try writer.write(packet) }
        }
        for packet in try next.finish() { try writer.write(packet) }
        try writer.finish()
        let decoded = try ffmpegDecodeErrors(path)
        #expect(decoded.status == 0 && decoded.stderr.isEmpty, "\(decoded.stderr)")
        #expect(try ProbedVideo.read(path).frameCount == 20)
    }

    /// Frames that come far apart and unevenly (a starved board) reach the
    /// file as soon as their fragment holds its length, none held back for
    /// the next one's time, and each keeps its own time: the guessed duration
    /// of a fragment's last frame never shifts the frames after it (gaps down
    /// to half the nominal interval; see `MovieWriter.guessedDuration`).
    @Test(arguments: [MovieContainer.mp4, .mkv])
    func framesFarApartReachTheFileAtOnceAndKeepTheirTimes(_ container: MovieContainer) throws {
        let path = temporaryPath("uneven.\(container.rawValue)")
        let size = PixelSize(width: 320, height: 240)
        let encoder = try LibavVideoEncoder(settings: VideoEncoderSettings(codec: .h264, size: size, frameRate: 10, maxDelay: 0),
                                            input: .nv12)
        let writer = try MovieWriter(path: path, container: container, video: encoder.codecParameters,
                                     fragmentDuration: .milliseconds(500))
        let gaps: [Int64] = [0, 1_000_000, 250_000, 1_300_000, 60_000, 700_000, 1_000_000, 90_000, 2_000_000, 100_000, 50_000, 600_000]
        var pts: Int64 = 0
        var times: [Int64] = []
        for (i, gap) in gaps.enumerated() {
            pts += gap
            times.append(pts)
            let packets = try encoder.encode(makeFrame(.nv12, size, index: i), ptsMicroseconds: pts)
            #expect(packets.count == 1, "frame \(i): the encoder gave \(packets.count) packets")
            for packet in packets { try writer.write(packet) }
            // What is not in the file yet is the fragment being built: the
            // frames since the oldest missing one span less than its length.
            let inFile = MovieReader.countPackets(writer.partialPath)?.video ?? -1
            #expect(inFile >= 1 && inFile <= i + 1)
            if inFile >= 1, inFile <= i {
                #expect(pts - times[inFile] < 500_000, "after frame \(i) (\(pts) µs) the file holds \(inFile) frames")
            }
            // A frame the next one is expected a fragment's length after is
            // in the file at once.
            if gap >= 500_000 {
                #expect(inFile == i + 1, "frame \(i), \(gap) µs after the one before, is not in the file (it holds \(inFile))")
            }
        }
        for packet in try encoder.finish() { try writer.write(packet) }
        try writer.finish()
        let probe = try runProgram("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries", "packet=pts_time",
                                               "-of", "csv=p=0", path])
        let stored = probe.stdout.split(separator: "\n").compactMap { Double($0) }.sorted()
        #expect(stored.count == times.count)
        for (got, want) in zip(stored, times) {
            #expect(abs(got - Double(want) / 1e6) < 0.002, "a frame at \(Double(want) / 1e6) s is stored at \(got) s")
        }
    }

    @Test func unknownEncoderNamesWhatExists() throws {
        let error = thrown {
            _ = try LibavVideoEncoder(settings: VideoEncoderSettings(size: PixelSize(width: 64, height: 64), frameRate: 30),
                                      input: .yuv420, encoderName: "h264_nonexistent")
        } as? EncoderError
        #expect(error?.description.contains("libx264") == true)
    }
}

/// What the encoder holds back is lost when the power goes: a recording bounds
/// it (`maxDelay`), and the bound holds whatever the preset and threads.
@Suite struct EncoderDelayTests {
    /// Most frames taken but not yet given back as packets when `encode`
    /// returns, over `frames` frames.
    private func framesHeld(_ settings: VideoEncoderSettings, frames: Int = 40) throws -> (held: Int, bound: Int?) {
        let size = settings.size
        let encoder = try LibavVideoEncoder(settings: settings, input: .yuv420)
        var sent = 0, received = 0, held = 0
        for i in 0..<frames {
            let pts = Int64((Double(i) / settings.frameRate * 1_000_000).rounded())
            let packets = try encoder.encode(makeFrame(.yuv420, size, index: i), ptsMicroseconds: pts)
            sent += 1
            received += packets.count
            held = max(held, sent - received)
        }
        received += try encoder.finish().count
        #expect(received == frames, "every frame comes out as a packet")
        return (held, encoder.heldFramesBound)
    }

    @Test(arguments: [("ultrafast", 10.0, 0), ("ultrafast", 10.0, 4), ("ultrafast", 30.0, 0), ("ultrafast", 30.0, 8),
                      ("veryfast", 10.0, 0), ("veryfast", 30.0, 2), ("slow", 30.0, 0), ("slow", 10.0, 3),
                      ("ultrafast", 5.0, 0), ("medium", 5.0, 2)])
    func x264HoldsNoMoreThanItsBound(_ preset: String, _ rate: Double, _ threads: Int) throws {
        // Before the interval is measured (none held), and with frames at the rate.
        for interval in [nil, 1 / rate] {
            var settings = VideoEncoderSettings(size: PixelSize(width: 320, height: 240), frameRate: rate, preset: preset,
                                                threads: threads, maxDelay: 0.1)
            settings.frameInterval = interval
            let limit = try #require(settings.maxHeldFrames)
            let (held, bound) = try framesHeld(settings)
            #expect(held <= limit, "\(preset) at \(rate) fps, threads \(threads), \(settings.boundParameters ?? "-"): holds \(held) frames, the bound is \(limit)")
            #expect(bound.map { held <= $0 && $0 <= limit } == true, "estimated \(String(describing: bound)), measured \(held)")
            // Unbounded, the same encoder holds more (so the bound is what keeps it short).
            settings.maxDelay = nil
            if preset != "ultrafast" || threads > limit + 1 {
                let free = try framesHeld(settings).held
                #expect(free > limit, "unbounded: \(free) frames")
            }
        }
    }

    /// What a four-core board (a Pi) gets: frame threads while one per core
    /// fits the budget, else slices; never B-frames or a lookahead.
    @Test func aFourCoreBoardKeepsFrameThreadsOnlyWhereTheyFit() {
        func params(_ preset: String, _ maxFrames: Int) -> String? {
            DelayBound(encoder: "libx264", preset: preset, threads: 0, maxFrames: maxFrames, cores: 4).parameters
        }
        let t = "sync-lookahead=0:force-cfr=1"
        #expect(params("ultrafast", 6) == "force-cfr=1")                     // 60 fps: its 6 frame threads and sync lookahead fit
        #expect(params("ultrafast", 5) == t)                                 // 50 fps: its 6 frame threads fit
        #expect(params("ultrafast", 4) == "\(t):threads=5")                  // 40 fps
        #expect(params("ultrafast", 3) == "\(t):threads=4")                  // 30 fps: one per core
        #expect(params("ultrafast", 1) == "\(t):sliced-threads=1")           // 10 fps
        // The Pi 5's preset: no B-frames or lookahead (the stream starts without them), frame threads.
        #expect(params("veryfast", 3) == "\(t):threads=4:bframes=0:rc-lookahead=0")
        #expect(params("veryfast", 6) == "force-cfr=1:bframes=0:rc-lookahead=0")
        #expect(params("ultrafast", 0) == "\(t):sliced-threads=1")           // not measured yet, or frames far apart
        #expect(params("veryfast", 0) == "\(t):sliced-threads=1:bframes=0:rc-lookahead=0")
        #expect(DelayBound(encoder: "libx264", preset: "ultrafast", threads: 0, maxFrames: 12, cores: 4).heldFrames == 6)
    }

    @Test(arguments: [("ultrafast", 10.0), ("ultrafast", 30.0), ("medium", 30.0), ("medium", 50.0), ("slow", 60.0)])
    func x265HoldsNoMoreThanItsBound(_ preset: String, _ rate: Double) throws {
        guard LibavVideoEncoder.availableEncoders().contains("libx265") else { return }
        let settings = VideoEncoderSettings(codec: .hevc, size: PixelSize(width: 320, height: 240), frameRate: rate,
                                            preset: preset, maxDelay: 0.1)
        let limit = try #require(settings.maxHeldFrames)
        let (held, bound) = try framesHeld(settings)
        #expect(held <= limit, "\(preset) at \(rate) fps: holds \(held) frames, the bound is \(limit)")
        #expect(bound.map { held <= $0 } == true, "estimated \(String(describing: bound)), measured \(held)")
    }
}
