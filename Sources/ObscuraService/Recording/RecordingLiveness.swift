import Foundation
import ObscuraCamera

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

/// Says once when a recording has been held inside a call into its storage
/// (a write or sync that has not returned) for `reported`, and once when it
/// goes on. Fed each housekeeping round with the writer's wait.
struct StorageWaitNotice: Sendable {
    static let reported: Duration = .seconds(5)
    private var said = false

    /// The line to journal this round, if any (warning: true while waiting).
    mutating func look(_ wait: Duration?) -> (warning: Bool, line: String)? {
        if let wait, wait >= Self.reported, !said {
            said = true
            return (true, "the recording has waited \(String(format: "%.1f", wait.seconds)) s on its storage (a write or sync that has not returned); it goes on when the storage answers")
        }
        if wait == nil, said {
            said = false
            return (false, "the recording's storage answers again")
        }
        return nil
    }
}
