import Foundation
import ObscuraSystem

/// Runs a helper program (sftp, rclone) to its end on the calling thread:
/// `input` written to its standard input and closed, its output and its
/// messages drained together (the messages on a thread of its own), so
/// neither pipe can fill and block it.
public enum HelperProgram {
    public struct Result: Sendable {
        public var status: Int32
        public var output: Data
        public var errors: String
    }

    /// `environment`: exactly this (nil: the caller's). `started` hears the
    /// process id once it runs (to kill it from elsewhere). Throws the
    /// launch's own description when it cannot start.
    public static func run(_ executable: String, _ arguments: [String], environment: [String: String]? = nil,
                           input: Data? = nil, started: (Int32) -> Void = { _ in }) throws(SystemError) -> Result {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if let environment { process.environment = environment }
        let stdin = Pipe(), output = Pipe(), errors = Pipe()
        process.standardInput = input == nil ? FileHandle.nullDevice : stdin
        process.standardOutput = output
        process.standardError = errors
        do { try process.run() } catch {
            throw SystemError(call: "run", code: ENOENT, detail: "\(executable): \(error.localizedDescription)")
        }
        started(process.processIdentifier)
        if let input {
            // EPIPE (the helper already gone) is no error here: its status and messages say what happened.
            try? stdin.fileHandleForWriting.write(contentsOf: input)
            try? stdin.fileHandleForWriting.close()
        }
        let collected = Mutex<Data>(Data())
        let errorsReader = errors.fileHandleForReading
        let reader: JoinableThread
        do {
            reader = try JoinableThread(name: "helper stderr") {
                let data = errorsReader.readDataToEndOfFile()
                collected.withLock { $0 = data }
            }
        } catch {
            process.terminate()
            process.waitUntilExit()
            throw error
        }
        let out = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        reader.join()
        return Result(status: process.terminationStatus, output: out, errors: collected.withLock { String(decoding: $0, as: UTF8.self) })
    }
}
