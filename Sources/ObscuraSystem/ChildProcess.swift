import CSystem
#if canImport(Glibc)
import Glibc
#endif

/// A program run to its end, its output and errors read together (one
/// pipe: a program that writes many error lines cannot fill a second pipe
/// nobody reads yet). For the light commands, which have no Foundation
/// `Process`; blocking, so never on Swift's cooperative pool.
public struct ChildProcess: Sendable {
    /// The exit status, or 128 + the signal that ended it.
    public let status: Int32
    public let output: [UInt8]

    public var text: String { String(decoding: output, as: UTF8.self) }

    /// Runs `path` with `arguments` (argv[1...]) and this process's
    /// environment; waits for it. Its errors are read with its output, or
    /// (`errors: false`) left on this process's standard error.
    public static func run(_ path: String, _ arguments: [String], errors: Bool = true) throws(SystemError) -> ChildProcess {
        var ends: [Int32] = [0, 0]
        guard obscura_pipe_cloexec(&ends) == 0 else { throw SystemError.errno("pipe2", path) }
        let reader = OwnedFileDescriptor(adopting: ends[0])
        let writer = OwnedFileDescriptor(adopting: ends[1])
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, ends[1], 1)
        if errors { posix_spawn_file_actions_adddup2(&actions, ends[1], 2) }
        let argv: [UnsafeMutablePointer<CChar>?] = ([path] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let started = posix_spawn(&pid, path, &actions, nil, argv, environ)
        guard started == 0 else { throw SystemError(call: "posix_spawn", code: started, detail: path) }
        // (Closed here, so that the read ends when the child's copies do.)
        writer.close()
        let output: [UInt8]
        do {
            output = try Syscalls.readToEnd(reader.rawValue, path: path)
        } catch {
            // (Reaped all the same: no zombie is left behind a failed read.)
            _ = try? wait(pid, path: path)
            throw error
        }
        return ChildProcess(status: try wait(pid, path: path), output: output)
    }

    /// Waits for `pid` (EINTR retried) and says how it ended.
    static func wait(_ pid: pid_t, path: String) throws(SystemError) -> Int32 {
        var raw: Int32 = 0
        while waitpid(pid, &raw, 0) < 0 {
            if Glibc.errno == EINTR { continue }
            throw SystemError.errno("waitpid", path)
        }
        // WIFEXITED / WEXITSTATUS / WTERMSIG, which Swift does not import.
        let signal = raw & 0x7f
        return signal == 0 ? (raw >> 8) & 0xff : 128 + signal
    }
}
