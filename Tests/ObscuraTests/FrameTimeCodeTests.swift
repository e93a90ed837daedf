import Foundation
import Testing
import TestSupport
import ObscuraMedia
import ObscuraCapture
import ObscuraSoftwareCamera

/// A time stamped into a picture reads back the same, also after libx264 at a
/// low bit rate and a decode (ffmpeg's), and a picture without one reads as none.
@Suite struct FrameTimeCodeTests {
    /// A luma plane of moving texture (what a camera gives), `seed` varying it.
    static func texture(width: Int, height: Int, seed: Int) -> [UInt8] {
        var plane = [UInt8](repeating: 0, count: width * height)
        for y in 0..<height {
            for x in 0..<width {
                plane[y * width + x] = UInt8(truncatingIfNeeded: 40 + (x * 3 + y * 5 + seed * 7) % 160 + (x * y + seed) % 23)
            }
        }
        return plane
    }

    static func stamped(_ value: UInt64, width: Int, height: Int, seed: Int) -> [UInt8] {
        var plane = texture(width: width, height: height, seed: seed)
        plane.withUnsafeMutableBytes { FrameTimeCode.write(value, into: $0.baseAddress!, stride: width, width: width, height: height) }
        return plane
    }

    static func read(_ plane: [UInt8], width: Int, height: Int) -> UInt64? {
        plane.withUnsafeBytes { FrameTimeCode.read(from: $0.baseAddress!, stride: width, width: width, height: height) }
    }

    @Test(arguments: [UInt64(0), 1, 33_333, 1_234_567_890_123, 0xFFFF_FFFF_FFFF])
    func aStampedTimeReadsBackTheSame(value: UInt64) {
        for (width, height) in [(320, 240), (64, 64), (1920, 1080)] {
            #expect(Self.read(Self.stamped(value, width: width, height: height, seed: 3), width: width, height: height) == value,
                    "\(width)x\(height)")
        }
    }

    @Test func aPictureWithoutACodeOrWithABlockWrongReadsAsNone() {
        #expect(Self.read(Self.texture(width: 320, height: 240, seed: 1), width: 320, height: 240) == nil)
        #expect(Self.read([UInt8](repeating: 235, count: 320 * 240), width: 320, height: 240) == nil)
        // One data block turned from black to white or back: the check fails.
        for bit in [0, 17, 47] {
            var plane = Self.stamped(987_654_321, width: 320, height: 240, seed: 2)
            let x = bit % 40 * 8, y = bit / 40 * 8
            let flipped: UInt8 = plane[(y + 4) * 320 + x + 4] > 128 ? 16 : 235
            for row in y..<(y + 8) { for column in x..<(x + 8) { plane[row * 320 + column] = flipped } }
            #expect(Self.read(plane, width: 320, height: 240) == nil, "bit \(bit) flipped")
        }
        #expect(!FrameTimeCode.fits(width: 7, height: 480) && !FrameTimeCode.fits(width: 320, height: 8) && FrameTimeCode.fits(width: 320, height: 16))
    }

    @Test(arguments: [(320, 240, "200k"), (1920, 1080, "1M")])
    func theTimeSurvivesLibx264AtALowBitRateAndADecode(width: Int, height: Int, rate: String) throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("obscura-timecode-\(getpid())-\(width)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let frames = 12, chroma = [UInt8](repeating: 128, count: width * height / 2)
        let times = (0..<frames).map { UInt64(5_000_000_000) + UInt64($0) * 33_333 }
        var raw = Data()
        for (n, time) in times.enumerated() {
            raw.append(contentsOf: Self.stamped(time, width: width, height: height, seed: n))
            raw.append(contentsOf: chroma)
        }
        try raw.write(to: URL(fileURLWithPath: dir + "/in.yuv"))
        let size = "\(width)x\(height)"
        let encoded = try runProgram("ffmpeg", ["-v", "error", "-y", "-f", "rawvideo", "-pix_fmt", "yuv420p", "-s", size, "-r", "30",
                                                "-i", dir + "/in.yuv", "-c:v", "libx264", "-preset", "ultrafast", "-b:v", rate,
                                                dir + "/out.mp4"])
        try #require(encoded.status == 0, "\(encoded.stderr)")
        let decoded = try runProgram("ffmpeg", ["-v", "error", "-y", "-i", dir + "/out.mp4", "-f", "rawvideo", "-pix_fmt", "yuv420p",
                                                dir + "/back.yuv"])
        try #require(decoded.status == 0, "\(decoded.stderr)")
        let back = try [UInt8](Data(contentsOf: URL(fileURLWithPath: dir + "/back.yuv")))
        let frameBytes = width * height * 3 / 2
        try #require(back.count == frameBytes * frames, "\(back.count) bytes decoded")
        let read = (0..<frames).map { n in Self.read(Array(back[(n * frameBytes)..<(n * frameBytes + width * height)]), width: width, height: height) }
        #expect(read == times.map { Optional($0) })
    }
}

/// The test pattern, asked to, carries each frame's camera time in its
/// picture: what a live view's latency is read from at the viewer's end.
@Suite struct TimeStampedPatternTests {
    private func codes(stamping: Bool) async throws -> [(read: UInt64?, time: UInt64)] {
        let output = VideoDataOutput(alwaysDiscardsLateVideoFrames: false, queueDepth: 2)
        let session = try patternSession([output], camera: SyntheticCamera(stampsTime: stamping))
        try session.startRunning()
        defer { try? session.stopRunning() }
        var seen: [(read: UInt64?, time: UInt64)] = []
        while seen.count < 5, let frame = await output.queue.next() {
            #expect(frame.format == .nv12)
            let luma = frame.planes[0]
            seen.append((FrameTimeCode.read(from: luma.base, stride: luma.stride, width: frame.size.width, height: frame.size.height),
                         frame.timestampNanoseconds / 1000))
        }
        return seen
    }

    @Test func eachFrameCarriesItsOwnCameraTimeWhenAskedAndNoneOtherwise() async throws {
        let stamped = try await codes(stamping: true)
        #expect(stamped.count == 5)
        for (read, time) in stamped { #expect(read == time & 0xFFFF_FFFF_FFFF) }
        let plain = try await codes(stamping: false)
        #expect(plain.count == 5 && plain.allSatisfy { $0.read == nil })
    }
}
