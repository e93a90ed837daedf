import Foundation
import ObscuraSystem
import struct Synchronization.Atomic
#if canImport(Glibc)
import Glibc
#endif

/// The service's control socket: a Unix stream socket; a client writes one
/// command line and reads one reply line (JSON), then the connection ends.
/// Access is by file permissions: the socket is 0660, owned by the service's
/// group, so members of that group (and root) may control the recorder.
/// Connections are served one at a time on a thread of its own, which holds
/// the socket and the handler but not the server; `close()` (or deinit)
/// wakes it, joins it, then closes the socket.
public final class ControlServer: Sendable {
    public let path: String
    private let socket: OwnedFileDescriptor
    private let wakeup: Wakeup
    private let thread: JoinableThread
    /// Where replies are made: a thread of their own, so that a command is
    /// answered even while Swift's pool is busy.
    private let replies: ThreadExecutor
    private let closed = Atomic<Bool>(false)

    /// `handler` answers one command line; it runs as a task of its own, so
    /// it may await the service (the server's thread never waits for it).
    public init(path: String, group: String? = nil, handler: @escaping @Sendable (String) async -> String) throws {
        self.path = path
        let directory = (path as NSString).deletingLastPathComponent
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        unlink(path)
        let fd = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
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
        let socket = OwnedFileDescriptor(adopting: fd), wakeup = try Wakeup()
        self.socket = socket
        self.wakeup = wakeup
        let replies = try ThreadExecutor(name: "obscura-reply")
        self.replies = replies
        thread = try JoinableThread(name: "obscura-control") { Self.serve(socket, wakeup, replies, handler) }
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

    /// Answers connections until woken: the server's thread.
    private static func serve(_ socket: OwnedFileDescriptor, _ wakeup: Wakeup, _ replies: ThreadExecutor, _ handler: @escaping @Sendable (String) async -> String) {
        while true {
            guard let readable = try? wakeup.wait(for: socket.rawValue, timeout: nil), !wakeup.isSignalled else { return }
            guard readable else { continue }
            let client = accept(socket.rawValue, nil, nil)
            if client < 0 { continue }  // EINTR, or a client that went away (ECONNABORTED)
            _ = fcntl(client, F_SETFD, FD_CLOEXEC)
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
            // The reply is written by the task that makes it; the socket never
            // blocks it (a client that does not read loses its reply).
            let connection = OwnedFileDescriptor(adopting: client)
            _ = fcntl(client, F_SETFL, fcntl(client, F_GETFL) | O_NONBLOCK)
            // The task holds the executor it prefers until it ends.
            Task(executorPreference: replies) { [replies] in
                defer { withExtendedLifetime(replies) {} }
                let reply = await handler(line) + "\n"
                _ = reply.withCString { write(connection.rawValue, $0, strlen($0)) }
                connection.close()
            }
        }
    }

    /// Stops answering: the thread is woken and joined (a connection being
    /// answered is finished first), then the socket is closed and removed.
    public func close() {
        guard !closed.exchange(true, ordering: .relaxed) else { return }
        wakeup.signal()
        thread.join()
        socket.close()
        unlink(path)
    }

    deinit { close() }

    /// Sends one command and returns the reply (for `obscura status`/`ctl`).
    public static func send(_ command: String, to path: String, timeout: Duration = .seconds(30)) throws -> String {
        let fd = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
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
