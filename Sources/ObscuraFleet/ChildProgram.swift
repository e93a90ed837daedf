import Foundation
import ObscuraRetrieval
import ObscuraSystem

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

    static func run(_ program: String, _ arguments: [String], environment: [String: String], input: Data? = nil) throws(CollectError) -> Result {
        // Killed when the collector dies, however it dies (setpriv
        // --pdeathsig): no upload goes on without the collector that
        // would check it.
        let result: HelperProgram.Result
        do {
            result = try HelperProgram.run(Puller.setpriv, ["--pdeathsig", "KILL", "--", program] + arguments, environment: environment,
                                           input: input)
        } catch {
            throw CollectError("cannot run \(program): \(error)")
        }
        if result.status == 127 {
            throw CollectError("cannot run \(program) (install it: apt install \(program)): \(result.errors.trimmingCharacters(in: .whitespacesAndNewlines))")
        }
        return Result(status: result.status, output: String(decoding: result.output, as: UTF8.self), errors: result.errors)
    }

    /// The last few lines a program said, for an error message.
    static func said(_ text: String) -> String {
        let lines = text.split(separator: "\n").map(String.init).filter { !$0.isEmpty && !$0.contains("Config file") }
        return lines.isEmpty ? "no message" : lines.suffix(3).joined(separator: "; ")
    }
}
