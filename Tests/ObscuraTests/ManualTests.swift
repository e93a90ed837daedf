import Foundation
import ObscuraFormats
import Testing
import TestSupport
@testable import ObscuraService

/// The configuration reference is the service's own: every key the service
/// reads is in it and nothing else, every example in it is taken, and
/// docs/configuration.md and obscura.toml(5) are what it writes today.
@Suite struct ConfigurationReferenceTests {
    @Test func everyKeyTheServiceReadsIsDocumentedAndNothingElse() throws {
        let reader = TOMLReader(try TOMLDocument(file: "empty.toml", text: ""))
        _ = try ServiceConfiguration(reading: reader, file: "empty.toml")
        let documented = ConfigurationReference.keys.map(\.name)
        #expect(Set(documented).count == documented.count, "a key documented twice: \(documented)")
        // (A camera's keys are read for each [cameras.NAME] table there is.)
        let read = reader.keysRead.union(documented.filter { $0.hasPrefix("cameras.NAME.") })
        #expect(read.subtracting(documented).isEmpty, "read but not documented: \(read.subtracting(documented).sorted())")
        #expect(Set(documented).subtracting(read).isEmpty, "documented but never read: \(Set(documented).subtracting(read).sorted())")
        // Every key's table is one the reference describes.
        let tables = Set(ConfigurationReference.tables.map(\.name))
        #expect(ConfigurationReference.keys.allSatisfy { tables.contains($0.table) })
    }

    @Test func everyExampleIsTakenAndAWrongValueIsNamed() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("obscura-reference-\(getpid())").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let recipients = dir + "/recipients.txt"
        try "age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p\n".write(toFile: recipients, atomically: true, encoding: .utf8)
        // Every key at its example, table by table (the example recipients file made here).
        var text = ""
        for table in ConfigurationReference.tables {
            if !table.name.isEmpty { text += "[\(table.name.replacingOccurrences(of: "NAME", with: "door"))]\n" }
            for k in ConfigurationReference.keys where k.table == table.name {
                text += "\(k.key) = \(k.name == "encryption.recipients_file" ? "\"\(recipients)\"" : k.example)\n"
            }
        }
        let reader = TOMLReader(try TOMLDocument(file: "examples.toml", text: text))
        let c = try ServiceConfiguration(reading: reader, file: "examples.toml")
        try reader.rejectUnknownKeys()
        #expect(c.codec == .h264 && c.segmentSeconds == 300 && c.recipients.count == 2 && c.drive != nil
                && c.cameras.map(\.name) == ["door"], "\(text)")
        // A value out of what is allowed: the error names the key and what is allowed, as the reference says it.
        let key = try #require(ConfigurationReference.keys.first { $0.name == "recording.fragment_seconds" })
        let error = try #require(thrown {
            _ = try ServiceConfiguration(reading: TOMLReader(TOMLDocument(file: "w.toml", text: "[recording]\nfragment_seconds = 99\n")), file: "w.toml")
        })
        #expect("\(error)".contains("w.toml:2: recording.fragment_seconds") && "\(error)".contains(key.allowed), "\(error)")
    }

    @Test func theDocsAndTheManualPageAreTheReferenceOfToday() throws {
        let docs = try String(contentsOfFile: packageRoot + "/docs/configuration.md", encoding: .utf8)
        #expect(docs == ConfigurationReference.markdown(), "docs/configuration.md lags behind the code: run deploy/make-manuals")
        let page = try String(contentsOfFile: packageRoot + "/deploy/man/obscura.toml.5", encoding: .utf8)
        let undated = { (s: String) in s.split(separator: "\n").filter { !$0.hasPrefix(".Dd ") } }
        #expect(undated(page) == undated(ConfigurationReference.manual(date: "2000-01-01")),
                "deploy/man/obscura.toml.5 lags behind the code: run deploy/make-manuals")
    }
}

/// The manual pages and completions in deploy/ are the command line's of
/// today: a page for every subcommand naming each of its options, and the
/// completions as the binary writes them (deploy/make-manuals makes both).
@Suite struct ManualTests {
    let obscura = packageRoot + "/.build/debug/obscura"

    struct Command { var path: [String]; var options: [String] }

    /// Every command and its long options, from the binary's own description of itself.
    func commands() throws -> [Command] {
        let dump = try runProgram(obscura, ["--experimental-dump-help"])
        try #require(dump.status == 0, "\(dump.stderr)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(dump.stdout.utf8)) as? [String: Any])
        var out: [Command] = []
        func walk(_ c: [String: Any], _ path: [String]) {
            let args = c["arguments"] as? [[String: Any]] ?? []
            let options = args.compactMap { a -> String? in
                guard (a["shouldDisplay"] as? Bool) != false else { return nil }
                return (a["names"] as? [[String: Any]])?.first { $0["kind"] as? String == "long" }?["name"] as? String
            }
            out.append(Command(path: path, options: options))
            for s in c["subcommands"] as? [[String: Any]] ?? [] { walk(s, path + [s["commandName"] as? String ?? "?"]) }
        }
        walk(try #require(json["command"] as? [String: Any]), ["obscura"])
        return out
    }

    @Test func everySubcommandHasAPageNamingEachOfItsOptions() throws {
        let commands = try commands()
        #expect(commands.count > 20)
        for command in commands where command.path.last != "help" {
            let name = command.path.joined(separator: "-")
            let file = packageRoot + "/deploy/man/\(name).1"
            guard let page = try? String(contentsOfFile: file, encoding: .utf8) else {
                Issue.record("no page \(name).1 in deploy/man: run deploy/make-manuals")
                continue
            }
            let missing = command.options.filter { !page.contains("Fl -\($0)") }
            #expect(missing.isEmpty, "\(name).1 lacks \(missing): run deploy/make-manuals")
        }
    }

    /// Installed where Debian puts them (deploy/install-manuals), every page
    /// is found by its name and set by man-db's `man` without a warning from
    /// groff (a line it cannot break, a macro it does not know).
    @Test func manFindsAndSetsEveryInstalledPageWithoutAWarning() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("obscura-man-\(getpid())").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        let installed = try runProgram(packageRoot + "/deploy/install-manuals", [root])
        try #require(installed.status == 0, "\(installed.stderr)")
        let pages = try FileManager.default.contentsOfDirectory(atPath: packageRoot + "/deploy/man")
        #expect(pages.count > 20)
        for file in pages {
            let name = String(file[..<file.lastIndex(of: ".")!])
            let shown = try runProgram("man", ["--warnings", "-P", "cat", "-M", root + "/usr/share/man", name], environment: ["MANWIDTH": "80"])
            #expect(shown.status == 0 && shown.stderr.isEmpty, "man \(name): \(shown.stderr)")
            #expect(shown.stdout.contains("NAME") && shown.stdout.contains(name.uppercased() + "("), "man \(name): \(shown.stdout.prefix(200))")
        }
    }

    @Test(arguments: [("bash", "obscura.bash"), ("zsh", "_obscura"), ("fish", "obscura.fish")])
    func theCompletionsAreTheBinarysOwn(shell: String, file: String) throws {
        let made = try runProgram(obscura, ["--generate-completion-script", shell])
        let kept = try String(contentsOfFile: packageRoot + "/deploy/completions/\(file)", encoding: .utf8)
        // (bash's kept without its #! line: bash-completion sources it.)
        let expected = shell == "bash" && made.stdout.hasPrefix("#!") ? String(made.stdout.drop { $0 != "\n" }.dropFirst()) : made.stdout
        #expect(made.status == 0 && expected == kept, "deploy/completions/\(file) lags behind the command line: run deploy/make-manuals")
    }
}
