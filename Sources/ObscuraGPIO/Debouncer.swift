/// Turns a bouncing contact into clean transitions.
///
/// A level counts once it has held, with no further edge, for `period`; the
/// transition is stamped with the first edge of the burst that led to it (the
/// moment the user pressed). Bursts that settle back on the previous level
/// (glitches shorter than the period) produce nothing. Pure: edges and the
/// clock come in, transitions go out, so it is tested without hardware.
public struct Debouncer: Sendable {
    public struct Transition: Sendable, Equatable {
        /// The new level (true: active, e.g. pressed).
        public let level: Bool
        /// When the burst that led to it began (ns, the edges' clock).
        public let timestampNanoseconds: UInt64
    }

    public let periodNanoseconds: UInt64
    public private(set) var level: Bool
    private var raw: Bool
    private var lastEdge: UInt64 = 0
    private var burstStart: UInt64?

    public init(period: Duration, initialLevel: Bool = false) {
        periodNanoseconds = UInt64(period.components.seconds) * 1_000_000_000
            + UInt64(period.components.attoseconds / 1_000_000_000)
        level = initialLevel
        raw = initialLevel
    }

    /// An edge: the contact is now at `level`. The edges' own timestamps
    /// decide, not when they are read: if the level before this edge had
    /// already held for a whole period, it counts and is returned here, even
    /// when a busy reader gets both edges at once (a release and the next
    /// press 150 ms later are two transitions, however late they are read).
    @discardableResult
    public mutating func edge(_ level: Bool, at timestamp: UInt64) -> Transition? {
        var settled: Transition?
        if let start = burstStart, timestamp >= lastEdge &+ periodNanoseconds {
            burstStart = nil
            if raw != self.level {
                self.level = raw
                settled = Transition(level: raw, timestampNanoseconds: start)
            }
        }
        if burstStart == nil { burstStart = timestamp }
        raw = level
        lastEdge = timestamp
        return settled
    }

    /// When `advance` next has something to decide (nil: nothing pending).
    public var deadline: UInt64? { burstStart == nil ? nil : lastEdge &+ periodNanoseconds }

    /// Moves the clock to `now`; `observed` is the line's level read now, if
    /// known (it wins over edges, which can be lost when a queue overflows).
    public mutating func advance(to now: UInt64, observed: Bool? = nil) -> Transition? {
        guard let start = burstStart, now >= lastEdge &+ periodNanoseconds else { return nil }
        if let observed { raw = observed }
        burstStart = nil
        guard raw != level else { return nil }
        level = raw
        return Transition(level: raw, timestampNanoseconds: start)
    }
}
