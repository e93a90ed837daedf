import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ObscuraSettings
import ObscuraSystem
#if canImport(Glibc)
import Glibc
#endif

/// `obscura config`: the configuration's reference, or a file checked as
/// the service would read it. Light: it reads TOML and the board profiles,
/// never a camera or an encoder.
public struct ConfigCommand: AsyncParsableCommand {
    public static let configuration = CommandDescriptions.config

    public enum Format: String, ExpressibleByArgument, CaseIterable, Sendable { case text, markdown, man }

    @Option(help: "How the reference is written: text, markdown (docs/configuration.md) or man (obscura.toml(5)).") var format: Format = .text
    @Option(help: "The manual page's date (YYYY-MM-DD), with --format man (default: today).") var date: String?
    @Flag(help: "Check a configuration file instead.") var check = false
    @Argument(help: "The file --check reads (default /etc/obscura/obscura.toml).") var file: String?

    public init() {}

    public func validate() throws {
        if file != nil, !check { throw ValidationError("a file is read only with --check") }
        if let date, date.split(separator: "-").count != 3 { throw ValidationError("--date: \"\(date)\" is not YYYY-MM-DD") }
    }

    public func run() async throws {
        try await Self.reporting {
            guard check else { return print(reference(), terminator: "") }
            let path = file ?? ServiceConfiguration.defaultPath
            guard FileManager.default.fileExists(atPath: path) else {
                throw ValidationError("\(path): no such file (without it the service runs on the defaults)")
            }
            let configuration = try ServiceConfiguration(contentsOf: path)
            let profile = try BoardProfile.load(configuration.board, from: configuration.file)
            guard let cost = profile.cost(of: configuration) else {
                return print("\(path): good; board \(configuration.board) (\(profile.name)), whose profile gives no budget to predict against")
            }
            if !cost.fits, cost.budget.enforced { throw ValidationError("\(path): \(cost.refusal)") }
            print("\(path): good; board \(configuration.board) (\(profile.name))")
            for line in cost.lines { print("  " + line) }
            if !cost.fits { print("  " + cost.refusal + " (this board's budget is not enforced)") }
        }
    }

    func reference() -> String {
        switch format {
        case .text: ConfigurationReference.text()
        case .markdown: ConfigurationReference.markdown()
        case .man: ConfigurationReference.manual(date: date ?? Self.today())
        }
    }

    /// Today in UTC, YYYY-MM-DD.
    static func today() -> String {
        var now = time(nil)
        var parts = tm()
        gmtime_r(&now, &parts)
        return String(printf: "%04d-%02d-%02d", Int32(parts.tm_year + 1900), Int32(parts.tm_mon + 1), Int32(parts.tm_mday))
    }
}
