import ObscuraSystem

/// A storage call that may hang (a USB drive that stops answering rather
/// than going away): run on its own thread, waited for at most a deadline.
public enum StorageCall {
    /// `body`'s result, or nil when it did not finish within `limit` (it
    /// goes on on its thread, and its result is then dropped).
    public static func within<T: Sendable>(_ limit: Duration, on executor: (any TaskExecutor)?, clock: any WaitingClock,
                                    _ body: @escaping @Sendable () -> T) async -> T? {
        await value(of: Task.detached(executorPreference: executor) { body() }, within: limit, clock: clock)
    }

    /// `work`'s value, or nil when it has none within `limit` (the work goes
    /// on, and may be asked again).
    public static func value<T: Sendable>(of work: Task<T, Never>, within limit: Duration,
                                   clock: any WaitingClock) async -> T? {
        let waiter = Mutex<CheckedContinuation<T?, Never>?>(nil)
        return await withCheckedContinuation { continuation in
            waiter.withLock { $0 = continuation }
            Task {
                let value = await work.value
                waiter.withLock { w -> CheckedContinuation<T?, Never>? in defer { w = nil }; return w }?.resume(returning: value)
            }
            Task {
                try? await clock.sleep(for: limit)
                waiter.withLock { w -> CheckedContinuation<T?, Never>? in defer { w = nil }; return w }?.resume(returning: nil)
            }
        }
    }
}
