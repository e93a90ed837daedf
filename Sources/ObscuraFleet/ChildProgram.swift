import Foundation
import ObscuraRetrieval
import ObscuraSystem
import Synchronization

/// What went wrong in collecting: it names the kiosk, file or call.
public struct CollectError: Error, CustomStringConvertible, Sendable, Equatable {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// Runs a helper program (rclone) to its end on the calling thread, with
/// exactly the environment given (never the collector's own: no ambient
/// AWS_* or RCLONE_* setting reaches it), both pipes drained together.
enum ChildProgram {
    struct Result {
        var status: Int32
        var output: String
        var errors: String
    }

    static func run(_ program: String, _ arguments: [String], environment: [String: String]) throws(CollectError) -> Result {
        // Killed when the collector dies, however it dies (setpriv
        // --pdeathsig): no upload goes on without the collector that
        // would check it.
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Puller.setpriv)
        process.arguments = ["--pdeathsig", "KILL", "--", program] + arguments
        process.environment = environment
        let output = Pipe(), errors = Pipe()
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = output
        process.standardError = errors
        do { try process.run() } catch {
            throw CollectError("cannot run \(program): \(error.localizedDescription)")
        }
        let collected = Mutex<Data>(Data())
        let errorsReader = errors.fileHandleForReading
        let reader: JoinableThread
        do {
            reader = try JoinableThread(name: "child stderr") {
                let data = errorsReader.readDataToEndOfFile()
                collected.withLock { $0 = data }
            }
        } catch {
            process.terminate()
            process.waitUntilExit()
            throw CollectError("cannot read \(program)'s messages: \(error)")
        }
        let out = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        reader.join()
        let err = collected.withLock { String(decoding: $0, as: UTF8.self) }
        if process.terminationStatus == 127 {
            throw CollectError("cannot run \(program) (install it: apt install \(program)): \(err.trimmingCharacters(in: .whitespacesAndNewlines))")
        }
        return Result(status: process.terminationStatus, output: String(decoding: out, as: UTF8.self), errors: err)
    }

    /// The last few lines a program said, for an error message.
    static func said(_ text: String) -> String {
        let lines = text.split(separator: "\n").map(String.init).filter { !$0.isEmpty && !$0.contains("Config file") }
        return lines.isEmpty ? "no message" : lines.suffix(3).joined(separator: "; ")
    }
}
