import Foundation
import ObscuraSystem
import struct Synchronization.Atomic

/// What a button reports.
public enum ButtonEvent: Sendable, Equatable {
    /// Pressed (after debouncing), stamped with the kernel time of the first edge.
    case pressed(UInt64)
    /// Released; `held` is how long it was down.
    case released(UInt64, held: Duration)
    /// Released before the long-press time.
    case shortPress
    /// Held for the long-press time (reported while still held).
    case longPress
}

/// A push button on a GPIO line: edge events with kernel timestamps,
/// debounced (by the kernel where libgpiod v2 can ask it to, in software
/// otherwise), active-low and pull-up/down as wired, with short and long
/// presses. Its line is read on a thread of its own, which holds the line
/// and the stream but not the button; events arrive on `events`. `close()`
/// (or deinit) wakes that thread, joins it and releases the line.
public final class Button: Sendable {
    public let name: GPIOLineName
    public let debounce: Duration
    public let longPress: Duration
    /// Whether the kernel debounces (libgpiod v2); software does otherwise.
    public let isKernelDebounced: Bool
    public let events: AsyncStream<ButtonEvent>
    private let continuation: AsyncStream<ButtonEvent>.Continuation
    private let line: GPIOLine
    private let closed = Atomic<Bool>(false)
    private let wakeup: Wakeup
    private let thread: JoinableThread

    public init(_ name: GPIOLineName, activeLow: Bool = true, bias: GPIOBias = .pullUp,
                debounce: Duration = .milliseconds(20), longPress: Duration = .seconds(1),
                consumer: String = "obscura") throws {
        self.name = name
        self.debounce = debounce
        self.longPress = longPress
        let micros = UInt32(debounce.components.seconds * 1_000_000 + debounce.components.attoseconds / 1_000_000_000_000)
        line = try GPIOLine.input(name, edges: .both, bias: bias, activeLow: activeLow,
                                  debounceMicroseconds: micros, consumer: consumer)
        isKernelDebounced = line.isKernelDebounced
        (events, continuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(64))
        let initial = (try? line.value()) ?? false
        let wakeup = try Wakeup()
        self.wakeup = wakeup
        let (line, continuation) = (line, continuation)
        let period = isKernelDebounced ? Duration.milliseconds(1) : debounce
        thread = try JoinableThread(name: "obscura-btn-\(name.line)") { [longPress] in
            Self.watch(line, initial: initial, period: period, longPress: longPress, wakeup: wakeup,
                       continuation: continuation)
        }
    }

    /// Reads the line until woken: the button's thread. Holds nothing of the button.
    private static func watch(_ line: GPIOLine, initial: Bool, period: Duration, longPress: Duration, wakeup: Wakeup,
                              continuation: AsyncStream<ButtonEvent>.Continuation) {
        // With the kernel debouncing, edges are already clean: a short
        // software period only merges the pair an edge and a read can make.
        var debouncer = Debouncer(period: period, initialLevel: initial)
        let longNs = UInt64(longPress.components.seconds) * 1_000_000_000 + UInt64(longPress.components.attoseconds / 1_000_000_000)
        var pressedAt: UInt64?
        var longReported = false
        func report(_ t: Debouncer.Transition) {
            if t.level {
                pressedAt = t.timestampNanoseconds
                longReported = false
                continuation.yield(.pressed(t.timestampNanoseconds))
            } else if let p = pressedAt {
                let held = Duration.nanoseconds(Int64(t.timestampNanoseconds &- p))
                continuation.yield(.released(t.timestampNanoseconds, held: held))
                if !longReported { continuation.yield(.shortPress) }
                pressedAt = nil
            }
        }
        while !wakeup.isSignalled, let fd = line.descriptor {
            let now = Syscalls.monotonicNanoseconds()
            var wait: UInt64?
            if let d = debouncer.deadline { wait = d > now ? d - now : 0 }
            if let p = pressedAt, !longReported { wait = min(wait ?? .max, p + longNs > now ? p + longNs - now : 0) }
            let edges: [GPIOEdge]
            do {
                let readable = try wakeup.wait(for: fd, timeout: wait.map { .nanoseconds(Int64($0)) })
                if wakeup.isSignalled { break }
                edges = readable ? try line.readEdges() : []
            } catch {
                break
            }
            for e in edges {
                if let t = debouncer.edge(e.kind == .rising, at: e.timestampNanoseconds) { report(t) }
            }
            let later = Syscalls.monotonicNanoseconds()
            let observed = debouncer.deadline.map { later >= $0 } == true ? (try? line.value()) : nil
            if let t = debouncer.advance(to: later, observed: observed) { report(t) }
            if let p = pressedAt, !longReported, later >= p + longNs {
                longReported = true
                continuation.yield(.longPress)
            }
        }
        continuation.finish()
    }

    /// Stops watching (the thread is woken and joined) and releases the line.
    public func close() {
        guard !closed.exchange(true, ordering: .relaxed) else { return }
        wakeup.signal()
        thread.join()
        line.release()
    }

    deinit { close() }
}
