import ArgumentParser
import struct Synchronization.Atomic
import ObscuraSystem
#if canImport(Glibc)
import Glibc
#endif

/// Messages for people go to standard error; results to standard output
/// (standard error too when standard output carries data: `outputToStandardError`).
public enum Log {
    private static let resultDescriptor = Atomic<Int32>(STDOUT_FILENO)

    /// Results go to standard error from now on: standard output carries data.
    public static func outputToStandardError() { resultDescriptor.store(STDERR_FILENO, ordering: .relaxed) }

    /// Set by a command whose work is not its output: a reader that goes
    /// away stops the printing, never the work.
    private static let keepGoing = Atomic<Bool>(false)
    private static let readerGone = Atomic<Bool>(false)

    /// For `record`, `run` and `collect`: a closed standard output or error
    /// (`obscura record … | head -c 10`) is no longer written to, and the
    /// recording, the service or the collection goes on and ends as usual
    /// (its file finished), instead of ending by SIGPIPE at the next line.
    public static func keepGoingWithoutReaders() {
        signal(SIGPIPE, SIG_IGN)
        keepGoing.store(true, ordering: .relaxed)
    }

    public static func note(_ text: String) {
        try? Syscalls.writeAll(STDERR_FILENO, Array("obscura: \(text)\n".utf8), path: "standard error")
    }

    /// A status line that rewrites itself on a terminal (one line per call otherwise).
    public static func status(_ text: String) {
        if isatty(STDERR_FILENO) != 0 {
            try? Syscalls.writeAll(STDERR_FILENO, Array("\r\u{1B}[K\(text)".utf8), path: "standard error")
        } else {
            note(text)
        }
    }

    /// Ends a status line on a terminal.
    public static func endStatus() {
        if isatty(STDERR_FILENO) != 0 { try? Syscalls.writeAll(STDERR_FILENO, Array("\r\u{1B}[K".utf8), path: "standard error") }
    }

    /// A line of output, written at once (unbuffered) so a reader sees it now.
    /// A reader that went away (`obscura status | grep -q …`) ends the
    /// program as it ends any Unix tool, by SIGPIPE, without a word.
    public static func output(_ text: String) {
        if readerGone.load(ordering: .relaxed) { return }
        do throws(SystemError) {
            let fd = resultDescriptor.load(ordering: .relaxed)
            try Syscalls.writeAll(fd, Array("\(text)\n".utf8), path: fd == STDOUT_FILENO ? "standard output" : "standard error")
        } catch where error.code == EPIPE {
            if keepGoing.load(ordering: .relaxed) { return readerGone.store(true, ordering: .relaxed) }
            Syscalls.endBySignal(SIGPIPE)
        } catch {
            note("\(error)")
            exit(EXIT_FAILURE)
        }
    }
}

/// A failure the user can act on: printed as is, exit status 1.
public struct UserFacingError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

extension ParsableCommand {
    /// Runs `body`, turning errors into one clear line and a non-zero exit.
    public static func reporting<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as ExitCode {
            throw error
        } catch {
            Log.note("error: \(error)")
            throw ExitCode.failure
        }
    }
}
