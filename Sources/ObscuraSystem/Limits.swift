/// The numbers a user gives Obscura — on the command line or in the
/// configuration — and what each may be: the one place where their ranges and
/// units are set, so `obscura record --bit-rate` and `recording.bit_rate`
/// cannot disagree. A check refuses what is not finite or is out of range, and
/// its error names the option or key, the value given and what is allowed.
public struct Limit<Value: Comparable & Sendable>: Sendable {
    public let range: ClosedRange<Value>
    public let unit: String
    /// What the smallest value means when it is special (e.g. 0: no limit).
    public let special: String?

    public init(_ range: ClosedRange<Value>, _ unit: String, special: String? = nil) {
        self.range = range
        self.unit = unit
        self.special = special
    }

    public var allowed: String {
        "\(Self.text(range.lowerBound))–\(Self.text(range.upperBound)) \(unit)" + (special.map { " (\(Self.text(range.lowerBound)): \($0))" } ?? "")
    }

    static func text(_ value: Value) -> String {
        if let d = value as? Double, d == d.rounded(), abs(d) < 1e15 { return String(Int(d)) }
        return "\(value)"
    }

    /// `value` when it is allowed; otherwise an error naming `name`.
    @discardableResult
    public func check(_ value: Value, _ name: String) throws(LimitError) -> Value {
        if let d = value as? Double, !d.isFinite {
            throw LimitError(name: name, given: "\(d)", allowed: allowed)
        }
        guard range.contains(value) else { throw LimitError(name: name, given: Self.text(value), allowed: allowed) }
        return value
    }

    /// Like `check`, for an optional value (nil passes).
    @discardableResult
    public func check(ifGiven value: Value?, _ name: String) throws(LimitError) -> Value? {
        guard let value else { return nil }
        let given: Value = value
        return try check(given, name)
    }
}

/// A number refused by a `Limit`.
public struct LimitError: Error, CustomStringConvertible, Equatable {
    public let name: String
    public let given: String
    public let allowed: String
    public init(name: String, given: String, allowed: String) {
        self.name = name
        self.given = given
        self.allowed = allowed
    }
    public var description: String { "\(name): \(given) is not allowed; allowed: \(allowed)" }
}

extension Duration {
    /// A duration from seconds that a `Limit` has checked (finite, in range);
    /// anything else traps in `Duration`'s own conversion, so check first.
    public static func checkedSeconds(_ seconds: Double) -> Duration {
        precondition(seconds.isFinite && abs(seconds) < 9e15, "unchecked seconds \(seconds)")
        return .nanoseconds(Int64((seconds * 1e9).rounded()))
    }
}

/// Every limit, by what it limits.
public enum Limits {
    // Time
    /// A recording's length (a week at most: a kiosk's recordings are segmented).
    public static let recordingSeconds = Limit(0.001...604_800.0, "seconds")
    /// A segment's length on the command line.
    public static let segmentSeconds = Limit(0.5...86_400.0, "seconds")
    /// A segment's length in the configuration (0: one file per recording).
    /// How often the service writes its metrics file.
    public static let metricsInterval = Limit(1...300, "seconds")
    /// Live viewers at once.
    public static let liveViewers = Limit(1...16, "viewers")
    public static let configSegmentSeconds = Limit(0...86_400, "seconds", special: "one file per recording")
    /// Video kept from before a trigger.
    public static let preRecordSeconds = Limit(0.001...600.0, "seconds")
    public static let configPreRecordSeconds = Limit(0.0...600.0, "seconds", special: "off")
    /// A wait before something starts (the pre-record trigger, a beep).
    public static let delaySeconds = Limit(0.0...86_400.0, "seconds")
    /// How long a camera runs before a photo.
    public static let warmUpSeconds = Limit(0.0...60.0, "seconds")
    /// How long a command runs (preview, stream, listen, watch).
    public static let runSeconds = Limit(0.001...604_800.0, "seconds")
    /// Seconds between a listen's level lines.
    public static let intervalSeconds = Limit(0.05...3600.0, "seconds")
    /// Seconds between beeps.
    public static let beepEverySeconds = Limit(0.1...3600.0, "seconds")
    /// How long an output line is held.
    public static let holdSeconds = Limit(0.0...3600.0, "seconds")
    /// A beep's length.
    public static let beepMilliseconds = Limit(1...10_000, "milliseconds")
    /// A button's debounce.
    public static let debounceMilliseconds = Limit(0...500, "milliseconds")
    /// How long a press is held to count as long.
    public static let longPressMilliseconds = Limit(100...10_000, "milliseconds")

    // Video
    public static let frameRate = Limit(1.0...240.0, "frames per second")
    public static let bitRate = Limit(100_000...100_000_000, "bits per second")
    public static let keyframeInterval = Limit(1...3600, "frames")
    /// A fragment's (or Matroska cluster's) length: what a power cut loses
    /// against how often the storage is written.
    public static let fragmentSeconds = Limit(0.1...10.0, "seconds")
    public static let encoderThreads = Limit(0...64, "threads", special: "the encoder decides")
    public static let frameCount = Limit(1...100_000_000, "frames")
    public static let jpegQuality = Limit(1...100, "")
    public static let exposureBias = Limit(-8.0...8.0, "EV")
    public static let exposureMilliseconds = Limit(0.01...60_000.0, "milliseconds")
    public static let iso = Limit(25.0...12_800.0, "ISO")
    public static let bitsPerSample = Limit(8...16, "bits")

    // Picture health
    /// Mean luma at or below which a picture is dark (0–255).
    public static let darkLuma = Limit(0.0...255.0, "luma (0–255)")
    /// Neighbouring grid points' mean difference at or below which a picture has no detail.
    public static let flatDetail = Limit(0.0...255.0, "luma (0–255)")
    /// How long a condition holds before it is declared, or is gone before it clears.
    public static let conditionSeconds = Limit(0.1...3600.0, "seconds")
    /// Frames a second the picture is looked at.
    public static let healthFramesPerSecond = Limit(0.1...240.0, "frames per second")
    /// The swing (dBFS) at or under which sound is silent.
    public static let silenceDBFS = Limit(-120.0 ... -20.0, "dBFS")
    /// The share of samples at full scale from which sound is clipping.
    public static let clipShare = Limit(0.000_01...0.5, "share of samples")
    /// A temperature threshold of the system's pressure.
    public static let pressureCelsius = Limit(20.0...150.0, "°C")
    /// How far a temperature falls under a threshold before the level below counts.
    public static let hysteresisCelsius = Limit(0.0...30.0, "°C")
    /// How long readings allow a lower pressure before it is taken.
    public static let settleSeconds = Limit(0.0...3600.0, "seconds")
    /// A test tone's level (above 0 dBFS it is clipped at full scale).
    public static let toneDBFS = Limit(-96.0...24.0, "dBFS")

    // Sound
    public static let sampleRate = Limit(8_000...192_000, "Hz")
    public static let channels = Limit(1...8, "channels")
    public static let audioBitRate = Limit(16_000...512_000, "bits per second")
    public static let toneHz = Limit(20.0...20_000.0, "Hz")

    // Storage
    /// A file's size limit.
    public static let fileBytes = Limit(1 << 16...1 << 50, "bytes")
    /// Free space kept on the disk (0: none kept).
    public static let freeSpaceBytes = Limit(0...1 << 50, "bytes", special: "none kept")
    public static let freeSpaceMegabytes = Limit(0...1_000_000, "MiB", special: "none kept")
    public static let quotaMegabytes = Limit(0...100_000_000, "MiB", special: "no quota")
    /// Memory for pre-recorded video.
    public static let bufferBytes = Limit(1 << 20...1 << 32, "bytes")

    /// A picture's width or height.
    public static let pictureSide = Limit(2...16_384, "pixels")
    /// Exposures in one bracket.
    public static let bracketShots = Limit(1...9, "exposures")

    // Other
    public static let count = Limit(1...1_000_000, "")
    public static let port = Limit(1...65_535, "")
    public static let kilobitsPerSecond = Limit(1...10_000_000, "kbit/s")
}
