import CCamera
import ObscuraMedia
import ObscuraSystem
import struct Synchronization.Atomic
#if canImport(Glibc)
import Glibc
#endif

/// Where a camera sits, from libcamera's `Location` property.
public enum CameraPosition: String, Sendable {
    case front, back, external, unspecified
}

/// The use a stream is configured for; libcamera picks defaults per role.
public enum StreamRole: Int32, Sendable, CaseIterable, CustomStringConvertible {
    case raw = 0, stillCapture = 1, videoRecording = 2, viewfinder = 3
    public var description: String {
        switch self {
        case .raw: "raw"
        case .stillCapture: "still"
        case .videoRecording: "video"
        case .viewfinder: "viewfinder"
        }
    }
}

/// One pixel format a camera offers for a role, with the sizes it takes.
public struct CameraFormat: Sendable, Equatable {
    public let pixelFormat: PixelFormat
    /// The discrete sizes libcamera lists for this format.
    public let sizes: [PixelSize]
    public let minimumSize: PixelSize
    public let maximumSize: PixelSize
    /// Size steps inside the range (0 when only the listed sizes are allowed).
    public let horizontalStep: Int
    public let verticalStep: Int

    public func contains(_ size: PixelSize) -> Bool {
        if sizes.contains(size) { return true }
        return size.width >= minimumSize.width && size.width <= maximumSize.width
            && size.height >= minimumSize.height && size.height <= maximumSize.height
            && horizontalStep > 0 && verticalStep > 0
    }

    public init(pixelFormat: PixelFormat, sizes: [PixelSize], minimumSize: PixelSize, maximumSize: PixelSize,
                horizontalStep: Int, verticalStep: Int) {
        self.pixelFormat = pixelFormat
        self.sizes = sizes
        self.minimumSize = minimumSize
        self.maximumSize = maximumSize
        self.horizontalStep = horizontalStep
        self.verticalStep = verticalStep
    }

    public var rangeDescription: String {
        minimumSize == maximumSize ? "\(minimumSize)" : "\(minimumSize) to \(maximumSize)"
    }
}

/// A control the camera offers, from libcamera's ControlInfoMap.
public struct CameraControlInfo: Sendable, Equatable {
    public let id: UInt32
    public let name: String
    public let minimum: Double?
    public let maximum: Double?
    public let defaultValue: Double?
    /// Enumerated values (e.g. AfMode), empty when a range.
    public let values: [Double]
    public let isArray: Bool
    /// For rectangle controls (ScalerCrop): the largest rectangle, x y width height.
    public var maximumRectangle: [Int]? = nil

    public init(id: UInt32, name: String, minimum: Double?, maximum: Double?, defaultValue: Double?,
                values: [Double], isArray: Bool, maximumRectangle: [Int]? = nil) {
        self.id = id
        self.name = name
        self.minimum = minimum
        self.maximum = maximum
        self.defaultValue = defaultValue
        self.values = values
        self.isArray = isArray
        self.maximumRectangle = maximumRectangle
    }
}

/// A camera as discovered, before it is acquired.
public struct CameraDescription: Sendable {
    public let id: String
    public let model: String
    public let position: CameraPosition
    /// Mounting rotation in degrees, when the camera reports one.
    public let rotation: Int?
    /// Frame-duration limits for the active mode, when the camera reports them
    /// (libcamera's FrameDurationLimits). vimc reports none.
    public let frameDurationRange: ClosedRange<Duration>?
    public let pixelArraySize: PixelSize?
    /// Formats per role.
    public let formats: [StreamRole: [CameraFormat]]
    public let controls: [CameraControlInfo]

    public init(id: String, model: String, position: CameraPosition, rotation: Int?,
                frameDurationRange: ClosedRange<Duration>?, pixelArraySize: PixelSize?,
                formats: [StreamRole: [CameraFormat]], controls: [CameraControlInfo]) {
        self.id = id
        self.model = model
        self.position = position
        self.rotation = rotation
        self.frameDurationRange = frameDurationRange
        self.pixelArraySize = pixelArraySize
        self.formats = formats
        self.controls = controls
    }

    /// Frame-rate range implied by the frame-duration limits.
    public var frameRateRange: ClosedRange<Double>? {
        guard let range = frameDurationRange,
              range.lowerBound > .zero, range.upperBound > .zero else { return nil }
        return (1 / range.upperBound.seconds)...(1 / range.lowerBound.seconds)
    }
}

extension Duration {
    public var seconds: Double {
        let (s, a) = components
        return Double(s) + Double(a) / 1e18
    }
}

/// The process-wide libcamera camera manager. libcamera allows only one per
/// process (a second aborts the process), so this is created once, on first
/// use, and lives until exit.
public final class CameraManager: Sendable {
    /// The libcamera manager; replaced by `restartIfIdle`. Guarded by `handleLock`.
    private let handleLock = Mutex<OpaquePointerBox?>(nil)
    private let acquired = Atomic<Int>(0)

    var handle: OpaquePointerBox {
        handleLock.withLock { $0! }
    }

    private static let shared = Mutex<Result<CameraManager, ShimError>?>(nil)

    /// libcamera's log to errors only, unless LIBCAMERA_LOG_LEVELS says
    /// otherwise. For a program's main, before it starts any thread: it sets
    /// the environment, which glibc does not guard against a getenv beside.
    public static func quietLibcameraByDefault() { oc_quiet_libcamera_by_default() }

    /// The manager, started on first call. Throws when libcamera cannot start.
    public static func start() throws(ShimError) -> CameraManager {
        // The shim for the installed libcamera first; not kept when it fails,
        // so a libcamera installed later is found by the next call.
        do throws(CameraLibraryError) {
            _ = try CameraLibrary.load()
        } catch {
            throw ShimError(message: error.description, code: -ENOENT)
        }
        let result = shared.withLock { state -> Result<CameraManager, ShimError> in
            if let state { return state }
            // (LIBCAMERA_LOG_LEVELS: set by the program's main, quietLibcameraByDefault.)
            let made: Result<CameraManager, ShimError>
            do {
                var pointer: OpaquePointer?
                try ShimError.check("CameraManager::start()") { oc_manager_create(&pointer, $0, $1) }
                let manager = CameraManager(handle: OpaquePointerBox(pointer!))
                made = .success(manager)
                atexit(stopCameraManagerAtExit)
            } catch let error as ShimError {
                made = .failure(error)
            } catch {
                made = .failure(ShimError(message: "\(error)", code: 0))
            }
            state = made
            return made
        }
        return try result.get()
    }

    private init(handle: OpaquePointerBox) {
        handleLock.withLock { $0 = handle }
        // The manager lives until exit, so an unretained context is safe.
        oc_manager_set_hotplug(handle.pointer, hotplugCallback, Unmanaged.passUnretained(self).toOpaque())
    }

    /// Replaces libcamera's camera manager with a fresh one when no camera is
    /// acquired, so it enumerates afresh. Some pipelines (vimc in libcamera
    /// 0.0.3) never report a camera whose device went away, and abort the
    /// process when it comes back under the same id; a fresh manager sees it
    /// as new. Returns false (and does nothing) while a camera is acquired.
    @discardableResult
    public func restartIfIdle() -> Bool {
        handleLock.withLock { box -> Bool in
            guard acquired.load(ordering: .sequentiallyConsistent) == 0, let old = box else { return false }
            oc_manager_destroy(old.pointer)
            box = nil
            var pointer: OpaquePointer?
            var message = [CChar](repeating: 0, count: 256)
            guard oc_manager_create(&pointer, &message, message.count) == 0, let pointer else { return false }
            oc_manager_set_hotplug(pointer, hotplugCallback, Unmanaged.passUnretained(self).toOpaque())
            box = OpaquePointerBox(pointer)
            return true
        }
    }

    func cameraReleased() { acquired.subtract(1, ordering: .sequentiallyConsistent) }

    /// Stops libcamera's manager at exit when no camera is acquired, so that
    /// its pipeline handlers end the IPA modules they run isolated (a module
    /// whose signature libcamera cannot verify runs in a proxy worker process
    /// of its own). libcamera ends a worker only when its proxy is destroyed;
    /// one left behind lives on, holding the program's standard error, so
    /// `obscura devices 2>&1 | head` would never end. A camera still acquired
    /// at exit is left alone: its threads may be inside libcamera.
    fileprivate static func stopAtExit() {
        guard case .success(let manager)? = shared.withLock({ $0 }) else { return }
        manager.handleLock.withLock { box in
            guard manager.acquired.load(ordering: .sequentiallyConsistent) == 0, let old = box else { return }
            oc_manager_destroy(old.pointer)
            box = nil
        }
    }

    /// A camera appeared (`true`) or went away (`false`).
    public typealias HotplugObserver = @Sendable (_ added: Bool, _ id: String) -> Void
    private let observers = Mutex<[Int: HotplugObserver]>([:])
    private let nextObserver = Mutex<Int>(0)

    /// Calls `observer` on libcamera's thread whenever a camera comes or goes.
    /// Returns a token for `removeHotplugObserver`.
    public func addHotplugObserver(_ observer: @escaping HotplugObserver) -> Int {
        let token = nextObserver.withLock { value -> Int in
            value += 1
            return value
        }
        observers.withLock { $0[token] = observer }
        return token
    }

    public func removeHotplugObserver(_ token: Int) {
        _ = observers.withLock { $0.removeValue(forKey: token) }
    }

    fileprivate func hotplug(added: Bool, id: String) {
        let current = observers.withLock { Array($0.values) }
        for observer in current { observer(added, id) }
    }

    /// The version of the libcamera headers the open shim was built with
    /// ("none" before one is open; see CameraLibrary).
    public static var libcameraVersion: String { String(cString: oc_libcamera_version()) }

    /// The version the loaded libcamera reports of itself ("v0.5.2+99-bfd68f78"
    /// on Raspberry Pi OS; "none" before a shim is open).
    public static var libcameraRuntimeVersion: String { String(cString: oc_libcamera_runtime_version()) }

    /// Cameras libcamera found (it lists only media devices udev has initialised).
    public var cameras: [CameraDescription] {
        handleLock.withLock { box in
            guard let box else { return [] }
            return (0..<Int(oc_manager_camera_count(box.pointer))).compactMap { describe(box.pointer, $0) }
        }
    }

    private func describe(_ handle: OpaquePointer, _ index: Int) -> CameraDescription? {
        var info = oc_camera_info()
        guard oc_manager_camera_info(handle, Int32(index), &info) == 0 else { return nil }
        let id = withUnsafeBytes(of: info.id) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
        let model = withUnsafeBytes(of: info.model) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
        let position: CameraPosition = switch info.location {
        case 0: .front
        case 1: .back
        case 2: .external
        default: .unspecified
        }
        var formats: [StreamRole: [CameraFormat]] = [:]
        for role in StreamRole.allCases {
            var list = roleFormats(handle, index, role)
            // Some pipelines (vimc) answer the raw role with their processed
            // stream; only Bayer formats are raw.
            if role == .raw { list = list.filter { $0.pixelFormat.info.map { $0.family == .bayer } ?? true } }
            if !list.isEmpty { formats[role] = list }
        }
        let durations: ClosedRange<Duration>? = info.min_frame_duration_us > 0 && info.max_frame_duration_us >= info.min_frame_duration_us
            ? .microseconds(info.min_frame_duration_us) ... .microseconds(info.max_frame_duration_us) : nil
        let array = info.pixel_array_width > 0
            ? PixelSize(width: Int(info.pixel_array_width), height: Int(info.pixel_array_height)) : nil
        return CameraDescription(id: id, model: model.isEmpty ? id : model, position: position,
                                 rotation: info.rotation >= 0 ? Int(info.rotation) : nil,
                                 frameDurationRange: durations, pixelArraySize: array,
                                 formats: formats, controls: controls(handle, index))
    }

    private func roleFormats(_ handle: OpaquePointer, _ index: Int, _ role: StreamRole) -> [CameraFormat] {
        var buffer = [oc_format_info](repeating: oc_format_info(), count: 64)
        let count = Int(oc_manager_formats(handle, Int32(index), role.rawValue, &buffer, 64, nil, 0))
        guard count > 0 else { return [] }
        return (0..<min(count, 64)).map { f in
            let info = buffer[f]
            var sizes: [PixelSize] = []
            for s in 0..<Int(info.size_count) {
                var w: UInt32 = 0, h: UInt32 = 0
                if oc_manager_format_size(handle, Int32(index), role.rawValue, Int32(f), Int32(s), &w, &h) == 0 {
                    sizes.append(PixelSize(width: Int(w), height: Int(h)))
                }
            }
            return CameraFormat(pixelFormat: PixelFormat(fourcc: info.fourcc, modifier: info.modifier), sizes: sizes,
                                minimumSize: PixelSize(width: Int(info.min_width), height: Int(info.min_height)),
                                maximumSize: PixelSize(width: Int(info.max_width), height: Int(info.max_height)),
                                horizontalStep: Int(info.hstep), verticalStep: Int(info.vstep))
        }
    }

    private func controls(_ handle: OpaquePointer, _ index: Int) -> [CameraControlInfo] {
        var buffer = [oc_control_info](repeating: oc_control_info(), count: 128)
        let count = Int(oc_manager_controls(handle, Int32(index), &buffer, 128))
        guard count > 0 else { return [] }
        return buffer.prefix(min(count, 128)).map { c in
            let name = withUnsafeBytes(of: c.name) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
            let values = withUnsafeBytes(of: c.values) { Array($0.bindMemory(to: Double.self).prefix(Int(c.value_count))) }
            let rect = withUnsafeBytes(of: c.rect_max) { Array($0.bindMemory(to: Int32.self)).map(Int.init) }
            return CameraControlInfo(id: c.id, name: name, minimum: c.min.isNaN ? nil : c.min,
                                     maximum: c.max.isNaN ? nil : c.max, defaultValue: c.def.isNaN ? nil : c.def,
                                     values: values, isArray: c.is_array != 0,
                                     maximumRectangle: rect[2] > 0 ? rect : nil)
        }
    }

    /// Acquires the camera with `id` for exclusive use.
    public func acquire(id: String) throws -> Camera {
        guard cameras.contains(where: { $0.id == id }) else {
            throw CameraError.unknownCamera(id: id, available: cameras.map(\.id))
        }
        var pointer: OpaquePointer?
        try handleLock.withLock { box in
            guard let box else { throw CameraError.noCameras(libcameraVersion: Self.libcameraVersion) }
            try ShimError.check("Camera::acquire()") { oc_camera_acquire(box.pointer, id, &pointer, $0, $1) }
            acquired.add(1, ordering: .sequentiallyConsistent)
        }
        return Camera(manager: self, handle: pointer!, id: id)
    }
}

private func hotplugCallback(_ context: UnsafeMutableRawPointer?, _ added: Int32, _ id: UnsafePointer<CChar>?) {
    guard let context, let id else { return }
    Unmanaged<CameraManager>.fromOpaque(context).takeUnretainedValue().hotplug(added: added != 0, id: String(cString: id))
}

private func stopCameraManagerAtExit() { CameraManager.stopAtExit() }

/// libcamera's camera manager handle. `@unchecked Sendable`: the pointer
/// never changes; the manager keeps it under `handleLock`, and libcamera's
/// CameraManager is itself thread-safe for the calls the shim makes.
struct OpaquePointerBox: @unchecked Sendable {
    let pointer: OpaquePointer
    init(_ pointer: OpaquePointer) { self.pointer = pointer }
}

/// Errors of camera discovery and configuration, each saying what is allowed.
public enum CameraError: Error, CustomStringConvertible, Equatable {
    case noCameras(libcameraVersion: String)
    case unknownCamera(id: String, available: [String])
    case unsupportedPixelFormat(PixelFormat, available: [PixelFormat])
    case unsupportedSize(PixelSize, format: PixelFormat, available: String)
    case invalidConfiguration(String)
    case wrongState(call: String, state: String, allowed: String)

    public var description: String {
        switch self {
        case .noCameras(let version):
            "no camera found: libcamera \(version) lists no cameras (is one connected, and is udev running?)"
        case .unknownCamera(let id, let available):
            "no camera with id \"\(id)\"; available: " + (available.isEmpty ? "none" : available.map { "\"\($0)\"" }.joined(separator: ", "))
        case .unsupportedPixelFormat(let format, let available):
            "the camera does not offer pixel format \(format); available: " + available.map(\.description).joined(separator: ", ")
        case .unsupportedSize(let size, let format, let available):
            "the camera does not offer \(size) in \(format); available: \(available)"
        case .invalidConfiguration(let why):
            "invalid camera configuration: \(why)"
        case .wrongState(let call, let state, let allowed):
            "\(call) is not allowed while the camera is \(state) (allowed when \(allowed))"
        }
    }
}
