import ObscuraMedia

/// Errors of the capture API. Each names what was wrong and what is allowed.
public enum CaptureError: Error, CustomStringConvertible, Equatable {
    case notLocked(device: String, call: String)
    case unsupported(feature: String, device: String, why: String)
    case outOfRange(name: String, value: String, allowed: String)
    case wrongState(call: String, state: String, allowed: String)
    case cannotAddInput(String)
    case cannotAddOutput(String)
    case noInput
    case configurationInvalid(String)
    case deviceUnavailable(String)

    public var description: String {
        switch self {
        case .notLocked(let device, let call):
            "\(call) needs the configuration lock of \(device); call lockForConfiguration() first"
        case .unsupported(let feature, let device, let why):
            "\(device) does not support \(feature): \(why)"
        case .outOfRange(let name, let value, let allowed):
            "\(name) \(value) is out of range; allowed: \(allowed)"
        case .wrongState(let call, let state, let allowed):
            "\(call) is not allowed while the session is \(state) (allowed when \(allowed))"
        case .cannotAddInput(let why): "cannot add the input: \(why)"
        case .cannotAddOutput(let why): "cannot add the output: \(why)"
        case .noInput: "the session has no input; add a CaptureDeviceInput first"
        case .configurationInvalid(let why): "the camera refused the configuration: \(why)"
        case .deviceUnavailable(let id): "the camera \"\(id)\" is not available (unplugged or unbound)"
        }
    }
}
