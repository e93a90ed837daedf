import Foundation
import Testing
import TestSupport
import ObscuraService

/// A reader that goes away (`obscura status | head -1`, `… | grep -q`) ends
/// a command as it ends `ls`: quietly, with a non-zero status (SIGPIPE's),
/// never a crash or a stack trace.
@Suite(.serialized) struct ClosedOutputTests {
    let obscura = packageRoot + "/.build/debug/obscura"
    static let subcommands = ["devices", "record", "stream", "gpio", "run", "status", "ctl", "photo", "dng", "preview",
                              "decode", "keys", "pull", "encrypt", "decrypt", "beep", "listen"]

    /// What a crash says on standard error.
    static let crashSigns = ["Fatal error", "Illegal instruction", "Stack dump", "Backtrace", "Current stack trace", "Broken pipe"]

    /// `command` (a shell line, `obscura` as `$O`) with its output piped into
    /// `head -c 1`; and once more with standard output a pipe nobody reads
    /// (closed before the command starts: its first write meets EPIPE).
    private func check(_ command: String, in folder: String) throws {
        // SIGPIPE as a shell gives it, whatever this test process did with
        // its own (a pull run in it ignores SIGPIPE, and children inherit that).
        let obscura = "env --default-signal=PIPE " + obscura
        let piped = try runProgram("bash", ["-c", "export O=\"\(obscura)\"; \(command) 2>\(folder)/err | head -c 1 >/dev/null; echo \"${PIPESTATUS[0]}\""],
                                   cwd: folder)
        let status = Int(piped.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
        let said = (try? String(contentsOfFile: folder + "/err", encoding: .utf8)) ?? ""
        for sign in Self.crashSigns { #expect(!said.contains(sign), "\(command) | head -c 1: \(said)") }
        // Everything may fit in the pipe before head exits (0), or the next write meets the closed pipe (141).
        #expect(status >= 0 && status < 128 || status == 141, "\(command) | head -c 1: status \(status), \(said)")

        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = ["-c", "export O=\"\(obscura)\"; \(command)"]
        process.currentDirectoryURL = URL(fileURLWithPath: folder)
        let output = Pipe(), errors = Pipe()
        try output.fileHandleForReading.close()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        try output.fileHandleForWriting.close()
        let text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        for sign in Self.crashSigns { #expect(!text.contains(sign), "\(command) >closed pipe: \(text)") }
        // Killed by SIGPIPE (bash execs the last command), or bash saying so (128 + 13).
        let bySignal = process.terminationReason == .uncaughtSignal
        #expect(!bySignal || process.terminationStatus == SIGPIPE, "\(command) >closed pipe: killed by signal \(process.terminationStatus): \(text)")
        #expect(bySignal || process.terminationStatus < 128 || process.terminationStatus == 141,
                "\(command) >closed pipe: status \(process.terminationStatus): \(text)")
        #expect(process.terminationStatus != 0, "\(command) >closed pipe: status 0 though nothing could be written: \(text)")
    }

    @Test func everyCommandEndsQuietlyWhenItsReaderIsGone() throws {
        try #require(FileManager.default.isExecutableFile(atPath: obscura), "build first: swift build")
        let folder = NSTemporaryDirectory() + "obscura-epipe-\(getpid())"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try check("$O --help", in: folder)
        for command in Self.subcommands { try check("$O \(command) --help", in: folder) }
        // Commands whose results go to standard output.
        // (Each run its own files: `$$` is the shell's pid.)
        _ = try runProgram("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", "kiosk", "-f", folder + "/id"])
        _ = try runProgram(obscura, ["keys", "add", "--file", folder + "/keys", folder + "/id.pub"])
        try check("$O keys list --file keys", in: folder)
        let key = "age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p"
        try check("echo x > n$$.txt; $O encrypt --recipient \(key) n$$.txt", in: folder)
    }

    /// A recording whose reader goes away goes on, stops printing, and is
    /// finished as usual: its file plays to its end (before, it ended by
    /// SIGPIPE at its next progress line and left its .partial unfinished).
    @Test func aRecordingGoesOnAndIsFinishedWhenItsReaderIsGone() throws {
        try #require(FileManager.default.isExecutableFile(atPath: obscura), "build first: swift build")
        let folder = try TemporaryDirectory()
        for (name, redirect) in [("out", "2>/dev/null | head -c 1"), ("err", "2>&1 >/dev/null | head -c 1"), ("both", "2>&1 | head -c 1")] {
            let run = try runProgram("bash", ["-c", "\(obscura) record --camera synthetic --duration 2 --output \(name).mp4 \(redirect) >/dev/null; echo \"${PIPESTATUS[0]}\""],
                                     cwd: folder.path)
            #expect(run.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "0", "\(name): status \(run.stdout) \(run.stderr)")
            #expect(!FileManager.default.fileExists(atPath: "\(folder.path)/\(name).mp4.partial"), "\(name): left unfinished")
            let probe = try runProgram("ffprobe", ["-v", "error", "-select_streams", "v:0", "-count_frames",
                                                   "-show_entries", "stream=nb_read_frames:format=duration", "-of", "csv=p=0", "\(folder.path)/\(name).mp4"])
            let fields = probe.stdout.split(whereSeparator: \.isNewline).map(String.init)
            let frames = fields.first.flatMap { Int($0.trimmingCharacters(in: .whitespaces)) } ?? 0
            let seconds = fields.last.flatMap { Double($0.trimmingCharacters(in: .whitespaces)) } ?? 0
            // It went on past the line that met the closed pipe: all 2 s of camera time are in it.
            #expect(probe.status == 0 && frames > 0 && seconds > 1.5, "\(name): \(probe.stdout) \(probe.stderr)")
        }
    }

    /// `obscura run` with its standard output and error a pipe nobody reads
    /// (a journal reader gone): the service goes on, records on command and
    /// finishes the file, which plays.
    @Test func theServiceRecordsAndFinishesWhenItsReaderIsGone() throws {
        try #require(FileManager.default.isExecutableFile(atPath: obscura), "build first: swift build")
        let folder = try TemporaryDirectory()
        let config = try PatternService.writeConfiguration(in: folder.path)
        let socket = folder.path + "/control.sock", recordings = folder.path + "/rec"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: obscura)
        process.arguments = ["run", "--config", config]
        let output = Pipe()
        try output.fileHandleForReading.close()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        try output.fileHandleForWriting.close()
        defer { if process.isRunning { process.terminate(); process.waitUntilExit() } }
        let answers = waitUntilBlocking(within: .seconds(60), every: .milliseconds(100)) {
            (try? ControlClient.send("status", to: socket))?.contains("\"state\":\"idle\"") == true
        }
        try #require(answers, "the service did not answer within 60 s (running: \(process.isRunning))")
        #expect(try ControlClient.send("record start", to: socket).contains("\"ok\":true"))
        // Frames in the file: the service's own count, from its status.
        let recording = waitUntilBlocking(within: .seconds(60), every: .milliseconds(100)) {
            let said = Data(((try? ControlClient.send("status", to: socket)) ?? "").utf8)
            let status = (try? JSONSerialization.jsonObject(with: said)) as? [String: Any]
            return status?["state"] as? String == "recording" && (status?["frames"] as? Int ?? 0) > 0
        }
        #expect(recording, "no frame was recorded: \((try? ControlClient.send("status", to: socket)) ?? "")")
        #expect(try ControlClient.send("record stop", to: socket).contains("\"ok\":true"))
        var finished: [String] = []
        let done = waitUntilBlocking(within: .seconds(60), every: .milliseconds(100)) {
            finished = ((try? FileManager.default.contentsOfDirectory(atPath: recordings)) ?? []).filter { $0.hasSuffix(".mp4.sha256") }
            return !finished.isEmpty
        }
        try #require(done, "the recording was not finished: \((try? FileManager.default.contentsOfDirectory(atPath: recordings)) ?? [])")
        let file = recordings + "/" + String(finished[0].dropLast(".sha256".count))
        let probe = try runProgram("ffprobe", ["-v", "error", "-select_streams", "v:0", "-count_frames",
                                               "-show_entries", "stream=nb_read_frames", "-of", "csv=p=0", file])
        #expect(probe.status == 0 && (Int(probe.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0) > 0, "\(probe.stdout) \(probe.stderr)")
        #expect(process.isRunning, "the service ended (status \(process.terminationStatus))")
    }

    /// `obscura collect` piped into `head -c 1`: the collection goes on and
    /// ends as usual, its kiosk's file stored with the kiosk's bytes.
    @Test(.enabled(if: LoopbackDevice.canStart, LoopbackDevice.cannotStartReason))
    func aCollectionGoesOnAndStoresWhenItsReaderIsGone() throws {
        try #require(FileManager.default.isExecutableFile(atPath: obscura), "build first: swift build")
        let dir = try TemporaryDirectory()
        let device = try LoopbackDevice(in: dir.path)
        defer { device.stop() }
        let k = device.folder
        try Data(try device.knownHosts().utf8).write(to: URL(fileURLWithPath: "\(k)/known_hosts"))
        try """
            [collector]
            spool = "\(k)/spool"
            metrics = "\(k)/collect.prom"
            [store]
            folder = "\(k)/store"
            [ssh]
            key = "\(k)/user"
            known_hosts = "\(k)/known_hosts"
            [kiosks.one]
            address = "root@127.0.0.1"
            port = \(device.port)
            folders = ["\(device.files)"]
            """.write(toFile: "\(k)/fleet.toml", atomically: true, encoding: .utf8)
        let run = try runProgram("bash", ["-c", "\(obscura) collect --fleet \(k)/fleet.toml 2>&1 | head -c 1 >/dev/null; echo \"${PIPESTATUS[0]}\""])
        #expect(run.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "0", "status \(run.stdout) \(run.stderr)")
        let stored = FileManager.default.contents(atPath: "\(k)/store/one/undated/clip.mp4")
        #expect(stored == FileManager.default.contents(atPath: "\(device.files)/clip.mp4"),
                "\((FileManager.default.subpaths(atPath: "\(k)/store") ?? []).sorted())")
    }

    /// `obscura status` against a running service: the line a user's script
    /// greps for, with the reader gone first.
    @Test func statusEndsQuietlyWhenItsReaderIsGone() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: obscura), "build first: swift build")
        let folder = NSTemporaryDirectory() + "obscura-epipe-status-\(getpid())"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let service = try PatternService(in: folder)
        defer { service.process.terminate(); service.process.waitUntilExit() }
        try #require(await waitUntil(within: .seconds(60)) { FileManager.default.fileExists(atPath: service.socket) },
                     "the service made no control socket within 60 s")
        try check("$O status --socket \(service.socket)", in: folder)
        try check("$O ctl --socket \(service.socket) status", in: folder)
    }
}
