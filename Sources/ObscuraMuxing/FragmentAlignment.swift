import ObscuraAge

/// Where an encrypted recording's fragments end when they are aligned to
/// age's 64 KiB chunks. Every fragment is followed by filler up to the end
/// of a chunk (`FileOutput.alignToChunk`); to keep that filler small, a
/// fragment that holds half its length or more is ended once its end is
/// expected within about one frame of a chunk's end (at most an eighth of a
/// chunk away; up to four times that in the last quarter before the limit,
/// so that a fragment that found no good end does not end at a random
/// place), and at the latest when it holds twice its length. So a killed
/// recording loses at most the fragment being built (up to twice the
/// fragment length), and `age -d` of what it left gives whole fragments.
struct FragmentAlignment {
    /// Packet bytes given to the muxer since the file last grew (the
    /// fragment being built), and how many packets.
    private var openBytes = 0
    private var openPackets = 0
    /// A running mean of the sizes of the video packets between keyframes
    /// (what the next frame most likely takes).
    private var meanVideoPacket = 0.0

    mutating func took(bytes: Int, video: Bool, keyframe: Bool = false) {
        openBytes += bytes
        openPackets += 1
        if video, !keyframe { meanVideoPacket = meanVideoPacket == 0 ? Double(bytes) : meanVideoPacket + (Double(bytes) - meanVideoPacket) / 8 }
    }

    /// The file grew to whole fragments, and filler was added after them.
    mutating func aligned() {
        (openBytes, openPackets) = (0, 0)
    }

    /// Whether the fragment being built, ended now, would end close to a
    /// chunk's end: the filler it would need is no more than the next frame
    /// is expected to take (but at least 1 KiB, at most an eighth of a
    /// chunk), times one to four as `overdue` goes from 0.75 to 1 (0: the
    /// fragment holds half its length; 1: twice its length).
    /// `committed`: the file's plaintext size so far (whole fragments).
    func endsWell(at committed: Int64, overdue: Double) -> Bool {
        let chunk = Int64(Age.chunkSize)
        // The fragment's own boxes or elements (moof, traf, trun entries,
        // the mdat header; a cluster's header and block headers), a little
        // over: a filler a few bytes larger costs less than one that misses
        // the chunk's end and needs a whole chunk more.
        let end = committed + Int64(openBytes + 192 + 16 * openPackets)
        let filler = (chunk - end % chunk) % chunk
        let late = min(max((overdue - 0.75) / 0.25, 0), 1)
        let slack = Double(min(max(Int64(meanVideoPacket), 1024), chunk / 8)) * (1 + 3 * late)
        return Double(filler) <= slack
    }
}
