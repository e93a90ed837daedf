import Foundation
import ObscuraMuxing
import Testing
import TestSupport

/// Where an interrupted recording's whole part ends, for MP4/MOV boxes and
/// Matroska elements: cut anywhere, the extent is the last boundary at or
/// before the cut; and real recordings cut there decode with no error.
@Suite struct WholeFragmentsTests {
    static func box(_ type: String, _ payload: Int, large: Bool = false) -> [UInt8] {
        let length = payload + (large ? 16 : 8)
        let size: [UInt8] = large ? [0, 0, 0, 1] : withUnsafeBytes(of: UInt32(length).bigEndian, Array.init)
        let extended: [UInt8] = large ? withUnsafeBytes(of: UInt64(length).bigEndian, Array.init) : []
        return size + Array(type.utf8) + extended + [UInt8](repeating: 0xA5, count: payload)
    }

    static func extent(_ bytes: [UInt8], cut: Int, _ container: MovieContainer) -> WholeFragments.Extent? {
        let file = Array(bytes[..<cut])
        return WholeFragments.extent(of: container, size: Int64(cut)) { offset, count in
            let start = Int(offset)
            return start >= file.count ? [] : Array(file[start..<min(file.count, start + count)])
        }
    }

    /// Checks every cut of `parts` (a boundary after each, and how many
    /// fragments end there).
    static func checkEveryCut(_ parts: [(bytes: [UInt8], fragments: Int)], _ container: MovieContainer) {
        let bytes = parts.flatMap(\.bytes)
        var boundaries: [(end: Int, fragments: Int)] = [(0, 0)]
        for part in parts { boundaries.append((boundaries.last!.end + part.bytes.count, part.fragments)) }
        for cut in 0...bytes.count {
            let expected = boundaries.last { $0.end <= cut }!
            let got = extent(bytes, cut: cut, container)
            #expect(got == WholeFragments.Extent(wholeBytes: Int64(expected.end), fragments: expected.fragments,
                                                 tornBytes: Int64(cut - expected.end)), "cut at \(cut) of \(bytes.count)")
        }
    }

    @Test func anMP4IsWholeUpToItsLastMoofAndMdat() {
        Self.checkEveryCut([
            (Self.box("ftyp", 16), 0),
            (Self.box("moov", 90), 0),
            (Self.box("moof", 40) + Self.box("mdat", 120), 1),
            (Self.box("moof", 44) + Self.box("mdat", 70, large: true), 2),
            (Self.box("moof", 36) + Self.box("mdat", 33), 3),
        ], .mp4)
    }

    @Test func aMatroskaFileIsWholeUpToItsLastCluster() {
        let ebml: [UInt8] = [0x1A, 0x45, 0xDF, 0xA3, 0x80 | 10] + [UInt8](repeating: 0x42, count: 10)
        // The Segment's size unknown, as a recorder writing it leaves it.
        let segment: [UInt8] = [0x18, 0x53, 0x80, 0x67, 0x01, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]
        func element(_ id: [UInt8], _ payload: Int) -> [UInt8] {
            id + [0x10, UInt8(payload >> 16), UInt8((payload >> 8) & 0xFF), UInt8(payload & 0xFF)] + [UInt8](repeating: 0x5A, count: payload)
        }
        // (The segment's header alone is a boundary: whole, but no cluster.)
        var parts: [(bytes: [UInt8], fragments: Int)] = [(ebml, 0), (segment, 0)]
        parts.append((element([0x15, 0x49, 0xA9, 0x66], 30), 0))        // Info
        parts.append((element([0x16, 0x54, 0xAE, 0x6B], 60), 0))        // Tracks
        parts.append((element([0x1F, 0x43, 0xB6, 0x75], 300), 1))       // Cluster
        parts.append(([0xEC, 0x85] + [UInt8](repeating: 0, count: 5), 1)) // Void
        parts.append((element([0x1F, 0x43, 0xB6, 0x75], 257), 2))       // Cluster
        Self.checkEveryCut(parts, .mkv)
    }

    /// Real recordings (the synthetic camera through libx264), cut at many
    /// places and then at their whole extent: FFmpeg decodes each with not
    /// one error, and the frames it finds grow with the fragments kept.
    @Test(arguments: ["mp4", "mov", "mkv"])
    func aRecordingCutAnywhereAndTrimmedDecodesWithNoError(container: String) throws {
        let obscura = builtObscura
        let scratch = try scratchForBuiltObscura("obscura-whole-\(container)")
        let dir = scratch.path
        defer { withExtendedLifetime(scratch) {} }
        let file = "\(dir)/r.\(container)"
        let made = try runProgram(obscura, ["record", "--camera", "synthetic:fast", "--size", "640x480", "--duration", "3", "--output", file])
        try #require(made.status == 0, "\(made.stderr)")
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: file)))
        let kind = try #require(MovieContainer(path: file))
        if kind == .mkv {
            // The Segment's size as a writer that never finished leaves it
            // (unknown), and as every encrypted file has it: age's stream is
            // never seeked back into. (The finished file's says how long it is.)
            let segment: [UInt8] = [0x18, 0x53, 0x80, 0x67]
            let at = try #require((0..<200).first { Array(bytes[$0..<($0 + 4)]) == segment })
            try #require(bytes[at + 4] == 0x01, "an 8-byte size")
            bytes.replaceSubrange((at + 5)..<(at + 12), with: [UInt8](repeating: 0xFF, count: 7))
        }
        var lastFrames = 0, lastFragments = 0
        for step in 1...12 {
            let cut = bytes.count * step / 13 + Int.random(in: 0..<(bytes.count / 13))
            let extent = try #require(Self.extent(bytes, cut: cut, kind))
            #expect(extent.wholeBytes <= Int64(cut) && extent.tornBytes == Int64(cut) - extent.wholeBytes)
            let trimmed = "\(dir)/cut-\(step).\(container)"
            try Data(bytes[..<Int(extent.wholeBytes)]).write(to: URL(fileURLWithPath: trimmed))
            guard extent.fragments > 0 else { continue }
            let decoded = try ffmpegDecodeErrors(trimmed)
            #expect(decoded.status == 0 && decoded.stderr.isEmpty, "cut at \(cut), kept \(extent.wholeBytes) (\(extent.fragments) fragments): \(decoded.stderr)")
            let probe = try runProgram("ffprobe", ["-v", "error", "-select_streams", "v:0", "-count_frames",
                                                   "-show_entries", "stream=nb_read_frames", "-of", "csv=p=0", trimmed])
            let frames = Int(probe.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
            #expect(frames > 0 && frames >= lastFrames && (extent.fragments > lastFragments || frames == lastFrames),
                    "cut at \(cut): \(frames) frames in \(extent.fragments) fragments, before \(lastFrames) in \(lastFragments)")
            (lastFrames, lastFragments) = (frames, extent.fragments)
        }
        #expect(lastFragments >= 2, "a 3 s recording holds several fragments")
    }

    /// Filler of every size from the least up to past the one-byte Void
    /// size: readers take it as one box or element of exactly that size
    /// (the next fragment is found right after it).
    @Test func fillerOfAnySizeIsOneBoxOrElementReadersPassOver() {
        for size in Array(8...300) + [65_535, 65_536 + 7] {
            Self.checkEveryCutAtBoundaries([
                (Self.box("ftyp", 16), 0),
                (Self.box("moof", 40) + Self.box("mdat", 20), 1),
                (ChunkFiller.isoFree.bytes(size), 1),
                (Self.box("moof", 40) + Self.box("mdat", 20), 2),
            ], .mp4, "free box of \(size) bytes")
        }
        let ebml: [UInt8] = [0x1A, 0x45, 0xDF, 0xA3, 0x80 | 4, 0x42, 0x42, 0x42, 0x42]
        let segment: [UInt8] = [0x18, 0x53, 0x80, 0x67, 0x01, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]
        let cluster: [UInt8] = [0x1F, 0x43, 0xB6, 0x75, 0x80 | 6] + [UInt8](repeating: 0x5A, count: 6)
        for size in Array(2...300) + [65_535, 65_536 + 1] {
            Self.checkEveryCutAtBoundaries([(ebml, 0), (segment, 0), (cluster, 1), (ChunkFiller.matroskaVoid.bytes(size), 1), (cluster, 2)],
                                           .mkv, "Void of \(size) bytes")
        }
    }

    /// The whole extent at each boundary of `parts` (and just before it).
    static func checkEveryCutAtBoundaries(_ parts: [(bytes: [UInt8], fragments: Int)], _ container: MovieContainer, _ what: String) {
        let bytes = parts.flatMap(\.bytes)
        var end = 0
        for part in parts {
            end += part.bytes.count
            #expect(extent(bytes, cut: end, container) == WholeFragments.Extent(wholeBytes: Int64(end), fragments: part.fragments, tornBytes: 0), "\(what): at \(end)")
        }
    }

    /// Recordings encrypted with their fragments aligned to age's chunks
    /// (`--align-to-age-chunks`), MP4, MOV and MKV with sound-free synthetic
    /// frames at 1 Mbit/s: decrypted, every fragment or cluster after the
    /// first starts where a 64 KiB chunk starts (so what a kill leaves, whole
    /// chunks, is whole fragments), and the file decodes with no error.
    @Test(arguments: ["mp4", "mov", "mkv"])
    func alignedRecordingsStartEveryFragmentOnAChunk(container: String) throws {
        let obscura = builtObscura
        let scratch = try scratchForBuiltObscura("obscura-aligned-\(container)")
        let dir = scratch.path
        defer { withExtendedLifetime(scratch) {} }
        let recipient = try makeAgeIdentity(in: dir)
        let file = "\(dir)/r.\(container).age"
        let recorded = try runProgram(obscura, ["record", "--camera", "synthetic:fast", "--size", "640x480", "--duration", "4", "--bit-rate", "1000000",
                                                "--recipient", recipient, "--align-to-age-chunks", "--output", file])
        try #require(recorded.status == 0, "\(recorded.stderr)")
        let plain = "\(dir)/r.\(container)"
        let decrypted = try runProgram("sh", ["-c", "age -d -i '\(dir)/key.txt' '\(file)' > '\(plain)'"])
        try #require(decrypted.status == 0, "age -d: \(decrypted.stderr)")
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: plain)))
        let starts = container == "mkv" ? Self.clusterStarts(bytes) : Self.boxStarts(bytes, "moof")
        #expect(starts.count >= 3, "\(starts)")
        for start in starts.dropFirst() {
            #expect(start % 65_536 == 0, "a fragment starts at \(start), \(start % 65_536) bytes into a chunk; all: \(starts)")
        }
        let decoded = try ffmpegDecodeErrors(plain)
        #expect(decoded.status == 0 && decoded.stderr.isEmpty, "\(decoded.stderr)")
    }

    /// Where the top-level boxes of `type` start.
    static func boxStarts(_ bytes: [UInt8], _ type: String) -> [Int] {
        var offset = 0, starts: [Int] = []
        while offset + 8 <= bytes.count {
            let size = bytes[offset..<(offset + 4)].reduce(0) { $0 << 8 | Int($1) }
            if String(decoding: bytes[(offset + 4)..<(offset + 8)], as: UTF8.self) == type { starts.append(offset) }
            guard size >= 8 else { break }
            offset += size
        }
        return starts
    }

    /// Where the Clusters start (each found by its ID after the one before).
    static func clusterStarts(_ bytes: [UInt8]) -> [Int] {
        let id: [UInt8] = [0x1F, 0x43, 0xB6, 0x75]
        var starts: [Int] = [], offset = 0
        while offset + 4 <= bytes.count {
            if Array(bytes[offset..<(offset + 4)]) == id {
                starts.append(offset)
                // Past the cluster: its size follows the ID.
                let lead = bytes[offset + 4]
                let length = lead.leadingZeroBitCount + 1
                var size = Int(lead & (0xFF >> length))
                for byte in bytes[(offset + 5)..<(offset + 4 + length)] { size = size << 8 | Int(byte) }
                offset += 4 + length + size
            } else {
                offset += 1
            }
        }
        return starts
    }
}
