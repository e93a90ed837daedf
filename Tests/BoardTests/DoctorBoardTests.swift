import Foundation
import Testing
import TestSupport

extension VirtualBoardTests {
/// `obscura doctor` on an installed kiosk (systemd, the service, the
/// retrieval account): healthy, every check passes; then three kiosks broken
/// one way each, in the same boot, each put right before the next: the clock
/// not synchronised, the recordings' storage read-only, the camera gone
/// (vimc unbound). Each breakage fails its own check and no other, and the
/// exit status says so.
@Suite struct DoctorBoardTests {

    @Test func aHealthyKioskPassesAndEachBreakageIsNamedAlone() throws {
        let result = try KioskBoard.board.result(of: "doctor")
        let out = result.stdout
        #expect(!out.contains("gave up after"), "\(out)\(result.stderr)")
        struct Report: Decodable { let passed: Bool; let checks: [Check] }
        struct Check: Decodable { let name: String; let outcome: String; let detail: String }
        let lines = out.split(separator: "\n").map(String.init)
        func report(_ name: String) throws -> (report: Report, exit: Int) {
            let at = try #require(lines.firstIndex(of: "== \(name)"), "\(out)\(result.stderr)")
            let json = try #require(lines.dropFirst(at + 1).first)
            let exit = try #require(lines.first { $0.hasPrefix("exit \(name) ") }.flatMap { Int($0.split(separator: " ").last ?? "") })
            return (try JSONDecoder().decode(Report.self, from: Data(json.utf8)), exit)
        }
        let healthy = try report("healthy")
        let failed = healthy.report.checks.filter { $0.outcome == "fail" }.map { "\($0.name): \($0.detail)" }
        #expect(healthy.report.passed && healthy.exit == 0 && failed.isEmpty, "\(failed)")
        // Every part looked at, the last recording read by ffprobe.
        let names = Set(healthy.report.checks.map(\.name))
        for part in ["configuration", "camera layer", "camera", "encoder", "storage recordings", "clock", "retrieval", "gpio", "service", "last recording"] {
            #expect(names.contains(part), "\(part) not checked: \(names.sorted())")
        }
        #expect(healthy.report.checks.contains { $0.name == "last recording" && $0.outcome == "pass" && $0.detail.contains("plays") })
        for (scenario, check) in [("clock", "clock"), ("storage", "storage recordings"), ("camera", "camera")] {
            let broken = try report(scenario)
            let failures = broken.report.checks.filter { $0.outcome == "fail" }
            #expect(!broken.report.passed && broken.exit == 1, "\(scenario): \(failures.map(\.name))")
            #expect(failures.map(\.name) == [check], "\(scenario): \(failures.map { "\($0.name): \($0.detail)" })")
        }
    }
}
}
