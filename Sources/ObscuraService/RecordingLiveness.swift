/// Whether a recording is wedged, for systemd's watchdog: the camera goes on
/// delivering frames while none reaches the file for `limit`. A camera that
/// delivers nothing is not the recorder's wedge: a starved or vanished camera
/// is the session's interruption, reopened by the service, and a slow board's
/// camera may be silent for seconds; killing the service then would only lose
/// the recording's tail.
///
/// Pure logic, fed by the service's housekeeping round; time is passed in.
struct RecordingLiveness: Sendable, Equatable {
    static let limit: Duration = .seconds(10)

    /// What was written and delivered when the recording last advanced.
    private var written = -1
    private var delivered = 0
    private var since: ContinuousClock.Instant?

    /// A wedged recording: how long nothing was written, and how many frames
    /// the camera delivered meanwhile.
    struct Wedge: Sendable, Equatable {
        let stalled: Duration
        let delivered: Int
    }

    /// One look: `written` frames in the file and `delivered` by the camera
    /// so far, or nil when nothing records. Nil back while the recording is alive.
    mutating func look(written: Int?, delivered: Int, now: ContinuousClock.Instant) -> Wedge? {
        guard let written else {
            self.written = -1
            since = nil
            return nil
        }
        guard let since, written == self.written else {
            self.written = written
            self.delivered = delivered
            self.since = now
            return nil
        }
        let stalled = now - since
        let meanwhile = delivered - self.delivered
        return stalled >= Self.limit && meanwhile > 0 ? Wedge(stalled: stalled, delivered: meanwhile) : nil
    }
}
