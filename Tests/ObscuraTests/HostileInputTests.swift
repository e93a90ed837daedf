import Dispatch
import Foundation
import ObscuraFormats
import Testing
import TestSupport
import ObscuraSystem
@testable import ObscuraService

/// Every option of every subcommand, fed values a careless script or a
/// hostile user might give. Nothing may crash; a refused value fails before
/// anything starts, with an error naming the option; nothing is left behind.
@Suite(.serialized) struct HostileInputTests {
    let obscura = packageRoot + "/.build/debug/obscura"
    static let hostile = ["nan", "inf", "-inf", "1e300", "-1", "0", "9223372036854775808", "", "text"]

    /// The arguments each command needs besides the one under test (`DIR`: a
    /// scratch folder that must stay empty when the value is refused).
    static let base: [String: [String]] = [
        "record": ["--duration", "1", "--output", "DIR/o.mp4", "--camera", "synthetic"],
        "photo": ["--output", "DIR/p.jpg", "--camera", "synthetic", "--warm-up", "0"],
        "stream": ["--frames", "3"],
        "preview": ["--duration", "1"],
        "dng": ["--node", "none", "--pattern", "RGGB", "--size", "640x480", "--output", "DIR/r.dng"],
        "gpio watch": ["--chip", "none", "--line", "none", "--timeout", "1"],
        "gpio set": ["--chip", "none", "--line", "none", "1"],
        "gpio button": ["--chip", "none", "--line", "none", "--timeout", "1"],
        "listen": ["--seconds", "1"],
        "beep": ["--count", "1", "--device", "none"],
        "pull": ["nobody@127.0.0.1", "DIR/pulled", "--ssh-option", "ConnectTimeout=2"],
        "run": ["--config", "DIR/none.toml"],
        "status": ["--socket", "DIR/none.sock"],
        "ctl": ["--socket", "DIR/none.sock", "status"],
        "decode": ["--input", "DIR/none.h264", "--size", "640x480", "--output", "DIR/o.yuv"],
        "keys add": ["--file", "DIR/keys", "DIR/none.pub"],
        "keys list": ["--file", "DIR/keys"],
        "keys remove": ["--file", "DIR/keys", "test"],
    ]

    /// Values that are allowed (the command then runs and may fail for want of
    /// hardware, but not because of the value).
    static let accepted: Set<String> = [
        "record --threads=0", "record --min-free-space=0", "record --trigger-after=0",
        "photo --warm-up=0", "preview --rotation=0", "gpio set --hold=0", "gpio button --debounce=0",
        "beep --lead=0", "photo --bracket-ev=-1", "photo --bracket-ev=0", "beep --level=-1", "beep --level=0",
    ]

    /// Options naming something outside the program (a camera, a GPIO line,
    /// a device, a file to read, an ssh setting): any value may be right, so
    /// the run may go on and fail on what it names; it must still not crash
    /// or leave anything behind.
    static let freeForm: Set<String> = ["--camera", "--chip", "--line", "--device", "--connector", "--identity", "--known-hosts",
                                        "--ssh-option", "--remote-folder", "--file", "--config", "--socket", "--node", "--audio",
                                        "--board"]

    struct Option: Sendable, CustomStringConvertible {
        let command: String
        let name: String
        var description: String { "\(command) \(name)" }
    }

    /// The options of every subcommand, as `--experimental-dump-help` lists them.
    static func options(of obscura: String) throws -> [Option] {
        let dump = try runProgram(obscura, ["--experimental-dump-help"])
        let json = try #require(try JSONSerialization.jsonObject(with: Data(dump.stdout.utf8)) as? [String: Any])
        var found: [Option] = []
        func walk(_ command: [String: Any], _ path: [String]) {
            let subcommands = command["subcommands"] as? [[String: Any]] ?? []
            for sub in subcommands { walk(sub, path + [sub["commandName"] as? String ?? "?"]) }
            guard subcommands.isEmpty, !path.isEmpty else { return }
            for argument in command["arguments"] as? [[String: Any]] ?? [] where argument["kind"] as? String == "option" {
                guard let names = argument["names"] as? [[String: Any]],
                      let long = names.first(where: { $0["kind"] as? String == "long" })?["name"] as? String,
                      long != "help" else { continue }
                found.append(Option(command: path.joined(separator: " "), name: "--" + long))
            }
        }
        walk(json["command"] as? [String: Any] ?? [:], [])
        return found
    }

    @Test func everyOptionOfEverySubcommandRefusesHostileValuesCleanly() throws {
        try #require(FileManager.default.isExecutableFile(atPath: obscura), "build first: swift build")
        let options = try Self.options(of: obscura)
        #expect(options.count > 60, "\(options.count) options found")
        let cases = options.filter { Self.base[$0.command] != nil }.flatMap { option in Self.hostile.map { (option, $0) } }
        let problems = Mutex<[String]>([])
        // Two at a time: each case is a process of its own.
        DispatchQueue.concurrentPerform(iterations: 2) { worker in
            for (option, value) in stride(from: worker, to: cases.count, by: 2).map({ cases[$0] }) {
                let found = Self.run(obscura, option, value)
                if !found.isEmpty { problems.withLock { $0 += found } }
            }
        }
        let checked = cases.count
        #expect(checked > 500, "\(checked) runs")
        let found = problems.withLock { $0 }.sorted()
        #expect(found.isEmpty, "\(found.count) problems:\n\(found.joined(separator: "\n"))")
    }

    /// Runs one option with one value; what is wrong with the outcome.
    static func run(_ obscura: String, _ option: Option, _ value: String) -> [String] {
        let key = "\(option.command) \(option.name)=\(value)"
        guard let dir = try? TemporaryDirectory(), let base = base[option.command] else { return ["\(key): no scratch folder"] }
        var arguments = option.command.split(separator: " ").map(String.init)
        var rest = base.map { $0.replacingOccurrences(of: "DIR", with: dir.path) }
        if let i = rest.firstIndex(of: option.name) { rest.removeSubrange(i...i + 1) }
        arguments += rest + ["\(option.name)=\(value)"]
        guard let result = try? runProgram(obscura, arguments, cwd: dir.path) else { return ["\(key): could not run"] }
        if let signal = result.signal { return ["\(key): killed by signal \(signal)"] }
        if accepted.contains(key) { return [] }
        let left = (try? FileManager.default.subpathsOfDirectory(atPath: dir.path)) ?? []
        if freeForm.contains(option.name) {
            return result.status != 0 && !left.isEmpty ? ["\(key): failed and left \(left)"] : []
        }
        var problems: [String] = []
        if result.status == 0 {
            problems.append("\(key): accepted")
        } else if !result.stderr.contains(option.name) && (value.isEmpty || !result.stderr.contains(value)) {
            problems.append("\(key): the error names neither \(option.name) nor the value: \(result.stderr.prefix(300))")
        }
        if !left.isEmpty { problems.append("\(key): left \(left)") }
        return problems
    }
}

/// Every key of the service's configuration and of a board profile, given
/// the same hostile values as TOML: nothing crashes; a value that is not a
/// finite number in range, or not of the key's type, is refused naming the
/// key (or, for an integer TOML cannot hold, the line).
@Suite struct HostileConfigurationTests {
    static let literals = ["nan", "inf", "-inf", "1e300", "-1", "0", "9223372036854775808", "\"\"", "\"text\""]
    /// Never a valid setting, whatever the key.
    static let alwaysRefused: Set<String> = ["nan", "inf", "-inf", "1e300", "9223372036854775808"]

    func keys(profile: Bool) throws -> [String] {
        var known = Set<String>()
        let files = profile ? ["board/profiles/virtual.toml", "board/profiles/pi4b.toml"] : ["deploy/obscura.toml"]
        for file in files {
            let reader = TOMLReader(try TOMLDocument(contentsOf: packageRoot + "/" + file))
            if profile { _ = try BoardProfile(reading: reader, file: file) } else { _ = try ServiceConfiguration(reading: reader, file: file) }
            known.formUnion(reader.keysRead)
        }
        return known.sorted()
    }

    @Test(arguments: [false, true])
    func everyKeyRefusesHostileValuesNamingIt(profile: Bool) throws {
        let keys = try keys(profile: profile)
        #expect(keys.count > (profile ? 20 : 15), "\(keys)")
        var problems: [String] = []
        for key in keys {
            for literal in Self.literals {
                // What the key needs beside it: a profile's name; a GPIO setting's chip.
                var base = profile && key != "board.name" ? "board.name = \"x\"\n" : ""
                if key.hasPrefix("gpio."), key != "gpio.chip" { base += "gpio.chip = \"c\"\n" }
                let text = base + "\(key) = \(literal)\n"
                do {
                    let reader = TOMLReader(try TOMLDocument(file: "F", text: text))
                    if profile { _ = try BoardProfile(reading: reader, file: "F") } else { _ = try ServiceConfiguration(reading: reader, file: "F") }
                    if Self.alwaysRefused.contains(literal) { problems.append("\(key) = \(literal): accepted") }
                } catch {
                    let line = "F:\(base.split(separator: "\n").count + 1)"
                    if !error.description.contains(key) && !error.description.hasPrefix(line) {
                        problems.append("\(key) = \(literal): \(error.description)")
                    }
                }
            }
        }
        #expect(problems.isEmpty, "\(problems.count) problems:\n\(problems.joined(separator: "\n"))")
    }
}
