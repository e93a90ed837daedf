#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import ObscuraMedia

/// What the kiosk listens to its microphone for: digital silence or a level
/// stuck at one value (a dead or unplugged microphone, a muted mixer), and
/// sound clipped at full scale (a microphone overdriven, a gain set too high).
public enum SoundCondition: String, Sendable, CaseIterable, Codable {
    case silent
    case clipping
}

/// The thresholds and hold times, from the configuration's [health] table.
public struct SoundHealthSettings: Sendable, Equatable {
    /// Silent: over a whole window the samples swing (half their
    /// peak-to-peak) at most this far, in dBFS. −90 dBFS is about one step
    /// of 16 bits: digital silence, or one value held.
    public var silenceDBFS = -90.0
    /// Clipping: at least this share of a window's samples within 0.1 dB of
    /// full scale.
    public var clipShare = 0.001
    public var watched: Set<SoundCondition> = Set(SoundCondition.allCases)
    public var hold: Duration = .seconds(10)
    public var clearAfter: Duration = .seconds(2)
    /// The stretch of sound each judgement is made on.
    public var window: Duration = .milliseconds(500)

    public init() {}

    /// A sample this far from zero or further counts as clipped (0.1 dB under full scale).
    public static let clipLevel = Int32(32767 * pow(10.0, -0.1 / 20))
}

/// One buffer of sound summed up where it was captured: all the sound
/// watch keeps of it.
public struct SoundSample: Sendable, Equatable {
    /// Its first sample's time and its length (ns, the capture clock).
    public let time: UInt64
    public let duration: UInt64
    public let minimum: Int16
    public let maximum: Int16
    /// Samples within 0.1 dB of full scale, and all samples (every channel).
    public let clipped: Int
    public let count: Int

    public init(time: UInt64, duration: UInt64, minimum: Int16, maximum: Int16, clipped: Int, count: Int) {
        (self.time, self.duration, self.minimum, self.maximum, self.clipped, self.count) = (time, duration, minimum, maximum, clipped, count)
    }

    /// `buffer` summed up; nil for an empty one.
    public init?(_ buffer: AudioBuffer) {
        guard !buffer.samples.isEmpty, buffer.format.sampleRate > 0 else { return nil }
        // A plain loop over a pointer: it runs for every sample on the
        // capture thread, and an unoptimised build pays per generic call.
        var low = Int16.max, high = Int16.min, clipped = 0
        let clip = SoundHealthSettings.clipLevel
        buffer.samples.withUnsafeBufferPointer { samples in
            var i = 0
            while i < samples.count {
                let s = samples[i]
                if s < low { low = s }
                if s > high { high = s }
                let v = Int32(truncatingIfNeeded: s)
                if v >= clip || -v >= clip { clipped &+= 1 }
                i &+= 1
            }
        }
        self.init(time: buffer.timestampNanoseconds,
                  duration: UInt64(buffer.frames) * 1_000_000_000 / UInt64(buffer.format.sampleRate),
                  minimum: low, maximum: high, clipped: clipped, count: buffer.samples.count)
    }
}

/// What a window of sound measured.
public struct SoundMeasure: Sendable, Equatable {
    /// The loudest sample, in dBFS (−inf: all zero).
    public let peakDBFS: Double
    /// Half the samples' peak-to-peak, in dBFS (−inf: one value held).
    public let swingDBFS: Double
    /// The share of samples within 0.1 dB of full scale.
    public let clippedShare: Double

    static func dBFS(_ amplitude: Double) -> Double { amplitude > 0 ? 20 * log10(amplitude / 32768) : -.infinity }
}

/// Follows a microphone's sound, window by window, for the sound
/// conditions. Not thread-safe: one owner feeds it samples in order.
public struct SoundHealth: Sendable {
    public struct Change: Sendable, Equatable {
        public let condition: SoundCondition
        public let declared: Bool
        /// The capture time the change was decided at (ns).
        public let at: UInt64
        /// Declared: when the condition began; cleared: how long it lasted (ns).
        public let since: UInt64
        public let measure: SoundMeasure
    }

    private struct Window {
        var start: UInt64
        var end: UInt64
        var minimum = Int16.max, maximum = Int16.min
        var clipped = 0, count = 0
    }

    public let settings: SoundHealthSettings
    private var trackers: [SoundCondition: ConditionTracker] = [:]
    private var window: Window?
    public private(set) var last: SoundMeasure?

    public init(settings: SoundHealthSettings) {
        self.settings = settings
        for c in settings.watched { trackers[c] = ConditionTracker(hold: settings.hold, clearAfter: settings.clearAfter) }
    }

    /// The conditions declared now.
    public var declared: Set<SoundCondition> { Set(trackers.filter { $0.value.isDeclared }.keys) }

    /// `sample` added to the current window; the changes decided when it
    /// completes one.
    public mutating func hear(_ sample: SoundSample) -> [Change] {
        var w = window ?? Window(start: sample.time, end: sample.time)
        if sample.time < w.start { w = Window(start: sample.time, end: sample.time) }  // the capture started again
        w.minimum = min(w.minimum, sample.minimum)
        w.maximum = max(w.maximum, sample.maximum)
        w.clipped += sample.clipped
        w.count += sample.count
        w.end = sample.time &+ sample.duration
        guard w.end &- w.start >= ConditionTracker.nanoseconds(settings.window) else {
            window = w
            return []
        }
        window = nil
        return judge(w)
    }

    private mutating func judge(_ w: Window) -> [Change] {
        let peak = max(abs(Double(w.minimum)), abs(Double(w.maximum)))
        let measure = SoundMeasure(peakDBFS: SoundMeasure.dBFS(peak),
                                   swingDBFS: SoundMeasure.dBFS((Double(w.maximum) - Double(w.minimum)) / 2),
                                   clippedShare: Double(w.clipped) / Double(max(1, w.count)))
        last = measure
        var changes: [Change] = []
        for condition in SoundCondition.allCases {
            let seen = switch condition {
            case .silent: measure.swingDBFS <= settings.silenceDBFS
            case .clipping: measure.clippedShare >= settings.clipShare
            }
            switch trackers[condition]?.observe(seen, at: w.end) {
            case .declared(let since)?: changes.append(Change(condition: condition, declared: true, at: w.end, since: since, measure: measure))
            case .cleared(let after)?: changes.append(Change(condition: condition, declared: false, at: w.end, since: after, measure: measure))
            case nil: break
            }
        }
        return changes
    }
}

/// Takes the sound watch's samples where the sound is captured (one pass
/// over each buffer, nothing kept of it) and hands them to the watch's own
/// thread through `samples`; a watch that falls behind loses the oldest.
public final class SoundSampler: AudioReceiver, Sendable {
    public let samples: AsyncStream<SoundSample>
    private let continuation: AsyncStream<SoundSample>.Continuation

    public init(kept: Int = 64) {
        (samples, continuation) = AsyncStream.makeStream(of: SoundSample.self, bufferingPolicy: .bufferingNewest(kept))
    }

    public func receive(_ buffer: AudioBuffer) {
        if let sample = SoundSample(buffer) { continuation.yield(sample) }
    }

    /// No more samples: the session stopped.
    public func end() { continuation.finish() }
}
