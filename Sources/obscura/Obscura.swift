import ArgumentParser
import Foundation
import struct Synchronization.Atomic
import ObscuraCamera
import ObscuraSystem

@main
struct Obscura: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "obscura",
        abstract: "A camera recorder for single-board Linux computers.",
        discussion: """
        On a kiosk, `obscura run` is the recorder service (obscura.service, started at boot): \
        the record, photo and flash buttons, the LEDs, loop recording to the card or a USB drive, \
        the health of the picture and the microphone, and a control socket. `obscura status` \
        shows what it is doing and `obscura ctl` tells it what to do. Its configuration is \
        /etc/obscura/obscura.toml (every key: `obscura config`, or obscura.toml(5)). \
        Recordings are fetched over SSH by the obscura-fetch account (`obscura keys`, `obscura pull`, \
        `obscura collect`). The other subcommands work on their own: record a clip, take a photo, \
        list the cameras, preview, watch the GPIO lines. The documents in /usr/share/doc/obscura \
        say more.
        """,
        subcommands: [DevicesCommand.self, RecordCommand.self, StreamCommand.self, GPIOCommand.self,
                      RunCommand.self, StatusCommand.self, ControlCommand.self, ConfigCommand.self, DoctorCommand.self, PhotoCommand.self, DNGCommand.self, PreviewCommand.self, DecodeCommand.self,
                      KeysCommand.self, PullCommand.self, CollectCommand.self, ViewCommand.self, ViewServeCommand.self, EncryptCommand.self, DecryptCommand.self, BeepCommand.self, ListenCommand.self, WatchCommand.self, TimeCodesCommand.self])

    /// ArgumentParser's main, with the signal mask and the environment set
    /// first, while the program has no other thread: signals unblocked
    /// whatever the parent's thread blocked (SIGTERM and Ctrl-C must work).
    static func main() async {
        do throws(SystemError) { try Syscalls.unblockAllSignals() } catch { Log.note("\(error)") }
        CameraManager.quietLibcameraByDefault()
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            exit(withError: error)
        }
    }
}

/// Messages for people go to standard error; results to standard output
/// (standard error too when standard output carries data: `outputToStandardError`).
enum Log {
    private static let resultDescriptor = Atomic<Int32>(STDOUT_FILENO)

    /// Results go to standard error from now on: standard output carries data.
    static func outputToStandardError() { resultDescriptor.store(STDERR_FILENO, ordering: .relaxed) }

    /// Set by a command whose work is not its output: a reader that goes
    /// away stops the printing, never the work.
    private static let keepGoing = Atomic<Bool>(false)
    private static let readerGone = Atomic<Bool>(false)

    /// For `record`, `run` and `collect`: a closed standard output or error
    /// (`obscura record … | head -c 10`) is no longer written to, and the
    /// recording, the service or the collection goes on and ends as usual
    /// (its file finished), instead of ending by SIGPIPE at the next line.
    static func keepGoingWithoutReaders() {
        signal(SIGPIPE, SIG_IGN)
        keepGoing.store(true, ordering: .relaxed)
    }

    static func note(_ text: String) {
        try? Syscalls.writeAll(STDERR_FILENO, Array("obscura: \(text)\n".utf8), path: "standard error")
    }

    /// A status line that rewrites itself on a terminal (one line per call otherwise).
    static func status(_ text: String) {
        if isatty(STDERR_FILENO) != 0 {
            try? Syscalls.writeAll(STDERR_FILENO, Array("\r\u{1B}[K\(text)".utf8), path: "standard error")
        } else {
            note(text)
        }
    }

    /// Ends a status line on a terminal.
    static func endStatus() {
        if isatty(STDERR_FILENO) != 0 { try? Syscalls.writeAll(STDERR_FILENO, Array("\r\u{1B}[K".utf8), path: "standard error") }
    }

    /// A line of output, written at once (unbuffered) so a reader sees it now.
    /// A reader that went away (`obscura status | grep -q …`) ends the
    /// program as it ends any Unix tool, by SIGPIPE, without a word.
    static func output(_ text: String) {
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
struct UserFacingError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

extension ParsableCommand {
    /// Runs `body`, turning errors into one clear line and a non-zero exit.
    static func reporting<T>(_ body: () async throws -> T) async throws -> T {
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
