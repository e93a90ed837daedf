import Foundation

/// Runs commands on the virtual board (board/virtual/run) from tests.
///
/// In CI (CI=true) board tests always run, and fail when the board or the
/// feature is broken. Elsewhere they are skipped, with the reason, when the
/// board is not set up here (no qemu, or `board/virtual/setup` never ran).
public enum VirtualBoard {
    public static let runner = packageRoot + "/board/virtual/run"

    public static var isCI: Bool { ProcessInfo.processInfo.environment["CI"].map { $0 == "true" || $0 == "1" } ?? false }

    /// Why the board cannot run here, or nil when it can.
    public static let unavailableReason: String? = {
        if isCI { return nil }
        let qemu = ["/usr/bin/qemu-system-x86_64", "/usr/local/bin/qemu-system-x86_64"]
        guard qemu.contains(where: FileManager.default.isExecutableFile(atPath:)) else {
            return "qemu-system-x86_64 is not installed; board/virtual/setup installs it"
        }
        let cache = packageRoot + "/board/virtual/cache"
        let built = (try? FileManager.default.contentsOfDirectory(atPath: cache))?.contains {
            FileManager.default.fileExists(atPath: "\(cache)/\($0)/stamp")
        } ?? false
        guard built else { return "the virtual board is not built here; run board/virtual/setup" }
        return nil
    }()

    public static var isAvailable: Bool { unavailableReason == nil }

    /// Runs `command` (through `sh -c`) in the package root on the board.
    public static func run(_ command: String, timeout: Int = 240, options: [String] = []) throws -> ProcessResult {
        try runProgram(runner, ["--timeout", String(timeout)] + options + ["--", "sh", "-c", command], cwd: packageRoot)
    }
}
