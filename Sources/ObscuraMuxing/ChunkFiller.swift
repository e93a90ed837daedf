/// Filler a container's readers pass over, placed between fragments (MP4,
/// MOV: a top-level `free` box) or clusters (Matroska: a `Void` element in
/// the Segment), so that a fragment's end can fall on an age chunk's end.
/// Readers skip both by their declared size.
public struct ChunkFiller: Sendable {
    /// The fewest bytes one filler can take.
    public let minimum: Int
    private let make: @Sendable (Int) -> [UInt8]

    /// `count` bytes of filler (at least `minimum`).
    public func bytes(_ count: Int) -> [UInt8] {
        precondition(count >= minimum, "ChunkFiller: \(count) bytes is less than the \(minimum) a filler takes")
        return make(count)
    }

    /// The filler of `container`; nil for an elementary stream (no
    /// structure to hold one).
    public static func of(_ container: MovieContainer) -> ChunkFiller? {
        switch container {
        case .mp4, .mov: isoFree
        case .mkv: matroskaVoid
        case .elementary: nil
        }
    }

    /// An ISO BMFF `free` box: a 32-bit size, `free`, zeros.
    public static let isoFree = ChunkFiller(minimum: 8) { count in
        precondition(count <= Int(UInt32.max))
        var box = [UInt8](repeating: 0, count: count)
        let size = UInt32(count)
        box[0...3] = [UInt8(size >> 24), UInt8(size >> 16 & 0xFF), UInt8(size >> 8 & 0xFF), UInt8(size & 0xFF)]
        box[4...7] = Array("free".utf8)[0...3]
        return box
    }

    /// A Matroska `Void` element (ID 0xEC): its size in one byte when that
    /// holds it (up to 126), else in eight; then zeros.
    public static let matroskaVoid = ChunkFiller(minimum: 2) { count in
        var element = [UInt8](repeating: 0, count: count)
        element[0] = 0xEC
        let oneByte = count - 2
        // 0x7F (all ones) would mean "unknown size"; nine bytes is the
        // least the eight-byte form takes.
        if oneByte <= 126 || count < 9 {
            element[1] = 0x80 | UInt8(oneByte)
        } else {
            let data = UInt64(count - 9)
            element[1] = 0x01
            for i in 0..<7 { element[2 + i] = UInt8(data >> (8 * (6 - i)) & 0xFF) }
        }
        return element
    }
}
