import Testing
@testable import ObscuraMuxing

/// The age chunk not yet sealed, followed in the frames' time (`HeldChunk`):
/// fragments of 0.5 s (µs), frames every 33 ms, fed as `MovieWriter` feeds it.
@Suite struct HeldChunkTests {
    static let chunk = 65_536
    static let interval: Int64 = 33_333

    /// Writes `frames` frames of `size` bytes from frame `first` as one
    /// fragment, the plaintext growing from `size0`; whether the chunk must be sealed.
    static func fragment(_ held: inout HeldChunk, from first: Int, frames: Int, size: Int,
                         plaintext size0: inout Int64) -> Bool {
        for i in first..<(first + frames) { held.handed(dts: Int64(i) * interval, size: size, muxerWroteBefore: false) }
        held.fragmentWritten()
        let after = size0 + Int64(frames * size + 300)
        defer { size0 = after }
        let unsealed = Int((after - 1) % Int64(chunk)) + 1
        return held.committed(before: size0, after: after, held: unsealed, newest: Int64(first + frames - 1) * interval)
    }

    @Test func aStillPicturesChunkIsSealedOnceItHasWaitedAFragment() {
        var held = HeldChunk(length: 500_000)
        var plaintext = Int64(Self.chunk)  // the first fragment, sealed at once
        // Frames of 1 KB: a fragment is 15 KB, a chunk would last 2 s.
        #expect(!Self.fragment(&held, from: 1, frames: 15, size: 1_000, plaintext: &plaintext))
        #expect(held.oldest == 1 * Self.interval)
        #expect(Self.fragment(&held, from: 16, frames: 15, size: 1_000, plaintext: &plaintext),
                "a second fragment that did not fill the chunk seals it")
        held.sealed()
        #expect(held.oldest == nil)
    }

    @Test func aBusyPicturesChunksFillThemselves() {
        var held = HeldChunk(length: 500_000)
        var plaintext = Int64(Self.chunk)
        // Frames of 20 KB: every fragment completes chunks; none is filled.
        for f in 0..<20 {
            #expect(!Self.fragment(&held, from: 1 + 15 * f, frames: 15, size: 20_000, plaintext: &plaintext))
            // The held chunk holds the last few frames only.
            #expect(held.oldest.map { Int64(15 * (f + 1)) * Self.interval - $0 <= 4 * Self.interval } == true)
        }
    }

    /// Matroska's muxer ends a cluster itself as a packet comes (every
    /// 32 KiB, or 0.5 s), frames of random sizes from still to busy: the
    /// held chunk's oldest frame is never more than two fragments older
    /// than the newest (the bound a kill is held to), and a chunk is sealed
    /// only where the frames were small.
    @Test func theHeldChunkNeverWaitsTwoFragmentsWhateverTheFramesSizes() {
        var rng = SystemRandomNumberGenerator()
        var held = HeldChunk(length: 500_000)
        var plaintext = Int64(Self.chunk), cluster = 0, clusterStart: Int64 = 0, seals = 0, sealedBusy = 0
        for i in 1...3_000 {
            let size = (i / 300) % 2 == 0 ? Int.random(in: 300...1_500, using: &rng) : Int.random(in: 15_000...25_000, using: &rng)
            let dts = Int64(i) * Self.interval
            let ends = cluster >= 32_768 || dts - clusterStart >= 500_000
            held.handed(dts: dts, size: size, muxerWroteBefore: ends)
            if ends {
                let after = plaintext + Int64(cluster + 40)
                let unsealed = Int((after - 1) % Int64(Self.chunk)) + 1
                if held.committed(before: plaintext, after: after, held: unsealed, newest: dts) {
                    seals += 1
                    // A second into a busy stretch, chunks fill themselves.
                    if (i / 300) % 2 == 1, i % 300 > 30 { sealedBusy += 1 }
                    plaintext = (after + Int64(Self.chunk) - 1) / Int64(Self.chunk) * Int64(Self.chunk)
                    held.sealed()
                } else {
                    plaintext = after
                }
                cluster = 0
                clusterStart = dts
            }
            cluster += size
            if let oldest = held.oldest { #expect(dts - oldest < 2 * 500_000 + Self.interval, "frame \(i)") }
        }
        #expect(seals > 0 && sealedBusy == 0, "\(seals) seals, \(sealedBusy) among busy frames")
    }

    @Test func aChunkIsTheSameOnlyWithinItsSixtyFourKiB() {
        #expect(HeldChunk.sameChunk(1, 65_536))
        #expect(!HeldChunk.sameChunk(65_536, 65_537))
        #expect(HeldChunk.sameChunk(65_537, 131_072))
        #expect(!HeldChunk.sameChunk(0, 10))
    }
}
