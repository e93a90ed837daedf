import Foundation
import ObscuraSystem
import Testing

/// Several tests' scripts on one board boot: a boot with systemd and an
/// install costs about a minute on the emulated board before a script's
/// first line, so tests that need the same kind of board (the same options)
/// share one. The first of them to run boots the board once and runs every
/// scenario of the group in turn, each in a subshell of its own, with
/// `prelude` run once before them and `between` (the state each scenario
/// expects restored: the configuration, the service's files, its journal)
/// before each one after the first;
/// each test gets its own scenario's output and exit code.
///
/// A scenario's output is what it printed between its markers; the board's
/// stderr goes to each of them. A wait that gave up (board/virtual/waiting.sh)
/// fails the test whose scenario it was in.
public struct BoardScenarios: Sendable {
    public let name: String
    public let scenarios: [(name: String, script: String)]
    public let prelude: String
    public let between: String
    public let timeout: Int
    public let options: [String]

    public init(_ name: String, scenarios: [(name: String, script: String)], prelude: String = "", between: String = "",
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
        let whole = try runProgram(VirtualBoard.runner, ["--timeout", String(timeout)] + options + ["--", "bash", "-c", script],
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

    /// The group as one bash script: each scenario between its markers,
    /// its exit code on the closing one, with what it cost the board
    /// (its wall time, the board's busy time, the programs it started:
    /// board/virtual/tally.sh).
    var script: String {
        var text = ". board/virtual/tally.sh && tally_start\n"
        text += prelude.isEmpty ? "" : "(\n\(prelude)\n) > /dev/null 2>&1\n"
        for (index, scenario) in scenarios.enumerated() {
            text += "scenario_start=$SECONDS\n"
            let restores = index > 0 && !between.isEmpty
            if restores { text += "(\n\(between)\n) > /tmp/.between.out 2>&1\n" }
            // Each marker on a line of its own, even after a background
            // follower a scenario killed in the middle of a line.
            text += "echo; echo '=== scenario \(scenario.name) ==='\n"
            // What went wrong restoring the state (a wait that gave up, a
            // start that failed) is the scenario's: its test fails saying so.
            if restores { text += "grep -E '^(gave up after|gave-up journal: |between: )' /tmp/.between.out\n" }
            text += "(\n\(scenario.script)\n)\n"
            text += "scenario_rc=$?; tally_report\n"
            text += "echo; echo \"=== scenario \(scenario.name) ended: $scenario_rc, after $((SECONDS - scenario_start)) s, $TALLY ===\"\n"
        }
        return text
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

    /// For a board booted with systemd and Obscura installed: the
    /// installed configuration kept aside before the first scenario...
    public static let keepInstalledState = """
        cp /etc/obscura/obscura.toml /run/obscura-board-installed.toml
        cp /etc/obscura/fetch_authorized_keys /run/obscura-board-installed.keys
        cp /etc/obscura/view_authorized_keys /run/obscura-board-installed.view-keys
        """

    /// ...and between scenarios the service as a fresh boot has it: stopped,
    /// that configuration and retrieval keys back, no recordings, photos or
    /// files in progress, an empty journal, no failed state, started again
    /// and answering "idle" (the unit is Type=notify, but its start has once
    /// come back before the control socket answered); no test's own sshd,
    /// Prometheus or folders left.
    public static let restoreInstalledState = """
        [ -s /tmp/pull/sshd.pid ] && kill $(cat /tmp/pull/sshd.pid)
        systemctl stop prometheus prometheus-node-exporter
        rm -rf /tmp/pull /tmp/svc
        systemctl stop obscura
        cp /run/obscura-board-installed.toml /etc/obscura/obscura.toml
        cp /run/obscura-board-installed.keys /etc/obscura/fetch_authorized_keys
        cp /run/obscura-board-installed.view-keys /etc/obscura/view_authorized_keys
        rm -rf /var/lib/obscura/recordings/* /var/lib/obscura/photos/* /var/lib/obscura/incoming/*
        journalctl --rotate; sleep 1.1; journalctl --vacuum-time=1s
        systemctl reset-failed obscura
        systemctl start obscura || echo "between: systemctl start obscura failed: $(systemctl is-active obscura)"
        . board/virtual/waiting.sh
        idle() { obscura status 2>/dev/null | grep -q '^state: idle'; }
        wait_for 120 "the service to be idle after its start" idle
        """
}
