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
/// Connections are read side by side on a thread of its own (one poll over
/// all of them), which holds the socket and the handler but not the server;
/// `close()` (or deinit) wakes it, joins it, ends and joins the replies'
/// thread, then closes the socket. A client
/// cannot hold up another: each has `lineDeadline` to send a line of at most
/// `maxLineBytes`, replies never block, and a client that hangs up before its
/// reply raises no SIGPIPE.
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
    /// `threads` names the server's thread and its replies' (at most 15
    /// bytes each, as the kernel keeps them).
    public init(path: String, group: String? = nil, threads: (server: String, replies: String) = ("obscura-control", "obscura-reply"),
                handler: @escaping @Sendable (String) async -> String) throws {
        self.path = path
        let directory = (path as NSString).deletingLastPathComponent
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try Syscalls.remove(path)
        // Non-blocking: the server's thread accepts until none is left.
        let socket = try Syscalls.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), what: "AF_UNIX")
        try Syscalls.bind(socket.rawValue, unixPath: path, mode: 0o660)
        accessNote = try Self.giveToGroup(path, group)
        try Syscalls.listen(socket.rawValue, what: path)
        let wakeup = try Wakeup()
        self.socket = socket
        self.wakeup = wakeup
        let replies = try ThreadExecutor(name: threads.replies)
        self.replies = replies
        thread = try JoinableThread(name: threads.server) { Self.serve(socket, wakeup, replies, handler) }
    }

    /// Why the group cannot reach the socket, when it cannot: the service
    /// may not give the socket to a group it is not in (EPERM), and then
    /// only its own group and root may control it. Nil when it could.
    public let accessNote: String?

    /// Gives the socket to `group`; a group that does not exist, or one the
    /// service may not give files to, is a note, not a failure.
    private static func giveToGroup(_ path: String, _ group: String?) throws(SystemError) -> String? {
        guard let group else { return nil }
        guard let id = try Syscalls.groupID(group) else { return "\(path): no group \(group) on this system, so only the service's own group may use it" }
        do throws(SystemError) {
            try Syscalls.setGroup(path, id)
        } catch {
            guard error.code == EPERM else { throw error }
            return "\(path) could not be given to group \(group) (\(error)), so only the service's own group may use it"
        }
        return nil
    }

    /// The longest command line, in bytes (a longer one is refused).
    public static let maxLineBytes = 1024
    /// How long a client has to send its line after connecting.
    public static let lineDeadline: Duration = .seconds(1)
    /// Clients waiting to send a line at once; a new one beyond this pushes
    /// out the one that has waited longest.
    public static let maxWaitingClients = 256

    /// A client that has connected and not yet sent its whole line.
    private struct Waiting {
        let connection: OwnedFileDescriptor
        var data: [UInt8] = []
        let deadline: ContinuousClock.Instant
    }

    /// Answers connections until woken: the server's thread. Every client is
    /// read side by side in one poll, so a silent or slow client delays no
    /// other; each has `lineDeadline` to send one line (LF or CRLF, at most
    /// `maxLineBytes`). Replies are sent by the task that makes them, never
    /// blocking and never raising SIGPIPE.
    private static func serve(_ socket: OwnedFileDescriptor, _ wakeup: Wakeup, _ replies: ThreadExecutor,
                              _ handler: @escaping @Sendable (String) async -> String) {
        let clock = ContinuousClock()
        var waiting: [Waiting] = []
        var buffer = [UInt8](repeating: 0, count: 512)
        while true {
            var fds = [pollfd(fd: wakeup.fd, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: socket.rawValue, events: Int16(POLLIN), revents: 0)]
            fds += waiting.map { pollfd(fd: $0.connection.rawValue, events: Int16(POLLIN), revents: 0) }
            let now = clock.now
            let timeout: Int32 = waiting.map(\.deadline).min().map { deadline in
                let left = now.duration(to: deadline)
                return Int32(clamping: max(0, left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000 + 1))
            } ?? -1
            guard (try? Syscalls.poll(&fds, milliseconds: timeout, what: "the control socket and its clients")) != nil else { return }
            if fds[0].revents != 0 { return }  // close(): the waiting clients are closed with their descriptors
            let after = clock.now
            var still: [Waiting] = []
            for (index, var client) in waiting.enumerated() {
                if fds[index + 2].revents != 0 {
                    let read = buffer.withUnsafeMutableBytes { b in
                        Result { () throws(SystemError) in try Syscalls.read(client.connection.rawValue, into: b, path: "a control client") }
                    }
                    let n = (try? read.get()) ?? -1
                    if n > 0 {
                        client.data += buffer[0..<n]
                        if let newline = client.data.firstIndex(of: 10), newline <= maxLineBytes {
                            answer(Array(client.data[..<newline]), on: client.connection, replies, handler)
                            continue
                        }
                        if client.data.count > maxLineBytes {
                            refuse(client.connection, "the command line is longer than \(maxLineBytes) bytes")
                            continue
                        }
                    } else if n == 0 {
                        // The client ended its side: what it sent is its line.
                        if !client.data.isEmpty { answer(client.data, on: client.connection, replies, handler) }
                        continue
                    } else if case .failure(let e) = read, e.code != EAGAIN {
                        continue  // gone: its descriptor closes here
                    }
                }
                if after >= client.deadline {
                    refuse(client.connection, "no command line within \(lineDeadline)")
                    continue
                }
                still.append(client)
            }
            waiting = still
            guard fds[1].revents & Int16(POLLIN) != 0 else { continue }
            while true {
                let fd = acceptConnection(socket.rawValue)
                if fd < 0 { break }  // EAGAIN: none left; ECONNABORTED: one that went away
                waiting.append(Waiting(connection: OwnedFileDescriptor(adopting: fd), deadline: after + lineDeadline))
                if waiting.count > maxWaitingClients { waiting.removeFirst() }
            }
        }
    }

    /// Runs the handler for one line (a trailing CR and blanks are dropped)
    /// and sends its reply.
    private static func answer(_ bytes: [UInt8], on connection: OwnedFileDescriptor, _ replies: ThreadExecutor,
                               _ handler: @escaping @Sendable (String) async -> String) {
        let line = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        // The task holds the executor it prefers until it ends.
        Task(executorPreference: replies) { [replies] in
            defer { withExtendedLifetime(replies) {} }
            sendReply(await handler(line), to: connection)
        }
    }

    private static func refuse(_ connection: OwnedFileDescriptor, _ why: String) {
        sendReply(#"{"message":"\#(why)","ok":false}"#, to: connection)
    }

    /// One reply line, without blocking (a client that does not read loses
    /// it) and without SIGPIPE (one that has gone costs nothing); then the
    /// connection ends.
    private static func sendReply(_ reply: String, to connection: OwnedFileDescriptor) {
        try? Syscalls.sendAll(connection.rawValue, Array((reply + "\n").utf8), flags: Int32(MSG_NOSIGNAL | MSG_DONTWAIT),
                              what: "a control client")
        connection.close()
    }

    /// Stops answering: the thread is woken and joined (a connection being
    /// answered is finished first), then the socket is closed and removed.
    public func close() {
        guard !closed.exchange(true, ordering: .relaxed) else { return }
        wakeup.signal()
        thread.join()
        // The replies' thread ends with the server, not with the last task
        // that preferred it (which would release it on that very thread).
        replies.shutDown()
        socket.close()
        try? Syscalls.remove(path)  // (a socket left is removed at the next start)
    }

    deinit { close() }
}
