import ObscuraMedia

/// An output that holds no frame: `look` sees each frame on the camera's
/// thread as it passes, before any other output has it, and must be quick
/// (far under a frame's interval) and keep nothing that points into the
/// frame. So a measure of the picture costs the recorder no camera buffer.
/// `ended` is called once, when the session stops.
public final class FrameTapOutput: CaptureOutput, Sendable {
    public let queue: FrameQueue
    public var preferredPixelFormat: PixelFormat? { nil }

    public init(look: @escaping @Sendable (VideoFrame) -> Void, ended: @escaping @Sendable () -> Void) {
        queue = FrameQueue(passing: look, ended: ended)
    }
}
