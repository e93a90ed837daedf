/// Keeps a recording within what the board can encode: when the recorder
/// stays behind its camera (its queue drops frames, window after window) the
/// camera's frame rate steps down, and when it has kept up for a while it
/// steps back up towards the configured rate. AVFoundation's guidance under
/// system pressure is the same: lower `activeVideoMinFrameDuration` before
/// the system has to interrupt the session. Timestamps stay the sensor's: a
/// step changes how many frames come, not when they are said to come.
///
/// A recording's first windows are its start-up (the encoder's first frames,
/// the file's creation), not the board's pace: they are not judged. A step
/// down goes to what was kept up with, but never below half the rate in one
/// step: one bad window cannot take a recording from 30 to 5 fps, to creep
/// back a step every fifteen windows. (A 5 s demo once recorded 5 frames so.)
///
/// Pure logic, fed one window at a time (the service's housekeeping round)
/// with what the recording did in it; no clock of its own.
struct PaceGovernor: Sendable, Equatable {
    /// The configured frame rate, and the lowest the governor goes to.
    let nominal: Double
    let lowest: Double
    /// The rate asked of the camera now.
    private(set) var rate: Double
    /// Consecutive windows behind (dropping) and steady (no drop).
    private(set) var behindWindows = 0
    private(set) var steadyWindows = 0
    /// Windows of the recording's start still to pass unjudged.
    private(set) var warmUpLeft = Self.warmUpWindows

    /// More than this share of a window's frames dropped is "behind".
    static let behindShare = 0.1
    /// Windows behind in a row before stepping down, and steady ones before stepping up.
    static let windowsToStepDown = 2
    static let windowsToStepUp = 15
    /// A step down goes at least this far (and to what was kept up with);
    /// a step up goes back by the same factor.
    static let stepFactor = 0.75
    /// The deepest one step goes: to this share of the rate.
    static let deepestStep = 0.5
    /// A recording's first windows, not judged (its start-up).
    static let warmUpWindows = 2

    enum Step: Sendable, Equatable {
        case down(from: Double, to: Double, dropped: Int, of: Int)
        case up(from: Double, to: Double)
    }

    init(nominal: Double, lowest: Double) {
        self.nominal = nominal
        self.lowest = min(max(1, lowest), nominal)
        rate = nominal
    }

    /// Whether the rate is below the configured one.
    var steppedDown: Bool { rate < nominal }

    /// One window's figures: frames that went into the file and frames the
    /// recorder's queue dropped. Returns the step to take, if any. (How late
    /// frames reach the file is not a reason: the queue in front of the
    /// encoder is bounded in time and drops what would wait longer, and a
    /// lower rate does not make one frame's encoding or the storage's sync
    /// any faster.)
    mutating func window(recorded: Int, dropped: Int) -> Step? {
        let offered = recorded + dropped
        guard offered > 0 else { return nil }
        if warmUpLeft > 0 {
            warmUpLeft -= 1
            return nil
        }
        if Double(dropped) > Self.behindShare * Double(offered) {
            steadyWindows = 0
            behindWindows += 1
            guard behindWindows >= Self.windowsToStepDown, rate > lowest else { return nil }
            behindWindows = 0
            // What the recorder kept up with: at least one step down, at most to half.
            let keptUp = rate * Double(recorded) / Double(offered)
            let next = max(lowest, max(rate * Self.deepestStep, min(rate * Self.stepFactor, keptUp)).rounded(.down))
            guard next < rate else { return nil }
            defer { rate = next }
            return .down(from: rate, to: next, dropped: dropped, of: offered)
        }
        behindWindows = 0
        guard dropped == 0 else { return nil }
        steadyWindows += 1
        guard steadyWindows >= Self.windowsToStepUp, rate < nominal else { return nil }
        steadyWindows = 0
        let next = min(nominal, (rate / Self.stepFactor).rounded(.up))
        defer { rate = next }
        return .up(from: rate, to: next)
    }

    /// A new file starts with its start-up unjudged, from the rate the
    /// last one left.
    mutating func startWarmUp() {
        warmUpLeft = Self.warmUpWindows
        behindWindows = 0
        steadyWindows = 0
    }

    /// A reopened camera starts from the configured rate.
    mutating func reset() {
        rate = nominal
        startWarmUp()
    }
}
