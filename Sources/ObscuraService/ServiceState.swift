/// What the recorder is doing: one value, whose cases carry what they need.
/// A recording in progress lives only in the cases that can have one, so a
/// file cannot be "recording" while the service is idle, and the shutdown
/// waits for the one being finalized whatever else happened meanwhile.
///
/// `RecorderService.enter` is its only door: a stopping service stays
/// stopping, and a recording in progress stays in the state until its file
/// has finished (`carrying`, `recordingEnded`).
enum ServiceState: Sendable {
    case starting
    case idle
    /// A photo taken while nothing records; `then` is what it goes back to.
    indirect case photo(then: ServiceState)
    case recording(RecordingInProgress)
    /// Between two files of one recording: the file on a drive that went
    /// away is finished, and the recording goes on on the card.
    case continuing
    /// Idle to the owner, with a file of its own still open: a try of the
    /// encoder's that may yet go on, or one told to stop being finalized.
    case finishing(RecordingInProgress)
    /// A stage failed. `recording`: a file still being finalized, or the try
    /// running while the encoder is down (`RecordingInProgress.retry`).
    case error(ServiceFailure, recording: RecordingInProgress?)
    /// Shutting down: the recording being finalized, if any.
    case stopping(RecordingInProgress?)

    /// The name `obscura status`, the metrics and systemd's status show.
    var name: String {
        switch self {
        case .starting: "starting"
        case .idle, .finishing: "idle"
        case .photo: "photo"
        case .recording, .continuing: "recording"
        case .error: "error"
        case .stopping: "stopping"
        }
    }

    /// Every name a state can have (the metrics' `state` label).
    static let names = ["starting", "idle", "recording", "photo", "error", "stopping"]

    /// The recording in progress, whichever state carries it.
    var recording: RecordingInProgress? {
        switch self {
        case .recording(let r), .finishing(let r): r
        case .error(_, let r), .stopping(let r): r
        case .photo(let then): then.recording
        case .starting, .idle, .continuing: nil
        }
    }

    /// The recording in progress changed in place (its task, its first
    /// frame said); nothing happens in a state without one.
    mutating func updateRecording(_ change: (inout RecordingInProgress) -> Void) {
        switch self {
        case .recording(var r):
            change(&r)
            self = .recording(r)
        case .finishing(var r):
            change(&r)
            self = .finishing(r)
        case .error(let f, var r?):
            change(&r)
            self = .error(f, recording: r)
        case .stopping(var r?):
            change(&r)
            self = .stopping(r)
        case .photo(var then):
            then.updateRecording(change)
            self = .photo(then: then)
        default: break
        }
    }

    /// This state with `recording` in it, in the place that state keeps one:
    /// an idle one becomes `finishing`. (Entering a state never drops the
    /// recording in progress; only its file's end does.)
    func carrying(_ recording: RecordingInProgress) -> ServiceState {
        switch self {
        case .starting, .idle, .continuing, .finishing: .finishing(recording)
        case .recording: self
        case .error(let f, _): .error(f, recording: recording)
        case .stopping: .stopping(recording)
        case .photo(let then): .photo(then: then.carrying(recording))
        }
    }

    /// The recording's file has finished: the state no longer carries it.
    /// A recording's own state waits, as `continuing`, for what comes next
    /// (idle, an error, the next file on the card).
    mutating func recordingEnded() {
        switch self {
        case .recording: self = .continuing
        case .finishing: self = .idle
        case .error(let f, _?): self = .error(f, recording: nil)
        case .stopping(_?): self = .stopping(nil)
        case .photo(var then):
            then.recordingEnded()
            self = .photo(then: then)
        default: break
        }
    }

    /// The failure the service is in, if any (also under a photo).
    var failure: ServiceFailure? {
        switch self {
        case .error(let f, _): f
        case .photo(let then): then.failure
        default: nil
        }
    }

    /// Recording to the owner (also between two files of one recording).
    var isRecording: Bool {
        switch self {
        case .recording, .continuing: true
        default: false
        }
    }
    var isError: Bool { if case .error = self { true } else { false } }
    var isStopping: Bool { if case .stopping = self { true } else { false } }
    var isPhoto: Bool { if case .photo = self { true } else { false } }
}

/// Why the service is in its error state: the message said, and its kind.
struct ServiceFailure: Sendable, Equatable {
    let message: String
    let reason: ErrorReason
}

/// The file being recorded, from its start to its `finished` event.
struct RecordingInProgress: Sendable {
    let file: String
    let started: ContinuousClock.Instant
    let onDrive: Bool
    /// A try after an encoder failed: the state stays error until the file
    /// has packets, and a failed try is not news.
    var retry: Bool
    var task: Task<Void, Never>?
    /// Whether its first frame's time was journaled.
    var firstFrameSaid = false
    /// Whether the moment its first frames were on the storage was journaled.
    var durableSaid = false
    /// Stopped because its drive went away: it goes on on the card.
    var driveRemoved = false
}
