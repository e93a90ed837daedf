import ObscuraFormats

/// What the journal has been told, so that a line said once is not said at
/// every housekeeping round: the camera's layer, the encoder in use, a
/// rename that keeps failing the same way.
struct SaidOnce: Sendable {
    private var said: Set<String> = []
    private var last: [String: String] = [:]

    /// True the first time `line` is asked about.
    mutating func first(_ line: String) -> Bool { said.insert(line).inserted }

    /// True when `topic`'s value is not the one said last.
    mutating func changed(_ topic: String, to value: String) -> Bool {
        guard last[topic] != value else { return false }
        last[topic] = value
        return true
    }
}

/// What the recordings finished since the start hold (the one in progress
/// is in its progress).
struct RecordingTotals: Sendable, Equatable {
    var frames = 0
    var bytes = 0
    var dropped = 0
    var skipped = 0
    var paced = 0

    mutating func add(frames: Int, bytes: Int, dropped: Int, skipped: Int, paced: Int = 0) {
        self.frames += frames
        self.bytes += bytes
        self.dropped += dropped
        self.skipped += skipped
        self.paced += paced
    }
}

/// The watchdog's two looks each round: whether the recording is wedged
/// (`RecordingLiveness`), and whether it waits on its storage (`StorageWaitNotice`).
struct WatchdogLooks: Sendable {
    var liveness = RecordingLiveness()
    var storageWait = StorageWaitNotice()
}

/// The metrics file and when it was last written: one write each interval.
struct MetricsSchedule: Sendable {
    let file: MetricsFile
    let every: Duration
    private var written: ContinuousClock.Instant?

    init(file: MetricsFile, every: Duration) {
        self.file = file
        self.every = every
    }

    /// Whether a write is due at `now`; when it is, it counts as written.
    mutating func due(at now: ContinuousClock.Instant) -> Bool {
        if let written, now - written < every { return false }
        written = now
        return true
    }
}
