import CFFmpeg
#if canImport(Glibc)
import Glibc
#endif

/// Runs one swscale conversion of a whole picture without reading past its
/// last row.
///
/// swscale's vector input readers load whole registers, so they read some
/// bytes past the end of each row. Inside a picture that is the next row;
/// after the last row it is whatever follows the plane. A camera plane can end
/// flush with its mapping (a buffer whose size is a whole number of pages,
/// such as 640×480 BGR888), and then the read faults. So the picture goes to
/// swscale in two slices: the rows above the tail straight from the source, and
/// the last few rows from a staging copy with `slack` bytes after it. The
/// staged bytes (a few rows per plane) are returned so the caller can add them
/// to the conversion's counted copy.
///
/// Not thread-safe: one owner calls `scale` at a time (the staging memory is
/// reused between pictures).
public final class SwscaleStaging {
    /// Bytes readable after the staged rows: more than any swscale reader
    /// loads past a row end (its widest loads are 64-byte registers).
    public static let slack = 256

    private var buffer: UnsafeMutableRawPointer?
    private var capacity = 0

    public init() {}

    deinit { free(buffer) }

    /// Scales `height` rows of a `width`-wide picture in `format` from
    /// `source` into `destination` (pointers to the top of each plane, as for
    /// `sws_scale`). Returns the rows written (negative: swscale's error) and
    /// the bytes staged.
    public func scale(_ context: OpaquePointer, format: AVPixelFormat, width: Int, height: Int,
                      source: [UnsafePointer<UInt8>?], strides: [Int32],
                      destination: UnsafePointer<UnsafeMutablePointer<UInt8>?>,
                      destinationStrides: UnsafePointer<Int32>) -> (rows: Int32, staged: Int) {
        guard let descriptor = av_pix_fmt_desc_get(format), height > 0 else {
            return (sws_scale(context, source, strides, 0, Int32(height), destination, destinationStrides), 0)
        }
        let planes = min(Int(av_pix_fmt_count_planes(format)), 4, source.count, strides.count)
        let shift = Int(descriptor.pointee.log2_chroma_h)
        let macro = 1 << shift
        var rowBytes: [Int32] = [0, 0, 0, 0]
        guard planes > 0, av_image_fill_linesizes(&rowBytes, format, Int32(width)) >= 0 else {
            return (sws_scale(context, source, strides, 0, Int32(height), destination, destinationStrides), 0)
        }
        func planeRows(_ plane: Int, _ rows: Int) -> Int { plane == 1 || plane == 2 ? (rows + macro - 1) >> shift : rows }
        // Tail rows: a whole number of chroma rows, spanning at least `slack`
        // bytes of the narrowest plane (tiny pictures are staged whole).
        let narrowest = max(1, (0..<planes).map { Int(rowBytes[$0]) }.filter { $0 > 0 }.min() ?? 1)
        var tail = max(macro, (Self.slack + narrowest - 1) / narrowest)
        tail = (tail + macro - 1) / macro * macro
        let top = max(0, height - tail)
        var offsets: [Int] = []
        var needed = 0
        for p in 0..<planes {
            let first = planeRows(p, top), rows = planeRows(p, height) - first
            let span = rows > 0 ? (rows - 1) * Int(strides[p]) + Int(rowBytes[p]) : 0
            offsets.append(needed)
            needed += (span + Self.slack + 63) / 64 * 64
        }
        if needed > capacity {
            free(buffer)
            var pointer: UnsafeMutableRawPointer?
            guard posix_memalign(&pointer, 64, needed) == 0, let pointer else {
                buffer = nil
                capacity = 0
                return (-ENOMEM, 0)
            }
            buffer = pointer
            capacity = needed
        }
        guard let buffer else { return (-ENOMEM, 0) }
        var rows: Int32 = 0
        if top > 0 {
            let written = sws_scale(context, source, strides, 0, Int32(top), destination, destinationStrides)
            if written < 0 { return (written, 0) }
            rows += written
        }
        var staged: [UnsafePointer<UInt8>?] = [nil, nil, nil, nil]
        var copied = 0
        for p in 0..<planes {
            guard let base = source[p] else { continue }
            let first = planeRows(p, top), count = planeRows(p, height) - first
            let span = count > 0 ? (count - 1) * Int(strides[p]) + Int(rowBytes[p]) : 0
            let target = buffer + offsets[p]
            memcpy(target, base + first * Int(strides[p]), span)
            memset(target + span, 0, Self.slack)
            copied += span
            staged[p] = UnsafePointer(target.assumingMemoryBound(to: UInt8.self))
        }
        let written = sws_scale(context, staged, strides, Int32(top), Int32(height - top), destination, destinationStrides)
        if written < 0 { return (written, copied) }
        return (rows + written, copied)
    }
}
