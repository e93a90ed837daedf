import Foundation
import Testing
import TestSupport
@testable import ObscuraService
import ObscuraSystem
#if canImport(Glibc)
import Glibc
#endif

/// A client connection made by hand, to misbehave with.
final class RawClient {
    let fd: Int32
    init(_ path: String) throws {
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = try Syscalls.unixAddress(path, for: "connect")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        try #require(connected == 0, "connect: \(String(cString: strerror(errno)))")
    }
    func send(_ text: String) { _ = text.withCString { Glibc.send(fd, $0, strlen($0), Int32(MSG_NOSIGNAL)) } }
    /// Whether the server has answered or hung up (without waiting).
    var isAnswered: Bool {
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&p, 1, 0) > 0
    }
    func readAll() -> String {
        var data = [UInt8](), buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = read(fd, &buffer, buffer.count)
            if n <= 0 { break }
            data += buffer[0..<n]
        }
        return String(decoding: data, as: UTF8.self)
    }
    deinit { close(fd) }
}

@Suite(.serialized) struct ControlSocketAbuseTests {
    /// While the service records: clients that hang up before their reply,
    /// 100 connections that never send a line, a client sending one byte a
    /// second and an overlong line. The recorder keeps recording, and
    /// `status` is answered while the silent connections are still waiting.
    @Test func misbehavingClientsNeitherStopNorStallTheService() throws {
        let obscura = packageRoot + "/.build/debug/obscura"
        try #require(FileManager.default.isExecutableFile(atPath: obscura), "build first: swift build")
        let dir = try TemporaryDirectory()
        let service = try PatternService(in: dir.path)
        let process = service.process, err = service.standardError, socketPath = service.socket
        defer { if process.isRunning { process.terminate() } }
        func status() throws -> ServiceStatus {
            try JSONDecoder().decode(ServiceStatus.self, from: Data(try ControlClient.send("status", to: socketPath).utf8))
        }
        // Ready once the socket answers (it exists a moment before it listens).
        _ = waitUntilBlocking(within: .seconds(10), every: .milliseconds(50)) { (try? status()) != nil }
        #expect(try ControlClient.send("record start", to: socketPath).contains("\"ok\":true"))

        // Clients that hang up before reading their reply (SIGPIPE before).
        for _ in 0..<20 {
            let client = try RawClient(socketPath)
            client.send("status\n")
        }
        // A byte a second, and 100 that say nothing.
        let slow = try RawClient(socketPath)
        slow.send("s")
        let silent = try (0..<100).map { _ in try RawClient(socketPath) }
        let clock = ContinuousClock()
        var latencies: [Duration] = []
        var answered: ServiceStatus?
        for _ in 0..<5 {
            let start = clock.now
            answered = try status()
            latencies.append(clock.now - start)
        }
        // Answered while every silent client still waits for its line.
        let waiting = silent.filter { !$0.isAnswered }.count
        #expect(waiting == 100, "\(100 - waiting) silent clients were dropped before status was answered (latencies \(latencies))")
        print("status with 100 silent clients open: \(latencies.map { "\($0.components.attoseconds / 1_000_000_000_000_000 + $0.components.seconds * 1000) ms" })")
        #expect(answered?.state == "recording")
        slow.send("t")
        // The silent ones are refused at their deadline, naming it.
        let refusal = silent[0].readAll()
        #expect(refusal.contains("no command line within"), "\(refusal)")
        #expect(slow.readAll().contains("no command line within"))

        // CRLF is a line end; an overlong line is refused, not read forever.
        let crlf = try RawClient(socketPath)
        crlf.send("status\r\n")
        #expect(crlf.readAll().contains("\"state\":\"recording\""))
        let long = try RawClient(socketPath)
        long.send(String(repeating: "x", count: 5000) + "\n")
        #expect(long.readAll().contains("longer than 1024 bytes"))

        // Still recording, the file still growing, the process alive.
        let before = try status().bytes
        var after = before
        _ = try waitUntilBlocking(within: .seconds(10), every: .milliseconds(100)) {
            after = try status().bytes
            return after > before
        }
        #expect(after > before, "the recording stopped growing at \(before) bytes")
        #expect(try ControlClient.send("record stop", to: socketPath).contains("\"ok\":true"))
        #expect(process.isRunning)
        process.terminate()
        process.waitUntilExit()
        #expect(process.terminationReason == .exit && process.terminationStatus == 0,
                "\(process.terminationReason) \(process.terminationStatus): \(String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).suffix(800))")
        let movies = try FileManager.default.contentsOfDirectory(atPath: dir.path + "/rec").filter { $0.hasSuffix(".mp4") }
        let movie = try #require(movies.first)
        #expect(try ProbedVideo.read(dir.path + "/rec/" + movie).frameCount > 30)
    }
}

/// The client's side: a recorder that takes a command and does not answer.
@Suite struct ControlClientTests {
    @Test func aRecorderThatDoesNotAnswerInTimeIsNamedBusyNotUnreachable() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("obscura-busy-\(getpid()).sock").path
        unlink(path)
        defer { unlink(path) }
        // Listening, never accepting: the connection is queued and the command sent, and no reply comes.
        let server = try Syscalls.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), what: "AF_UNIX")
        try Syscalls.bind(server.rawValue, unixPath: path)
        try Syscalls.listen(server.rawValue, what: path)
        #expect {
            _ = try ControlClient.send("status", to: path, timeout: .seconds(1))
        } throws: { error in
            (error as? ControlReplyTimeout).map { $0.path == path && $0.seconds == 1 && "\($0)".contains("did not answer within 1 s") } ?? false
        }
        withExtendedLifetime(server) {}
    }
}
