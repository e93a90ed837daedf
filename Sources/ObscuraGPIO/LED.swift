import Foundation
import ObscuraSystem

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
    /// The recorder works but its picture needs a look (dark, covered, frozen): long on, short off.
    public static let attention = LEDPattern.blink(on: .milliseconds(900), off: .milliseconds(300))
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

/// An LED on a GPIO output line. Patterns run on a thread of its own, which
/// holds the line and the pattern but not the LED; `show` wakes it.
/// `close()` (or deinit) turns it off, joins the thread and releases the line.
public final class LED: Sendable {
    public let name: GPIOLineName
    private let line: GPIOLine
    private let state: Shared
    private let wakeup: Wakeup
    private let thread: JoinableThread

    /// What the LED's thread shows, and whether it should end.
    private final class Shared: Sendable {
        let state = Mutex<(pattern: LEDPattern, generation: Int, closed: Bool)>((.off, 0, false))
    }

    public init(_ name: GPIOLineName, activeLow: Bool = false, consumer: String = "obscura") throws {
        self.name = name
        let line = try GPIOLine.output(name, activeLow: activeLow, initialValue: false, consumer: consumer)
        let state = Shared(), wakeup = try Wakeup()
        self.line = line
        self.state = state
        self.wakeup = wakeup
        thread = try JoinableThread(name: "obscura-led-\(name.line)") { Self.run(line, state, wakeup) }
    }

    public var pattern: LEDPattern { state.state.withLock { $0.pattern } }

    public func show(_ pattern: LEDPattern) {
        let changed = state.state.withLock { s -> Bool in
            guard s.pattern != pattern, !s.closed else { return false }
            s.pattern = pattern
            s.generation += 1
            return true
        }
        if changed { wakeup.signal() }
    }

    /// Shows patterns until closed: the LED's thread.
    private static func run(_ line: GPIOLine, _ shared: Shared, _ wakeup: Wakeup) {
        var lit = false
        while true {
            wakeup.drain()
            let (pattern, _, closed) = shared.state.withLock { $0 }
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
            // Until the blink's next toggle, or until told of a change.
            guard (try? wakeup.wait(for: nil, timeout: sleep)) != nil else { break }
        }
        try? line.set(false)
    }

    /// Turns the LED off and releases its line.
    public func close() {
        let first = state.state.withLock { s -> Bool in
            defer { s.closed = true }
            return !s.closed
        }
        guard first else { return }
        wakeup.signal()
        thread.join()
        line.release()
    }

    deinit { close() }
}
