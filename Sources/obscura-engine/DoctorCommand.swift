import ArgumentParser
import ObscuraCommandLine
import Foundation
import ObscuraService

struct DoctorCommand: AsyncParsableCommand {
    static let configuration = CommandDescriptions.doctor

    @Option(help: "Configuration file (default /etc/obscura/obscura.toml when it exists).") var config: String?
    @Flag(help: "Write the checks as JSON.") var json = false

    func run() async throws {
        let config = config
        // (It opens devices and syncs a file: on a thread of its own, not Swift's pool.)
        let checks = await withCheckedContinuation { (done: CheckedContinuation<[DoctorCheck], Never>) in
            Thread.detachNewThread { done.resume(returning: Doctor.examine(configurationPath: config)) }
        }
        if json {
            print(Doctor.json(checks))
        } else {
            for check in checks { print(check.line) }
            let failed = checks.filter { $0.outcome == .fail }.count
            print(failed == 0 ? "obscura doctor: every check passed" : "obscura doctor: \(failed) check(s) failed")
        }
        if checks.contains(where: { $0.outcome == .fail }) { throw ExitCode.failure }
    }
}
