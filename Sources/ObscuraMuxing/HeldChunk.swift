import ObscuraAge

/// An encrypted file's age chunk not yet sealed, in the frames' time.
///
/// age seals 64 KiB at a time, and the chunk being filled stays in memory:
/// a kill loses it with the fragment being built. A busy picture fills a
/// chunk in a few frames, but a still one makes frames of a kilobyte or
/// less, and 64 KiB of them would wait seconds. This follows which frames
/// have bytes in the held chunk and says when it must be filled and sealed
/// (`MovieWriter` pads it with filler every reader skips): once its oldest
/// frame is a fragment's length older than the newest, and the fragment
/// just written did not complete it. A kill then loses at most about two
/// fragments' length of frames, whatever their sizes. Pure: packets, sizes
/// and times come in, decisions go out.
struct HeldChunk {
    /// The fragment length (the video's time base).
    let length: Int64
    /// Video packets handed to the muxer and not yet in the file (the
    /// fragment or cluster being built): their dts and sizes.
    private var building: [(dts: Int64, size: Int)] = []
    /// Those written to the file since the last commit, in order.
    private var written: [(dts: Int64, size: Int)] = []
    /// The oldest frame with bytes in the held chunk (nil: none known).
    private(set) var oldest: Int64?

    init(length: Int64) { self.length = length }

    /// A video packet went to the muxer; `muxerWroteBefore`: the muxer wrote
    /// the packets before it as it took it (Matroska ends a cluster there).
    mutating func handed(dts: Int64, size: Int, muxerWroteBefore: Bool) {
        if muxerWroteBefore { fragmentWritten() }
        building.append((dts, size))
    }

    /// Every packet handed so far is in the file (a fragment was ended).
    mutating func fragmentWritten() {
        written += building
        building.removeAll(keepingCapacity: true)
    }

    /// What the muxer wrote went into the cipher: the plaintext grew from
    /// `before` to `after` bytes, of which `held` wait unsealed; `newest` is
    /// the newest frame handed. True: fill and seal the chunk now (then
    /// `sealed()`).
    mutating func committed(before: Int64, after: Int64, held: Int, newest: Int64?) -> Bool {
        defer { written.removeAll(keepingCapacity: true) }
        guard after > before else { return false }
        if Self.sameChunk(before, after) {
            // Still the chunk that was held before: sealed once it has
            // waited a fragment's length.
            guard let oldest, let newest else { return false }
            return newest &- oldest >= length
        }
        // A new chunk began in what was written: its oldest frame is the
        // newest one written whose bytes reach back to the chunk's start
        // (a fragment's or cluster's frames end it).
        oldest = written.last?.dts ?? newest
        var bytes = 0
        for packet in written.reversed() {
            oldest = packet.dts
            bytes += packet.size
            if bytes >= held { break }
        }
        return false
    }

    /// The held chunk was filled and sealed: nothing waits.
    mutating func sealed() {
        oldest = nil
        written.removeAll(keepingCapacity: true)
    }

    /// Whether the age chunk holding the plaintext's end (1 to 64 KiB of it
    /// is held unsealed) is the same at both sizes.
    static func sameChunk(_ before: Int64, _ after: Int64) -> Bool {
        let chunk = Int64(Age.chunkSize)
        return before > 0 && (before - 1) / chunk == (after - 1) / chunk
    }
}
