import ObscuraCamera
import ObscuraMedia
import ObscuraSystem

/// Where a device's frames come from: a libcamera camera, or the synthetic
/// camera used by tests. Calls come from the session, serialised.
public protocol FrameSource: AnyObject, Sendable {
    var id: String { get }
    /// What the camera offers (formats, controls, properties).
    var cameraDescription: CameraDescription { get }
    func open() throws
    func configure(_ requests: [StreamRequest], rotation: Int, mirrored: Bool) throws -> CameraConfiguration
    /// Starts streaming. `handler` runs on the camera's thread and must not block;
    /// `failed` is told of requests that completed with an error.
    func start(handler: @escaping @Sendable (CameraFrame) -> Void, failed: @escaping @Sendable (UInt32) -> Void) throws
    func stop() throws
    func setControl(_ name: String, _ values: [Double]) throws
    func close()
    /// Calls `observer` when the camera disappears (false) or comes back (true).
    func observeAvailability(_ observer: @escaping @Sendable (Bool) -> Void) -> Int
    func stopObservingAvailability(_ token: Int)
    /// Frames handed out and not yet released.
    var outstandingFrames: Int { get }
    /// Gives up on a camera that stopped answering, without stopping it, and
    /// lets the backend start afresh. Returns whether the camera is listed
    /// again right now (a transient stall).
    func abandonAndRecover() -> Bool
    /// Whether the camera is listed now.
    var isListed: Bool { get }
    /// Whether the device behind a silent camera is gone (so it must be
    /// abandoned), rather than merely slow (so it is waited for).
    var deviceVanished: Bool { get }
}

extension FrameSource {
    /// A source that cannot tell is taken to be gone once silent.
    public var deviceVanished: Bool { true }
}

/// A libcamera camera as a frame source.
public final class LibcameraSource: FrameSource {
    public let id: String
    let manager: CameraManager
    private let camera = Mutex<Camera?>(nil)
    /// The last camera opened, kept after close to count frames still held.
    private let last = Mutex<Camera?>(nil)

    public init(manager: CameraManager, id: String) {
        self.manager = manager
        self.id = id
    }

    public var cameraDescription: CameraDescription {
        manager.cameras.first { $0.id == id } ?? CameraDescription(
            id: id, model: id, position: .unspecified, rotation: nil, frameDurationRange: nil,
            pixelArraySize: nil, formats: [:], controls: [])
    }

    public func open() throws {
        try camera.withLock { c in
            if c == nil {
                let acquired = try manager.acquire(id: id)
                c = acquired
                last.withLock { $0 = acquired }
            }
        }
    }

    private func opened() throws -> Camera {
        guard let c = camera.withLock({ $0 }) else {
            throw CaptureError.wrongState(call: "configure", state: "closed", allowed: "after open")
        }
        return c
    }

    public func configure(_ requests: [StreamRequest], rotation: Int, mirrored: Bool) throws -> CameraConfiguration {
        try opened().configure(requests, rotation: rotation, mirrored: mirrored)
    }

    public func start(handler: @escaping @Sendable (CameraFrame) -> Void, failed: @escaping @Sendable (UInt32) -> Void) throws {
        try opened().start(handler: handler, failed: failed)
    }

    public func stop() throws { try camera.withLock { $0 }?.stop() }

    public func setControl(_ name: String, _ values: [Double]) throws {
        try opened().setControl(name, values)
    }

    public func close() {
        let c = camera.withLock { c -> Camera? in
            defer { c = nil }
            return c
        }
        c?.release()
    }

    public func observeAvailability(_ observer: @escaping @Sendable (Bool) -> Void) -> Int {
        let id = self.id
        return manager.addHotplugObserver { added, camera in
            if camera == id { observer(added) }
        }
    }

    public func stopObservingAvailability(_ token: Int) { manager.removeHotplugObserver(token) }

    public var outstandingFrames: Int { last.withLock { $0 }?.outstandingFrames ?? 0 }

    public func abandonAndRecover() -> Bool {
        let c = camera.withLock { c -> Camera? in
            defer { c = nil }
            return c
        }
        c?.abandon()
        manager.restartIfIdle()
        return isListed
    }

    public var isListed: Bool { manager.cameras.contains { $0.id == id } }

    /// A camera's V4L2 and media nodes stay open while it is acquired; when
    /// its device is unbound or unplugged they are removed, and the open
    /// descriptors show it. (libcamera 0.0.3 reports no such removal for
    /// platform devices such as vimc.)
    public var deviceVanished: Bool {
        !Syscalls.vanishedOpenNodes(prefixes: ["/dev/video", "/dev/media", "/dev/v4l-subdev"]).isEmpty
    }
}
