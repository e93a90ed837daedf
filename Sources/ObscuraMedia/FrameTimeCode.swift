/// A time written into a picture as blocks of black and white, and read back
/// from the picture after it was encoded, sent and decoded: how a live view's
/// latency is measured from end to end (the frame's camera time, stamped in
/// by the test pattern, against the time the viewer decoded it, one clock).
///
/// The code is 64 blocks of 8×8 pixels in the frame's luma, left to right
/// from the top-left corner, wrapping to the next row of blocks: 48 bits of
/// the time in microseconds (about nine years), then 8 bits that check them,
/// then 8 bits of a fixed pattern that says a code is there. Each block is
/// black (16) or white (235), aligned to the encoders' 8×8 and 16×16 blocks,
/// so a lossy encoder keeps it readable. It needs room for its 64 blocks: a
/// 320-pixel-wide frame holds 40 in a row, so the code takes its top 16 lines.
public enum FrameTimeCode {
    public static let block = 8
    static let bits = 64
    static let marker: UInt8 = 0b1011_0010
    static let black: UInt8 = 16, white: UInt8 = 235

    /// Whether a luma plane of `width`×`height` has room for the code.
    public static func fits(width: Int, height: Int) -> Bool {
        let perRow = width / block
        return perRow > 0 && ((bits + perRow - 1) / perRow) * block <= height
    }

    /// Writes `microseconds` (its low 48 bits) into the luma plane at `base`.
    public static func write(_ microseconds: UInt64, into base: UnsafeMutableRawPointer, stride: Int,
                             width: Int, height: Int) {
        guard fits(width: width, height: height) else { return }
        let value = microseconds & 0xFFFF_FFFF_FFFF
        let word = value | UInt64(check(value)) << 48 | UInt64(marker) << 56
        let perRow = width / block
        for bit in 0..<bits {
            let level = word >> UInt64(bit) & 1 == 1 ? white : black
            let x = bit % perRow * block, y = bit / perRow * block
            for row in y..<(y + block) {
                (base + row * stride + x).initializeMemory(as: UInt8.self, repeating: level, count: block)
            }
        }
    }

    /// The time in the luma plane at `base`, or nil when no code is there
    /// (its marker or its check does not match).
    public static func read(from base: UnsafeRawPointer, stride: Int, width: Int, height: Int) -> UInt64? {
        guard fits(width: width, height: height) else { return nil }
        let perRow = width / block
        var word: UInt64 = 0
        for bit in 0..<bits {
            let x = bit % perRow * block, y = bit / perRow * block
            // The block's middle, away from the edges a lossy encoder smears.
            var sum = 0
            for row in (y + 2)..<(y + block - 2) {
                for column in (x + 2)..<(x + block - 2) {
                    sum += Int(base.load(fromByteOffset: row * stride + column, as: UInt8.self))
                }
            }
            let mean = sum / ((block - 4) * (block - 4))
            if mean > (Int(black) + Int(white)) / 2 { word |= 1 << UInt64(bit) }
        }
        let value = word & 0xFFFF_FFFF_FFFF
        guard UInt8(word >> 56) == marker, UInt8(truncatingIfNeeded: word >> 48) == check(value) else { return nil }
        return value
    }

    /// The 8 bits that check the 48: the sum of its six bytes, each rotated by its place.
    static func check(_ value: UInt64) -> UInt8 {
        var sum: UInt8 = 0x5A
        for index in 0..<6 {
            let byte = UInt8(truncatingIfNeeded: value >> UInt64(8 * index))
            sum = sum &+ (byte << UInt8(index % 8) | byte >> UInt8((8 - index % 8) % 8))
        }
        return sum
    }
}
