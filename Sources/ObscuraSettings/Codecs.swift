import ObscuraMedia
import ObscuraSystem

/// The vocabulary of what is recorded: the codecs and the containers, named
/// as the configuration names them. (Here, not beside their encoders and
/// muxers, so that commands which only read a configuration load no FFmpeg.)

/// Video codecs Obscura encodes.
public enum VideoCodec: String, Sendable, CaseIterable, CustomStringConvertible {
    case h264, hevc, prores422, mjpeg
    /// vicodec's codec (a V4L2 test codec), for the hardware path off a real
    /// board; written as an elementary stream.
    case fwht
    public var description: String { rawValue }

    /// Camera formats the codec may record from, nil for any. ProRes 422 is
    /// offered only from a 10-bit 4:2:2 active format ('x422', TN3104):
    /// anything else would be upsampled 8-bit video in a 10-bit container.
    public var requiredInputs: [PixelFormat]? {
        self == .prores422 ? [.p210] : nil
    }

    /// Whether the codec may record frames of `format`.
    public func accepts(_ format: PixelFormat) -> Bool { requiredInputs.map { $0.contains(format) } ?? true }
}

public enum AudioCodec: String, Sendable, CaseIterable {
    /// AAC-LC, FFmpeg's native encoder: MP4, MOV and MKV.
    case aac
    /// Opus (libopus), 48 kHz: MKV only.
    case opus
}

/// Movie containers.
public enum MovieContainer: String, Sendable, CaseIterable {
    case mp4, mov, mkv
    /// No container: the encoder's packets one after another (an H.264
    /// Annex B stream, or a codec no container knows, such as FWHT).
    case elementary

    /// The file name extensions that say this container.
    public var pathExtensions: [String] {
        switch self {
        case .mp4: ["mp4", "m4v"]
        case .mov: ["mov"]
        case .mkv: ["mkv"]
        case .elementary: ["fwht", "h264", "264", "hevc", "265", "es"]
        }
    }

    /// The container a file name says: its extension, or the one before
    /// `.age` for an encrypted file (`x.mp4.age`).
    public init?(path: String) {
        var name = Paths.name(path)
        if name.lowercased().hasSuffix(".age") { name.removeLast(4) }
        self.init(pathExtension: Paths.fileExtension(name))
    }

    /// Whether a file name is an encrypted (age) file's.
    public static func isEncrypted(path: String) -> Bool { path.lowercased().hasSuffix(".age") }

    public init?(pathExtension: String) {
        guard let named = Self.allCases.first(where: { $0.pathExtensions.contains(pathExtension.lowercased()) }) else { return nil }
        self = named
    }
}

