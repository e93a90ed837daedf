#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ObscuraControl
import ObscuraSettings

/// `obscura doctor`: what an owner would otherwise check by hand on an
/// installed kiosk, one line each, passed or failed, a failure naming its
/// fix. The checks read the system and never change it (the storage check
/// writes one small file and removes it).
public struct DoctorCheck: Sendable, Codable, Equatable {
    public enum Outcome: String, Sendable, Codable { case pass, fail, skip }
    /// "camera", "storage /var/lib/obscura/recordings", …
    public let name: String
    public let outcome: Outcome
    /// What was found.
    public let detail: String
    /// For a failure: what to do.
    public let fix: String?

    public init(_ name: String, _ outcome: Outcome, _ detail: String, fix: String? = nil) {
        self.name = name
        self.outcome = outcome
        self.detail = detail
        self.fix = fix
    }

    public var line: String {
        let mark = switch outcome { case .pass: "ok  "; case .fail: "FAIL"; case .skip: "--  " }
        return "\(mark) \(name): \(detail)" + (fix.map { "\n       fix: \($0)" } ?? "")
    }

    /// The checks of the GPIO lines, which come with the camera's and the
    /// encoder's from the hardware but are said after the retrieval account.
    var isGPIO: Bool { name == "gpio" }
}

/// The checks that read the camera, the encoders and the GPIO lines, which
/// need libcamera, FFmpeg and libgpiod: the engine's (ObscuraService's
/// `HardwareChecks`), run in the same process or in one of its own.
public typealias HardwareChecker = @Sendable (_ configuration: ServiceConfiguration, _ profile: BoardProfile,
                                              _ service: ServiceStatus?) -> [DoctorCheck]

public enum Doctor {
    /// Every check, in the order an owner would look: the configuration,
    /// what it costs the board, the camera, the encoder, the storage, the clock, the retrieval
    /// account, the GPIO lines, the service and its last recording.
    /// Blocking (it opens devices, syncs a file and may wait for the
    /// hardware's checks): run it off Swift's pool.
    public static func examine(configurationPath: String?, root: String = "", hardware: HardwareChecker) -> [DoctorCheck] {
        var checks: [DoctorCheck] = []
        let configuration: ServiceConfiguration
        let profile: BoardProfile
        do {
            configuration = try ServiceConfiguration.load(configurationPath)
            profile = try BoardProfile.load(configuration.board, from: configuration.file)
            checks.append(DoctorCheck("configuration", .pass, "\(configuration.file), board \(configuration.board) (\(profile.name))"))
        } catch {
            checks.append(DoctorCheck("configuration", .fail, "\(error)", fix: "correct it (obscura config --check; every key: man obscura.toml)"))
            return checks
        }
        checks.append(LightChecks.budget(configuration: configuration, profile: profile))
        // The running service's own view first: while it streams, another
        // process may not list the camera it holds (vimc refuses its links).
        let status = LightChecks.serviceStatus(configuration: configuration)
        let found = hardware(configuration, profile, try? status.get())
        checks += found.filter { !$0.isGPIO }
        checks += LightChecks.storage(configuration: configuration)
        checks.append(LightChecks.clock(root: root))
        checks.append(LightChecks.retrieval(root: root))
        checks += found.filter(\.isGPIO)
        checks += LightChecks.service(status, configuration: configuration, before: checks)
        return checks
    }

    /// The running service's status, or why there is none.
    public static func serviceStatus(configuration: ServiceConfiguration) -> Result<ServiceStatus, any Error> {
        LightChecks.serviceStatus(configuration: configuration)
    }

    /// The checks as `obscura doctor --json` writes them.
    public static func json(_ checks: [DoctorCheck]) -> String {
        struct Report: Codable { let passed: Bool; let checks: [DoctorCheck] }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let data = (try? encoder.encode(Report(passed: !checks.contains { $0.outcome == .fail }, checks: checks))) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }

    /// The checks `json` wrote; nil for anything else.
    public static func checks(fromJSON text: String) -> [DoctorCheck]? {
        struct Report: Codable { let checks: [DoctorCheck] }
        return try? JSONDecoder().decode(Report.self, from: Data(text.utf8)).checks
    }
}
