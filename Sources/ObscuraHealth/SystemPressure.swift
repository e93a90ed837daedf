#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ObscuraSystem

/// How hard the board is pressed, as AVFoundation names it
/// (`AVCaptureDevice.SystemPressureState.Level`): nominal, fair, serious,
/// critical. The recording steps down before the board does it for us.
public enum PressureLevel: Int, Sendable, CaseIterable, Comparable, Codable, CustomStringConvertible {
    case nominal, fair, serious, critical

    public static func < (a: Self, b: Self) -> Bool { a.rawValue < b.rawValue }
    public var description: String { name }
    public var name: String {
        switch self {
        case .nominal: "nominal"
        case .fair: "fair"
        case .serious: "serious"
        case .critical: "critical"
        }
    }
}

/// What the level is read from, and where each source becomes a level.
public struct PressureSettings: Sendable, Equatable {
    /// The temperature (°C) from which the level is fair, serious, critical.
    public var fairCelsius = 70.0
    public var seriousCelsius = 80.0
    public var criticalCelsius = 85.0
    /// A temperature must fall this far under a threshold before the level
    /// below it counts again.
    public var hysteresisCelsius = 5.0
    /// A lower level is taken only once every reading has allowed it for this long.
    public var settle: Duration = .seconds(30)
    /// Whether the recorder's backlog is a source (fair while it is behind).
    public var countsBacklog = true

    public init() {}
}

/// One reading of the sources (nil: a source not there, or unreadable).
public struct PressureReading: Sendable, Equatable {
    /// The hottest of the profile's thermal zones (°C).
    public var celsius: Double?
    /// The Raspberry Pi firmware's throttled flags (`get_throttled`).
    public var throttled: Int?
    /// Whether the recorder is behind its camera (its queue dropped frames
    /// and the pace stepped the rate down).
    public var encoderBehind = false

    public init(celsius: Double? = nil, throttled: Int? = nil, encoderBehind: Bool = false) {
        (self.celsius, self.throttled, self.encoderBehind) = (celsius, throttled, encoderBehind)
    }
}

/// Follows the readings to one level: up at once, down one level at a
/// time once the readings have allowed the lower level for `settle` (and
/// the temperature is `hysteresisCelsius` under the threshold), so a board
/// at the edge of a threshold does not step back and forth. Pure: readings
/// and their times (ns on one monotonic clock) in, changes out.
public struct SystemPressure: Sendable {
    public struct Change: Sendable, Equatable {
        public let from: PressureLevel
        public let to: PressureLevel
        /// The source that decided it ("temperature 81.0 °C", "under-voltage").
        public let why: String

        public init(from: PressureLevel, to: PressureLevel, why: String) {
            (self.from, self.to, self.why) = (from, to, why)
        }
    }

    public let settings: PressureSettings
    public private(set) var level = PressureLevel.nominal
    /// Since when the readings have allowed a lower level.
    private var lowerSince: UInt64?

    public init(settings: PressureSettings) { self.settings = settings }

    /// The firmware's bits now (not the "occurred" ones) and the level each means.
    public static let throttledLevels: [(bit: Int, name: String, level: PressureLevel)] = [
        (0, "under-voltage", .serious), (2, "throttled", .serious),
        (1, "arm frequency capped", .fair), (3, "soft temperature limit", .fair),
    ]

    /// The level `reading` calls for, and why; `margin` lowers the
    /// temperature thresholds (for stepping down).
    public func demanded(by reading: PressureReading, margin: Double = 0) -> (level: PressureLevel, why: String) {
        var found: (level: PressureLevel, why: String) = (.nominal, "")
        func consider(_ level: PressureLevel, _ why: String) { if level > found.level { found = (level, why) } }
        if let c = reading.celsius {
            let said = String(printf: "temperature %.1f °C", c)
            if c >= settings.criticalCelsius - margin { consider(.critical, said) }
            else if c >= settings.seriousCelsius - margin { consider(.serious, said) }
            else if c >= settings.fairCelsius - margin { consider(.fair, said) }
        }
        if let flags = reading.throttled {
            for flag in Self.throttledLevels where flags & (1 << flag.bit) != 0 { consider(flag.level, flag.name) }
            // Under-voltage while throttled: the board is about to fail.
            if flags & 0b101 == 0b101 { consider(.critical, "under-voltage and throttled") }
        }
        if reading.encoderBehind, settings.countsBacklog { consider(.fair, "the encoder behind its camera") }
        return found
    }

    /// One reading at `time`; the change it makes, if any.
    public mutating func read(_ reading: PressureReading, at time: UInt64) -> Change? {
        let now = demanded(by: reading)
        if now.level > level {
            defer { level = now.level; lowerSince = nil }
            return Change(from: level, to: now.level, why: now.why)
        }
        // Lower only when even the thresholds less the hysteresis allow it.
        let strict = demanded(by: reading, margin: settings.hysteresisCelsius)
        guard strict.level < level else {
            lowerSince = nil
            return nil
        }
        let since = lowerSince ?? time
        lowerSince = since
        let settle = UInt64(max(0, settings.settle.components.seconds)) * 1_000_000_000
            + UInt64(max(0, settings.settle.components.attoseconds) / 1_000_000_000)
        guard time >= since, time - since >= settle else { return nil }
        let to = PressureLevel(rawValue: level.rawValue - 1) ?? .nominal
        defer { level = to; lowerSince = nil }
        return Change(from: level, to: to, why: strict.level == .nominal ? "back under every threshold" : strict.why)
    }
}
