import ArgumentParser
import Foundation

@main
struct Obscura: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "obscura",
        abstract: "A camera recorder for single-board Linux computers.",
        subcommands: [DevicesCommand.self, RecordCommand.self, StreamCommand.self, GPIOCommand.self,
                      RunCommand.self, StatusCommand.self, ControlCommand.self, PhotoCommand.self, DNGCommand.self, PreviewCommand.self, DecodeCommand.self,
                      KeysCommand.self, PullCommand.self, EncryptCommand.self, DecryptCommand.self, BeepCommand.self, ListenCommand.self])
}

/// Messages for people go to standard error; results to standard output.
enum Log {
    static func note(_ text: String) {
        FileHandle.standardError.write(Data("obscura: \(text)\n".utf8))
    }

    /// A status line that rewrites itself on a terminal (one line per call otherwise).
    static func status(_ text: String) {
        if isatty(STDERR_FILENO) != 0 {
            FileHandle.standardError.write(Data("\r\u{1B}[K\(text)".utf8))
        } else {
            note(text)
        }
    }

    /// Ends a status line on a terminal.
    static func endStatus() {
        if isatty(STDERR_FILENO) != 0 { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
    }

    /// A line of output, written at once (unbuffered) so a reader sees it now.
    static func output(_ text: String) {
        FileHandle.standardOutput.write(Data("\(text)\n".utf8))
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
