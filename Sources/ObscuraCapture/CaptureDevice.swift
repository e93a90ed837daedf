import ObscuraCamera
import ObscuraMedia
import ObscuraSystem

/// A camera, in the manner of AVFoundation's capture device: identity,
/// formats, the active format and frame durations, and controls (focus,
/// exposure, zoom, image adjustments), each with an `is…Supported` answer
/// derived from the camera's libcamera controls and a clear error when not.
///
/// Changing the configuration needs the configuration lock:
/// `try device.lockForConfiguration()` … `device.unlockForConfiguration()`, or
/// `try device.withConfigurationLock { … }`. Changes reach the camera at once
/// while it runs, and at the session's next start otherwise.
public final class CaptureDevice: Sendable, CustomStringConvertible {
    /// One pixel format at one size, with the frame durations the camera allows.
    public struct Format: Sendable, Equatable, CustomStringConvertible {
        public let pixelFormat: PixelFormat
        public let dimensions: PixelSize
        /// nil when the camera does not report FrameDurationLimits.
        public let frameDurationRange: ClosedRange<Duration>?
        /// Stream roles that offer this format.
        public let roles: [StreamRole]
        public var isRaw: Bool {
            if let info = pixelFormat.info { return info.family == .bayer }
            return roles == [.raw]
        }
        public var description: String {
            var text = "\(pixelFormat) \(dimensions)"
            if let r = frameDurationRange {
                let slowest = 1 / r.upperBound.seconds
                let fastest = 1 / r.lowerBound.seconds
                text += " \((slowest * 10).rounded() / 10)–\((fastest * 10).rounded() / 10) fps"
            }
            return text
        }
    }

    public enum FocusMode: Sendable, CaseIterable { case locked, autoFocus, continuousAutoFocus }
    public enum ExposureMode: Sendable, CaseIterable { case locked, continuousAutoExposure, custom }
    public enum ImageAdjustment: String, Sendable, CaseIterable { case brightness = "Brightness", contrast = "Contrast", saturation = "Saturation" }

    struct State {
        var locked = false
        var activeFormat: Format?
        var minFrameDuration: Duration?
        var maxFrameDuration: Duration?
        var focusMode: FocusMode?
        var exposureMode: ExposureMode?
        var zoomFactor = 1.0
        /// Control values to apply, by libcamera name.
        var controls: [String: [Double]] = [:]
        var running = false
    }

    /// What gives the frames: libcamera's camera, or the test pattern.
    public let source: FrameSource
    let state = Mutex(State())
    public let uniqueID: String
    public let localizedName: String
    public let position: CameraPosition
    /// Mounting rotation in degrees, when the camera reports it.
    public let mountingRotation: Int?
    public let formats: [Format]
    let controlInfo: [String: CameraControlInfo]
    let pixelArray: PixelSize?

    public init(source: FrameSource) {
        self.source = source
        let camera = source.cameraDescription
        uniqueID = camera.id
        localizedName = camera.model
        position = camera.position
        mountingRotation = camera.rotation
        pixelArray = camera.pixelArraySize
        controlInfo = Dictionary(camera.controls.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        var seen: [String: Int] = [:]
        var list: [Format] = []
        for role in [StreamRole.videoRecording, .viewfinder, .stillCapture, .raw] {
            for format in camera.formats[role] ?? [] {
                let sizes = format.sizes.isEmpty ? [format.maximumSize] : format.sizes
                for size in sizes {
                    let key = "\(format.pixelFormat.fourcc)-\(format.pixelFormat.modifier)-\(size)"
                    if let at = seen[key] {
                        let old = list[at]
                        list[at] = Format(pixelFormat: old.pixelFormat, dimensions: old.dimensions,
                                          frameDurationRange: old.frameDurationRange, roles: old.roles + [role])
                    } else {
                        seen[key] = list.count
                        list.append(Format(pixelFormat: format.pixelFormat, dimensions: size,
                                           frameDurationRange: camera.frameDurationRange, roles: [role]))
                    }
                }
            }
        }
        formats = list
    }

    /// Every camera libcamera lists (one process-wide manager).
    public static func devices() throws -> [CaptureDevice] {
        let manager = try CameraManager.start()
        // A manager that missed a camera's return (no udev events reach a
        // process in its own network namespace) lists afresh when idle.
        if manager.cameras.isEmpty { manager.restartIfIdle() }
        return manager.cameras.map { CaptureDevice(source: LibcameraSource(manager: manager, id: $0.id)) }
    }

    /// The first camera, or nil when there is none.
    public static func `default`() throws -> CaptureDevice? { try devices().first }

    public var description: String { "camera \"\(uniqueID)\"" }

    /// What the camera reported, with size ranges per format and role.
    public var cameraDescription: CameraDescription { source.cameraDescription }

    /// The format with this pixel format and size: a listed one, or one inside
    /// a range the camera offers (vimc takes any size from 48x48 to 4096x2160).
    public func format(pixelFormat: PixelFormat, size: PixelSize) -> Format? {
        if let listed = formats.first(where: { $0.pixelFormat == pixelFormat && $0.dimensions == size }) { return listed }
        let camera = source.cameraDescription
        let roles = StreamRole.allCases.filter { role in
            (camera.formats[role] ?? []).contains { $0.pixelFormat == pixelFormat && $0.contains(size) }
        }
        guard !roles.isEmpty else { return nil }
        return Format(pixelFormat: pixelFormat, dimensions: size, frameDurationRange: camera.frameDurationRange, roles: roles)
    }

    /// Frames of this camera handed out and not yet released.
    public var outstandingFrames: Int { source.outstandingFrames }

    // MARK: Configuration lock

    public func lockForConfiguration() throws { state.withLock { $0.locked = true } }
    public func unlockForConfiguration() { state.withLock { $0.locked = false } }

    /// Locks, runs `body`, unlocks (also when it throws).
    public func withConfigurationLock<R>(_ body: (CaptureDevice) throws -> R) throws -> R {
        try lockForConfiguration()
        defer { unlockForConfiguration() }
        return try body(self)
    }

    private func requireLock(_ call: String) throws {
        guard state.withLock({ $0.locked }) else { throw CaptureError.notLocked(device: description, call: call) }
    }

    /// Records control values and sends them to the camera if it runs.
    func apply(_ values: [String: [Double]]) throws {
        let running = state.withLock { s -> Bool in
            for (k, v) in values { s.controls[k] = v }
            return s.running
        }
        if running { for (k, v) in values.sorted(by: { $0.key < $1.key }) { try source.setControl(k, v) } }
    }

    func has(_ control: String) -> Bool { controlInfo[control] != nil }

    // MARK: Format and frame durations

    public var activeFormat: Format? { state.withLock { $0.activeFormat } }
    public var activeVideoMinFrameDuration: Duration? { state.withLock { $0.minFrameDuration } }
    public var activeVideoMaxFrameDuration: Duration? { state.withLock { $0.maxFrameDuration } }

    /// Chooses the active format (used as is by a session with the
    /// `.inputPriority` preset). Must be one of `formats`.
    public func setActiveFormat(_ format: Format) throws {
        try requireLock("setActiveFormat")
        guard formats.contains(format) || self.format(pixelFormat: format.pixelFormat, size: format.dimensions) == format else {
            throw CaptureError.outOfRange(name: "format", value: format.description,
                                          allowed: "one of the device's \(formats.count) formats")
        }
        state.withLock { $0.activeFormat = format }
    }

    func noteActiveFormat(_ format: Format) { state.withLock { $0.activeFormat = format } }

    public var isFrameDurationControlSupported: Bool { has("FrameDurationLimits") }

    /// The frame rates the active format allows (from its frame-duration
    /// range, else the camera's); nil when the camera does not say.
    public var activeFrameRateRange: ClosedRange<Double>? {
        if let r = activeFormat?.frameDurationRange, r.lowerBound > .zero {
            return (1 / r.upperBound.seconds)...(1 / r.lowerBound.seconds)
        }
        return cameraDescription.frameRateRange
    }

    /// Fixes the frame rate (both frame-duration limits at 1/`rate`).
    public func setActiveVideoFrameRate(_ rate: Double) throws {
        let duration = Duration.nanoseconds(Int64((1e9 / rate).rounded()))
        try setActiveVideoFrameDurations(minimum: duration, maximum: duration)
    }

    /// Sets the frame-duration limits (FrameDurationLimits); equal values fix the frame rate.
    public func setActiveVideoFrameDurations(minimum: Duration, maximum: Duration) throws {
        try requireLock("setActiveVideoFrameDurations")
        guard let info = controlInfo["FrameDurationLimits"] else {
            throw CaptureError.unsupported(feature: "frame-duration control", device: description,
                                           why: "the camera has no FrameDurationLimits control; it runs at its own rate")
        }
        let lo = Int64(info.minimum ?? 0), hi = Int64(info.maximum ?? .greatestFiniteMagnitude)
        let minUS = Int64(minimum.seconds * 1e6), maxUS = Int64(maximum.seconds * 1e6)
        guard minUS <= maxUS, minUS >= lo, maxUS <= hi else {
            throw CaptureError.outOfRange(name: "frame duration", value: "\(minUS)–\(maxUS) µs", allowed: "\(lo)–\(hi) µs, minimum ≤ maximum")
        }
        try apply(["FrameDurationLimits": [Double(minUS), Double(maxUS)]])
        state.withLock { $0.minFrameDuration = minimum; $0.maxFrameDuration = maximum }
    }

    // MARK: Focus

    public var focusMode: FocusMode? { state.withLock { $0.focusMode } }

    public func isFocusModeSupported(_ mode: FocusMode) -> Bool {
        guard let af = controlInfo["AfMode"] else { return mode == .locked && has("LensPosition") }
        let wanted: Double = switch mode {
        case .locked: 0
        case .autoFocus: 1
        case .continuousAutoFocus: 2
        }
        if !af.values.isEmpty { return af.values.contains(wanted) }
        return (af.minimum ?? 0) <= wanted && wanted <= (af.maximum ?? 0)
    }

    /// AfMode: locked (manual) 0, auto 1, continuous 2.
    public func setFocusMode(_ mode: FocusMode) throws {
        try requireLock("setFocusMode")
        guard isFocusModeSupported(mode) else {
            throw CaptureError.unsupported(feature: "focus mode \(mode)", device: description,
                                           why: has("AfMode") ? "AfMode does not offer it" : "the camera has no autofocus (no AfMode control)")
        }
        if has("AfMode") {
            try apply(["AfMode": [mode == .locked ? 0 : mode == .autoFocus ? 1 : 2]])
        }
        state.withLock { $0.focusMode = mode }
    }

    /// Starts an autofocus scan (AfTrigger) in auto mode.
    public func triggerAutoFocus() throws {
        try requireLock("triggerAutoFocus")
        guard has("AfTrigger") else {
            throw CaptureError.unsupported(feature: "autofocus trigger", device: description, why: "the camera has no AfTrigger control")
        }
        try apply(["AfTrigger": [0]])
    }

    public var isLensPositionSupported: Bool { has("LensPosition") }

    /// Sets the lens position (dioptres, LensPosition) in locked focus.
    public func setLensPosition(_ dioptres: Double) throws {
        try setScalar("LensPosition", dioptres, call: "setLensPosition", feature: "lens position", name: "lens position")
    }

    public var isFocusPointOfInterestSupported: Bool { has("AfWindows") && controlInfo["AfWindows"]?.maximumRectangle != nil }

    /// Focus point of interest in normalised coordinates (0…1, top left origin):
    /// an AfWindows window of an eighth of the frame around it, metering on windows.
    public func setFocusPointOfInterest(x: Double, y: Double) throws {
        try requireLock("setFocusPointOfInterest")
        guard isFocusPointOfInterestSupported, let area = controlInfo["AfWindows"]?.maximumRectangle else {
            throw CaptureError.unsupported(feature: "focus point of interest", device: description, why: "the camera has no AfWindows control")
        }
        guard (0...1).contains(x), (0...1).contains(y) else {
            throw CaptureError.outOfRange(name: "point of interest", value: "(\(x), \(y))", allowed: "0…1 on both axes")
        }
        let w = area[2] / 8, h = area[3] / 8
        let left = min(max(area[0] + Int(Double(area[2]) * x) - w / 2, area[0]), area[0] + area[2] - w)
        let top = min(max(area[1] + Int(Double(area[3]) * y) - h / 2, area[1]), area[1] + area[3] - h)
        var values: [String: [Double]] = ["AfWindows": [Double(left), Double(top), Double(w), Double(h)]]
        if has("AfMetering") { values["AfMetering"] = [1] }
        try apply(values)
    }

    // MARK: Exposure

    public var exposureMode: ExposureMode? { state.withLock { $0.exposureMode } }

    /// AeEnable before libcamera 0.5, ExposureTimeMode/AnalogueGainMode from 0.5.
    var hasAutoExposureSwitch: Bool { has("AeEnable") || has("ExposureTimeMode") }

    public func isExposureModeSupported(_ mode: ExposureMode) -> Bool {
        switch mode {
        case .continuousAutoExposure, .locked: hasAutoExposureSwitch
        case .custom: hasAutoExposureSwitch && has("ExposureTime") && has("AnalogueGain")
        }
    }

    private func autoExposure(_ on: Bool) -> [String: [Double]] {
        if has("AeEnable") { return ["AeEnable": [on ? 1 : 0]] }
        var values: [String: [Double]] = ["ExposureTimeMode": [on ? 0 : 1]]
        if has("AnalogueGainMode") { values["AnalogueGainMode"] = [on ? 0 : 1] }
        return values
    }

    public func setExposureMode(_ mode: ExposureMode) throws {
        try requireLock("setExposureMode")
        guard isExposureModeSupported(mode) else {
            throw CaptureError.unsupported(feature: "exposure mode \(mode)", device: description,
                                           why: "the camera has no AeEnable/ExposureTimeMode control")
        }
        guard mode != .custom else {
            throw CaptureError.outOfRange(name: "exposure mode", value: "custom",
                                          allowed: "set it with setExposureModeCustom(duration:iso:)")
        }
        try apply(autoExposure(mode == .continuousAutoExposure))
        state.withLock { $0.exposureMode = mode }
    }

    /// Custom exposure: a fixed exposure time and an ISO (100 × analogue gain).
    public func setExposureModeCustom(duration: Duration, iso: Double) throws {
        try requireLock("setExposureModeCustom")
        guard isExposureModeSupported(.custom), let time = controlInfo["ExposureTime"], let gain = controlInfo["AnalogueGain"] else {
            throw CaptureError.unsupported(feature: "custom exposure", device: description,
                                           why: "the camera lacks ExposureTime or AnalogueGain")
        }
        let micros = duration.seconds * 1e6
        try check("exposure time (µs)", micros, time)
        try check("analogue gain (ISO/100)", iso / 100, gain)
        var values = autoExposure(false)
        values["ExposureTime"] = [micros.rounded()]
        values["AnalogueGain"] = [iso / 100]
        try apply(values)
        state.withLock { $0.exposureMode = .custom }
    }

    public var isExposureTargetBiasSupported: Bool { has("ExposureValue") }
    public var minExposureTargetBias: Double? { controlInfo["ExposureValue"]?.minimum }
    public var maxExposureTargetBias: Double? { controlInfo["ExposureValue"]?.maximum }

    /// Exposure target bias in EV (ExposureValue).
    public func setExposureTargetBias(_ ev: Double) throws {
        try setScalar("ExposureValue", ev, call: "setExposureTargetBias", feature: "exposure target bias",
                      name: "exposure target bias (EV)")
    }

    /// libcamera has no metering-window control, so no camera offers this yet.
    public var isExposurePointOfInterestSupported: Bool { has("AeMeteringWindows") }

    public func setExposurePointOfInterest(x: Double, y: Double) throws {
        try requireLock("setExposurePointOfInterest")
        throw CaptureError.unsupported(feature: "exposure point of interest", device: description,
                                       why: "libcamera offers no metering-window control for this camera (only AeMeteringMode presets)")
    }

    // MARK: Zoom

    public var isZoomSupported: Bool { controlInfo["ScalerCrop"]?.maximumRectangle != nil }
    public var maxAvailableVideoZoomFactor: Double { isZoomSupported ? 8 : 1 }
    public var videoZoomFactor: Double { state.withLock { $0.zoomFactor } }

    /// Zooms by cropping the sensor (ScalerCrop), centred.
    public func setVideoZoomFactor(_ factor: Double) throws {
        try requireLock("setVideoZoomFactor")
        guard let area = controlInfo["ScalerCrop"]?.maximumRectangle else {
            throw CaptureError.unsupported(feature: "zoom", device: description, why: "the camera has no ScalerCrop control")
        }
        guard factor >= 1, factor <= maxAvailableVideoZoomFactor else {
            throw CaptureError.outOfRange(name: "zoom factor", value: "\(factor)", allowed: "1…\(maxAvailableVideoZoomFactor)")
        }
        let w = Int(Double(area[2]) / factor), h = Int(Double(area[3]) / factor)
        let x = area[0] + (area[2] - w) / 2, y = area[1] + (area[3] - h) / 2
        try apply(["ScalerCrop": [Double(x), Double(y), Double(w), Double(h)]])
        state.withLock { $0.zoomFactor = factor }
    }

    // MARK: Image adjustments

    public func isImageAdjustmentSupported(_ adjustment: ImageAdjustment) -> Bool { has(adjustment.rawValue) }

    public func range(of adjustment: ImageAdjustment) -> ClosedRange<Double>? {
        guard let info = controlInfo[adjustment.rawValue], let lo = info.minimum, let hi = info.maximum else { return nil }
        return lo...hi
    }

    /// Brightness (-1…1), contrast and saturation (1 = normal), where offered.
    public func setImageAdjustment(_ adjustment: ImageAdjustment, _ value: Double) throws {
        let name = adjustment.rawValue.lowercased()
        try setScalar(adjustment.rawValue, value, call: "setImageAdjustment", feature: name, name: name)
    }

    /// One numeric control: needs the lock, must exist, must be in range.
    private func setScalar(_ control: String, _ value: Double, call: String, feature: String, name: String) throws {
        try requireLock(call)
        guard let info = controlInfo[control] else {
            throw CaptureError.unsupported(feature: feature, device: description, why: "the camera has no \(control) control")
        }
        try check(name, value, info)
        try apply([control: [value]])
    }

    private func check(_ name: String, _ value: Double, _ info: CameraControlInfo) throws {
        if let lo = info.minimum, let hi = info.maximum, lo < hi, !(lo...hi).contains(value) {
            throw CaptureError.outOfRange(name: name, value: "\(value)", allowed: "\(lo)…\(hi)")
        }
    }

    // MARK: Session hooks

    /// Controls to send after configuring, before starting.
    func controlsForStart() -> [String: [Double]] {
        state.withLock { s in
            s.running = true
            return s.controls
        }
    }

    func stopped() { state.withLock { $0.running = false } }
}
