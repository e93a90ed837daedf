import CFFmpeg
#if canImport(Glibc)
import Glibc
#endif

/// An error from an FFmpeg call, naming the call and FFmpeg's own message.
public struct FFmpegError: Error, CustomStringConvertible, Sendable {
    public let call: String
    public let code: Int32
    public let detail: String

    public init(call: String, code: Int32, detail: String = "") {
        self.call = call
        self.code = code
        self.detail = detail
    }

    public var description: String {
        var buffer = [CChar](repeating: 0, count: 256)
        av_strerror(code, &buffer, buffer.count)
        let message = buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        return "\(call) failed" + (detail.isEmpty ? "" : " (\(detail))") + ": \(message)"
    }
}


public func check(_ result: Int32, _ call: String, _ detail: @autoclosure () -> String = "") throws(FFmpegError) {
    if result < 0 { throw FFmpegError(call: call, code: result, detail: detail()) }
}

public let averrorEAGAIN = obscura_averror(EAGAIN)
public let averrorEOF = obscura_averror_eof()

/// FFmpeg's own logging: warnings and errors only, unless OBSCURA_FFMPEG_LOG
/// names a level ("info", "verbose", "debug").
public enum FFmpegLog {
    public static func quietByDefault() {
        let levels: [String: Int32] = ["quiet": -8, "error": 16, "warning": 24, "info": 32, "verbose": 40, "debug": 48]
        let chosen = getenv("OBSCURA_FFMPEG_LOG").flatMap { levels[String(cString: $0)] } ?? 24
        av_log_set_level(chosen)
    }
}
