import ObscuraMedia

/// Flash modes, as on a camera: off, on (every photo), auto (when the scene
/// is dark).
public enum FlashMode: String, Sendable, CaseIterable, Codable {
    case auto, on, off

    /// The flash button's cycle: auto → on → off → auto.
    public var next: FlashMode {
        switch self {
        case .auto: .on
        case .on: .off
        case .off: .auto
        }
    }

}

/// A flash the photo output can fire. libcamera has no flash control, so the
/// flash is the application's: here a GPIO line.
public protocol FlashUnit: AnyObject, Sendable {
    /// Whether a photo of `frame` in `mode` needs the flash.
    func shouldFire(_ mode: FlashMode, for frame: VideoFrame?) -> Bool
    /// Lights the flash (or torch) until `off()`.
    func on() throws
    func off() throws
}

extension FlashUnit {
    public func shouldFire(_ mode: FlashMode, for frame: VideoFrame?) -> Bool {
        switch mode {
        case .on: true
        case .off: false
        case .auto: frame.map { SceneBrightness.isDark($0) } ?? false
        }
    }
}

/// Scene brightness from a frame: the sensor's lux estimate when the camera
/// reports one, else the mean of sampled luma (or RGB) values.
public enum SceneBrightness {
    /// Below this, a scene is dark (lux, as libcamera's Lux metadata).
    public static let darkLux = 50.0
    /// Below this mean sample value (0–255), a scene is dark.
    public static let darkMean = 60.0

    public static func isDark(_ frame: VideoFrame) -> Bool {
        if let lux = frame.metadata.lux { return lux < darkLux }
        return meanSample(frame) < darkMean
    }

    /// Mean of every 16th sample of the first plane (luma for YUV).
    public static func meanSample(_ frame: VideoFrame) -> Double { frame.meanOfFirstPlane(every: 16) }
}

