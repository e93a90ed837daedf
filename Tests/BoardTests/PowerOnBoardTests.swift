import Foundation
import Testing
import TestSupport

extension VirtualBoardTests {
/// Recording from power-on, as an owner sets it up: the package's files
/// installed, `recording.start = "power-on"`, the state folder on an ext4
/// card of its own mounted from /etc/fstab, systemd booted
/// (bench/first-frame --board). The service records from its start with no
/// press, its first frames reach the card, the record button stops the
/// recording (finished, with its checksum) and starts it again, and a power
/// cut then keeps all but at most its last second, on a clean card.
@Suite struct PowerOnBoardTests {
    @Test func theServiceRecordsFromPowerOnTheButtonStopsItAndAPowerCutKeepsTheLastFragment() throws {
        // The build the board tests run (the benchmark's own default too).
        let result = try runProgram(packageRoot + "/bench/first-frame", ["--board", "--binary", ".build/debug/obscura"],
                                    cwd: packageRoot, environment: VirtualBoard.ledgerEnvironment)
        let out = result.stdout
        let lines = out.split(separator: "\n").map(String.init)
        #expect(result.status == 0, "\(out)\(result.stderr)")
        // From systemd's exec to the first frames on the card, read from the run.
        let board = try #require(lines.first { $0.hasPrefix("board: exec of `obscura run`") }, "\(out)\(result.stderr)")
        #expect(board.contains("s from exec to the first frame on the card"), "\(board)")
        // The unit waits for the card's mount (local-fs), not for udev to settle.
        let after = try #require(lines.first { $0.hasPrefix("ordered after: ") }, "\(out)")
        #expect(!after.contains("udev-settle") && after.contains("local-fs.target"), "\(after)")
        #expect(lines.contains("card: clean (e2fsck 0, then 0)") || lines.contains("card: clean (e2fsck 1, then 0)"), "\(out)")
        let stopped = try #require(lines.first { $0.hasPrefix("stopped by the button: ") }, "\(out)")
        #expect(stopped.hasSuffix("checksum there") && !stopped.contains(": 0 frames"), "\(stopped)")
        let cut = try #require(lines.first { $0.hasPrefix("cut by the power ") }, "\(out)")
        let lost = cut.components(separatedBy: "lost ").last.flatMap { Double($0.dropLast(2)) }
        #expect(lost.map { $0 <= 1.0 } == true && !cut.contains("(0 frames)"), "\(cut)")
        for line in lines where line.hasPrefix("board: ") || line.hasPrefix("cut by") || line.hasPrefix("ordered after: ") {
            print("PowerOnBoardTests: \(line)")
        }
    }
}
}
