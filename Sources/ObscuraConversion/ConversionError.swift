import ObscuraMedia

/// A pixel format FFmpeg's conversions do not know.
public enum ConversionError: Error, CustomStringConvertible, Equatable, Sendable {
    case unknownFormat(PixelFormat)

    public var description: String {
        switch self {
        case .unknownFormat(let format): "no conversion from pixel format \(format) is known to FFmpeg"
        }
    }
}
