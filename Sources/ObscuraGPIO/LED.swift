import Foundation
import Synchronization

/// What an LED shows.
public enum LEDPattern: Sendable, Equatable, CustomStringConvertible {
    case off
    case on
    /// On for `on`, off for `off`, repeating.
    case blink(on: Duration, off: Duration)

    /// Recording: steady.
    public static let recording = LEDPattern.on
    /// Something is wrong: fast blink.
    public static let error = LEDPattern.blink(on: .milliseconds(100), off: .milliseconds(100))
    /// Flash in auto mode: slow blink.
    public static let flashAuto = LEDPattern.blink(on: .milliseconds(500), off: .milliseconds(500))

    public var description: String {
        switch self {
        case .off: "off"
        case .on: "on"
        case .blink(let on, let off): "blink \(on.milliseconds) ms on / \(off.milliseconds) ms off"
        }
    }
}

extension Duration {
    var milliseconds: Int64 { components.seconds * 1000 + components.attoseconds / 1_000_000_000_000_000 }
}

/// An LED on a GPIO output line. Patterns run on a thread of their own;
/// `close()` (or deinit) turns it off and releases the line.
public final class LED: @unchecked Sendable {
    public let name: GPIOLineName
    private let line: GPIOLine
    private let state = Mutex<(pattern: LEDPattern, generation: Int, closed: Bool)>((.off, 0, false))
    private let condition = NSCondition()
    private var thread: Thread?

    public init(_ name: GPIOLineName, activeLow: Bool = false, consumer: String = "obscura") throws {
        self.name = name
        line = try GPIOLine.output(name, activeLow: activeLow, initialValue: false, consumer: consumer)
        let thread = Thread { [self] in run() }
        thread.name = "obscura.led.\(name.line)"
        self.thread = thread
        thread.start()
    }

    public var pattern: LEDPattern { state.withLock { $0.pattern } }

    public func show(_ pattern: LEDPattern) {
        let changed = state.withLock { s -> Bool in
            guard s.pattern != pattern, !s.closed else { return false }
            s.pattern = pattern
            s.generation += 1
            return true
        }
        if changed {
            condition.lock()
            condition.broadcast()
            condition.unlock()
        }
    }

    private func run() {
        var lit = false
        while true {
            let (pattern, generation, closed) = state.withLock { $0 }
            if closed { break }
            var sleep: Duration?
            switch pattern {
            case .off: lit = false
            case .on: lit = true
            case .blink(let on, let off):
                lit.toggle()
                sleep = lit ? on : off
            }
            try? line.set(lit)
            condition.lock()
            while state.withLock({ $0.generation == generation && !$0.closed }) {
                if let sleep {
                    let until = Date().addingTimeInterval(Double(sleep.milliseconds) / 1000)
                    if !condition.wait(until: until) { break }
                } else {
                    condition.wait()
                }
            }
            condition.unlock()
        }
        try? line.set(false)
    }

    /// Turns the LED off and releases its line.
    public func close() {
        let first = state.withLock { s -> Bool in
            defer { s.closed = true }
            return !s.closed
        }
        guard first else { return }
        condition.lock()
        condition.broadcast()
        condition.unlock()
        while let t = thread, !t.isFinished { usleep(5_000) }
        line.release()
    }

    deinit { close() }
}
