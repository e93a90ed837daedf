import ArgumentParser
import ObscuraCommandLine
import Foundation
import ObscuraService

struct ConfigCommand: AsyncParsableCommand {
    static let configuration = CommandDescriptions.config

    enum Format: String, ExpressibleByArgument, CaseIterable { case text, markdown, man }

    @Option(help: "How the reference is written: text, markdown (docs/configuration.md) or man (obscura.toml(5)).") var format: Format = .text
    @Option(help: "The manual page's date (YYYY-MM-DD), with --format man (default: today).") var date: String?
    @Flag(help: "Check a configuration file instead.") var check = false
    @Argument(help: "The file --check reads (default /etc/obscura/obscura.toml).") var file: String?

    func validate() throws {
        if file != nil, !check { throw ValidationError("a file is read only with --check") }
        if let date, date.split(separator: "-").count != 3 { throw ValidationError("--date: \"\(date)\" is not YYYY-MM-DD") }
    }

    func run() async throws {
        try await Self.reporting {
            guard check else { return print(reference(), terminator: "") }
            let path = file ?? ServiceConfiguration.defaultPath
            guard FileManager.default.fileExists(atPath: path) else {
                throw ValidationError("\(path): no such file (without it the service runs on the defaults)")
            }
            let configuration = try ServiceConfiguration(contentsOf: path)
            let profile = try BoardProfile.load(configuration.board, from: configuration.file)
            print("\(path): good; board \(configuration.board) (\(profile.name))")
        }
    }

    func reference() -> String {
        switch format {
        case .text: ConfigurationReference.text()
        case .markdown: ConfigurationReference.markdown()
        case .man: ConfigurationReference.manual(date: date ?? Self.today())
        }
    }

    static func today() -> String {
        let f = DateFormatter()
        f.dateFormat = "yyyy-MM-dd"
        f.timeZone = TimeZone(identifier: "UTC")
        return f.string(from: Date())
    }
}
