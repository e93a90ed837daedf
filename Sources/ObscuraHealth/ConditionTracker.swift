/// One condition followed over time: declared once it has held, without a
/// break, for `hold`; cleared once it has been absent, without a break, for
/// `clearAfter`. Pure: observations and their times (nanoseconds on one
/// monotonic clock, e.g. the frames' sensor timestamps) come in, changes go
/// out, so a test moves time by hand.
public struct ConditionTracker: Sendable, Equatable {
    public enum Change: Sendable, Equatable {
        /// Declared; `since` is when the unbroken stretch began.
        case declared(since: UInt64)
        /// Cleared; `after` is how long it was declared for, in nanoseconds.
        case cleared(after: UInt64)
    }

    public let holdNanoseconds: UInt64
    public let clearNanoseconds: UInt64
    /// Whether the condition is declared now.
    public private(set) var isDeclared = false
    /// Since when the observations have disagreed with `isDeclared`.
    private var changingSince: UInt64?
    private var declaredAt: UInt64 = 0

    public init(hold: Duration, clearAfter: Duration) {
        holdNanoseconds = Self.nanoseconds(hold)
        clearNanoseconds = Self.nanoseconds(clearAfter)
    }

    static func nanoseconds(_ d: Duration) -> UInt64 {
        let (seconds, attoseconds) = d.components
        return seconds < 0 ? 0 : UInt64(seconds) * 1_000_000_000 + UInt64(max(0, attoseconds) / 1_000_000_000)
    }

    /// The condition seen (`present`) or not at `time`.
    public mutating func observe(_ present: Bool, at time: UInt64) -> Change? {
        guard present != isDeclared else {
            changingSince = nil
            return nil
        }
        let since = changingSince ?? time
        changingSince = since
        let needed = present ? holdNanoseconds : clearNanoseconds
        guard time >= since, time - since >= needed else { return nil }
        isDeclared = present
        changingSince = nil
        if present {
            declaredAt = since
            return .declared(since: since)
        }
        return .cleared(after: since >= declaredAt ? since - declaredAt : 0)
    }
}
