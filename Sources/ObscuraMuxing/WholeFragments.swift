/// Where the whole part of an interrupted recording ends: the end of its
/// last complete fragment (MP4, MOV: a `moof` and its `mdat`) or cluster
/// (Matroska). A writer killed mid-fragment, or an encrypted file cut where
/// age's last whole chunk ends, leaves a torn tail after it that decoders
/// report as an error ("Invalid NAL unit size", "partial file"); cut there,
/// the file plays clean.
///
/// Pure reading of the container's top-level structure: box and element
/// headers only, through `read(offset, count)`, never the media.
public enum WholeFragments {
    /// What a file holds up to its last whole fragment.
    public struct Extent: Sendable, Equatable {
        /// Bytes from the start that are whole (header and whole fragments).
        public var wholeBytes: Int64
        /// Whole fragments (or clusters) in them.
        public var fragments: Int
        /// Bytes after them: a torn fragment, cut off.
        public var tornBytes: Int64

        public init(wholeBytes: Int64, fragments: Int, tornBytes: Int64) {
            (self.wholeBytes, self.fragments, self.tornBytes) = (wholeBytes, fragments, tornBytes)
        }
    }

    /// Reads up to `count` bytes at `offset` (fewer at the end of the file).
    public typealias Reader = (_ offset: Int64, _ count: Int) throws -> [UInt8]

    /// The extent of a `container` file of `size` bytes; nil for a container
    /// whose fragments cannot be told (an elementary stream).
    public static func extent(of container: MovieContainer, size: Int64, read: Reader) rethrows -> Extent? {
        switch container {
        case .mp4, .mov: try isoExtent(size: size, read: read)
        case .mkv: try matroskaExtent(size: size, read: read)
        case .elementary: nil
        }
    }

    // MARK: ISO base media (MP4, MOV)

    /// Top-level boxes: `ftyp`, `moov`, then `moof` + `mdat` pairs (and `free`,
    /// `sidx`, `mfra`, …). Whole up to the last box that is complete and not
    /// a `moof` still waiting for its `mdat`.
    static func isoExtent(size: Int64, read: Reader) rethrows -> Extent {
        var offset: Int64 = 0, whole: Int64 = 0, fragments = 0
        var openFragment = false
        while offset + 8 <= size {
            let header = try read(offset, 16)
            guard header.count >= 8 else { break }
            var length = Int64(bigEndian32(header, 0))
            let type = String(decoding: header[4..<8], as: UTF8.self)
            if length == 1 {
                guard header.count >= 16 else { break }
                length = Int64(bitPattern: bigEndian64(header, 8))
            }
            // 0: "to the end of the file", which only a finished writer may say.
            guard length >= 8, offset + length <= size else { break }
            offset += length
            switch type {
            case "moof":
                openFragment = true
            case "mdat":
                if openFragment { fragments += 1 }
                openFragment = false
                whole = offset
            default:
                if !openFragment { whole = offset }
            }
        }
        return Extent(wholeBytes: whole, fragments: fragments, tornBytes: size - whole)
    }

    // MARK: Matroska

    static let ebmlHeaderID: UInt32 = 0x1A45_DFA3
    static let segmentID: UInt32 = 0x1853_8067
    static let clusterID: UInt32 = 0x1F43_B675

    /// The EBML header, then the Segment (its size unknown or not yet
    /// written while recording), whose children are whole up to the last
    /// one that is complete; a cluster of unknown size cannot be told whole.
    static func matroskaExtent(size: Int64, read: Reader) rethrows -> Extent {
        var offset: Int64 = 0, whole: Int64 = 0, fragments = 0
        guard let ebml = try element(at: 0, size: size, read: read), ebml.id == ebmlHeaderID,
              let length = ebml.length, ebml.dataStart + length <= size else {
            return Extent(wholeBytes: 0, fragments: 0, tornBytes: size)
        }
        offset = ebml.dataStart + length
        whole = offset
        guard let segment = try element(at: offset, size: size, read: read), segment.id == segmentID else {
            return Extent(wholeBytes: whole, fragments: 0, tornBytes: size - whole)
        }
        let end = segment.length.map { min(size, segment.dataStart + $0) } ?? size
        offset = segment.dataStart
        whole = offset
        while offset < end, let child = try element(at: offset, size: end, read: read),
              let length = child.length, child.dataStart + length <= end {
            offset = child.dataStart + length
            whole = offset
            if child.id == clusterID { fragments += 1 }
        }
        return Extent(wholeBytes: whole, fragments: fragments, tornBytes: size - whole)
    }

    /// An element's ID, its data's start and length (nil: unknown), or nil
    /// when its header does not fit before `size`.
    static func element(at offset: Int64, size: Int64, read: Reader) rethrows -> (id: UInt32, dataStart: Int64, length: Int64?)? {
        let bytes = try read(offset, 12)
        guard let first = bytes.first, first != 0 else { return nil }
        let idLength = first.leadingZeroBitCount + 1
        guard idLength <= 4, bytes.count > idLength else { return nil }
        let id = bytes[0..<idLength].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        let lead = bytes[idLength]
        guard lead != 0 else { return nil }
        let sizeLength = lead.leadingZeroBitCount + 1
        guard bytes.count >= idLength + sizeLength else { return nil }
        var value = UInt64(lead & (0xFF >> sizeLength))
        var allOnes = value == UInt64(0xFF >> sizeLength)
        for byte in bytes[(idLength + 1)..<(idLength + sizeLength)] {
            value = value << 8 | UInt64(byte)
            allOnes = allOnes && byte == 0xFF
        }
        let dataStart = offset + Int64(idLength + sizeLength)
        guard dataStart <= size else { return nil }
        return (id, dataStart, allOnes ? nil : Int64(value))
    }

    static func bigEndian32(_ b: [UInt8], _ i: Int) -> UInt32 {
        b[i..<(i + 4)].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
    }
    static func bigEndian64(_ b: [UInt8], _ i: Int) -> UInt64 {
        b[i..<(i + 8)].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
    }
}
