import Foundation
import TestSupport
import Testing
import ObscuraSystem
@testable import ObscuraService
#if canImport(Glibc)
import Glibc
#endif

/// The service's live view on its own socket, watched by the built
/// `obscura view --local`: the test pattern encoded for a viewer while idle
/// and the recording's own packets while recording; refusals that say why.
@Suite(.serialized) struct LiveServiceTests {
    /// The service on the test pattern, answering; stopped by the caller.
    private func started(_ dir: TemporaryDirectory, tables: String = "", camera: String = "synthetic",
                         recording: String = "") throws -> PatternService {
        let service = try PatternService(in: dir.path, recording: recording, tables: tables, camera: camera)
        let socket = service.socket
        _ = waitUntilBlocking(within: .seconds(30), every: .milliseconds(50)) { (try? ControlClient.send("status", to: socket)) != nil }
        return service
    }

    private func status(_ service: PatternService) throws -> ServiceStatus {
        try JSONDecoder().decode(ServiceStatus.self, from: Data(try ControlClient.send("status", to: service.socket).utf8))
    }

    /// Waits until the recording's encoder has settled: a bounded encoder
    /// changes its threads once the frames' interval is measured (15 of
    /// them), at its next keyframe (30 frames apart here, or a viewer's),
    /// so by the 75th frame; a test of memory or drops waits for it.
    private func encoderSettled(_ service: PatternService) -> Bool {
        waitUntilBlocking(within: .seconds(60), every: .milliseconds(100)) { ((try? status(service).frames) ?? 0) >= 75 }
    }

    /// The recording's times (s) at which the service said it remade its
    /// encoder ("… from a keyframe at 2.824 s"), from `start` to `end`.
    static func encoderChanges(_ said: String, from start: Double, to end: Double) -> [Double] {
        said.split(separator: "\n").compactMap { line -> Double? in
            guard line.contains("encoder "), let at = line.range(of: "from a keyframe at ") else { return nil }
            return Double(line[at.upperBound...].prefix { $0 == "." || $0.isNumber })
        }.filter { $0 >= start && $0 <= end }
    }

    /// What the service said (its standard error), once it has stopped.
    private func stopped(_ service: PatternService) -> String {
        service.process.terminate()
        service.process.waitUntilExit()
        return String(decoding: service.standardError.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    }

    /// `obscura view --local` for `seconds` into `file`.
    private func view(_ dir: TemporaryDirectory, into file: String, seconds: Double = 2) throws -> ProcessResult {
        try runProgram(builtObscura, ["view", "--local", dir.path + "/live.sock", "--output", file, "--seconds", String(seconds)])
    }

    /// Each frame of a raw H.264 stream: whether it is a key frame, in order.
    private func frames(_ file: String) throws -> [Bool] {
        let probe = try runProgram("ffprobe", ["-v", "error", "-f", "h264", "-select_streams", "v:0", "-show_entries", "frame=key_frame",
                                               "-of", "csv=p=0", file])
        try #require(probe.status == 0, "\(probe.stderr)")
        return probe.stdout.split(separator: "\n").map { $0.hasPrefix("1") }
    }

    @Test func anIdleKioskEncodesForItsViewerAndStopsWhenTheViewerLeaves() throws {
        let dir = try scratchForBuiltObscura("obscura-live")
        let service = try started(dir)
        defer { if service.process.isRunning { service.process.terminate() } }
        #expect(try status(service).liveViewers == 0)
        let viewed = try view(dir, into: dir.path + "/idle.h264")
        #expect(viewed.status == 0, "\(viewed.stderr)")
        // Decodable from its first frame, a key frame; a camera's worth of frames.
        let keys = try frames(dir.path + "/idle.h264")
        #expect(keys.count >= 10 && keys.first == true, "\(keys.count) frames, first a key frame: \(String(describing: keys.first))")
        let after = try status(service)
        #expect(after.state == "idle" && after.file == nil && (after.liveBytes ?? 0) > 0)
        _ = waitUntilBlocking(within: .seconds(10), every: .milliseconds(50)) { (try? status(service).liveViewers) == 0 }
        #expect(try status(service).liveViewers == 0)
        let said = stopped(service)
        #expect(said.contains("live view started: ") && said.contains("(local)") && said.contains("live view ended: "), "\(said)")
        #expect(!FileManager.default.fileExists(atPath: dir.path + "/live.sock"), "the socket is removed at the end")
    }

    @Test func aViewerWhileRecordingGetsTheRecordingsOwnStreamAndTheFileKeepsEveryFrame() throws {
        let dir = try scratchForBuiltObscura("obscura-live")
        let service = try started(dir)
        defer { if service.process.isRunning { service.process.terminate() } }
        #expect(try ControlClient.send("record start", to: service.socket).contains("\"ok\":true"))
        let viewed = try view(dir, into: dir.path + "/recording.h264")
        #expect(viewed.status == 0, "\(viewed.stderr)")
        let keys = try frames(dir.path + "/recording.h264")
        #expect(keys.count >= 10 && keys.first == true)
        let stop = try ControlClient.send("record stop", to: service.socket)
        #expect(stop.contains("\"ok\":true"), "\(stop)")
        let said = stopped(service)
        // The recording's summary against its file: every frame it took is there.
        _ = try keptEveryFrame(said, in: dir)
    }

    @Test func aViewerPastTheLimitOrWithoutItsLineIsRefusedSayingWhy() throws {
        let dir = try scratchForBuiltObscura("obscura-live")
        let service = try started(dir, tables: "[live]\nsocket = \"\(dir.path)/live.sock\"\nmax_viewers = 1")
        defer { if service.process.isRunning { service.process.terminate() } }
        let socket = dir.path + "/live.sock"
        let first = try RawClient(socket)
        first.send("view first\n")
        _ = waitUntilBlocking(within: .seconds(10), every: .milliseconds(50)) { (try? status(service).liveViewers) == 1 }
        let second = try view(dir, into: dir.path + "/second.h264")
        #expect(second.status == 1 && second.stderr.contains("the kiosk has 1 viewers already (live.max_viewers)"), "\(second.stderr)")
        let http = try RawClient(socket)
        http.send("GET / HTTP/1.1\r\n\r\n")
        #expect(http.readAll().contains("send one line \\\"view NAME\\\" first"))
        let silent = try RawClient(socket)
        #expect(silent.readAll().contains("\"ok\":false"), "a client that says nothing is refused at its deadline")
        #expect(try status(service).state == "idle")
        let said = stopped(service)
        #expect(said.contains("live view refused: "), "\(said)")
        withExtendedLifetime(first) {}
    }

    /// A viewer stopped (SIGSTOP) for 30 s while the kiosk records: the
    /// recording keeps every frame, the service's memory does not grow with
    /// what the viewer missed, and once the viewer goes on (SIGCONT) it is
    /// back to live (under 250 ms from capture to arrival) within 2 s.
    /// At 25 fps: the encoder holds two frames there (0.1 s is 2.5 frames)
    /// whether the test pattern runs a few per cent slow or not, so its
    /// threads change once, before the stall, and what the service's memory
    /// does in the stall is the viewer's doing. (At 30 fps, three frames are
    /// the budget exactly: a test pattern slowed by a loaded machine made it
    /// two, and three again mid-stall, a new encoder beside the old.) On a
    /// starved machine, frames far apart remake it in the stall all the
    /// same: then the memory is not judged (the run says so).
    @Test func aViewerStoppedForThirtySecondsIsLiveAgainWithinTwoSecondsAndTheRecordingKeepsEveryFrame() throws {
        let dir = try scratchForBuiltObscura("obscura-live")
        let service = try started(dir, camera: "synthetic:stamped", recording: "frame_rate = 25")
        defer { if service.process.isRunning { service.process.terminate() } }
        #expect(try ControlClient.send("record start", to: service.socket).contains("\"ok\":true"))
        let times = dir.path + "/timings"
        let viewer = Process()
        viewer.executableURL = URL(fileURLWithPath: builtObscura)
        viewer.arguments = ["view", "--local", dir.path + "/live.sock", "--output", "/dev/null", "--timings", times]
        viewer.standardError = FileHandle.nullDevice
        try viewer.run()
        defer { if viewer.isRunning { kill(viewer.processIdentifier, SIGCONT); viewer.terminate() } }
        // Packets: camera time, published, arrived (ns), key frame, bytes.
        func packets() -> [[UInt64]] {
            ((try? String(contentsOfFile: times, encoding: .utf8)) ?? "").split(separator: "\n").compactMap { line in
                let fields = line.split(separator: " ").compactMap { UInt64($0) }
                return fields.count == 5 ? fields : nil
            }
        }
        try #require(waitUntilBlocking(within: .seconds(30), every: .milliseconds(50)) { packets().count >= 30 }, "the viewer got nothing")
        try #require(encoderSettled(service), "the recording reached 75 frames")
        let before = try residentBytes(service.process.processIdentifier)
        let flowing = packets()
        let bytesPerSecond = Double(flowing.reduce(0) { $0 + $1[4] }) * 1e9 / Double(flowing.last![2] - flowing.first![2])
        let stallStarted = try status(service).elapsedSeconds
        kill(viewer.processIdentifier, SIGSTOP)
        var peak = before
        for _ in 0..<30 {  // the stall: 30 s, the service's memory looked at each second
            Thread.sleep(forTimeInterval: 1)
            peak = max(peak, try residentBytes(service.process.processIdentifier))
        }
        let stallEnded = try status(service).elapsedSeconds
        let resumed = Syscalls.monotonicNanoseconds()
        kill(viewer.processIdentifier, SIGCONT)
        let settled = resumed + 2_000_000_000
        // Wait for a second of packets to arrive after the two seconds.
        try #require(waitUntilBlocking(within: .seconds(30), every: .milliseconds(50)) {
            packets().filter { $0[2] > settled }.count >= 30
        }, "the viewer got nothing after it went on")
        viewer.terminate()
        viewer.waitUntilExit()
        let late = packets().filter { $0[2] > settled }
        let worst = late.map { Double($0[2] - $0[0]) / 1e6 }.max() ?? .infinity
        // Live again: no later than the viewer was before the stall (its
        // worst over its last 30 packets, on this machine in this run), and
        // 250 ms more at most.
        let steady = flowing.suffix(30).map { Double($0[2] - $0[0]) / 1e6 }.max() ?? 0
        #expect(worst < steady + 250, "capture to arrival after 2 s: worst \(worst) ms; before the stall \(steady) ms")
        let skips = try status(service).liveSkips ?? 0
        #expect(skips >= 1, "the stalled viewer skipped ahead")
        // The metrics say so too (rewritten every second).
        let metrics = dir.path + "/obscura.prom"
        #expect(waitUntilBlocking(within: .seconds(10), every: .milliseconds(100)) {
            ((try? String(contentsOfFile: metrics, encoding: .utf8)) ?? "").split(separator: "\n")
                .contains { $0.hasPrefix("obscura_live_skips_total ") && Int($0.split(separator: " ")[1]).map { $0 >= 1 } == true }
        }, "obscura_live_skips_total in \(metrics)")
        // What the stall kept from the viewer is 30 s of stream; the service holds at most a second of it.
        let grown = peak - before, missed = Int(bytesPerSecond * 30)
        let stop = try ControlClient.send("record stop", to: service.socket)
        #expect(stop.contains("\"ok\":true"), "\(stop)")
        let said = stopped(service)
        let encoder = said.split(separator: "\n").filter { $0.contains("encoder ") }.joined(separator: "\n")
        // An encoder remade in the stall (frames far apart on a starved
        // machine: the recording holds fewer) adds a new encoder's memory
        // to the process's, which says nothing of the viewer's: then the
        // memory is not judged, and the run says why.
        // (A second either side: the status's time is the last progress, up to half a second old.)
        let remade = Self.encoderChanges(said, from: stallStarted - 1, to: stallEnded + 1)
        if remade.isEmpty {
            #expect(grown < missed / 2, "resident memory grew \(grown) bytes over a stall that missed \(missed) bytes of stream; \(encoder)")
        } else {
            print("stalled viewer: memory not judged (+\(grown) bytes against \(missed) missed): the encoder was remade in the stall "
                  + "(from \(stallStarted) to \(stallEnded) s of the recording) at \(remade) s: \(encoder)")
        }
        let summary = try keptEveryFrame(said, in: dir)
        print("stalled viewer: \(skips) skips, worst \(worst) ms after 2 s, resident +\(grown) bytes against \(missed) missed; \(summary)")
    }

    /// Twenty viewers connecting at once while the kiosk records: as many as
    /// live.max_viewers (4) watch, the others are told why not; one leaves in
    /// the middle of its first key frame, three never read. Nothing of it
    /// reaches the recording, and a viewer afterwards gets its key frame.
    /// `obscura view-serve` fed garbage on its standard input serves as usual.
    @Test func twentyViewersAtOnceAndOneLeavingMidKeyFrameLeaveTheRecordingWhole() throws {
        let dir = try scratchForBuiltObscura("obscura-live")
        let service = try started(dir)
        defer { if service.process.isRunning { service.process.terminate() } }
        let socket = dir.path + "/live.sock"
        #expect(try ControlClient.send("record start", to: service.socket).contains("\"ok\":true"))
        try #require(encoderSettled(service), "the recording reached 75 frames")
        var clients = try (0..<20).map { _ in try RawClient(socket) }
        for (i, client) in clients.enumerated() { client.send("view crowd-\(i)\n") }
        let answers = clients.map { String(decoding: Self.bytes($0.fd, until: 10), as: UTF8.self) }
        let accepted = answers.indices.filter { answers[$0].contains("\"ok\":true") }
        let refused = answers.filter { $0.contains("\"ok\":false") && $0.contains("has 4 viewers already") }
        #expect(accepted.count == 4 && refused.count == 16, "\(answers)")
        // One reads its first packet's header and half the packet, then hangs up.
        let leaving = clients[accepted[0]].fd
        let header = Self.bytes(leaving, count: 21)
        try #require(header.count == 21 && header[20] & 1 == 1, "the first packet is a key frame: \(header)")
        let length = header[0..<4].reduce(0) { $0 << 8 | Int($1) }
        #expect(Self.bytes(leaving, count: length / 2).count == length / 2)
        shutdown(leaving, Int32(SHUT_RDWR))
        clients.removeAll()
        _ = waitUntilBlocking(within: .seconds(20), every: .milliseconds(50)) { (try? status(service).liveViewers) == 0 }
        let garbage = dir.path + "/garbage.out"
        let served = try runProgram("/bin/sh", ["-c", "head -c 65536 /dev/urandom | timeout 3 \(builtObscura) view-serve --socket \(socket) > \(garbage)"])
        #expect(served.status == 124, "view-serve ran until stopped: \(served.stderr)")
        let output = try Data(contentsOf: URL(fileURLWithPath: garbage))
        #expect(String(decoding: output.prefix(200), as: UTF8.self).hasPrefix("{\"codec\":\"h264\",\"ok\":true"), "\(output.prefix(200))")
        #expect(output.count > 10_000, "\(output.count) bytes in 3 s")
        let after = try view(dir, into: dir.path + "/after.h264")
        #expect(after.status == 0, "\(after.stderr)")
        let keys = try frames(dir.path + "/after.h264")
        #expect(keys.count >= 10 && keys.first == true)
        #expect(try ControlClient.send("record stop", to: service.socket).contains("\"ok\":true"))
        let said = stopped(service)
        #expect(said.split(separator: "\n").filter { $0.contains("live view refused: crowd-") }.count == 16, "\(said)")
        _ = try keptEveryFrame(said, in: dir)
    }

    /// Bytes from `fd` up to and without `stop`, or `count` of them, whichever
    /// comes first; what came within 10 s.
    private static func bytes(_ fd: Int32, count: Int = .max, until stop: UInt8? = nil) -> [UInt8] {
        var got: [UInt8] = []
        var byte: UInt8 = 0
        let deadline = ContinuousClock.now + .seconds(10)
        while got.count < count, ContinuousClock.now < deadline {
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, 100) > 0 else { continue }
            guard read(fd, &byte, 1) == 1, byte != stop else { break }
            got.append(byte)
        }
        return got
    }

    /// The recording's summary (what the service said), checked against its
    /// file, the one recording in the folder (its name may have changed
    /// since): the file holds every frame the summary counts, and none was
    /// dropped for the viewers.
    private func keptEveryFrame(_ said: String, in dir: TemporaryDirectory) throws -> String {
        let summary = try #require(said.split(separator: "\n").first { $0.contains("recording finished: ") }, "\(said)")
        let taken = try #require(summary.components(separatedBy: ", ").first { $0.hasSuffix(" frames") }.flatMap { Int($0.split(separator: " ")[0]) })
        let files = try FileManager.default.contentsOfDirectory(atPath: dir.path + "/rec").filter { $0.hasSuffix(".mp4") }
        try #require(files.count == 1, "\(files)")
        #expect(try ProbedVideo.read(dir.path + "/rec/" + files[0]).frameCount == taken, "\(summary)")
        // None dropped for the viewers: a viewer that held up the recorder
        // would cost it the frames of its whole stall (a viewer stopped for
        // 30 s: about 900). Beside a board on two cores the encoder itself
        // may fall a few frames behind; at most a second of frames (at the
        // recording's own rate, from its summary) is put down to that.
        let parts = summary.components(separatedBy: ", ")
        let seconds = parts.first { $0.hasSuffix(" s") }.flatMap { Double($0.dropLast(2)) } ?? 0
        let dropped = parts.first { $0.hasPrefix("dropped ") }.flatMap { Int($0.dropFirst(8)) } ?? Int.max
        let perSecond = seconds > 0 ? Double(taken) / seconds : 0
        #expect(Double(dropped) <= perSecond, "\(summary): more than a second of frames dropped")
        return String(summary)
    }

    /// A process's resident memory (VmRSS), bytes.
    private func residentBytes(_ pid: Int32) throws -> Int {
        let text = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        let line = try #require(text.split(separator: "\n").first { $0.hasPrefix("VmRSS:") })
        return (Int(line.split(separator: " ")[1]) ?? 0) * 1024
    }
}
