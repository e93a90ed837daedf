import Foundation
import ObscuraSystem
import Testing

/// Several tests' scenarios on one board boot: a boot with systemd and an
/// install costs about a minute on the emulated board before a script's
/// first line, so tests that need the same kind of board (the same options)
/// share one. The first of them to run boots the board once and runs every
/// scenario of the group in turn (Tests/BoardTests/scenarios/group.sh),
/// each a script under Tests/BoardTests/scenarios run by a bash of its own,
/// with `prelude` run once before them and `between` (the state each
/// scenario expects restored: the configuration, the service's files, its
/// journal) before each one after the first, both scripts there too;
/// each test gets its own scenario's output and exit code.
///
/// A scenario's output is what it printed between its markers; the board's
/// stderr goes to each of them. A wait that gave up (board/virtual/waiting.sh)
/// fails the test whose scenario it was in.
public struct BoardScenarios: Sendable {
    public let name: String
    /// Each scenario: its name, its script (a path under
    /// Tests/BoardTests/scenarios without ".sh") and the script's arguments.
    public let scenarios: [(name: String, script: String, arguments: [String])]
    public let prelude: String?
    public let between: String?
    public let timeout: Int
    public let options: [String]

    public init(_ name: String, scenarios: [(name: String, script: String, arguments: [String])], prelude: String? = nil, between: String? = nil,
                timeout: Int, options: [String]) {
        self.name = name
        self.scenarios = scenarios
        self.prelude = prelude
        self.between = between
        self.timeout = timeout
        self.options = options
    }

    private static let results = Mutex<[String: [String: ProcessResult]]>([:])

    /// The result of scenario `scenario`, running the whole group on its
    /// board first if no test of it has yet.
    public func result(of scenario: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> ProcessResult {
        precondition(scenarios.contains { $0.name == scenario }, "\(name) has no scenario \(scenario)")
        // Tests of the board suites run one at a time (VirtualBoardTests is
        // serialized), so the group runs once; the lock only guards the cache.
        if let cached = Self.results.withLock({ $0[name] }) {
            return Self.checked(cached[scenario]!, sourceLocation: sourceLocation)
        }
        let whole = try runProgram(VirtualBoard.runner, ["--timeout", String(timeout)] + options + ["--", "bash", "Tests/BoardTests/scenarios/group.sh"] + groupArguments,
                                   cwd: packageRoot, environment: VirtualBoard.ledgerEnvironment)
        VirtualBoard.keepLog(whole)
        // What each scenario cost, in the test log: which of them to split off or make cheaper.
        for line in whole.stdout.split(separator: "\n") where line.hasPrefix("=== scenario ") && line.contains(" ended: ") {
            print("\(name) board: \(line.dropFirst(4).dropLast(4))")
        }
        let split = Self.split(whole, names: scenarios.map(\.name))
        Self.results.withLock { $0[name] = split }
        return Self.checked(split[scenario]!, sourceLocation: sourceLocation)
    }

    /// group.sh's arguments: the prelude and between, then each scenario's
    /// name, script, count of arguments and arguments.
    var groupArguments: [String] {
        (prelude.map { ["--prelude", $0] } ?? []) + (between.map { ["--between", $0] } ?? [])
            + scenarios.flatMap { [$0.name, $0.script, String($0.arguments.count)] + $0.arguments }
    }

    /// Each scenario's part of the board's output. A scenario that never
    /// ended (the board timed out or could not start) gets the board's own
    /// exit code, or 124 when the board's was 0.
    static func split(_ whole: ProcessResult, names: [String]) -> [String: ProcessResult] {
        let lines = whole.stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        var parts: [String: ProcessResult] = [:]
        for name in names {
            let open = "=== scenario \(name) ===", closing = "=== scenario \(name) ended: "
            guard let start = lines.firstIndex(of: open) else {
                parts[name] = ProcessResult(status: whole.status == 0 ? 124 : whole.status,
                                            stdout: "(the scenario never started)\n", stderr: whole.stderr)
                continue
            }
            let rest = lines[(start + 1)...]
            if let end = rest.firstIndex(where: { $0.hasPrefix(closing) }) {
                let code = Int32(lines[end].dropFirst(closing.count).prefix { $0.isNumber }) ?? 1
                parts[name] = ProcessResult(status: code, stdout: rest[..<end].joined(separator: "\n") + "\n", stderr: whole.stderr)
            } else {
                parts[name] = ProcessResult(status: whole.status == 0 ? 124 : whole.status,
                                            stdout: rest.joined(separator: "\n"), stderr: whole.stderr)
            }
        }
        return parts
    }

    static func checked(_ result: ProcessResult, sourceLocation: SourceLocation) -> ProcessResult {
        VirtualBoard.recordGaveUp(result.stdout, sourceLocation: sourceLocation)
        return result
    }
}
