import CFFmpeg
import ObscuraFFmpeg
import ObscuraMedia
import ObscuraSystem
import struct Synchronization.Atomic

/// Converts frames between pixel formats with swscale. Every conversion is a
/// CPU copy of the whole frame and is counted (with the few rows staged so
/// swscale never reads past the source's end: `SwscaleStaging`).
public final class PixelConverter {
    private let context: OpaquePointer
    private let source: AVPixelFormat
    private let destination: AVPixelFormat
    private let sourceSize: PixelSize
    private let size: PixelSize
    private let copies: CopyCounter
    private let staging = SwscaleStaging()

    /// `outputSize` scales too (area averaging when it shrinks); nil keeps the size.
    public init(from source: AVPixelFormat, to destination: AVPixelFormat, size: PixelSize, outputSize: PixelSize? = nil,
                copies: CopyCounter) throws {
        let out = outputSize ?? size
        let shrinks = out.width < size.width || out.height < size.height
        guard let ctx = sws_getContext(Int32(size.width), Int32(size.height), source,
                                       Int32(out.width), Int32(out.height), destination,
                                       Int32(shrinks ? SWS_AREA : SWS_BILINEAR), nil, nil, nil) else {
            throw FFmpegError(call: "sws_getContext", code: obscura_averror(EINVAL),
                              detail: "\(String(cString: av_get_pix_fmt_name(source))) \(size) → \(String(cString: av_get_pix_fmt_name(destination))) \(out)")
        }
        context = ctx
        self.source = source
        self.destination = destination
        self.sourceSize = size
        self.size = out
        self.copies = copies
    }

    /// A new AVFrame in the destination format (the caller frees it).
    public func convert(_ frame: VideoFrame) throws -> UnsafeMutablePointer<AVFrame> {
        guard let out = av_frame_alloc() else { throw FFmpegError(call: "av_frame_alloc", code: obscura_averror(ENOMEM)) }
        out.pointee.format = destination.rawValue
        out.pointee.width = Int32(size.width)
        out.pointee.height = Int32(size.height)
        let allocated = av_frame_get_buffer(out, 0)
        if allocated < 0 {
            var f: UnsafeMutablePointer<AVFrame>? = out
            av_frame_free(&f)
            throw FFmpegError(call: "av_frame_get_buffer", code: allocated)
        }
        frame.beginCPUAccess()
        defer { frame.endCPUAccess() }
        var srcData: [UnsafePointer<UInt8>?] = Array(repeating: nil, count: 4)
        var srcStride: [Int32] = Array(repeating: 0, count: 4)
        for (i, plane) in frame.planes.enumerated() where i < 4 {
            srcData[i] = plane.base.assumingMemoryBound(to: UInt8.self)
            srcStride[i] = Int32(plane.stride)
        }
        let (rows, staged) = withUnsafeMutableBytes(of: &out.pointee.data) { data in
            withUnsafeMutableBytes(of: &out.pointee.linesize) { lines in
                staging.scale(context, format: source, width: sourceSize.width, height: sourceSize.height,
                              source: srcData, strides: srcStride,
                              destination: data.bindMemory(to: UnsafeMutablePointer<UInt8>?.self).baseAddress!,
                              destinationStrides: lines.bindMemory(to: Int32.self).baseAddress!)
            }
        }
        if rows < 0 {
            var f: UnsafeMutablePointer<AVFrame>? = out
            av_frame_free(&f)
            throw FFmpegError(call: "sws_scale", code: rows)
        }
        copies.recordCopy(bytes: Int(av_image_get_buffer_size(destination, Int32(size.width), Int32(size.height), 1)) + staged)
        return out
    }

    deinit { sws_freeContext(context) }
}

/// Converts whole frames into another pixel format for application code (a
/// video data output asked for a format the camera does not give). Each
/// conversion is one counted CPU copy; the result lives in memory that is
/// freed when the returned frame goes, and the camera frame is released at once.
public final class FrameConverter: Sendable {
    public let destination: PixelFormat
    private let copies: CopyCounter
    private let outputSize: PixelSize?
    /// The swscale context for the last source format and size; a conversion holds it.
    private let cache = Mutex<(converter: PixelConverter, source: PixelFormat, size: PixelSize)?>(nil)

    /// Whether swscale converts between the two formats.
    public static func canConvert(from source: PixelFormat, to destination: PixelFormat) -> Bool {
        guard let s = source.info?.ffmpegName, let d = destination.info?.ffmpegName else { return false }
        let from = av_get_pix_fmt(s), to = av_get_pix_fmt(d)
        return from != AV_PIX_FMT_NONE && to != AV_PIX_FMT_NONE
            && sws_isSupportedInput(from) != 0 && sws_isSupportedOutput(to) != 0
    }

    /// `size` scales the frames too (nil: they keep theirs).
    public init(to destination: PixelFormat, size: PixelSize? = nil, copies: CopyCounter) throws {
        guard destination.info?.ffmpegName != nil else { throw ConversionError.unknownFormat(destination) }
        self.destination = destination
        self.outputSize = size
        self.copies = copies
    }

    /// The frame in the destination format and size (the same frame when it already is).
    public func convert(_ frame: VideoFrame) throws -> VideoFrame {
        let size = outputSize ?? frame.size
        guard frame.format != destination || frame.size != size else { return frame }
        let owner = try cache.withLock { cache in
            if cache == nil || cache!.source != frame.format || cache!.size != frame.size {
                guard let s = frame.format.info?.ffmpegName, let d = destination.info?.ffmpegName else {
                    throw ConversionError.unknownFormat(frame.format)
                }
                cache = (try PixelConverter(from: av_get_pix_fmt(s), to: av_get_pix_fmt(d), size: frame.size, outputSize: size,
                                            copies: copies), frame.format, frame.size)
            }
            return OwnedAVFrame(try cache!.converter.convert(frame))
        }
        let out = owner.pointer
        var planes: [FramePlane] = []
        let count = destination.info?.planes.count ?? 1
        for i in 0..<count {
            let (data, stride) = withUnsafeBytes(of: &out.pointee.data) { d in
                withUnsafeBytes(of: &out.pointee.linesize) { l in
                    (d.load(fromByteOffset: i * MemoryLayout<UnsafeMutablePointer<UInt8>?>.stride, as: UnsafeMutablePointer<UInt8>?.self),
                     l.load(fromByteOffset: i * 4, as: Int32.self))
                }
            }
            guard let data else { break }
            let rows = destination.info.map { $0.rows(plane: i, height: size.height) } ?? size.height
            planes.append(FramePlane(base: UnsafeRawPointer(data), stride: Int(stride), length: Int(stride) * rows))
        }
        return VideoFrame(format: destination, size: size, planes: planes, sequence: frame.sequence,
                          timestampNanoseconds: frame.timestampNanoseconds, metadata: frame.metadata,
                          release: { owner.free() })
    }
}

/// An AVFrame freed once. Holds its address (an integer, so the owner can be
/// handed between threads without the frame's memory being shared by type).
final class OwnedAVFrame: Sendable {
    private let address: Int
    private let live: Atomic<Bool>
    init(_ frame: UnsafeMutablePointer<AVFrame>) {
        address = Int(bitPattern: frame)
        live = Atomic(true)
    }
    /// The frame (valid until `free`).
    var pointer: UnsafeMutablePointer<AVFrame> { UnsafeMutablePointer(bitPattern: address)! }
    func free() {
        guard live.exchange(false, ordering: .acquiringAndReleasing) else { return }
        var frame: UnsafeMutablePointer<AVFrame>? = pointer
        av_frame_free(&frame)
    }
}
