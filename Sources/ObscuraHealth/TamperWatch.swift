/// Tampering as a security camera knows it, judged against what this camera
/// usually sees (`SceneReference`): a lens covered (the scene's structure
/// gone, whatever the exposure and its noise), covered or sprayed over most
/// of it, out of focus or fogged, or the camera turned to another scene.
public enum TamperCondition: String, Sendable, CaseIterable, Codable {
    case covered
    case partlyCovered = "partly_covered"
    case defocused
    case redirected
}

/// The tampering watch's thresholds and hold times.
public struct TamperSettings: Sendable, Equatable {
    public var watched: Set<TamperCondition> = Set(TamperCondition.allCases)
    public var hold: Duration = .seconds(10)
    public var clearAfter: Duration = .seconds(2)
    /// Looks learned from before the reference is trusted (30 s at 5 a second).
    public var learningLooks = 150
    /// How much of a look goes into the short-term mean judged (the rest is
    /// the mean so far): a sensor's noise averages out, a change shows
    /// within a second.
    public var shortWeight = 0.5
    /// Covered: the layout's likeness under this, and the contrast under this share of the usual.
    public var coveredLayout = 0.5
    public var coveredContrast = 0.35
    /// Redirected: the layout's likeness under this, the contrast not lost.
    public var redirectedLayout = 0.3
    /// Partly covered or sprayed: at least this share of the structured cells lost their contrast.
    public var lostShare = 0.65
    /// Defocused: the layout kept (at least this), the fine detail under this share of the usual.
    public var defocusedLayout = 0.45
    public var defocusedSharpness = 0.5

    public init() {}
}

/// Follows looks at a camera's picture for tampering. Not thread-safe: one
/// owner feeds it looks in order. The reference learns only from looks in
/// which nothing is amiss, so a tampered picture never becomes the usual.
public struct TamperWatch: Sendable {
    public struct Change: Sendable, Equatable {
        public let condition: TamperCondition
        public let declared: Bool
        public let at: UInt64
        /// Declared: when it began; cleared: how long it lasted (ns).
        public let since: UInt64
        public let comparison: SceneComparison
    }

    public let settings: TamperSettings
    public private(set) var reference: SceneReference
    private var short: [Double] = []
    private var shortFine: [Double] = []
    /// The previous look's points, and the sensor's noise measured from
    /// look to look (a point's variance).
    private var previous: [UInt8] = []
    private var noiseVariance = 0.0
    private var noiseLooks = 0
    private var structure: SceneStructure?
    /// Looks learned since `structure` was made from the reference.
    private var learnedSinceStructure = 0
    private var scratch: [Double] = []
    private var trackers: [TamperCondition: ConditionTracker] = [:]
    public private(set) var last: SceneComparison?

    /// Learned looks after which the reference's structure is made again (5 s).
    static let structureEvery = 25

    /// `reference`: one saved from an earlier run of this camera, used if it
    /// fits the grid (otherwise the scene is learned afresh).
    public init(settings: TamperSettings, columns: Int, rows: Int, reference: SceneReference? = nil) {
        self.settings = settings
        if let reference, reference.columns == columns, reference.rows == rows, reference.isWhole {
            self.reference = reference
        } else {
            self.reference = SceneReference(columns: columns, rows: rows)
        }
        for c in settings.watched { trackers[c] = ConditionTracker(hold: settings.hold, clearAfter: settings.clearAfter) }
    }

    /// The conditions declared now.
    public var declared: Set<TamperCondition> { Set(trackers.filter { $0.value.isDeclared }.keys) }
    /// Whether the reference has learned enough to judge by.
    public var isLearned: Bool { reference.looks >= settings.learningLooks }
    /// Whether looks are judged: the reference learned, and its scene
    /// steady enough to judge against (nil: not yet known).
    public var isJudging: Bool? { isLearned ? structure?.isSteady : false }

    /// A look: the grid's points and fine detail at `time`. `dark`: the
    /// picture is dark (its own condition); nothing is judged or learned.
    public mutating func look(points: [UInt8], fine: [UInt16], at time: UInt64, dark: Bool) -> [Change] {
        guard points.count == reference.points.count, fine.count == points.count else { return [] }
        follow(points: points, fine: fine)
        guard !dark else { return [] }
        guard isLearned else {
            learn()
            return []
        }
        if structure == nil || learnedSinceStructure >= Self.structureEvery {
            structure = reference.structure()
            learnedSinceStructure = 0
        }
        // The short-term mean keeps w / (2 - w) of a look's noise variance.
        guard let structure, structure.isSteady else {
            // (Nothing lasting to judge against: learned on, so that a scene that settles is judged.)
            learn()
            return []
        }
        let w = settings.shortWeight
        let c = structure.compare(points: short, fine: shortFine, noise: noiseVariance * w / (2 - w), scratch: &scratch)
        last = c
        let covered = c.layout < settings.coveredLayout && c.contrast < settings.coveredContrast
        let seen: [TamperCondition: Bool] = [
            .covered: covered,
            .redirected: c.layout < settings.redirectedLayout && !covered,
            // (A scene replaced loses its old cells' contrast too: that is redirected, not sprayed.)
            .partlyCovered: !covered && c.layout >= settings.redirectedLayout && c.lostShare >= settings.lostShare,
            .defocused: c.layout >= settings.defocusedLayout && c.sharpness < settings.defocusedSharpness,
        ]
        var changes: [Change] = []
        for condition in TamperCondition.allCases {
            guard let present = seen[condition], let change = trackers[condition]?.observe(present, at: time) else { continue }
            switch change {
            case .declared(let since): changes.append(Change(condition: condition, declared: true, at: time, since: since, comparison: c))
            case .cleared(let after): changes.append(Change(condition: condition, declared: false, at: time, since: after, comparison: c))
            }
        }
        // Only a picture with nothing amiss (seen or declared) is the usual.
        if !seen.contains(where: { settings.watched.contains($0.key) && $0.value }) && declared.isEmpty {
            learn()
        }
        return changes
    }

    /// The short-term mean judged: each look weighs `shortWeight`, so a
    /// sensor's noise averages out and a change shows within a second.
    private mutating func follow(points: [UInt8], fine: [UInt16]) {
        guard short.count == points.count else {
            short = points.map(Double.init)
            shortFine = fine.map(Double.init)
            previous = points
            return
        }
        measureNoise(points)
        let w = settings.shortWeight
        for i in 0..<points.count {
            short[i] += (Double(points[i]) - short[i]) * w
            shortFine[i] += (Double(fine[i]) - shortFine[i]) * w
        }
    }

    /// The noise: from the median squared change of a point since the last
    /// look (the median: people passing move a few points, not most; for
    /// a normal noise of variance v the median of that is 0.455 × 2v). A
    /// sudden change of the whole picture raises it at most fourfold a look,
    /// so one look's change is not taken for noise.
    private mutating func measureNoise(_ points: [UInt8]) {
        if scratch.count < points.count { scratch = [Double](repeating: 0, count: points.count) }
        let median = scratch.withUnsafeMutableBufferPointer { s in
            for i in 0..<points.count {
                let d = Double(points[i]) - Double(previous[i])
                s[i] = d * d
            }
            return Selection.nth(points.count / 2, of: UnsafeMutableBufferPointer(rebasing: s[0..<points.count]))
        }
        previous = points
        // (The first looks after a start are taken as they come.)
        noiseLooks += 1
        let measured = median / (2 * 0.455)
        let seen = noiseLooks <= 3 ? measured : min(measured, 4 * noiseVariance + 1)
        noiseVariance += (seen - noiseVariance) * (noiseLooks <= 3 ? 1 / Double(noiseLooks) : 0.3)
    }

    private mutating func learn() {
        reference.learn(points: short, fine: shortFine)
        learnedSinceStructure += 1
    }
}
