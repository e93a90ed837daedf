/// One encoded access unit on its way to the live viewers: its bytes, shared
/// by every viewer's queue (an array is copied only when written, and none
/// writes it), its camera time and whether a picture can be decoded from it
/// alone.
public struct LivePacket: Sendable {
    public let data: [UInt8]
    /// Camera time of the packet's frame, nanoseconds.
    public let timestamp: UInt64
    public let isKeyframe: Bool
    /// When the encoder's packet was handed to the viewers (CLOCK_MONOTONIC,
    /// nanoseconds; 0 when unknown): camera time to this is capture and
    /// encoding, this to a viewer's arrival is the way there.
    public let published: UInt64

    public init(data: [UInt8], timestamp: UInt64, isKeyframe: Bool, published: UInt64 = 0) {
        self.data = data
        self.timestamp = timestamp
        self.isKeyframe = isKeyframe
        self.published = published
    }
}

/// One viewer's packets, waiting to be sent: at most `bound` of video, so a
/// viewer that falls behind costs the kiosk a bounded amount of memory and
/// never holds up the recording or another viewer.
///
/// The queue always starts at a keyframe, so what the viewer gets can be
/// decoded from its first packet. A viewer that joins, or that fell behind
/// and lost what it had not taken, waits for the next keyframe and says so
/// (`needsKeyframe`: the encoder is asked for one at once rather than at the
/// end of its group of pictures). When what is queued spans more than
/// `bound`, the viewer skips ahead: to the newest keyframe queued, or, with
/// none, past everything queued to the next one to come. Each skip is
/// counted. One owner; not thread-safe.
public struct LiveViewerQueue {
    public let bound: Duration
    private var packets: [LivePacket] = []
    /// The first packet not yet taken (taken ones are dropped in batches).
    private var head = 0
    private var waitingForKeyframe = true
    /// Times the viewer fell more than `bound` behind and skipped ahead.
    public private(set) var skips = 0
    /// Packets that never reached the viewer: skipped, or before its first keyframe.
    public private(set) var packetsDropped = 0
    /// Bytes queued now.
    public private(set) var bytes = 0

    public init(bound: Duration) {
        self.bound = bound
    }

    /// Whether the viewer waits for a keyframe (it has just joined, or skipped
    /// past everything it had): the encoder should make the next frame one.
    public var needsKeyframe: Bool { waitingForKeyframe }

    /// Packets queued now.
    public var count: Int { packets.count - head }

    /// Camera time of the oldest packet queued (nil when none is).
    public var oldestTimestamp: UInt64? { head < packets.count ? packets[head].timestamp : nil }

    /// Queues a packet, skipping ahead when the viewer has fallen more than
    /// `bound` behind.
    public mutating func push(_ packet: LivePacket) {
        if waitingForKeyframe {
            guard packet.isKeyframe else {
                packetsDropped += 1
                return
            }
            waitingForKeyframe = false
        }
        packets.append(packet)
        bytes += packet.data.count
        if let first = oldestTimestamp, packet.timestamp > first,
           packet.timestamp - first > Self.nanoseconds(bound) {
            skipAhead()
        }
    }

    /// The next packet to send, or nil when the viewer has taken everything.
    public mutating func pop() -> LivePacket? {
        guard head < packets.count else { return nil }
        let packet = packets[head]
        head += 1
        bytes -= packet.data.count
        if head == packets.count || head >= 64 {
            packets.removeFirst(head)
            head = 0
        }
        return packet
    }

    /// Drops what is queued up to the newest keyframe after the first packet;
    /// with none, drops everything and waits for the next keyframe.
    private mutating func skipAhead() {
        skips += 1
        let newest = packets.indices.dropFirst(head + 1).last { packets[$0].isKeyframe }
        let keep = newest ?? packets.count
        for index in head..<keep { bytes -= packets[index].data.count }
        packetsDropped += keep - head
        packets.removeFirst(keep)
        head = 0
        waitingForKeyframe = newest == nil
    }

    static func nanoseconds(_ duration: Duration) -> UInt64 {
        let parts = duration.components
        return UInt64(max(0, parts.seconds)) * 1_000_000_000 + UInt64(max(0, parts.attoseconds / 1_000_000_000))
    }
}
