import CFFmpeg
import Foundation
import Testing
@testable import ObscuraEncoding
@testable import ObscuraConversion
@testable import ObscuraMedia
#if canImport(Glibc)
import Glibc
#endif

/// A tightly packed picture whose last plane ends flush against an
/// inaccessible page, as a camera buffer whose size is a whole number of pages
/// ends against whatever follows its mapping. Any read past the last row
/// faults.
private final class GuardedPicture: @unchecked Sendable {  // immutable after init; the mapping is only read
    let base: UnsafeMutableRawPointer
    let mapped: Int
    let planes: [FramePlane]

    init(format: PixelFormat, size: PixelSize, seed: UInt8) throws {
        let info = try #require(format.info)
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        let lengths = info.planes.indices.map { info.stride(plane: $0, width: size.width) * info.rows(plane: $0, height: size.height) }
        let total = lengths.reduce(0, +)
        let dataPages = (total + page - 1) / page
        mapped = (dataPages + 1) * page
        let memory = try #require(mmap(nil, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0))
        #expect(memory != MAP_FAILED)
        base = memory
        #expect(mprotect(memory + dataPages * page, page, PROT_NONE) == 0)
        var offset = dataPages * page - total
        var planes: [FramePlane] = []
        for (i, length) in lengths.enumerated() {
            let bytes = (memory + offset).assumingMemoryBound(to: UInt8.self)
            for j in 0..<length { bytes[j] = UInt8(truncatingIfNeeded: j &* 31 &+ i &* 7) &+ seed }
            planes.append(FramePlane(base: UnsafeRawPointer(bytes), stride: info.stride(plane: i, width: size.width), length: length))
            offset += length
        }
        self.planes = planes
    }

    deinit { munmap(base, mapped) }

    func frame(_ format: PixelFormat, _ size: PixelSize) -> VideoFrame {
        VideoFrame(format: format, size: size, planes: planes, sequence: 0, timestampNanoseconds: 0, release: { _ = self })
    }
}

@Suite struct PixelConverterTests {
    /// The conversions the recorder makes: a photo scaled down from BGR888,
    /// NV12 and YUYV camera frames into I420 for software encoders and
    /// application code, RGB for the data output.
    static let cases: [(PixelFormat, PixelSize, PixelFormat, PixelSize?)] = [
        (.bgr888, PixelSize(width: 640, height: 480), .yuv420, PixelSize(width: 300, height: 224)),
        (.bgr888, PixelSize(width: 640, height: 480), .yuv420, nil),
        (.nv12, PixelSize(width: 640, height: 480), .yuv420, nil),
        (.nv12, PixelSize(width: 1280, height: 720), .yuv420, PixelSize(width: 640, height: 360)),
        (.yuyv, PixelSize(width: 640, height: 480), .yuv420, PixelSize(width: 320, height: 240)),
        (.xrgb8888, PixelSize(width: 320, height: 240), .nv12, nil),
        (.nv12, PixelSize(width: 64, height: 2), .xrgb8888, nil),
    ]

    @Test(arguments: 0..<cases.count)
    func aConversionNeverReadsPastTheLastRowOfItsSource(_ index: Int) throws {
        let (source, size, destination, outputSize) = Self.cases[index]
        let guarded = try GuardedPicture(format: source, size: size, seed: UInt8(index))
        let copies = CopyCounter()
        let converted = try FrameConverter(to: destination, size: outputSize, copies: copies).convert(guarded.frame(source, size))
        #expect(converted.format == destination && converted.size == (outputSize ?? size))
        #expect(copies.copies == 1)

        // The same picture converted in one piece from memory with room after
        // it gives the same pixels: staging the last rows changes nothing.
        let info = try #require(source.info), out = try #require(destination.info)
        let padded = guarded.planes.map { plane -> UnsafeMutableRawPointer in
            let copy = UnsafeMutableRawPointer.allocate(byteCount: plane.length + 4096, alignment: 64)
            copy.copyMemory(from: plane.base, byteCount: plane.length)
            return copy
        }
        defer { padded.forEach { $0.deallocate() } }
        let target = outputSize ?? size
        let context = try #require(sws_getContext(Int32(size.width), Int32(size.height), av_get_pix_fmt(info.ffmpegName!),
                                                  Int32(target.width), Int32(target.height), av_get_pix_fmt(out.ffmpegName!),
                                                  Int32(target.width < size.width || target.height < size.height ? SWS_AREA : SWS_BILINEAR),
                                                  nil, nil, nil))
        defer { sws_freeContext(context) }
        var src: [UnsafePointer<UInt8>?] = [nil, nil, nil, nil], srcStride: [Int32] = [0, 0, 0, 0]
        for (i, plane) in guarded.planes.enumerated() {
            src[i] = UnsafePointer(padded[i].assumingMemoryBound(to: UInt8.self))
            srcStride[i] = Int32(plane.stride)
        }
        var dst: [UnsafeMutablePointer<UInt8>?] = [nil, nil, nil, nil], dstStride: [Int32] = [0, 0, 0, 0]
        var reference: [UnsafeMutableRawPointer] = []
        for (i, plane) in converted.planes.enumerated() {
            let buffer = UnsafeMutableRawPointer.allocate(byteCount: plane.length + 4096, alignment: 64)
            reference.append(buffer)
            dst[i] = buffer.assumingMemoryBound(to: UInt8.self)
            dstStride[i] = Int32(plane.stride)
        }
        defer { reference.forEach { $0.deallocate() } }
        #expect(sws_scale(context, src, srcStride, 0, Int32(size.height), dst, dstStride) == Int32(target.height))
        for (i, plane) in converted.planes.enumerated() {
            let rowBytes = out.stride(plane: i, width: target.width)
            var differing = 0
            for row in 0..<out.rows(plane: i, height: target.height) {
                if memcmp(plane.base + row * plane.stride, reference[i] + row * plane.stride, rowBytes) != 0 { differing += 1 }
            }
            #expect(differing == 0, "plane \(i): \(differing) rows differ from a conversion in one piece")
        }
    }
}

@Suite struct EncoderInputBoundsTests {
    /// Software encoders take camera frames without a copy where they accept
    /// the camera's format (and through swscale where not), so they too must
    /// stop at the last row.
    static let cases: [(VideoCodec, PixelFormat, PixelSize)] = [
        (.h264, .nv12, PixelSize(width: 640, height: 480)),
        (.h264, .yuv420, PixelSize(width: 320, height: 240)),
        (.h264, .yuyv, PixelSize(width: 640, height: 480)),
        (.h264, .bgr888, PixelSize(width: 640, height: 480)),
        (.mjpeg, .nv12, PixelSize(width: 640, height: 480)),
        (.prores422, .p210, PixelSize(width: 320, height: 240)),
    ]

    @Test(arguments: 0..<cases.count)
    func anEncoderNeverReadsPastTheLastRowOfItsInput(_ index: Int) throws {
        let (codec, format, size) = Self.cases[index]
        let encoder = try LibavVideoEncoder(settings: VideoEncoderSettings(codec: codec, size: size, frameRate: 30), input: format)
        var packets = 0
        var pictures: [GuardedPicture] = []
        for i in 0..<3 {
            let picture = try GuardedPicture(format: format, size: size, seed: UInt8(i * 40))
            pictures.append(picture)
            packets += try encoder.encode(picture.frame(format, size), ptsMicroseconds: Int64(i) * 33_333, keyframe: i == 0).count
        }
        packets += try encoder.finish().count
        #expect(packets == 3)
    }
}
