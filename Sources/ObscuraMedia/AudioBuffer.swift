/// Audio as captured: signed 16-bit samples, channels interleaved.
public struct AudioFormat: Sendable, Equatable, CustomStringConvertible {
    public var sampleRate: Int
    public var channels: Int
    public init(sampleRate: Int = 48_000, channels: Int = 1) {
        self.sampleRate = sampleRate
        self.channels = channels
    }
    public var channelDescription: String { channels == 1 ? "mono" : channels == 2 ? "stereo" : "\(channels) channels" }
    public var description: String { "\(sampleRate) Hz, \(channelDescription), s16" }
}

/// One period of captured audio with the time of its first sample on
/// CLOCK_MONOTONIC — the clock of the camera's sensor timestamps — so audio
/// and video share a timeline.
public struct AudioBuffer: Sendable {
    public let format: AudioFormat
    /// Interleaved samples: `frames × channels`.
    public let samples: [Int16]
    /// When the first sample was captured, CLOCK_MONOTONIC nanoseconds.
    public let timestampNanoseconds: UInt64
    /// The first sample's number since capture started (gaps from overruns included).
    public let sampleIndex: Int64
    public var frames: Int { samples.count / max(1, format.channels) }

    public init(format: AudioFormat, samples: [Int16], timestampNanoseconds: UInt64, sampleIndex: Int64) {
        self.format = format
        self.samples = samples
        self.timestampNanoseconds = timestampNanoseconds
        self.sampleIndex = sampleIndex
    }
}

/// Something that takes captured audio: a movie file output, an audio data output.
public protocol AudioReceiver: AnyObject, Sendable {
    func receive(_ buffer: AudioBuffer)
    /// An audio input was connected (its format) or disconnected (nil).
    func audioConnected(_ format: AudioFormat?)
}

extension AudioReceiver {
    public func audioConnected(_ format: AudioFormat?) {}
}
