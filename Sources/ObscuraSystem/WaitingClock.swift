/// The monotonic time that logic which waits reads, and its waits.
///
/// What decides on time (the service's housekeeping round, a camera given up
/// after a while, an encoder retried every half second, a stall judged by the
/// time since the last frame) takes one of these instead of reading
/// `ContinuousClock` itself, so that a test moves time on by hand
/// (`ManualClock` in the tests) instead of waiting for it. Instants are
/// `ContinuousClock`'s; `nanoseconds` is the same time as CLOCK_MONOTONIC
/// nanoseconds, the camera's timestamps' clock.
public protocol WaitingClock: Sendable {
    var now: ContinuousClock.Instant { get }
    /// CLOCK_MONOTONIC nanoseconds now, on this clock.
    var nanoseconds: UInt64 { get }
    /// Returns once `duration` has passed on this clock; throws
    /// CancellationError when the task is cancelled first.
    func sleep(for duration: Duration) async throws
}

/// The system's monotonic clock: what every user of a `WaitingClock` gets
/// outside the tests.
public struct SystemWaitingClock: WaitingClock {
    public init() {}
    public var now: ContinuousClock.Instant { .now }
    public var nanoseconds: UInt64 { Syscalls.monotonicNanoseconds() }
    public func sleep(for duration: Duration) async throws { try await Task.sleep(for: duration) }
}

extension Duration {
    /// Whole nanoseconds (negative durations clamp to 0).
    public var nanosecondsClamped: UInt64 {
        let (seconds, attoseconds) = components
        guard seconds >= 0 else { return 0 }
        return UInt64(seconds) &* 1_000_000_000 &+ UInt64(max(0, attoseconds) / 1_000_000_000)
    }
}
