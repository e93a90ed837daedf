import CCamera
import ObscuraMedia
import ObscuraSystem
import Synchronization
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
    let handle: OpaquePointerBox

    private static let shared = Mutex<Result<CameraManager, ShimError>?>(nil)

    /// The manager, started on first call. Throws when libcamera cannot start.
    public static func start() throws(ShimError) -> CameraManager {
        let result = shared.withLock { state -> Result<CameraManager, ShimError> in
            if let state { return state }
            // libcamera logs INFO and WARN lines to stderr by default; keep errors
            // only unless the user chose levels.
            if getenv("LIBCAMERA_LOG_LEVELS") == nil { setenv("LIBCAMERA_LOG_LEVELS", "*:ERROR", 1) }
            let made: Result<CameraManager, ShimError>
            do {
                var pointer: OpaquePointer?
                try ShimError.check("CameraManager::start()") { oc_manager_create(&pointer, $0, $1) }
                made = .success(CameraManager(handle: OpaquePointerBox(pointer!)))
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

    private init(handle: OpaquePointerBox) { self.handle = handle }

    /// The libcamera version Obscura was compiled against.
    public static var libcameraVersion: String { String(cString: oc_libcamera_version()) }

    /// Cameras libcamera found (it lists only media devices udev has initialised).
    public var cameras: [CameraDescription] {
        (0..<Int(oc_manager_camera_count(handle.pointer))).compactMap(describe)
    }

    private func describe(_ index: Int) -> CameraDescription? {
        var info = oc_camera_info()
        guard oc_manager_camera_info(handle.pointer, Int32(index), &info) == 0 else { return nil }
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
            var list = roleFormats(index, role)
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
                                 formats: formats, controls: controls(index))
    }

    private func roleFormats(_ index: Int, _ role: StreamRole) -> [CameraFormat] {
        var buffer = [oc_format_info](repeating: oc_format_info(), count: 64)
        let count = Int(oc_manager_formats(handle.pointer, Int32(index), role.rawValue, &buffer, 64, nil, 0))
        guard count > 0 else { return [] }
        return (0..<min(count, 64)).map { f in
            let info = buffer[f]
            var sizes: [PixelSize] = []
            for s in 0..<Int(info.size_count) {
                var w: UInt32 = 0, h: UInt32 = 0
                if oc_manager_format_size(handle.pointer, Int32(index), role.rawValue, Int32(f), Int32(s), &w, &h) == 0 {
                    sizes.append(PixelSize(width: Int(w), height: Int(h)))
                }
            }
            return CameraFormat(pixelFormat: PixelFormat(fourcc: info.fourcc, modifier: info.modifier), sizes: sizes,
                                minimumSize: PixelSize(width: Int(info.min_width), height: Int(info.min_height)),
                                maximumSize: PixelSize(width: Int(info.max_width), height: Int(info.max_height)),
                                horizontalStep: Int(info.hstep), verticalStep: Int(info.vstep))
        }
    }

    private func controls(_ index: Int) -> [CameraControlInfo] {
        var buffer = [oc_control_info](repeating: oc_control_info(), count: 128)
        let count = Int(oc_manager_controls(handle.pointer, Int32(index), &buffer, 128))
        guard count > 0 else { return [] }
        return buffer.prefix(min(count, 128)).map { c in
            let name = withUnsafeBytes(of: c.name) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
            let values = withUnsafeBytes(of: c.values) { Array($0.bindMemory(to: Double.self).prefix(Int(c.value_count))) }
            return CameraControlInfo(id: c.id, name: name, minimum: c.min.isNaN ? nil : c.min,
                                     maximum: c.max.isNaN ? nil : c.max, defaultValue: c.def.isNaN ? nil : c.def,
                                     values: values, isArray: c.is_array != 0)
        }
    }

    /// Acquires the camera with `id` for exclusive use.
    public func acquire(id: String) throws -> Camera {
        guard cameras.contains(where: { $0.id == id }) else {
            throw CameraError.unknownCamera(id: id, available: cameras.map(\.id))
        }
        var pointer: OpaquePointer?
        try ShimError.check("Camera::acquire()") { oc_camera_acquire(handle.pointer, id, &pointer, $0, $1) }
        return Camera(manager: self, handle: pointer!, id: id)
    }
}

/// An OpaquePointer owned by a Sendable wrapper; the owner serialises use.
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
