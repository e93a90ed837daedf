import Foundation
import Testing
import TestSupport

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
        let piped = try runProgram("bash", ["-c", "export O=\(obscura); \(command) 2>\(folder)/err | head -c 1 >/dev/null; echo \"${PIPESTATUS[0]}\""],
                                   cwd: folder)
        let status = Int(piped.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
        let said = (try? String(contentsOfFile: folder + "/err", encoding: .utf8)) ?? ""
        for sign in Self.crashSigns { #expect(!said.contains(sign), "\(command) | head -c 1: \(said)") }
        // Everything may fit in the pipe before head exits (0), or the next write meets the closed pipe (141).
        #expect(status >= 0 && status < 128 || status == 141, "\(command) | head -c 1: status \(status), \(said)")

        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = ["-c", "export O=\(obscura); \(command)"]
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
        try check("$O record --camera synthetic --duration 0.5 --output clip-$$.mp4", in: folder)
        _ = try runProgram("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", "kiosk", "-f", folder + "/id"])
        _ = try runProgram(obscura, ["keys", "add", "--file", folder + "/keys", folder + "/id.pub"])
        try check("$O keys list --file keys", in: folder)
        let key = "age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p"
        try check("echo x > n$$.txt; $O encrypt --recipient \(key) n$$.txt", in: folder)
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
