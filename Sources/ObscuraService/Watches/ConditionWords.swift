import Foundation
import ObscuraHealth

/// A picture or sound condition declared or cleared, in the words the
/// journal and the recording's marks say it (`RecorderService.conditionChanged`).
struct ConditionChange {
    /// "picture" or "sound".
    let watch: String
    let name: String
    /// The condition in words, for when it is declared.
    let described: String
    let declared: Bool
    /// When it was decided (ns, the frames' or the samples' clock).
    let at: UInt64
    /// Declared: when it began; cleared: how long it lasted (ns).
    let since: UInt64
    /// What was measured, in words.
    let seen: String
}

extension ConditionChange {
    init(_ change: PictureHealth.Change) {
        let m = change.measure
        self.init(watch: "picture", name: change.condition.rawValue, described: change.condition.described,
                  declared: change.declared, at: change.at, since: change.since,
                  seen: String(format: "mean luma %.1f, detail %.2f", m.mean, m.detail))
    }

    init(_ change: TamperWatch.Change) {
        let c = change.comparison
        self.init(watch: "picture", name: change.condition.rawValue, described: change.condition.described,
                  declared: change.declared, at: change.at, since: change.since,
                  seen: String(format: "against the scene learned: layout %.2f, contrast %.2f, lost %.0f %%, sharpness %.2f",
                               c.layout, c.contrast, c.lostShare * 100, c.sharpness))
    }

    init(_ change: SoundHealth.Change) {
        self.init(watch: "sound", name: change.condition.rawValue, described: change.condition.described,
                  declared: change.declared, at: change.at, since: change.since, seen: change.measure.heard)
    }
}

extension PictureCondition {
    var described: String {
        switch self {
        case .dark: "dark (the lens sees almost no light)"
        case .noDetail: "no_detail (the lens covered, or facing something flat)"
        case .frozen: "frozen (the same picture while the camera's timestamps run on)"
        }
    }
}

extension TamperCondition {
    var described: String {
        switch self {
        case .covered: "covered (the scene's structure gone from the whole picture)"
        case .partlyCovered: "partly_covered (most of the scene covered or sprayed over)"
        case .defocused: "defocused (the scene as usual, its fine detail lost: out of focus or fogged)"
        case .redirected: "redirected (another scene than the one learned: the camera moved)"
        }
    }
}

extension SoundCondition {
    var described: String {
        switch self {
        case .silent: "silent (the microphone gives digital silence or one level held)"
        case .clipping: "clipping (the sound hits full scale: too loud, or the gain too high)"
        }
    }
}

extension SoundMeasure {
    var heard: String {
        func db(_ v: Double) -> String { v.isFinite ? String(format: "%.1f dBFS", v) : "-inf dBFS" }
        return "peak \(db(peakDBFS)), swing \(db(swingDBFS)), clipped \(String(format: "%.2f", clippedShare * 100)) %"
    }
}
