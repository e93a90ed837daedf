import ArgumentParser
import ObscuraCommandLine
import ObscuraControl
import ObscuraDoctor
import ObscuraService
import ObscuraSystem

/// `obscura doctor` in the engine. The owner's `obscura doctor` runs in the
/// front (Sources/obscura/DoctorCommand.swift) and asks this one, with
/// `--hardware-json`, for the checks that need libcamera, FFmpeg and
/// libgpiod; run directly, it runs them all in this process.
struct DoctorCommand: AsyncParsableCommand {
    static let configuration = CommandDescriptions.doctor

    @Option(help: "Configuration file (default /etc/obscura/obscura.toml when it exists).") var config: String?
    @Flag(help: "Write the checks as JSON.") var json = false
    @Flag(help: .hidden) var hardwareJSON = false

    func run() async throws {
        let config = config, hardwareOnly = hardwareJSON
        // (It opens devices and syncs a file: on a thread of its own, not Swift's pool.)
        let checks = try await JoinableThread.result(name: "doctor") {
            hardwareOnly ? Self.hardware(config) : Doctor.examine(configurationPath: config, hardware: HardwareChecks.all)
        }
        let failed = checks.filter { $0.outcome == .fail }.count
        if json || hardwareOnly {
            print(Doctor.json(checks))
        } else {
            for check in checks { print(check.line) }
            print(failed == 0 ? "obscura doctor: every check passed" : "obscura doctor: \(failed) check(s) failed")
        }
        if failed > 0, !hardwareOnly { throw ExitCode.failure }
    }

    /// The hardware's checks alone, for the front's doctor (which has said
    /// the configuration's own failure already).
    static func hardware(_ config: String?) -> [DoctorCheck] {
        guard let configuration = try? ServiceConfiguration.load(config),
              let profile = try? BoardProfile.load(configuration.board, from: configuration.file) else { return [] }
        let status = try? Doctor.serviceStatus(configuration: configuration).get()
        return HardwareChecks.all(configuration: configuration, profile: profile, service: status)
    }
}
