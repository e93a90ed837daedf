import Testing
import ObscuraRecording

/// A live viewer's queue: it starts at a keyframe, holds at most its bound of
/// video however long the viewer stalls, skips ahead to a keyframe when it
/// falls behind, and counts what it skipped.
@Suite struct LiveViewerQueueTests {
    static let frame: UInt64 = 33_333_333  // 30 fps, nanoseconds

    /// Frame `n` of a stream with a keyframe every `gop` frames, `size` bytes each.
    static func packet(_ n: Int, gop: Int = 30, size: Int = 1000) -> LivePacket {
        LivePacket(data: [UInt8](repeating: UInt8(n & 0xff), count: size), timestamp: UInt64(n) * frame,
                   isKeyframe: n % gop == 0)
    }

    @Test func aJoiningViewerStartsAtAKeyframeAndAsksForOne() {
        var queue = LiveViewerQueue(bound: .milliseconds(500))
        #expect(queue.needsKeyframe)
        for n in 1...3 { queue.push(Self.packet(n)) }
        #expect(queue.count == 0 && queue.needsKeyframe, "no picture can be decoded before a keyframe")
        queue.push(Self.packet(30))
        #expect(!queue.needsKeyframe)
        #expect(queue.pop()?.isKeyframe == true)
        #expect(queue.packetsDropped == 3 && queue.skips == 0)
    }

    @Test func aViewerThatKeepsUpGetsEveryPacketInOrderAndNeverSkips() {
        var queue = LiveViewerQueue(bound: .milliseconds(200))
        var got: [UInt64] = []
        for n in 0..<300 {
            queue.push(Self.packet(n))
            while let packet = queue.pop() { got.append(packet.timestamp / Self.frame) }
        }
        #expect(got == (0..<300).map(UInt64.init))
        #expect(queue.skips == 0 && queue.packetsDropped == 0 && queue.bytes == 0)
    }

    @Test func aStalledViewerHoldsAtMostItsBoundAndSkipsToTheNewestKeyframe() {
        let bound = Duration.milliseconds(1000)
        var queue = LiveViewerQueue(bound: bound)
        // Keyframes every 15 frames (half a second); the viewer takes nothing for 30 s.
        for n in 0..<900 {
            queue.push(Self.packet(n, gop: 15))
            let first = queue.oldestTimestamp ?? 0
            #expect(UInt64(n) * Self.frame - first <= 1_000_000_000, "queued \(queue.count) packets at frame \(n)")
            #expect(queue.bytes == queue.count * 1000)
        }
        #expect(queue.skips > 0)
        // What it gets when it wakes: a keyframe first, then the frames after it in order.
        let first = queue.pop()
        #expect(first?.isKeyframe == true)
        var last = first!.timestamp
        while let packet = queue.pop() {
            #expect(packet.timestamp == last + Self.frame)
            last = packet.timestamp
        }
        #expect(last == 899 * Self.frame)
        #expect(queue.packetsDropped + (899 - Int(first!.timestamp / Self.frame) + 1) == 900)
    }

    @Test func withNoKeyframeQueuedAViewerThatFellBehindWaitsForTheNextAndAsksForIt() {
        // A keyframe every 4 s, a bound of 1 s: the only keyframe queued is the first.
        var queue = LiveViewerQueue(bound: .seconds(1))
        for n in 0..<40 { queue.push(Self.packet(n, gop: 120)) }
        #expect(queue.skips == 1 && queue.count == 0 && queue.needsKeyframe)
        for n in 40..<120 { queue.push(Self.packet(n, gop: 120)) }
        #expect(queue.count == 0, "nothing decodable came")
        queue.push(Self.packet(120, gop: 120))
        #expect(queue.pop()?.timestamp == 120 * Self.frame)
        #expect(queue.packetsDropped == 120 && queue.skips == 1)
    }
}
