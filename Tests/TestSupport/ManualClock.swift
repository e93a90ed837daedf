import ObscuraSystem

/// A `WaitingClock` that moves only when the test says: `advance(by:)` wakes
/// every sleeper whose time has come. It starts at the system's monotonic
/// time now, so instants and nanoseconds are on the same scale as the
/// camera's timestamps.
public final class ManualClock: WaitingClock {
    private struct Sleeper {
        let id: Int
        let wake: ContinuousClock.Instant
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var offset: Duration = .zero
        var sleepers: [Sleeper] = []
        var nextID = 0
        var cancelled: Set<Int> = []
    }

    private let start = ContinuousClock.now
    private let startNanoseconds = Syscalls.monotonicNanoseconds()
    private let state = Mutex(State())

    public init() {}

    public var now: ContinuousClock.Instant { start + state.withLock { $0.offset } }
    public var nanoseconds: UInt64 { startNanoseconds + state.withLock { $0.offset }.nanosecondsClamped }
    /// How many tasks sleep on this clock now.
    public var sleeping: Int { state.withLock { $0.sleepers.count } }

    public func sleep(for duration: Duration) async throws {
        let id = state.withLock { s -> Int in
            s.nextID += 1
            return s.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (c: CheckedContinuation<Void, any Error>) in
                let resumeNow = state.withLock { s -> (any Error)? in
                    if s.cancelled.remove(id) != nil { return CancellationError() }
                    let wake = start + s.offset + duration
                    s.sleepers.append(Sleeper(id: id, wake: wake, continuation: c))
                    return nil
                }
                if let resumeNow { c.resume(throwing: resumeNow) }
            }
        } onCancel: {
            let sleeper = state.withLock { s -> Sleeper? in
                guard let i = s.sleepers.firstIndex(where: { $0.id == id }) else {
                    s.cancelled.insert(id)
                    return nil
                }
                return s.sleepers.remove(at: i)
            }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Moves time on by `duration` and wakes the sleepers whose time has come.
    public func advance(by duration: Duration) {
        let due = state.withLock { s -> [Sleeper] in
            s.offset += duration
            let now = start + s.offset
            let due = s.sleepers.filter { $0.wake <= now }
            s.sleepers.removeAll { $0.wake <= now }
            return due
        }
        for sleeper in due { sleeper.continuation.resume() }
    }

    /// Moves time on by `step` every `every` of real time until the returned
    /// task is cancelled: for a test that waits for an outcome that needs
    /// time to pass on this clock (frames from a camera it paces, a
    /// watchdog's limit), without waiting that long itself. With `ready`,
    /// a step is taken only when it holds (a pipeline that has taken its
    /// last frame: time then runs as fast as the work, never ahead of it).
    public func drive(by step: Duration, every: Duration = .milliseconds(1),
                      when ready: @escaping @Sendable () -> Bool = { true }) -> Task<Void, Never> {
        Task.detached { [self] in
            while !Task.isCancelled {
                if ready() { advance(by: step) }
                try? await Task.sleep(for: every)
            }
        }
    }
}
