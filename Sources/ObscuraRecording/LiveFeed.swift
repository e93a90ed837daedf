import CFFmpeg
import ObscuraFFmpeg
import ObscuraEncoding
import ObscuraSystem

/// A movie output's packets for its live viewers: the recording's own
/// packets, no second encoder. Each packet's compressed bytes are copied once
/// (never pixels) into a `LivePacket` that every viewer's queue shares; a key
/// frame carries the stream's parameter sets in front, so a viewer can start
/// decoding at any key frame. With no viewer, a packet costs one lock.
///
/// A viewer (`LiveViewer`) is taken from by one sender of its own; one that
/// falls behind skips ahead in its own queue (`LiveViewerQueue`) and holds up
/// neither the recording nor another viewer. A joining viewer asks the
/// encoder for a key frame at once (`wantsKeyframe`).
public final class LiveFeed: Sendable {
    /// How far behind a viewer may fall before it skips to a key frame.
    public let bound: Duration
    /// Viewers at once; one more is refused.
    public var limit: Int {
        get { state.withLock { $0.limit } }
        set { state.withLock { $0.limit = max(0, newValue) } }
    }

    /// What the viewers have been sent and have missed, for the status.
    public struct Counts: Sendable, Equatable {
        public var viewers = 0
        public var joined = 0
        public var refused = 0
        public var packets = 0
        public var bytes = 0
        public var skips = 0
        public var packetsDropped = 0
    }

    struct Viewer {
        var queue: LiveViewerQueue
        let wakeup: Wakeup
        var taken = (packets: 0, bytes: 0)
    }

    struct State {
        var viewers: [Int: Viewer] = [:]
        var nextID = 0
        /// The counts of viewers that have left.
        var gone = Counts()
        var joined = 0
        var refused = 0
        var limit: Int
    }

    let state: Mutex<State>

    public init(bound: Duration = .seconds(1), limit: Int = 4) {
        self.bound = bound
        state = Mutex(State(limit: max(0, limit)))
    }

    /// A new viewer, or nil when `limit` viewers are watching already.
    public func join() throws(SystemError) -> LiveViewer? {
        let wakeup = try Wakeup()
        let id: Int? = state.withLock { s in
            guard s.viewers.count < s.limit else {
                s.refused += 1
                return nil
            }
            s.nextID += 1
            s.joined += 1
            s.viewers[s.nextID] = Viewer(queue: LiveViewerQueue(bound: bound), wakeup: wakeup)
            return s.nextID
        }
        return id.map { LiveViewer(id: $0, feed: self, wakeup: wakeup) }
    }

    /// Whether a viewer waits for a key frame: the encoder makes the next frame one.
    public var wantsKeyframe: Bool {
        state.withLock { s in s.viewers.values.contains { $0.queue.needsKeyframe } }
    }

    public var hasViewers: Bool { state.withLock { !$0.viewers.isEmpty } }

    public var counts: Counts {
        state.withLock { s in
            var c = s.gone
            c.viewers = s.viewers.count
            c.joined = s.joined
            c.refused = s.refused
            for v in s.viewers.values {
                c.packets += v.taken.packets
                c.bytes += v.taken.bytes
                c.skips += v.queue.skips
                c.packetsDropped += v.queue.packetsDropped
            }
            return c
        }
    }

    /// Queues packets for every viewer. `timestamp` gives each packet's camera
    /// time (nanoseconds); `parameterSets` (Annex B) go in front of a key
    /// frame that does not begin with its own.
    public func publish(_ packets: [EncodedPacket], parameterSets: [UInt8], timestamp: (EncodedPacket) -> UInt64) {
        guard !packets.isEmpty, hasViewers else { return }
        let now = Syscalls.monotonicNanoseconds()
        let live = packets.map { packet in
            LivePacket(data: Self.bytes(of: packet, parameterSets: parameterSets), timestamp: timestamp(packet),
                       isKeyframe: packet.isKeyframe, published: now)
        }
        let woken: [Wakeup] = state.withLock { s in
            for id in Array(s.viewers.keys) {
                for packet in live { s.viewers[id]!.queue.push(packet) }
            }
            return s.viewers.values.map(\.wakeup)
        }
        for wakeup in woken { wakeup.signal() }
    }

    /// Queues an encoder's packets, each with its frame's camera time as
    /// `timeline` places it; the parameter sets from the encoder's extradata.
    func publish(_ packets: [EncodedPacket], encoder: any VideoEncoder, timeline: RecordingTimeline) {
        guard !packets.isEmpty, hasViewers else { return }
        let parameters = encoder.codecParameters
        let p = parameters.parameters.pointee
        let extra = p.extradata.map { Array(UnsafeBufferPointer(start: $0, count: Int(p.extradata_size))) } ?? []
        let base = parameters.timeBase
        publish(packets, parameterSets: AnnexB.parameterSets(fromExtradata: extra)) { packet in
            let micro = base.den > 0 ? packet.pts * Int64(base.num) * 1_000_000 / Int64(base.den) : packet.pts
            return timeline.sensorTime(pts: micro) ?? 0
        }
    }

    /// The packet's bytes, the parameter sets in front of a key frame that
    /// lacks them (an encoder opened for a file keeps them in its extradata).
    static func bytes(of packet: EncodedPacket, parameterSets: [UInt8]) -> [UInt8] {
        let data = packet.bytes
        guard packet.isKeyframe, !parameterSets.isEmpty, !AnnexB.beginsWithParameterSet(data) else { return data }
        return parameterSets + data
    }

    func take(_ id: Int) -> [LivePacket]? {
        state.withLock { s in
            guard var viewer = s.viewers[id] else { return nil }
            var taken: [LivePacket] = []
            while let packet = viewer.queue.pop() { taken.append(packet) }
            viewer.taken.packets += taken.count
            viewer.taken.bytes += taken.reduce(0) { $0 + $1.data.count }
            s.viewers[id] = viewer
            return taken
        }
    }

    func leave(_ id: Int) {
        state.withLock { s in
            guard let viewer = s.viewers.removeValue(forKey: id) else { return }
            s.gone.packets += viewer.taken.packets
            s.gone.bytes += viewer.taken.bytes
            s.gone.skips += viewer.queue.skips
            s.gone.packetsDropped += viewer.queue.packetsDropped
        }
    }
}

/// One viewer of a `LiveFeed`, taken from by one sender (a thread of its
/// own: `next` blocks). Leaves the feed when it is released or `leave` is called.
public final class LiveViewer: Sendable {
    public let id: Int
    let feed: LiveFeed
    let wakeup: Wakeup

    init(id: Int, feed: LiveFeed, wakeup: Wakeup) {
        self.id = id
        self.feed = feed
        self.wakeup = wakeup
    }

    /// The packets queued since the last call, waiting up to `timeout` for
    /// one (empty: none came); nil once the viewer has left.
    public func next(timeout: Duration) throws(SystemError) -> [LivePacket]? {
        guard let ready = feed.take(id) else { return nil }
        if !ready.isEmpty { return ready }
        _ = try wakeup.wait(for: nil, timeout: timeout)
        wakeup.drain()
        return feed.take(id)
    }

    public func leave() { feed.leave(id) }

    deinit { feed.leave(id) }
}

/// H.264/H.265 Annex B streams: start codes before each unit.
public enum AnnexB {
    /// An access unit delimiter for `codec` (h264 or hevc; empty for
    /// another): written after each frame, it tells a player's parser at once
    /// that the frame is complete, where otherwise it waits for the next
    /// frame's first bytes, a frame interval later.
    public static func accessUnitDelimiter(codec: String) -> [UInt8] {
        switch codec {
        case "h264": [0, 0, 0, 1, 0x09, 0xf0]          // primary_pic_type 7: any slice type
        case "hevc": [0, 0, 0, 1, 0x46, 0x01, 0x50]    // type 35, pic_type 2: any
        default: []
        }
    }

    /// Whether `data` begins (after its start code) with a parameter set:
    /// H.264's SPS (7), or H.265's VPS (32).
    public static func beginsWithParameterSet(_ data: [UInt8]) -> Bool {
        guard let first = firstUnit(data) else { return false }
        let header = data[first]
        return header & 0x1f == 7 || (header >> 1) & 0x3f == 32
    }

    /// The index of the first unit's header byte (after a 3- or 4-byte start code).
    static func firstUnit(_ data: [UInt8]) -> Int? {
        if data.count > 4, data[0] == 0, data[1] == 0, data[2] == 0, data[3] == 1 { return 4 }
        if data.count > 3, data[0] == 0, data[1] == 0, data[2] == 1 { return 3 }
        return nil
    }

    /// An encoder's extradata as Annex B: as it is when it has start codes
    /// already (libx264, V4L2 encoders), or H.264's avcC record unpacked
    /// (its SPS and PPS, each after a start code). Empty when it is neither.
    public static func parameterSets(fromExtradata extra: [UInt8]) -> [UInt8] {
        if firstUnit(extra) != nil { return extra }
        guard extra.count >= 7, extra[0] == 1 else { return [] }
        var out: [UInt8] = []
        var at = 5
        for countMask: UInt8 in [0x1f, 0xff] {
            guard at < extra.count else { return [] }
            let count = Int(extra[at] & countMask)
            at += 1
            for _ in 0..<count {
                guard at + 2 <= extra.count else { return [] }
                let length = Int(extra[at]) << 8 | Int(extra[at + 1])
                at += 2
                guard at + length <= extra.count else { return [] }
                out += [0, 0, 0, 1] + extra[at..<(at + length)]
                at += length
            }
        }
        return out
    }
}
