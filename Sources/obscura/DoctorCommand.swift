import ArgumentParser
import Foundation
import ObscuraService

struct DoctorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "doctor",
        abstract: "Check an installed kiosk: camera, encoder, storage, clock, retrieval, GPIO, the service and its last recording.",
        discussion: """
        One line a check, passed or failed; a failure names its fix. Exit status 1 when \
        a check failed. Run it as root (or as the obscura user) to see what the service sees.
        """)

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
