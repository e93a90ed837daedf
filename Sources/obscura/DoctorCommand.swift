import ArgumentParser
import ObscuraCommandLine
import ObscuraControl
import ObscuraDoctor
import ObscuraSettings
import ObscuraSystem
#if canImport(Glibc)
import Glibc
#endif

/// `obscura doctor` in the front: the checks that need no camera run here;
/// the camera's, the encoder's and the GPIO lines' in the engine
/// (`obscura-engine doctor --hardware-json`), whose answer is said in order
/// with the rest.
struct DoctorCommand: AsyncParsableCommand {
    static let configuration = CommandDescriptions.doctor

    @Option(help: "Configuration file (default /etc/obscura/obscura.toml when it exists).") var config: String?
    @Flag(help: "Write the checks as JSON.") var json = false

    func run() async throws {
        let config = config
        // (It opens devices, syncs a file and waits for the engine: on a thread of its own, not Swift's pool.)
        let checks = try await JoinableThread.result(name: "doctor") { Doctor.examine(configurationPath: config, hardware: Self.engineChecks(config)) }
        if json {
            print(Doctor.json(checks))
        } else {
            for check in checks { print(check.line) }
            let failed = checks.filter { $0.outcome == .fail }.count
            print(failed == 0 ? "obscura doctor: every check passed" : "obscura doctor: \(failed) check(s) failed")
        }
        if checks.contains(where: { $0.outcome == .fail }) { throw ExitCode.failure }
    }

    /// The hardware's checks from the engine, run as a program of its own.
    static func engineChecks(_ config: String?) -> HardwareChecker {
        { _, _, _ in
            let fix = "reinstall the obscura package (sudo apt install --reinstall obscura)"
            guard let engine = EngineHandoff.candidates().first(where: { (try? Syscalls.checkAccess($0, X_OK)) != nil }) else {
                return [DoctorCheck("camera", .fail, "obscura-engine, which checks the camera and the encoder, is not installed: looked for "
                                    + EngineHandoff.candidates().joined(separator: " and "), fix: fix)]
            }
            let arguments = ["doctor", "--hardware-json"] + (config.map { ["--config", $0] } ?? [])
            do {
                let answer = try ChildProcess.run(engine, arguments, errors: false)
                if let checks = Doctor.checks(fromJSON: answer.text) { return checks }
                return [DoctorCheck("camera", .fail, "\(engine) \(arguments.joined(separator: " ")) ended \(answer.status) without its checks: "
                                    + String(answer.text.suffix(300)), fix: fix)]
            } catch {
                return [DoctorCheck("camera", .fail, "cannot run \(engine): \(error)", fix: fix)]
            }
        }
    }
}
