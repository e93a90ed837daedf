#if canImport(Glibc)
import Glibc
#endif
import ObscuraSystem

/// The service's control socket, from the client's side: what `obscura
/// status` and `obscura ctl` send, one line each way.
public enum ControlClient {
    /// Sends one command and returns the reply (for `obscura status`/`ctl`);
    /// throws `ControlReplyTimeout` when none comes within `timeout`.
    public static func send(_ command: String, to path: String, timeout: Duration = .seconds(30)) throws -> String {
        let socket = try Syscalls.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), what: "AF_UNIX")
        let fd = socket.rawValue
        try Syscalls.connect(fd, unixPath: path)
        try Syscalls.setReceiveTimeout(fd, seconds: Int(timeout.components.seconds), what: path)
        try Syscalls.sendAll(fd, Array((command + "\n").utf8), flags: Int32(MSG_NOSIGNAL), what: path)
        var data = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n: Int
            do {
                n = try buffer.withUnsafeMutableBytes { b throws(SystemError) in try Syscalls.read(fd, into: b, path: path) }
            } catch let error as SystemError where error.code == EAGAIN || error.code == EWOULDBLOCK {
                // SO_RCVTIMEO ran out: the recorder took the command and is too busy to answer.
                throw ControlReplyTimeout(path: path, seconds: timeout.components.seconds)
            }
            if n == 0 { break }
            data += buffer[0..<n]
        }
        return String(decoding: data, as: UTF8.self).trimmingWhitespace
    }
}

/// A recorder that took a command on its control socket and did not answer
/// within the client's time (a board starved of CPU can be that slow).
public struct ControlReplyTimeout: Error, CustomStringConvertible, Sendable {
    public let path: String
    public let seconds: Int64
    public var description: String {
        "the recorder at \(path) took the command but did not answer within \(seconds) s (read: SO_RCVTIMEO ran out); it is running, but busy"
    }
}
