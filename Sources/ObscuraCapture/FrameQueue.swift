import ObscuraMedia
import ObscuraSystem
import struct Synchronization.Atomic

/// One output's queue of frames, filled on the camera's thread and drained by
/// one consumer. Pushing never blocks: when the queue is full the policy
/// decides what to drop, and every drop is counted. Holding a frame holds a
/// camera buffer, so capacities are small and set by the session from the
/// camera's buffer count.
public final class FrameQueue: Sendable {
    public enum Policy: Sendable, Equatable, CustomStringConvertible {
        /// Keep only the newest frame (preview): a new frame replaces an unread one.
        case latestOnly
        /// Keep up to `n` frames in order (recorders); frames that arrive when
        /// full are dropped and counted.
        case bounded(Int)
        /// Take one frame when armed, then nothing until armed again (photo).
        case oneShot
        /// Hold nothing: each frame is looked at as it passes, on the
        /// camera's thread, and released (a measure far cheaper than a
        /// frame's interval, like the picture watch's grid).
        case passing

        public var description: String {
            switch self {
            case .latestOnly: "latest only"
            case .bounded(let n): "bounded(\(n))"
            case .oneShot: "one shot"
            case .passing: "passing"
            }
        }

        /// Camera buffers the policy holds at most (beyond an output's extra ones).
        public var held: Int {
            switch self {
            case .latestOnly, .oneShot: 1
            case .bounded(let n): n
            case .passing: 0
            }
        }
    }

    private struct State {
        var frames: [VideoFrame] = []
        var capacity: Int
        /// A bounded queue's most camera time between its oldest and newest
        /// frame (ns); nil: only the capacity bounds it.
        var maxBacklog: UInt64?
        var waiter: CheckedContinuation<VideoFrame?, Never>?
        var closed = false
        /// A wake that found no waiter: the next wait returns nil at once.
        var wakePending = false
        var armed = false
        var accepting = true
        /// Sequence numbers of the latest drops (at most `droppedKept`), so a
        /// consumer can tell the frames it lost here from those the camera
        /// never delivered. Cleared when the session restarts (numbering
        /// starts again).
        var droppedSequences: [UInt32] = []
        /// A bounded queue's most frames a second (`maxFrameRate`), and the
        /// sequence numbers of the latest frames it left out for it.
        var thinner: FrameThinner?
        var thinnedSequences: [UInt32] = []
        mutating func noteDropped(_ sequence: UInt32) { Self.note(sequence, in: &droppedSequences) }
        static func note(_ sequence: UInt32, in kept: inout [UInt32]) {
            if kept.count >= FrameQueue.droppedKept { kept.removeFirst(kept.count / 2) }
            kept.append(sequence)
        }
    }
    static let droppedKept = 4096

    public let policy: Policy
    private let state: Mutex<State>
    /// A passing queue's look at each frame, and what it is told when the
    /// queue closes (its session stopped).
    private let look: (@Sendable (VideoFrame) -> Void)?
    private let ended: (@Sendable () -> Void)?
    private let dropCount = Atomic<Int>(0)
    private let pushCount = Atomic<Int>(0)
    private let thinCount = Atomic<Int>(0)

    public init(policy: Policy) {
        precondition(policy != .passing, "a passing queue is made with init(passing:ended:)")
        self.policy = policy
        state = Mutex(State(capacity: max(1, policy.held)))
        look = nil
        ended = nil
    }

    /// A queue that holds no frame: `look` sees each one on the camera's
    /// thread, must be quick, and must keep nothing that points into it;
    /// `ended` is called once when the queue closes.
    public init(passing look: @escaping @Sendable (VideoFrame) -> Void, ended: @escaping @Sendable () -> Void) {
        policy = .passing
        state = Mutex(State(capacity: 1))
        self.look = look
        self.ended = ended
    }

    /// Frames dropped by the policy so far.
    public var drops: Int { dropCount.load(ordering: .relaxed) }
    /// Frames left out evenly to keep to `maxFrameRate` so far (not drops:
    /// not offered, nothing was behind).
    public var thinned: Int { thinCount.load(ordering: .relaxed) }
    /// Frames offered to the queue so far (those left out for `maxFrameRate` are not).
    public var offered: Int { pushCount.load(ordering: .relaxed) }
    public var capacity: Int { state.withLock { $0.capacity } }
    public var count: Int { state.withLock { $0.frames.count } }

    /// Sets how many frames a bounded queue may hold (the session derives it
    /// from the camera's buffers). Surplus frames are dropped and counted.
    public func setCapacity(_ capacity: Int) {
        let dropped: [VideoFrame] = state.withLock { s in
            guard case .bounded = policy else { return [] }
            s.capacity = max(1, capacity)
            guard s.frames.count > s.capacity else { return [] }
            let surplus = Array(s.frames.prefix(s.frames.count - s.capacity))
            s.frames.removeFirst(surplus.count)
            for frame in surplus { s.noteDropped(frame.sequence) }
            return surplus
        }
        if !dropped.isEmpty { dropCount.add(dropped.count, ordering: .relaxed) }
    }

    /// Drops every queued frame (counted), so that they go back to the
    /// camera: a consumer that stopped taking frames (its thread blocked on
    /// a storage that hangs) must not hold the camera's buffers. Returns
    /// how many were dropped.
    @discardableResult
    public func dropQueued() -> Int {
        let dropped: [VideoFrame] = state.withLock { s in
            let all = s.frames
            s.frames.removeAll()
            for frame in all { s.noteDropped(frame.sequence) }
            return all
        }
        if !dropped.isEmpty { dropCount.add(dropped.count, ordering: .relaxed) }
        return dropped.count
    }

    /// The most camera time a bounded queue holds in front of its consumer:
    /// a frame that arrives when the oldest queued one is older than this (by
    /// the frames' own timestamps) pushes the old ones out, dropped and
    /// counted. So a consumer that falls behind (an encoder starved of CPU)
    /// is never handed a frame more than this behind the camera, however
    /// many buffers the camera has. Nil: only the capacity bounds it.
    public var maxBacklog: Duration? {
        get { state.withLock { $0.maxBacklog }.map { .nanoseconds(Int64($0)) } }
        set {
            let ns = newValue.map { UInt64(max(0, $0.components.seconds)) * 1_000_000_000 + UInt64(max(0, $0.components.attoseconds)) / 1_000_000_000 }
            state.withLock { $0.maxBacklog = ns }
        }
    }

    /// The most frames a second a bounded queue takes, by the frames' own
    /// timestamps: the others are left out evenly before they are offered
    /// and counted in `thinned` (for a camera that cannot be asked for a
    /// lower rate). Nil: every frame is offered.
    public var maxFrameRate: Double? {
        get { state.withLock { $0.thinner.map { 1e9 / Double($0.interval) } } }
        set {
            let thinner = newValue.flatMap { $0 > 0 && $0.isFinite ? FrameThinner(interval: UInt64(1e9 / $0)) : nil }
            state.withLock { $0.thinner = thinner }
        }
    }

    /// Arms a one-shot queue for the next frame.
    public func arm() { state.withLock { $0.armed = true } }

    /// Offers a frame. Never blocks. A frame not kept is released at once
    /// (and goes back to the camera).
    public func push(_ frame: VideoFrame) {
        var resume: CheckedContinuation<VideoFrame?, Never>?
        var released: VideoFrame?
        var dropped = false, thinned = false
        var aged: [VideoFrame] = []
        if let look {
            guard state.withLock({ !$0.closed && $0.accepting }) else { return }
            pushCount.add(1, ordering: .relaxed)
            look(frame)
            return
        }
        state.withLock { s in
            if s.closed || !s.accepting { released = frame; return }
            if s.thinner?.keep(frame.timestampNanoseconds) == false {
                thinned = true
                State.note(frame.sequence, in: &s.thinnedSequences)
                released = frame
                return
            }
            if policy == .oneShot {
                guard s.armed else { released = frame; return }
                s.armed = false
            }
            if let waiter = s.waiter {
                s.waiter = nil
                resume = waiter
                return
            }
            switch policy {
            case .latestOnly, .oneShot, .passing:
                if let old = s.frames.first {
                    released = old
                    dropped = true
                    s.noteDropped(old.sequence)
                }
                s.frames = [frame]
            case .bounded:
                if let bound = s.maxBacklog {
                    // The oldest frames, too far behind the newest, go first.
                    let keepAfter = frame.timestampNanoseconds > bound ? frame.timestampNanoseconds - bound : 0
                    let stale = s.frames.prefix { $0.timestampNanoseconds < keepAfter }.count
                    if stale > 0 {
                        aged = Array(s.frames.prefix(stale))
                        s.frames.removeFirst(stale)
                        for old in aged { s.noteDropped(old.sequence) }
                    }
                }
                if s.frames.count >= s.capacity {
                    released = frame
                    dropped = true
                    s.noteDropped(frame.sequence)
                } else {
                    s.frames.append(frame)
                }
            }
        }
        if thinned { thinCount.add(1, ordering: .relaxed); return } else { pushCount.add(1, ordering: .relaxed) }
        if dropped { dropCount.add(1, ordering: .relaxed) }
        if !aged.isEmpty { dropCount.add(aged.count, ordering: .relaxed) }
        _ = released // released here, outside the lock
        _ = aged
        resume?.resume(returning: frame)
    }

    /// The next frame, waiting for one; nil once the queue is closed and empty,
    /// or when the waiting task is cancelled. One consumer at a time.
    public func next() async -> VideoFrame? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<VideoFrame?, Never>) in
                let ready: VideoFrame?? = state.withLock { s in
                    if !s.frames.isEmpty { return .some(s.frames.removeFirst()) }
                    if s.closed || Task.isCancelled { return .some(nil) }
                    if s.wakePending {
                        s.wakePending = false
                        return .some(nil)
                    }
                    precondition(s.waiter == nil, "FrameQueue has one consumer")
                    s.waiter = continuation
                    return .none
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            let waiter = state.withLock { s -> CheckedContinuation<VideoFrame?, Never>? in
                defer { s.waiter = nil }
                return s.waiter
            }
            waiter?.resume(returning: nil)
        }
    }

    /// Ends the queue: a waiting consumer gets nil, queued frames are released.
    public func close() {
        let (waiter, frames, closing) = state.withLock { s -> (CheckedContinuation<VideoFrame?, Never>?, [VideoFrame], Bool) in
            let closing = !s.closed
            s.closed = true
            defer { s.waiter = nil; s.frames = [] }
            return (s.waiter, s.frames, closing)
        }
        _ = frames
        waiter?.resume(returning: nil)
        if closing { ended?() }
    }

    /// Whether pushed frames are kept at all. An output that is idle (a movie
    /// output between recordings) refuses frames so it holds no camera buffer;
    /// refused frames are not counted as drops.
    public func setAccepting(_ accepting: Bool) {
        let dropped = state.withLock { s -> [VideoFrame] in
            s.accepting = accepting
            guard !accepting else { return [] }
            defer { s.frames = [] }
            return s.frames
        }
        _ = dropped
    }

    /// Hands a waiting consumer nil (without closing), so it can look at why
    /// it should stop; a consumer not waiting now gets nil from its next wait
    /// for a frame (queued frames still come first).
    public func wake() {
        let waiter = state.withLock { s -> CheckedContinuation<VideoFrame?, Never>? in
            defer { s.waiter = nil }
            if s.waiter == nil { s.wakePending = true }
            return s.waiter
        }
        waiter?.resume(returning: nil)
    }

    /// Whether the queue is closed (its session stopped).
    public var isClosed: Bool { state.withLock { $0.closed } }

    /// Opens the queue again (a session restarting).
    public func reopen() {
        state.withLock { s in
            s.closed = false
            s.droppedSequences = []
            s.thinnedSequences = []
            s.thinner = s.thinner.map { FrameThinner(interval: $0.interval) }
        }
    }

    /// How many frames numbered strictly between `after` and `before` this
    /// queue dropped (among its latest drops).
    public func dropped(after: UInt32, before: UInt32) -> Int {
        state.withLock { s in s.droppedSequences.reduce(0) { $0 + ($1 > after && $1 < before ? 1 : 0) } }
    }

    /// How many frames numbered strictly between `after` and `before` this
    /// queue left out for `maxFrameRate` (among its latest).
    public func thinned(after: UInt32, before: UInt32) -> Int {
        state.withLock { s in s.thinnedSequences.reduce(0) { $0 + ($1 > after && $1 < before ? 1 : 0) } }
    }
}

/// Leaves frames out evenly so that at most one passes per `interval` of the
/// frames' own timestamps, on average: a frame passes when it comes at or
/// after the time the next one is due (less an eighth of the interval, for
/// the camera's jitter); then the next is due one interval later, or one
/// interval after this frame if the camera left a longer gap. So 30 fps
/// thinned to 20 passes two frames of every three, not every other one.
struct FrameThinner: Sendable, Equatable {
    let interval: UInt64
    private var due: UInt64?

    init(interval: UInt64) { self.interval = max(1, interval) }

    /// Whether the frame at `timestamp` (ns) passes.
    mutating func keep(_ timestamp: UInt64) -> Bool {
        guard let due else {
            self.due = timestamp &+ interval
            return true
        }
        guard timestamp &+ interval / 8 >= due else { return false }
        let late = timestamp > due ? timestamp - due : 0
        self.due = late >= interval ? timestamp &+ interval : due &+ interval
        return true
    }
}

/// Frames of a queue as an async sequence.
public struct FrameSequence: AsyncSequence, Sendable {
    public typealias Element = VideoFrame
    let queue: FrameQueue
    public struct AsyncIterator: AsyncIteratorProtocol {
        let queue: FrameQueue
        public mutating func next() async -> VideoFrame? { await queue.next() }
    }
    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(queue: queue) }
}
