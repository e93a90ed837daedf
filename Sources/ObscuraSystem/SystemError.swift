#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An error from a call into the operating system or a C library, naming the
/// call that failed and what it was doing.
///
/// `call` is the function (`"mmap"`, `"Camera::configure()"`, `"avcodec_open2"`),
/// `code` the errno (or the library's own code), `detail` what it was asked.
public struct SystemError: Error, CustomStringConvertible, Sendable, Equatable {
    public let call: String
    public let code: Int32
    public let detail: String

    public init(call: String, code: Int32, detail: String = "") {
        self.call = call
        self.code = code
        self.detail = detail
    }

    /// Captures the current `errno`.
    public static func errno(_ call: String, _ detail: String = "") -> SystemError {
        SystemError(call: call, code: Glibc.errno, detail: detail)
    }

    public var description: String {
        var text = "\(call) failed"
        if !detail.isEmpty { text += " (\(detail))" }
        if code != 0 { text += ": \(String(cString: strerror(code))) (errno \(code))" }
        return text
    }
}

/// An error carrying a message from a C shim that already names the call.
public struct ShimError: Error, CustomStringConvertible, Sendable {
    public let message: String
    public let code: Int32
    public init(message: String, code: Int32) {
        self.message = message
        self.code = code
    }
    public var description: String { message }

    /// Runs `body` with an error buffer for a shim call; throws when it
    /// returns a negative errno.
    @discardableResult
    public static func check(_ fallback: String, _ body: (UnsafeMutablePointer<CChar>, Int) -> Int32) throws(ShimError) -> Int32 {
        var buffer = [CChar](repeating: 0, count: 512)
        let result = buffer.withUnsafeMutableBufferPointer { body($0.baseAddress!, $0.count) }
        if result < 0 {
            let text = buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
            let message = text.isEmpty ? "\(fallback) failed: \(String(cString: strerror(-result)))" : text
            throw ShimError(message: message, code: -result)
        }
        return result
    }
}
