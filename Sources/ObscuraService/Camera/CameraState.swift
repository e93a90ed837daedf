/// The service's camera: closed, being opened (on the camera thread; one
/// opening at a time, later askers wait for it), or open with what belongs
/// to that session alone. Dropping the session drops its pace and its
/// viewers' encoder with it.
enum CameraState: Sendable {
    case closed
    case opening(Task<Void, Never>)
    case ready(OpenCamera)

    var opened: CameraSetup.Opened? {
        if case .ready(let c) = self { c.opened } else { nil }
    }

    var open: OpenCamera? {
        if case .ready(let c) = self { c } else { nil }
    }

    /// The open camera's own state changed in place; nothing when closed.
    mutating func update(_ change: (inout OpenCamera) -> Void) {
        guard case .ready(var c) = self else { return }
        change(&c)
        self = .ready(c)
    }
}

/// A camera's session and what the service keeps for it while it is open.
struct OpenCamera: Sendable {
    let opened: CameraSetup.Opened
    /// The recording pace: the frame rate asked of the camera, stepped down
    /// while the recorder cannot keep up or the system is under pressure.
    var pace: RecordingPace
    /// Whether its encoder runs for the live view's viewers alone (no recording).
    var encodingForViewers = false
    /// Whether the system's pressure has paused its preview.
    var previewPaused = false

    init(_ opened: CameraSetup.Opened) {
        self.opened = opened
        pace = opened.pace
    }
}
