/// The whole frames of an interrupted recording's torn last fragment.
///
/// An encrypted recording cut off by a kill ends where age's last sealed
/// chunk ends: inside the fragment (or cluster) it was writing, whose last
/// bytes were waiting in the unsealed chunk. Cut back to the last whole
/// fragment (`WholeFragments`), that fragment would be lost whole, up to
/// its length of frames for the few kilobytes it lacked. Its own index says
/// which frames are whole in what is there: an MP4/MOV `moof` lists each
/// sample's size and where its track's data begins in the `mdat`, a
/// Matroska cluster is a run of blocks. So the fragment is rebuilt with the
/// frames that are wholly in the file, and only the torn frame and those
/// after it are lost.
///
/// Pure: reads the torn part (bounded) and returns its replacement, never
/// touching the media's bytes.
public enum TornFragment {
    /// What replaces the torn part of a file: `bytes` from `offset` on.
    public struct Salvage: Sendable, Equatable {
        /// Where the torn fragment began (the end of the whole ones).
        public var offset: Int64
        /// The fragment as rebuilt with its whole samples.
        public var bytes: [UInt8]
        /// The samples (frames, sound, marks) it keeps.
        public var samples: Int
    }

    /// A torn part larger than this is left out as before (a fragment of a
    /// few seconds of the highest bit rate is well under it).
    static let largest = 64 << 20

    /// The torn fragment after `extent` in a `container` file of `size`
    /// bytes rebuilt with its whole samples; nil when nothing in it can be
    /// kept (its index itself is torn, or it holds no whole frame).
    public static func salvage(of container: MovieContainer, extent: WholeFragments.Extent, size: Int64,
                               read: WholeFragments.Reader) rethrows -> Salvage? {
        guard extent.tornBytes > 0, extent.tornBytes <= largest, extent.fragments > 0 || container == .mkv else { return nil }
        let torn = try read(extent.wholeBytes, Int(extent.tornBytes))
        let rebuilt: (bytes: [UInt8], samples: Int)?
        switch container {
        case .mp4, .mov: rebuilt = ISOFragment(torn)?.rebuilt()
        case .mkv: rebuilt = matroskaCluster(torn)
        case .elementary: rebuilt = nil
        }
        guard let rebuilt, rebuilt.samples > 0 else { return nil }
        return Salvage(offset: extent.wholeBytes, bytes: rebuilt.bytes, samples: rebuilt.samples)
    }

    // MARK: Matroska

    static let simpleBlockID: UInt32 = 0xA3
    static let blockGroupID: UInt32 = 0xA0
    static let crc32ID: UInt32 = 0xBF
    static let voidID: UInt8 = 0xEC

    /// A cluster cut short: its complete children kept, its size made theirs
    /// (written in the same number of bytes), its CRC-32 (which covered the
    /// whole cluster) turned into a Void of the same size.
    static func matroskaCluster(_ torn: [UInt8]) -> (bytes: [UInt8], samples: Int)? {
        let size = Int64(torn.count)
        let read: (Int64, Int) -> [UInt8] = { offset, count in
            Array(torn[Int(offset)..<min(torn.count, Int(offset) + count)])
        }
        guard let cluster = WholeFragments.element(at: 0, size: size, read: read), cluster.id == WholeFragments.clusterID
        else { return nil }
        var offset = cluster.dataStart, kept = cluster.dataStart, blocks = 0
        var crc: Int?
        while offset < size, let child = WholeFragments.element(at: offset, size: size, read: read),
              let length = child.length, child.dataStart + length <= size {
            if child.id == simpleBlockID || child.id == blockGroupID { blocks += 1 }
            if child.id == crc32ID { crc = Int(offset) }
            offset = child.dataStart + length
            kept = offset
        }
        guard blocks > 0 else { return nil }
        var bytes = Array(torn[..<Int(kept)])
        if let crc { bytes[crc] = voidID }
        let idLength = torn[0].leadingZeroBitCount + 1
        let width = Int(cluster.dataStart) - idLength
        // (Unknown size, all ones: the cluster then ends with the file, as it still does.)
        if cluster.length != nil {
            guard let field = vint(kept - cluster.dataStart, width: width) else { return nil }
            bytes.replaceSubrange(idLength..<Int(cluster.dataStart), with: field)
        }
        return (bytes, blocks)
    }

    /// `value` as an EBML size of exactly `width` bytes, or nil if it does not fit.
    static func vint(_ value: Int64, width: Int) -> [UInt8]? {
        guard (1...8).contains(width), value >= 0, value < (Int64(1) << (7 * width)) - 1 else { return nil }
        var bytes = (0..<width).map { i in UInt8(truncatingIfNeeded: value >> (8 * (width - 1 - i))) }
        bytes[0] |= UInt8(0x80) >> (width - 1)
        return bytes
    }
}

/// A fragment's `moof` and the start of its `mdat`, as read from a file cut
/// inside the `mdat`: each track's run of samples (`trun`) kept up to its
/// last sample wholly in the file, the `moof` rebuilt around the shorter
/// runs and the `mdat` cut after the last sample kept.
struct ISOFragment {
    private let bytes: [UInt8]
    private let moofSize: Int
    private let mdatHeader: Int
    private let children: [(type: String, range: Range<Int>)]

    init?(_ bytes: [UInt8]) {
        self.bytes = bytes
        guard let moof = Self.box(bytes, at: 0), moof.type == "moof", moof.header == 8,
              let mdat = Self.box(bytes, at: moof.end, partial: true), mdat.type == "mdat" else { return nil }
        moofSize = moof.end
        mdatHeader = mdat.header
        guard let inside = Self.boxes(bytes, 8..<moof.end) else { return nil }
        children = inside
    }

    /// The fragment with its whole samples, and how many; nil when it
    /// cannot be told (a layout this reader does not know).
    func rebuilt() -> (bytes: [UInt8], samples: Int)? {
        var trafs: [(bytes: [UInt8], offsets: [Int])] = []
        var out: [UInt8] = [], samples = 0, keptEnd = moofSize + mdatHeader
        for child in children {
            guard child.type == "traf" else {
                guard child.type == "mfhd" else { return nil }
                out += bytes[child.range]
                continue
            }
            guard let traf = rebuiltTraf(child.range) else { return nil }
            samples += traf.samples
            keptEnd = max(keptEnd, traf.end)
            if traf.samples > 0 { trafs.append((traf.bytes, traf.offsets)) }
        }
        guard samples > 0 else { return nil }
        // The new moof, then an mdat holding what the old one held up to
        // the last sample kept: each run's data_offset (from the moof's
        // start) moves by what the moof and the mdat's header lost.
        let newMoofSize = 8 + out.count + trafs.reduce(0) { $0 + $1.bytes.count }
        let shift = (moofSize + mdatHeader) - (newMoofSize + 8)
        var moof = Self.header("moof", newMoofSize) + out
        for traf in trafs {
            var patched = traf.bytes
            for at in traf.offsets {
                let old = Int32(bitPattern: WholeFragments.bigEndian32(patched, at))
                Self.put32(&patched, at, UInt32(bitPattern: old - Int32(shift)))
            }
            moof += patched
        }
        let payload = bytes[(moofSize + mdatHeader)..<keptEnd]
        guard payload.count + 8 <= Int(UInt32.max) else { return nil }
        return (moof + Self.header("mdat", payload.count + 8) + payload, samples)
    }

    /// A `traf` with its runs cut to their whole samples: its bytes, where
    /// each run's data_offset is in them, its samples kept, and where the
    /// last of them ends (from the moof's start).
    private func rebuiltTraf(_ range: Range<Int>) -> (bytes: [UInt8], offsets: [Int], samples: Int, end: Int)? {
        guard let inside = Self.boxes(bytes, (range.lowerBound + 8)..<range.upperBound) else { return nil }
        var body: [UInt8] = [], offsets: [Int] = [], samples = 0, end = 0
        var defaultSize: UInt32?
        for child in inside {
            switch child.type {
            case "tfhd":
                guard let tfhd = Tfhd(bytes, child.range) else { return nil }
                defaultSize = tfhd.defaultSampleSize
                body += bytes[child.range]
            case "tfdt":
                body += bytes[child.range]
            case "trun":
                // (A run whose data is not in this fragment's mdat: not a layout known here.)
                guard let run = Trun(bytes, child.range, defaultSize: defaultSize), run.dataStart >= moofSize + mdatHeader else { return nil }
                let kept = run.whole(before: bytes.count)
                samples += kept.count
                if kept.count > 0 { end = max(end, kept.end) }
                offsets.append(8 + body.count + 16)  // after the traf's header: the trun's header, version and flags, count
                body += run.rebuilt(count: kept.count)
            default:
                // (A box that counts samples too, such as sdtp: not known here.)
                return nil
            }
        }
        return (Self.header("traf", 8 + body.count) + body, offsets, samples, end)
    }

    // MARK: Boxes

    static func box(_ b: [UInt8], at offset: Int, partial: Bool = false) -> (type: String, header: Int, end: Int)? {
        guard offset + 8 <= b.count else { return nil }
        var length = Int(WholeFragments.bigEndian32(b, offset)), header = 8
        if length == 1 {
            guard offset + 16 <= b.count else { return nil }
            length = Int(clamping: (UInt64(WholeFragments.bigEndian32(b, offset + 8)) << 32) | UInt64(WholeFragments.bigEndian32(b, offset + 12)))
            header = 16
        }
        guard length >= header, partial || offset + length <= b.count else { return nil }
        return (String(decoding: b[(offset + 4)..<(offset + 8)], as: UTF8.self), header, offset + length)
    }

    static func boxes(_ b: [UInt8], _ range: Range<Int>) -> [(type: String, range: Range<Int>)]? {
        var found: [(type: String, range: Range<Int>)] = [], at = range.lowerBound
        while at < range.upperBound {
            guard let box = box(b, at: at), box.end <= range.upperBound, box.header == 8 else { return nil }
            found.append((box.type, at..<box.end))
            at = box.end
        }
        return found
    }

    static func header(_ type: String, _ size: Int) -> [UInt8] {
        var h = [UInt8](repeating: 0, count: 4) + Array(type.utf8)
        put32(&h, 0, UInt32(size))
        return h
    }

    static func put32(_ b: inout [UInt8], _ i: Int, _ v: UInt32) {
        for k in 0..<4 { b[i + k] = UInt8(truncatingIfNeeded: v >> (24 - 8 * k)) }
    }
}

/// A track fragment's header: only what finding samples needs.
struct Tfhd {
    let defaultSampleSize: UInt32?

    init?(_ b: [UInt8], _ range: Range<Int>) {
        guard range.count >= 16 else { return nil }
        let flags = WholeFragments.bigEndian32(b, range.lowerBound + 8) & 0xFF_FFFF
        // Offsets from the moof's start (default-base-is-moof), never an
        // absolute base_data_offset: then the runs move with the moof.
        guard flags & 0x1 == 0, flags & 0x2_0000 != 0 else { return nil }
        var at = range.lowerBound + 16
        if flags & 0x2 != 0 { at += 4 }
        if flags & 0x8 != 0 { at += 4 }
        if flags & 0x10 != 0 {
            guard at + 4 <= range.upperBound else { return nil }
            defaultSampleSize = WholeFragments.bigEndian32(b, at)
        } else {
            defaultSampleSize = nil
        }
    }
}

/// A track run: its samples' sizes and where its data begins.
struct Trun {
    private let bytes: [UInt8]
    private let range: Range<Int>
    private let flags: UInt32
    private let sizes: [Int]
    private let dataOffset: Int
    /// Where its first sample's data begins, from the moof's start.
    var dataStart: Int { dataOffset }
    private let entryLength: Int
    private let entriesStart: Int

    init?(_ b: [UInt8], _ range: Range<Int>, defaultSize: UInt32?) {
        guard range.count >= 20 else { return nil }
        bytes = b
        self.range = range
        flags = WholeFragments.bigEndian32(b, range.lowerBound + 8) & 0xFF_FFFF
        let count = Int(WholeFragments.bigEndian32(b, range.lowerBound + 12))
        guard flags & 0x1 != 0 else { return nil }
        dataOffset = Int(Int32(bitPattern: WholeFragments.bigEndian32(b, range.lowerBound + 16)))
        var at = range.lowerBound + 20
        if flags & 0x4 != 0 { at += 4 }
        let fields: [UInt32] = [0x100, 0x200, 0x400, 0x800], flags = flags
        let start = at, length = 4 * fields.filter { flags & $0 != 0 }.count
        (entriesStart, entryLength) = (start, length)
        guard count >= 0, start + count * length <= range.upperBound else { return nil }
        let sizeAt = flags & 0x100 != 0 ? 4 : 0
        if flags & 0x200 != 0 {
            sizes = (0..<count).map { Int(WholeFragments.bigEndian32(b, start + $0 * length + sizeAt)) }
        } else if let defaultSize {
            sizes = Array(repeating: Int(defaultSize), count: count)
        } else {
            return nil
        }
    }

    /// How many of its samples end at or before `fileEnd` (from the moof's
    /// start), and where the last of them ends.
    func whole(before fileEnd: Int) -> (count: Int, end: Int) {
        var end = dataOffset, count = 0
        for size in sizes {
            guard end + size <= fileEnd else { break }
            end += size
            count += 1
        }
        return (count, end)
    }

    /// The run with only its first `count` samples.
    func rebuilt(count: Int) -> [UInt8] {
        var head = Array(bytes[range.lowerBound..<entriesStart])
        ISOFragment.put32(&head, 12, UInt32(count))
        let entries = bytes[entriesStart..<(entriesStart + count * entryLength)]
        var out = head + entries
        ISOFragment.put32(&out, 0, UInt32(out.count))
        return out
    }
}
