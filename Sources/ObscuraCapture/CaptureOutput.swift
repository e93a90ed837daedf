import ObscuraMedia
import ObscuraSystem

/// Something a session delivers frames to. Each output owns a queue whose
/// policy says what to drop when it falls behind, so a slow output never
/// stalls the camera or another output.
public protocol CaptureOutput: AnyObject, Sendable {
    /// The output's queue; the session pushes frames into it.
    var queue: FrameQueue { get }
    /// A pixel format the output would like the camera to deliver, if it has one.
    var preferredPixelFormat: PixelFormat? { get }
    /// Whether the output wants the camera's raw (Bayer) stream configured
    /// beside the processed one; its frames then carry `VideoFrame.raw`.
    var wantsRawStream: Bool { get }
    /// Frames the output holds beyond its queue (a preview keeps one on
    /// screen and one in flight); the session adds camera buffers for them.
    var extraHeldFrames: Int { get }
    /// The session lost its camera for good (unplugged, or silent until given
    /// up). A recording output finalizes what it has.
    func cameraLost()
    /// The session connected the output to a device (or to none).
    func connected(to device: CaptureDevice?)
}

extension CaptureOutput {
    public var wantsRawStream: Bool { false }
    public var extraHeldFrames: Int { 0 }
    public func cameraLost() {}
    public func connected(to device: CaptureDevice?) {}
}

/// The input side of a session: a device.
public final class CaptureDeviceInput: Sendable {
    public let device: CaptureDevice
    public init(device: CaptureDevice) { self.device = device }
}

/// Connects the session's input to one output; carries rotation and mirroring.
/// Set from any thread; the session reads them on the camera's thread and
/// when it configures, each under the connection's own lock.
public final class CaptureConnection: Sendable {
    public let output: any CaptureOutput
    private struct Settings {
        var videoRotationAngle = 0
        var isVideoMirrored = false
        var isEnabled = true
    }
    private let settings = Mutex(Settings())

    /// Clockwise degrees: 0, 90, 180 or 270. Applied by the camera when it can
    /// (libcamera Transform/Orientation); otherwise reported as an adjustment.
    public var videoRotationAngle: Int {
        get { settings.withLock { $0.videoRotationAngle } }
        set { settings.withLock { $0.videoRotationAngle = newValue } }
    }
    public var isVideoMirrored: Bool {
        get { settings.withLock { $0.isVideoMirrored } }
        set { settings.withLock { $0.isVideoMirrored = newValue } }
    }
    /// Whether frames reach the output (read for every frame on the camera's thread).
    public var isEnabled: Bool {
        get { settings.withLock { $0.isEnabled } }
        set { settings.withLock { $0.isEnabled = newValue } }
    }
    init(output: any CaptureOutput) { self.output = output }
}
