/// The recorder's stages that are down (the camera, the encoder), since
/// when, and whether a recording waits for them to go on. Time is passed
/// in: the gaps are what the caller's clock measured.
struct StageOutages: Sendable {
    typealias Instant = ContinuousClock.Instant

    /// Since when the camera has delivered nothing (interrupted or lost).
    private(set) var cameraSince: Instant?
    /// Since when the encoder failed mid-recording, until a new file has
    /// packets: meanwhile a new recording is tried every half second.
    private(set) var encoderSince: Instant?
    /// A recording the camera's loss ended: it goes on when the camera is back.
    var resumeRecording = false
    /// The next try of a recording while the encoder is down.
    var encoderRetry: Task<Void, Never>?

    var cameraDown: Bool { cameraSince != nil }
    var encoderDown: Bool { encoderSince != nil }

    mutating func cameraLost(at now: Instant) {
        if cameraSince == nil { cameraSince = now }
    }

    /// The camera delivers again: the time it had none (0 when it was not
    /// known to be down).
    mutating func cameraBack(at now: Instant) -> Duration {
        defer { cameraSince = nil }
        return cameraSince.map { now - $0 } ?? .zero
    }

    mutating func encoderFailed(at now: Instant) {
        if encoderSince == nil { encoderSince = now }
    }

    /// Packets flow again: the time the encoder left unrecorded.
    mutating func encoderBack(at now: Instant) -> Duration {
        defer { encoderSince = nil }
        return encoderSince.map { now - $0 } ?? .zero
    }

    /// A press or `ctl record stop` while a recording waits on a stage: it
    /// will not go on. Returns whether one was waiting (and whether it was
    /// the encoder's, whose retries must stop).
    mutating func cancelWaiting() -> (cancelled: Bool, encoder: Bool) {
        let encoder = encoderSince != nil
        let cancelled = resumeRecording || encoder
        resumeRecording = false
        encoderSince = nil
        encoderRetry?.cancel()
        encoderRetry = nil
        return (cancelled, encoder)
    }
}
