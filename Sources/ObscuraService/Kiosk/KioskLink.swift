import ObscuraSystem

/// What one of a kiosk's cameras (`RecorderService`) tells its kiosk
/// (`Kiosk`), and what it takes from it: the flash, which all share.
struct KioskLink: Sendable {
    /// A camera's state as the LEDs and systemd show it.
    struct Summary: Sendable, Equatable {
        var recording = false
        var error = false
        var attention = false
        /// Its systemd status line ("recording obscura-…-door.mp4").
        var line = "starting"
    }

    let name: String
    /// The kiosk's flash (opened with its buttons).
    let flash: Mutex<GPIOFlash?>
    /// Each camera's latest summary, by name; written in the order the
    /// cameras change, read by the kiosk.
    let summaries: Mutex<[String: Summary]>
    /// The instant every camera's segments are cut from (the press that
    /// started them, CLOCK_MONOTONIC ns): the files of a segment cover the
    /// same time.
    let segmentOrigin: Mutex<UInt64?>
    /// Called after each change (the kiosk shows it, off the camera's actor).
    let shown: @Sendable () -> Void

    /// The camera's state changed: kept, then shown.
    func changed(_ summary: Summary) {
        summaries.withLock { $0[name] = summary }
        shown()
    }
}

/// What the service's process runs: one camera's `RecorderService`, or a
/// `Kiosk` of several.
public protocol KioskService: Actor {
    func start() async throws
    func toggleRecording() async
    func shutdown() async
}

extension RecorderService: KioskService {}
extension Kiosk: KioskService {}
