import Foundation
import Testing
import TestSupport

extension VirtualBoardTests {
/// Every `obscura` command the README and the owner's pages in docs/ show,
/// run on the board as written,
/// with only these changes: durations above 2 s become 2 s (`--seconds` 1),
/// the Raspberry Pi's GPIO chip and line become the board's gpio-sim chip and
/// its record button (pressed twice meanwhile), and a trailing `...` becomes
/// `--duration 1 --output auto.mp4`; the `media-ctl` line the README gives
/// for a raw node runs on vimc's media device; the working folder holds the
/// age identity `key.txt` and its `recipients.txt` the README's encryption
/// examples name (made with age-keygen here); those that ask the service
/// (`obscura status`, `obscura ctl`, `obscura view --local`) run last, with `obscura run` up on the
/// board's profile. Each must succeed, except the
/// few that need what the board has not (a host on the network, an H.264
/// hardware encoder, a raw stream through libcamera, exposure controls),
/// which must fail with their own clear message, not a usage error. An
/// example the README gains is run too.
@Suite struct ReadmeExamplesBoardTests {
    /// What an example may fail with on the board, by a part of its text.
    static let needsMore: [(example: String, says: String)] = [
        ("kiosk.local", "kiosk"),                                 // a kiosk on the network
        ("--encoder v4l2m2m --codec h264", "h264"),               // vicodec makes FWHT only
        ("--output shot.jpg --raw", "raw stream"),                // vimc has no raw stream
        ("--bracket-ev", "lacks"),                                // nor exposure controls
        ("--bracket-manual", "lacks"),
    ]

    /// The owner's pages: README.md and docs/*.md (not docs/testing).
    static func pages() throws -> [String] {
        let docs = packageRoot + "/docs"
        let names = try FileManager.default.contentsOfDirectory(atPath: docs).filter { $0.hasSuffix(".md") }.sorted()
        return [packageRoot + "/README.md"] + names.map { docs + "/" + $0 }
    }

    static func examples() throws -> [String] {
        let text = try pages().map { try String(contentsOfFile: $0, encoding: .utf8) }.joined(separator: "\n")
        var inBlock = false
        var found: [String] = []
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("```") { inBlock.toggle(); continue }
            guard inBlock else { continue }
            let text = line.trimmingCharacters(in: .whitespaces)
            // (Not a listing's line, "obscura      the command-line tool".)
            // (A command shown on two pages runs once.)
            if text.hasPrefix(".build/debug/obscura ") || (text.hasPrefix("obscura ") && !text.hasPrefix("obscura  "))
                || text.hasPrefix("media-ctl "), !found.contains(where: { adapted($0) == adapted(text) }) { found.append(text) }
        }
        return found
    }

    /// Whether the example asks the running service (its control socket).
    static func asksTheService(_ example: String) -> Bool {
        example.hasPrefix("obscura status") || example.hasPrefix("obscura ctl ") || example.hasPrefix("obscura view --local ")
    }

    /// The example as run on the board (see the suite's comment).
    static func adapted(_ example: String) -> String {
        var words = example.components(separatedBy: "  #").first!.trimmingCharacters(in: .whitespaces)
            .split(separator: " ", omittingEmptySubsequences: true).map(String.init)
        if words[0] == "media-ctl" {
            return words.map { $0 == "/dev/media0" ? "$vimc" : $0 }.joined(separator: " ")
        }
        words[0] = "$o"
        for (i, w) in words.enumerated() where i > 0 {
            if words[i - 1] == "--duration", let d = Double(w), d > 2 { words[i] = "2" }
            if words[i - 1] == "--seconds", let d = Double(w), d > 1 { words[i] = "1" }
            if w == "pinctrl-bcm2711" { words[i] = "$OBSCURA_BOARD_GPIO_CHIP" }
            if w == "GPIO17" { words[i] = "record-button" }
            if w == "..." { words[i] = "--duration 1 --output auto.mp4" }
        }
        return words.joined(separator: " ")
    }

    @Test func everyExampleInTheReadmeRuns() throws {
        let examples = try Self.examples()
        #expect(examples.count >= 25, "the examples in README.md and docs/ were not found: \(examples)")
        let keys = packageRoot + "/.build/readme-keys-\(getpid())"
        try FileManager.default.createDirectory(atPath: keys, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: keys) }
        let made = try runProgram("age-keygen", ["-o", keys + "/key.txt"])
        try #require(made.status == 0, "age-keygen: \(made.stderr)")
        let recipient = try #require(made.stderr.split(separator: " ").last?.trimmingCharacters(in: .whitespacesAndNewlines))
        try (recipient + "\n").write(toFile: keys + "/recipients.txt", atomically: true, encoding: .utf8)
        // The examples that ask the service, last, with `obscura run` up on
        // the board's profile (its control socket where they look for it);
        // the others before, with the camera free (scenarios/ReadmeExamples).
        let ordered = examples.enumerated().filter { !Self.asksTheService($0.element) }
            + examples.enumerated().filter { Self.asksTheService($0.element) }
        let plan = ordered.map { n, example in
            let command = Self.adapted(example)
            let when = Self.asksTheService(example) ? "service" : command.contains("gpio watch") ? "button" : "alone"
            return "\(n)\t\(when)\t\(command)\n"
        }.joined()
        try plan.write(toFile: keys + "/examples", atomically: true, encoding: .utf8)
        let result = try VirtualBoard.run(scenario: "ReadmeExamples/everyExampleInTheReadmeRuns", [".build/readme-keys-\(getpid())"], timeout: 600)
        let lines = result.stdout.split(separator: "\n").map(String.init)
        for (n, example) in examples.enumerated() {
            let rc = lines.first { $0.hasPrefix("example \(n) rc=") }.map { String($0.dropFirst("example \(n) rc=".count)) }
            let said = lines.filter { $0.hasPrefix("example \(n): ") }.map { String($0.dropFirst("example \(n): ".count)) }.joined(separator: "\n")
            #expect(rc != nil, "not run: \(example)\n\(result.stderr)")
            #expect(!said.contains("Usage:") && !said.contains("Error: Unknown option") && !said.contains("Missing value"),
                    "the example is not what the program takes: \(example)\n\(said)")
            if let allowed = Self.needsMore.first(where: { example.contains($0.example) }) {
                #expect(rc != "0" && said.contains(allowed.says), "\(example) needs what the board lacks: it must say so\n\(said)")
            } else {
                #expect(rc == "0", "\(example) (run as: \(Self.adapted(example)))\n\(said)")
            }
        }
    }
}
}
