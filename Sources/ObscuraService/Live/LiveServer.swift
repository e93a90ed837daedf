import Foundation
import ObscuraRecording
import ObscuraSystem
import struct Synchronization.Atomic
#if canImport(Glibc)
import Glibc
#endif

/// The live view's socket: a Unix stream socket (0660, group `obscura-view`
/// when it exists), which only the SSH server's view account reaches
/// (`obscura view-serve`). No network port is opened.
///
/// The wire format is `LiveStream`'s. A viewer's line, `view NAME` (NAME:
/// who watches, e.g. the SSH key's comment, for the journal), must come
/// within `helloDeadline`; it is refused when that line is something else
/// or `LiveFeed`'s limit is reached.
///
/// Each viewer has a sender thread of its own, which blocks only on that
/// viewer's socket: a stalled viewer holds up nothing else, and its queue
/// (`LiveFeed`) skips ahead while it is stalled. Nothing a viewer sends
/// after its line is read. `changed` is called (on a sender's thread) when
/// a viewer comes or goes, with its name and whether it came. `close()` (or deinit) ends every connection and
/// joins every thread.
public final class LiveServer: Sendable {
    public let path: String
    private let socket: OwnedFileDescriptor
    private let wakeup: Wakeup
    private let thread: JoinableThread
    private let closed = Atomic<Bool>(false)
    private let senders: Senders

    /// The viewers' threads and connections. `@unchecked Sendable`: every
    /// stored property is guarded by `lock`.
    final class Senders: @unchecked Sendable {
        struct Sender {
            let thread: JoinableThread
            let connection: OwnedFileDescriptor
        }
        let lock = NSLock()
        var running: [Int: Sender] = [:]
        var finished: [Int] = []
        var closing = false
        var isClosing: Bool { lock.withLock { closing } }
    }

    /// Who watches, and whether they came or went (`ViewerChange`).
    public typealias Changed = @Sendable (ViewerChange) -> Void
    public enum ViewerChange: Sendable {
        case came(String)
        case went(String, LiveFeed.Counts)
        case refused(String, String)
    }

    /// How long a viewer has to send its line.
    public static let helloDeadline: Duration = .seconds(2)

    /// Why the view account cannot reach the socket, when it cannot (nil
    /// when it can, or when there is no such account here).
    public let accessNote: String?

    public init(path: String, group: String? = "obscura-view", feed: LiveFeed, codec: String,
                changed: @escaping Changed) throws {
        self.path = path
        try? FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try Syscalls.remove(path)
        let socket = try Syscalls.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), what: "AF_UNIX")
        try Syscalls.bind(socket.rawValue, unixPath: path, mode: 0o660)
        accessNote = Self.groupNote(path: path, group: group)
        try Syscalls.listen(socket.rawValue, what: path)
        let wakeup = try Wakeup()
        let senders = Senders()
        self.socket = socket
        self.wakeup = wakeup
        self.senders = senders
        let header = LiveStream.Header(ok: true, codec: codec)
        thread = try JoinableThread(name: "obscura-live") {
            Self.accept(socket, wakeup, senders, feed, header, changed)
        }
    }

    /// The socket takes its folder's group when the folder is setgid (as
    /// deploy/obscura.tmpfiles makes /run/obscura-live); it is not changed
    /// here, since the service may not chown. A note when it is not `group`.
    static func groupNote(path: String, group: String?) -> String? {
        guard let group else { return nil }
        do {
            guard let id = try Syscalls.groupID(group) else { return nil }
            guard try Syscalls.status(path).st_gid != id else { return nil }
        } catch {
            return "cannot read \(path)'s group: \(error)"
        }
        return "\(path) is not group \(group)'s, so the live view account cannot reach it: its folder should be group \(group) and setgid (deploy/obscura.tmpfiles makes /run/obscura-live so)"
    }

    /// Accepts viewers until woken by `close()`; joins senders that ended.
    private static func accept(_ socket: OwnedFileDescriptor, _ wakeup: Wakeup, _ senders: Senders, _ feed: LiveFeed,
                               _ header: LiveStream.Header, _ changed: @escaping Changed) {
        var nextID = 0
        while true {
            let readable = (try? wakeup.wait(for: socket.rawValue, timeout: nil)) ?? false
            if wakeup.isSignalled {
                wakeup.drain()
                reap(senders)
                if senders.isClosing { return }
            }
            guard readable else { continue }
            while true {
                let fd = acceptConnection(socket.rawValue)
                if fd < 0 { break }
                nextID += 1
                serve(OwnedFileDescriptor(adopting: fd), id: nextID, senders, wakeup, feed, header, changed)
            }
        }
    }

    /// One viewer: refused when the feed is full, else its sender started.
    private static func serve(_ connection: OwnedFileDescriptor, id: Int, _ senders: Senders, _ wakeup: Wakeup,
                              _ feed: LiveFeed, _ header: LiveStream.Header, _ changed: @escaping Changed) {
        let fd = connection.rawValue
        // Blocking from here: a sender waits on its own viewer only.
        guard (try? Syscalls.setBlocking(fd, true, what: "a viewer's connection")) != nil else { return }
        let thread = try? JoinableThread(name: "obscura-view") {
            defer {
                senders.lock.withLock { senders.finished.append(id) }
                wakeup.signal()
            }
            guard let name = hello(fd) else {
                refuse(fd, header, "send one line \"view NAME\" first", as: "(unnamed)", changed)
                return
            }
            guard let viewer = try? feed.join() else {
                refuse(fd, header, "the kiosk has \(feed.limit) viewers already (live.max_viewers); try again later", as: name, changed)
                return
            }
            changed(.came(name))
            stream(viewer, on: fd, first: header.line, until: senders)
            viewer.leave()
            changed(.went(name, feed.counts))
        }
        guard let thread else { return }
        senders.lock.withLock { senders.running[id] = .init(thread: thread, connection: connection) }
    }

    /// The viewer's line, `view NAME`: its NAME (at most 200 bytes, printable), or nil.
    static func hello(_ fd: Int32) -> String? {
        let deadline = helloDeadline.components.seconds
        guard (try? Syscalls.setReceiveTimeout(fd, seconds: Int(deadline), what: "a viewer's connection")) != nil else { return nil }
        var got: [UInt8] = []
        var byte: UInt8 = 0
        while got.count <= 256 {
            let n = (try? withUnsafeMutableBytes(of: &byte) { b throws(SystemError) in
                try Syscalls.receive(fd, into: b, flags: 0, what: "a live viewer")
            }) ?? 0
            guard n == 1 else { return nil }
            if byte == 10 { break }
            got.append(byte)
        }
        let text = String(decoding: got, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard text == "view" || text.hasPrefix("view "), text.count <= 205,
              text.unicodeScalars.allSatisfy({ $0.value >= 32 && $0.value != 127 }) else { return nil }
        let name = text.dropFirst(4).trimmingCharacters(in: .whitespaces)
        return name.isEmpty ? "(unnamed)" : name
    }

    private static func refuse(_ fd: Int32, _ header: LiveStream.Header, _ why: String, as name: String, _ changed: Changed) {
        let refusal = LiveStream.Header(ok: false, codec: header.codec, message: why)
        try? Syscalls.sendAll(fd, refusal.line, flags: Int32(MSG_NOSIGNAL | MSG_DONTWAIT), what: "a live viewer")
        changed(.refused(name, why))
    }

    /// Sends the header, then packets as they come, until the viewer goes
    /// (a send fails) or the feed lets it go.
    private static func stream(_ viewer: LiveViewer, on fd: Int32, first: [UInt8], until senders: Senders) {
        do {
            try Syscalls.sendAll(fd, first, flags: Int32(MSG_NOSIGNAL), what: "a live viewer")
            while !senders.isClosing, let packets = try viewer.next(timeout: .milliseconds(500)) {
                for packet in packets {
                    try Syscalls.sendAll(fd, LiveStream.frameHeader(packet) + packet.data, flags: Int32(MSG_NOSIGNAL), what: "a live viewer")
                }
            }
        } catch {
            return  // the viewer went away, or the server closed its connection
        }
    }

    /// Joins the senders that have ended.
    private static func reap(_ senders: Senders) {
        let done: [Senders.Sender] = senders.lock.withLock {
            // (One that ended before it was listed is joined at the next look.)
            let listed = senders.finished.filter { senders.running[$0] != nil }
            senders.finished.removeAll { senders.running[$0] != nil }
            return listed.compactMap { senders.running.removeValue(forKey: $0) }
        }
        for sender in done { sender.thread.join() }
    }

    /// Ends every viewer's connection, joins their threads and the
    /// accepting one, closes and removes the socket.
    public func close() {
        guard !closed.exchange(true, ordering: .relaxed) else { return }
        senders.lock.withLock { senders.closing = true }
        wakeup.signal()
        thread.join()
        let all: [Senders.Sender] = senders.lock.withLock {
            defer { senders.running = [:] }
            return Array(senders.running.values)
        }
        for sender in all { try? Syscalls.shutdown(sender.connection.rawValue, what: "a live viewer") }
        for sender in all { sender.thread.join() }
        socket.close()
        try? Syscalls.remove(path)  // (a socket left is removed at the next start)
    }

    deinit { close() }
}
