import Foundation

/// Waits until `condition` holds, looking every `every`, for at most
/// `limit`; returns whether it held. For what a test cannot be told of by an
/// event (a file appearing, a count reaching a value): the wait ends when the
/// condition holds, however fast or slow the machine, and the limit only
/// bounds a broken case.
public func waitUntil(within limit: Duration = .seconds(30), every: Duration = .milliseconds(10),
                      _ condition: () throws -> Bool) async rethrows -> Bool {
    let deadline = ContinuousClock.now + limit
    while try !condition() {
        if ContinuousClock.now >= deadline { return false }
        try? await Task.sleep(for: every)
    }
    return true
}

/// `waitUntil` for a thread that cannot await.
public func waitUntilBlocking(within limit: Duration = .seconds(30), every: Duration = .milliseconds(10),
                              _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = ContinuousClock.now + limit
    let micros = useconds_t(every.components.seconds * 1_000_000 + every.components.attoseconds / 1_000_000_000_000)
    while try !condition() {
        if ContinuousClock.now >= deadline { return false }
        usleep(micros)
    }
    return true
}

/// `waitUntil` for a condition that is asked with `await` (an actor's state).
public func waitUntil(within limit: Duration = .seconds(30), every: Duration = .milliseconds(10),
                      _ condition: () async throws -> Bool) async rethrows -> Bool {
    let deadline = ContinuousClock.now + limit
    while try await !condition() {
        if ContinuousClock.now >= deadline { return false }
        try? await Task.sleep(for: every)
    }
    return true
}
