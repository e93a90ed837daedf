import ObscuraCapture
import ObscuraRecording

/// The pace governor at work on one recording: fed the recording's totals
/// once per window (a second or so), it steps the rate down while the
/// recorder drops frames and back up when it keeps up. A camera with a
/// frame-rate control is asked for the new rate; one without (vimc, many USB
/// cameras) keeps its own, and the recording leaves frames out evenly
/// instead (`MovieFileOutput.maxFrameRate`). Used by the service and by
/// `obscura record`.
public struct RecordingPace: Sendable {
    private var governor: PaceGovernor
    /// Whether the camera itself is slowed (else frames are left out).
    public let cameraControlled: Bool
    private var seen: (frames: Int, dropped: Int)?
    /// The most the system's pressure allows (nil: no cap); the rate used
    /// is the lower of it and the governor's.
    public private(set) var ceiling: Double?

    public init(device: CaptureDevice, nominal: Double) {
        cameraControlled = device.isFrameDurationControlSupported
        governor = PaceGovernor(nominal: nominal, lowest: cameraControlled
                                ? max(1, device.activeFrameRateRange?.lowerBound ?? 1) : 1)
    }

    public var rate: Double { min(governor.rate, ceiling ?? governor.rate) }
    /// Whether the recorder's own pace has stepped the rate down (it is behind).
    public var behind: Bool { governor.steppedDown }
    public var nominal: Double { governor.nominal }

    /// A step taken, and what to say of it.
    public enum Step: Sendable, Equatable {
        case down(String)
        case up(String)
    }

    /// Forgets the last window (a new file, or no recording); the next
    /// windows are the new file's start-up, unjudged.
    public mutating func restartWindow() {
        seen = nil
        governor.startWarmUp()
    }

    /// One window: the recording's totals so far. A step is applied to the
    /// camera or the movie output before it is returned; a camera that
    /// refuses the rate throws (naming the call), and nothing changes.
    public mutating func follow(frames: Int, dropped: Int, device: CaptureDevice, movie: MovieFileOutput) throws -> Step? {
        let now = (frames: frames, dropped: dropped)
        defer { seen = now }
        guard let before = seen, now.frames >= before.frames, now.dropped >= before.dropped else { return nil }
        var next = governor
        guard let step = next.window(recorded: now.frames - before.frames, dropped: now.dropped - before.dropped) else {
            governor = next
            return nil
        }
        try apply(min(next.rate, ceiling ?? next.rate), device: device, movie: movie)
        let who = cameraControlled ? "the camera steps"
            : "the recording steps (frames left out evenly: the camera has no frame-rate control)"
        governor = next
        switch step {
        case .down(let from, let to, let dropped, let offered):
            return .down("the recorder is behind its camera (\(dropped) of \(offered) frames dropped): \(who) down from \(Self.fps(from)) to \(Self.fps(to)) fps")
        case .up(let from, let to):
            return .up("the recorder keeps up: \(who) up from \(Self.fps(from)) to \(Self.fps(to)) fps (configured \(Self.fps(next.nominal)))")
        }
    }

    /// Caps the rate at `ceiling` (nil: no cap), applied at once; a camera
    /// that refuses the rate throws (naming the call), and nothing changes.
    public mutating func cap(_ ceiling: Double?, device: CaptureDevice, movie: MovieFileOutput) throws {
        let lowest = governor.lowest
        let capped = ceiling.map { max(lowest, min($0, governor.nominal)) }
        try apply(min(governor.rate, capped ?? governor.rate), device: device, movie: movie)
        self.ceiling = capped
    }

    /// `rate` asked of the camera, or kept to by the recording.
    private func apply(_ rate: Double, device: CaptureDevice, movie: MovieFileOutput) throws {
        if cameraControlled {
            try device.withConfigurationLock { try $0.setActiveVideoFrameRate(rate) }
        } else {
            movie.maxFrameRate = rate < governor.nominal ? rate : nil
        }
    }

    /// A rate as `%g` writes it (30, 22.5).
    static func fps(_ rate: Double) -> String {
        rate == rate.rounded() ? String(Int(rate)) : String(rate)
    }
}
