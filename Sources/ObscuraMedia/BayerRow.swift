/// Rows of raw Bayer samples in the layouts cameras deliver: 8-bit, 10/12-bit
/// in 16-bit little-endian words, and MIPI CSI-2 packed (10 bit: four pixels
/// in five bytes, the high eight bits of each then a byte of the four low
/// pairs; 12 bit: two pixels in three bytes, the high eight bits of each then
/// a byte of the two low nibbles).
public enum BayerRow {
    /// Samples of one row, unpacked into 16-bit values at the format's depth.
    public static func unpack(_ source: UnsafeRawPointer, width: Int, format: PixelFormatInfo,
                              into out: UnsafeMutablePointer<UInt16>) {
        let bytes = source.assumingMemoryBound(to: UInt8.self)
        switch (format.packing, format.bitDepth) {
        case (.csi2, 10):
            var x = 0, o = 0
            while x < width {
                let low = UInt16(bytes[o + 4])
                for i in 0..<4 where x + i < width {
                    out[x + i] = UInt16(bytes[o + i]) << 2 | (low >> (2 * UInt16(i))) & 0x3
                }
                x += 4
                o += 5
            }
        case (.csi2, 12):
            var x = 0, o = 0
            while x < width {
                let low = UInt16(bytes[o + 2])
                out[x] = UInt16(bytes[o]) << 4 | low & 0xf
                if x + 1 < width { out[x + 1] = UInt16(bytes[o + 1]) << 4 | low >> 4 }
                x += 2
                o += 3
            }
        case (_, let depth) where depth <= 8:
            for x in 0..<width { out[x] = UInt16(bytes[x]) }
        default:
            let words = source.assumingMemoryBound(to: UInt16.self)
            for x in 0..<width { out[x] = UInt16(littleEndian: words[x]) }
        }
    }

    /// The inverse of `unpack`: writes one row of samples (at the format's
    /// depth) in the format's layout.
    public static func pack(_ samples: [UInt16], format: PixelFormatInfo, into destination: UnsafeMutableRawPointer) {
        let bytes = destination.assumingMemoryBound(to: UInt8.self)
        let width = samples.count
        switch (format.packing, format.bitDepth) {
        case (.csi2, 10):
            var x = 0, o = 0
            while x < width {
                var low: UInt8 = 0
                for i in 0..<4 {
                    let v = x + i < width ? samples[x + i] : 0
                    bytes[o + i] = UInt8(truncatingIfNeeded: v >> 2)
                    low |= UInt8(v & 0x3) << (2 * UInt8(i))
                }
                bytes[o + 4] = low
                x += 4
                o += 5
            }
        case (.csi2, 12):
            var x = 0, o = 0
            while x < width {
                let a = samples[x], b = x + 1 < width ? samples[x + 1] : 0
                bytes[o] = UInt8(truncatingIfNeeded: a >> 4)
                bytes[o + 1] = UInt8(truncatingIfNeeded: b >> 4)
                bytes[o + 2] = UInt8(a & 0xf) | UInt8(b & 0xf) << 4
                x += 2
                o += 3
            }
        case (_, let depth) where depth <= 8:
            for x in 0..<width { bytes[x] = UInt8(truncatingIfNeeded: samples[x]) }
        default:
            let words = destination.assumingMemoryBound(to: UInt16.self)
            for x in 0..<width { words[x] = samples[x].littleEndian }
        }
    }
}
