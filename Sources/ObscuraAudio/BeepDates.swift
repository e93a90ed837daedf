/// What dates a frame by when it is heard: the playing device
/// (`AudioPlayback`), or a test's scripted clock.
public protocol PlaybackClock: AnyObject {
    /// Frames written so far.
    var written: Int64 { get }
    /// When frame `index` is heard (CLOCK_MONOTONIC ns); nil while that cannot be said.
    func timeOfFrame(_ index: Int64) -> UInt64?
}

extension AudioPlayback: PlaybackClock {}

/// Each beep's onset dated twice: once the device has it queued, and again
/// `again` frames of writing later, once it has been heard. The two agree
/// within a few milliseconds (the device's pointer moves in steps); when they
/// do not, the player was kept from the CPU between a pointer update and its
/// timestamp, and no date of that beep can be vouched for: it is said
/// undated ("beep N undated: …"), not printed with a wrong time.
public struct BeepDates {
    /// Frames written between a beep's two dates.
    public let again: Int64
    /// How far apart two dates of one beep may be.
    public var agreeNanoseconds: Int64 = 20_000_000
    private var pending: [(beep: Int, frame: Int64, first: UInt64?, writtenAt: Int64)] = []

    public init(again: Int64) { self.again = again }

    public mutating func add(beep: Int, frame: Int64) { pending.append((beep, frame, nil, 0)) }

    /// Lines for the beeps dated by now: "beep N at T" (T in CLOCK_MONOTONIC
    /// ns), or "beep N undated: …". `last`: the stream has been drained, so
    /// every beep still waiting is dated once more, or said undated.
    public mutating func date(_ player: some PlaybackClock, last: Bool = false) -> [String] {
        var lines: [String] = []
        var waiting: [(beep: Int, frame: Int64, first: UInt64?, writtenAt: Int64)] = []
        for var beep in pending {
            if beep.first == nil {
                beep.first = player.timeOfFrame(beep.frame)
                beep.writtenAt = player.written
                if !last { waiting.append(beep); continue }
            }
            guard let first = beep.first else {
                lines.append("beep \(beep.beep) undated: the stream never ran after it")
                continue
            }
            guard last || player.written - beep.writtenAt >= again else { waiting.append(beep); continue }
            let second = player.timeOfFrame(beep.frame)
            let apart = second.map { abs(Int64(bitPattern: $0 &- first)) }
            if let apart, apart <= agreeNanoseconds {
                lines.append("beep \(beep.beep) at \(first)")
            } else {
                let text = apart.map { "\($0 / 1_000_000) ms apart" } ?? "no second date"
                lines.append("beep \(beep.beep) undated: dated \(first), then \(second.map(String.init) ?? "not"): \(text)")
            }
        }
        pending = waiting
        return lines
    }
}
