import ObscuraMedia

/// What the kiosk watches its picture for: a lens in the dark, one covered
/// or facing a wall (no detail), and a picture frozen on one frame while
/// the camera's timestamps run on.
public enum PictureCondition: String, Sendable, CaseIterable, Codable {
    case dark
    case noDetail = "no_detail"
    case frozen
}

/// The thresholds and hold times, from the configuration's [health] table.
public struct PictureHealthSettings: Sendable, Equatable {
    /// Dark: mean luma at or below this (0–255; video range's black is 16).
    public var darkLuma = 24.0
    /// No detail: neighbouring points differ by at most this on average (a
    /// cloth over the lens, a wall; a gradient of light across it is still
    /// no detail).
    public var flatDetail = 2.5
    /// Frozen: every point of the grid unchanged (at most this far) between
    /// frames whose timestamps advanced. 0: identical.
    public var frozenTolerance = 0
    /// Which conditions are watched (a camera whose picture is a still test
    /// pattern, like vimc's, is frozen by definition: its profile leaves
    /// `frozen` out).
    public var watched: Set<PictureCondition> = Set(PictureCondition.allCases)
    /// How long a condition holds before it is declared, and is gone before it clears.
    public var hold: Duration = .seconds(10)
    public var clearAfter: Duration = .seconds(2)
    /// The most frames a second looked at (the rest pass by untouched).
    public var framesPerSecond = 5.0
    public var grid = LumaGrid()
    /// The tampering conditions watched (judged against the scene learned,
    /// `TamperWatch`); empty: none, and no fine detail is sampled.
    public var tampering: Set<TamperCondition> = Set(TamperCondition.allCases)

    public init() {}

    /// The tampering watch's settings: these conditions, with this hold.
    public var tamper: TamperSettings {
        var t = TamperSettings()
        t.watched = tampering
        (t.hold, t.clearAfter) = (hold, clearAfter)
        return t
    }

    /// Every condition's name, the picture's then tampering's.
    public static let conditionNames = PictureCondition.allCases.map(\.rawValue) + TamperCondition.allCases.map(\.rawValue)

    /// Every condition watched, by name.
    public var watchedNames: [String] { (watched.map(\.rawValue) + tampering.map(\.rawValue)).sorted() }
}

/// Follows a camera's frames for the picture conditions. Not thread-safe:
/// one owner feeds it frames in order (the health output's thread).
public struct PictureHealth: Sendable {
    public struct Change: Sendable, Equatable {
        public let condition: PictureCondition
        public let declared: Bool
        /// The frame's sensor time the change was decided at (ns).
        public let at: UInt64
        /// Declared: when the condition began; cleared: how long it lasted (ns).
        public let since: UInt64
        public let measure: PictureMeasure
    }

    public let settings: PictureHealthSettings
    private var trackers: [PictureCondition: ConditionTracker] = [:]
    private var previous: (points: [UInt8], time: UInt64)?
    private var lastLooked: UInt64?
    /// Frames looked at (measured), and the last measure.
    public private(set) var looked = 0
    public private(set) var last: PictureMeasure?
    /// The last look's grid points.
    public private(set) var lastPoints: [UInt8]?

    public init(settings: PictureHealthSettings) {
        self.settings = settings
        for c in settings.watched { trackers[c] = ConditionTracker(hold: settings.hold, clearAfter: settings.clearAfter) }
    }

    /// The conditions declared now.
    public var declared: Set<PictureCondition> { Set(trackers.filter { $0.value.isDeclared }.keys) }

    /// Whether a frame at `time` is one to look at (at most
    /// `framesPerSecond`, spaced by the frames' own timestamps).
    public func wants(at time: UInt64) -> Bool {
        guard let lastLooked, settings.framesPerSecond > 0 else { return true }
        return time >= lastLooked && Double(time - lastLooked) >= 1e9 / settings.framesPerSecond * 0.9
    }

    /// Looks at `frame` if it is one to look at; the conditions declared or
    /// cleared by it.
    public mutating func look(at frame: VideoFrame) -> [Change] {
        let time = frame.timestampNanoseconds
        guard wants(at: time), let points = settings.grid.sample(frame) else { return [] }
        return look(points: points, at: time)
    }

    /// `points` (a grid's samples) seen at `time`.
    public mutating func look(points: [UInt8], at time: UInt64) -> [Change] {
        lastLooked = time
        looked += 1
        lastPoints = points
        let measure = PictureMeasure(points: points, columns: settings.grid.columns)
        last = measure
        var frozen: Bool?
        if let previous, time > previous.time, previous.points.count == points.count {
            frozen = Self.within(points, previous.points, settings.frozenTolerance)
        }
        previous = (points, time)
        var changes: [Change] = []
        for condition in PictureCondition.allCases {
            let seen: Bool? = switch condition {
            case .dark: measure.mean <= settings.darkLuma
            case .noDetail: measure.detail <= settings.flatDetail
            case .frozen: frozen
            }
            guard let seen, let change = trackers[condition]?.observe(seen, at: time) else { continue }
            switch change {
            case .declared(let since): changes.append(Change(condition: condition, declared: true, at: time, since: since, measure: measure))
            case .cleared(let after): changes.append(Change(condition: condition, declared: false, at: time, since: after, measure: measure))
            }
        }
        return changes
    }

    /// Whether every point of `a` is within `tolerance` of `b`'s (as long).
    static func within(_ a: [UInt8], _ b: [UInt8], _ tolerance: Int) -> Bool {
        a.withUnsafeBufferPointer { a in
            b.withUnsafeBufferPointer { b in
                var i = 0
                while i < a.count {
                    let d = Int(a[i]) &- Int(b[i])
                    if d > tolerance || -d > tolerance { return false }
                    i &+= 1
                }
                return true
            }
        }
    }
}
