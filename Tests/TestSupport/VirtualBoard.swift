import Foundation
import Testing

/// Runs commands on the virtual board (board/virtual/run) from tests.
///
/// In CI (CI=true) board tests always run, and fail when the board or the
/// feature is broken. Elsewhere they are skipped, with the reason, when the
/// board is not set up here (no qemu, or `board/virtual/setup` never ran).
public enum VirtualBoard {
    public static let runner = packageRoot + "/board/virtual/run"

    public static var isCI: Bool { ProcessInfo.processInfo.environment["CI"].map { $0 == "true" || $0 == "1" } ?? false }

    /// The board's Debian release and architecture (board/virtual/run reads
    /// the same variables): Debian 12 on amd64 unless OBSCURA_BOARD_SUITE and
    /// OBSCURA_BOARD_ARCH name another; OBSCURA_BOARD_BINARY is then the
    /// obscura built for it, which the board shows at .build/debug/obscura.
    public static let suite = ProcessInfo.processInfo.environment["OBSCURA_BOARD_SUITE"] ?? "bookworm"
    public static let arch = ProcessInfo.processInfo.environment["OBSCURA_BOARD_ARCH"] ?? "amd64"

    /// The frame vimc gives for a requested size: through libcamera 0.0.3
    /// (Debian 12) widths and heights come in its scaler's steps of 6
    /// (640x480 → 636x480); from 0.4 on (Debian 13) as asked.
    public static func vimcSize(_ width: Int, _ height: Int) -> (width: Int, height: Int) {
        suite == "bookworm" ? (width - width % 6, height - height % 6) : (width, height)
    }

    /// Why the board cannot run here, or nil when it can.
    public static let unavailableReason: String? = {
        if isCI { return nil }
        let emulator = arch == "arm64" ? "qemu-system-aarch64" : "qemu-system-x86_64"
        guard ["/usr/bin/", "/usr/local/bin/"].contains(where: { FileManager.default.isExecutableFile(atPath: $0 + emulator) }) else {
            return "\(emulator) is not installed; board/virtual/setup installs it"
        }
        guard FileManager.default.fileExists(atPath: packageRoot + "/board/virtual/cache/\(suite)-\(arch)/stamp") else {
            return "the virtual board (Debian \(suite) \(arch)) is not built here; run board/virtual/setup --suite \(suite) --arch \(arch)"
        }
        return nil
    }()

    public static var isAvailable: Bool { unavailableReason == nil }

    /// The test that asks for a board command, for the bench's ledger
    /// (board/virtual/run): what a program that runs the board on a test's
    /// behalf is given.
    public static var ledgerEnvironment: [String: String] {
        ["OBSCURA_BOARD_TEST": Test.current.map { "\($0.id)" } ?? "(none)"]
    }

    /// Runs `command` (through `sh -c`, or `shell`'s -c) in the package root
    /// on the board.
    /// With OBSCURA_BOARD_LOGS set to a folder, each run's whole output is
    /// kept there too (a failed expectation's message may show only part).
    /// A wait in the command that gave up (`board/virtual/waiting.sh`) fails
    /// the test, naming what it waited for.
    public static func run(_ command: String, timeout: Int = 240, options: [String] = [], shell: String = "sh",
                           sourceLocation: SourceLocation = #_sourceLocation) throws -> ProcessResult {
        let result = try runProgram(runner, ["--timeout", String(timeout)] + options + ["--", shell, "-c", command], cwd: packageRoot,
                                    environment: ledgerEnvironment)
        recordGaveUp(result.stdout, sourceLocation: sourceLocation)
        keepLog(result)
        return result
    }

    /// Runs a board scenario, the script Tests/BoardTests/scenarios/`name`.sh
    /// (ShellCheck reads it: Tests/shellcheck), with `arguments`, in the
    /// package root on the board; its first line says sh or bash.
    public static func run(scenario name: String, _ arguments: [String] = [], timeout: Int = 240, options: [String] = [],
                           sourceLocation: SourceLocation = #_sourceLocation) throws -> ProcessResult {
        let script = "Tests/BoardTests/scenarios/\(name).sh"
        let text = try String(contentsOfFile: packageRoot + "/" + script, encoding: .utf8)
        let shell = text.hasPrefix("#!/bin/bash") ? "bash" : "sh"
        let result = try runProgram(runner, ["--timeout", String(timeout)] + options + ["--", shell, script] + arguments, cwd: packageRoot,
                                    environment: ledgerEnvironment)
        recordGaveUp(result.stdout, sourceLocation: sourceLocation)
        keepLog(result)
        return result
    }

    /// A wait in a board script that gave up (board/virtual/waiting.sh)
    /// fails the test, naming what it waited for.
    static func recordGaveUp(_ stdout: String, sourceLocation: SourceLocation) {
        for line in stdout.split(separator: "\n") where line.hasPrefix("gave up after") || line.hasPrefix("timed out waiting for") {
            Issue.record("the board's wait \(line)", sourceLocation: sourceLocation)
        }
    }

    /// With OBSCURA_BOARD_LOGS naming a folder, a run's whole output kept there.
    static func keepLog(_ result: ProcessResult) {
        if let logs = ProcessInfo.processInfo.environment["OBSCURA_BOARD_LOGS"], !logs.isEmpty {
            let name = "\(logs)/board-\(Int(Date().timeIntervalSince1970))-\(UUID().uuidString.prefix(8)).log"
            try? (result.stdout + "\n--- stderr ---\n" + result.stderr).write(toFile: name, atomically: true, encoding: .utf8)
        }
    }
}
