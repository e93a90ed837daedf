import CFFmpeg
import ObscuraMedia

/// Converts frames between pixel formats with swscale. Every conversion is a
/// CPU copy of the whole frame and is counted.
public final class PixelConverter {
    private let context: OpaquePointer
    private let source: AVPixelFormat
    private let destination: AVPixelFormat
    private let size: PixelSize
    private let copies: CopyCounter

    public init(from source: AVPixelFormat, to destination: AVPixelFormat, size: PixelSize, copies: CopyCounter) throws {
        guard let ctx = sws_getContext(Int32(size.width), Int32(size.height), source,
                                       Int32(size.width), Int32(size.height), destination,
                                       Int32(SWS_BILINEAR), nil, nil, nil) else {
            throw FFmpegError(call: "sws_getContext", code: obscura_averror(EINVAL),
                              detail: "\(String(cString: av_get_pix_fmt_name(source))) → \(String(cString: av_get_pix_fmt_name(destination))) \(size)")
        }
        context = ctx
        self.source = source
        self.destination = destination
        self.size = size
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
        let rows = withUnsafeMutableBytes(of: &out.pointee.data) { data in
            withUnsafeMutableBytes(of: &out.pointee.linesize) { lines in
                sws_scale(context, srcData, srcStride, 0, Int32(size.height),
                          data.bindMemory(to: UnsafeMutablePointer<UInt8>?.self).baseAddress,
                          lines.bindMemory(to: Int32.self).baseAddress)
            }
        }
        if rows < 0 {
            var f: UnsafeMutablePointer<AVFrame>? = out
            av_frame_free(&f)
            throw FFmpegError(call: "sws_scale", code: rows)
        }
        copies.recordCopy(bytes: Int(av_image_get_buffer_size(destination, Int32(size.width), Int32(size.height), 1)))
        return out
    }

    deinit { sws_freeContext(context) }
}
