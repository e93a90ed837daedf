/// How many frames a bounded software encoder may hold, from the intervals
/// frames really come at. What it holds is lost when the power goes, so it
/// may hold frames worth at most `budget` seconds (`maxDelay`): at a steady
/// 30 fps and 0.1 s, three, which lets x264 run frame threads; with frames a
/// second apart (a starved or slowed board), none, and it works on slices
/// of each frame instead (`DelayBound`).
///
/// Fed each frame's camera time. Fewer frames are held at once when the
/// last two frames both came far apart, so that what is held is half again
/// over the budget (one late frame, a camera's skip, is not enough): a board
/// that starves holds its old count for two of its slow frames at most. More
/// are held only when the median of the last `window` intervals and the last
/// two allow them, and fewer when that median says so; either no sooner
/// than `settle` of camera time after the last change, so a rate that
/// hovers at a step does not flap. Time is the frames' own; nothing here
/// waits.
public struct HeldFramesGovernor: Sendable {
    public static let window = 15
    public static let settle: UInt64 = 2_000_000_000
    /// How far over the budget the held frames must be, at the last two
    /// frames' interval, to be cut at once.
    public static let overBudget = 1.5
    /// How far over the budget the held frames may be, by the window's
    /// median, before a change at a keyframe makes them fewer.
    public static let keepWithin = 1.15
    /// Seconds of media the encoder may hold.
    public let budget: Double
    private var intervals: [UInt64] = []
    private var oldest = 0
    private var last: UInt64?
    private var changedAt: UInt64?

    public init(budget: Double) { self.budget = budget }

    /// A frame taken at `nanoseconds` (the camera's clock).
    public mutating func frame(at nanoseconds: UInt64) {
        defer { last = nanoseconds }
        guard let last, nanoseconds > last else { return }
        if intervals.count < Self.window {
            intervals.append(nanoseconds - last)
        } else {
            intervals[oldest] = nanoseconds - last
            oldest = (oldest + 1) % Self.window
        }
    }

    /// The interval frames come at (seconds): the median of the last
    /// `window`; nil until that many were seen.
    public var interval: Double? {
        guard intervals.count == Self.window else { return nil }
        return Double(intervals.sorted()[Self.window / 2]) / 1e9
    }

    /// The interval of the last two frames (the longer of them can be a
    /// skip; the shorter says how frames come now); nil before two.
    public var recentInterval: Double? {
        guard intervals.count >= 2 else { return nil }
        let newest = (oldest + intervals.count - 1) % intervals.count
        let before = (newest + intervals.count - 1) % intervals.count
        return Double(min(intervals[newest], intervals[before])) / 1e9
    }

    /// Settings whose bound is worked out from the measured interval, when
    /// they thread the encoder otherwise than `current` (the running
    /// encoder's `boundParameters`, holding `holding` frames); nil: keep the
    /// encoder as it is. Fewer frames well over the budget come at once (a
    /// keyframe is made for them); any other change only at `keyframe`, a
    /// frame the stream makes a keyframe anyway, so the keyframes keep their
    /// interval.
    public mutating func retune(_ settings: VideoEncoderSettings, holding: Int, current: String?,
                                at nanoseconds: UInt64, keyframe: Bool) -> VideoEncoderSettings? {
        guard settings.maxDelay != nil else { return nil }
        var wanted = settings
        // Fewer, at once, when what it holds is well over the budget at the
        // last two frames' interval (a camera's jitter, 45 to 75 ms at a
        // nominal 15 fps, is not: it would change the encoder every `settle`).
        if let recent = recentInterval, Double(holding) * recent > budget * Self.overBudget {
            wanted.frameInterval = recent
            if let held = wanted.maxHeldFrames, held < holding, wanted.boundParameters != current {
                changedAt = nanoseconds
                return wanted
            }
        }
        // Otherwise as the window says, once settled, at a keyframe. The last
        // two frames may hold back more frames, never make fewer: two late
        // frames at a steady 30 fps (34 ms and more, on a loaded machine)
        // would make it two, and three again `settle` later.
        guard keyframe, let interval else { return nil }
        if let changedAt, nanoseconds < changedAt &+ Self.settle { return nil }
        wanted.frameInterval = interval
        guard let byWindow = wanted.maxHeldFrames else { return nil }
        if byWindow > holding, let recent = recentInterval, recent > interval {
            wanted.frameInterval = recent
            if let allowed = wanted.maxHeldFrames, allowed < holding { return nil }
        }
        // Fewer only once the frames held are clearly over the budget: a
        // camera a few per cent slow at 30 fps keeps its three.
        if byWindow < holding, Double(holding) * interval <= budget * Self.keepWithin { return nil }
        guard wanted.boundParameters != current else { return nil }
        changedAt = nanoseconds
        return wanted
    }

    /// The encoder was made or changed at `nanoseconds`: the next change
    /// waits `settle` from there.
    public mutating func changed(at nanoseconds: UInt64) { changedAt = nanoseconds }
}
