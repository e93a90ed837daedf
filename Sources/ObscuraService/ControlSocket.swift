import Foundation
import ObscuraSystem
#if canImport(Glibc)
import Glibc
#endif

/// The service's control socket: a Unix stream socket; a client writes one
/// command line and reads one reply line (JSON), then the connection ends.
/// Access is by file permissions: the socket is 0660, owned by the service's
/// group, so members of that group (and root) may control the recorder.
public final class ControlServer: @unchecked Sendable {
    public let path: String
    private let fd: Int32
    private var thread: Thread?
    private let handler: @Sendable (String) -> String

    public init(path: String, group: String? = nil, handler: @escaping @Sendable (String) -> String) throws {
        self.path = path
        self.handler = handler
        let directory = (path as NSString).deletingLastPathComponent
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        unlink(path)
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SystemError.errno("socket", "AF_UNIX") }
        var address = try Self.address(path)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0 else {
            let e = SystemError.errno("bind", path)
            Glibc.close(fd)
            throw e
        }
        chmod(path, 0o660)
        if let group, let g = getgrnam(group) { chown(path, getuid(), g.pointee.gr_gid) }
        guard listen(fd, 8) == 0 else {
            let e = SystemError.errno("listen", path)
            Glibc.close(fd)
            throw e
        }
        self.fd = fd
        let thread = Thread { [self] in serve() }
        thread.name = "obscura.control"
        self.thread = thread
        thread.start()
    }

    static func address(_ path: String) throws -> sockaddr_un {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            throw SystemError(call: "bind", code: ENAMETOOLONG, detail: path)
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in for (i, b) in bytes.enumerated() { raw[i] = b } }
        return address
    }

    private func serve() {
        while true {
            let client = accept(fd, nil, nil)
            if client < 0 {
                if errno == EINTR { continue }
                return // closed
            }
            var timeout = timeval(tv_sec: 2, tv_usec: 0)
            setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            var data = [UInt8]()
            var buffer = [UInt8](repeating: 0, count: 512)
            while !data.contains(10), data.count < 4096 {
                let n = read(client, &buffer, buffer.count)
                if n <= 0 { break }
                data += buffer[0..<n]
            }
            let line = String(decoding: data.prefix { $0 != 10 }, as: UTF8.self).trimmingCharacters(in: .whitespaces)
            let reply = handler(line) + "\n"
            _ = reply.withCString { write(client, $0, strlen($0)) }
            Glibc.close(client)
        }
    }

    public func close() {
        shutdown(fd, Int32(SHUT_RDWR))
        Glibc.close(fd)
        unlink(path)
    }

    /// Sends one command and returns the reply (for `obscura status`/`ctl`).
    public static func send(_ command: String, to path: String, timeout: Duration = .seconds(30)) throws -> String {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SystemError.errno("socket", "AF_UNIX") }
        defer { Glibc.close(fd) }
        var address = try address(path)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else { throw SystemError.errno("connect", path) }
        var tv = timeval(tv_sec: Int(timeout.components.seconds), tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        let line = command + "\n"
        guard line.withCString({ write(fd, $0, strlen($0)) }) >= 0 else { throw SystemError.errno("write", path) }
        var data = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = read(fd, &buffer, buffer.count)
            if n < 0 { throw SystemError.errno("read", path) }
            if n == 0 { break }
            data += buffer[0..<n]
        }
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
