import Foundation
import Testing
import TestSupport

extension VirtualBoardTests {
/// What is said saved stays saved: the card's power is cut the moment the
/// service says a photo is saved, the moment it says an interrupted
/// recording is recovered (at its next start), and the moment `obscura
/// pull` has said its file is pulled, 10 times each. The card is ext4 on a
/// device-mapper target (board/virtual/dm-card); the cut is the card as it
/// stands at that instant (its I/O suspended, nothing queued let through,
/// copied), and the service goes on to the next round on the same card. Each
/// copy is then mounted (its journal replayed, as a reboot does), the
/// announced file read under its final name against its checksum (a
/// recovered recording's frames counted), and checked with `e2fsck -fn`.
@Suite struct AnnouncedFilesBoardTests {
    static let cuts = 10


    @Test func anAnnouncedFileSurvivesAPowerCutRightAfterItsAnnouncement() throws {
        let result = try VirtualBoard.run(scenario: "AnnouncedFiles/anAnnouncedFileSurvivesAPowerCutRightAfterItsAnnouncement",
                                          [String(Self.cuts)], timeout: 2400)
        let lines = result.stdout.split(separator: "\n").map(String.init)
        let checked = lines.filter { $0.hasPrefix("checked ") }
        for kind in ["photo", "recovered", "pull"] {
            let rounds = checked.filter { $0.hasPrefix("checked \(kind)-") }
            #expect(rounds.count == Self.cuts, "\(kind): \(rounds.count) rounds checked\n\(result.stdout)\(result.stderr)")
            for line in rounds {
                #expect(line.contains("present=yes") && line.contains(": OK]") && line.contains("fsck=0"), "\(line)")
            }
        }
        // A recovered recording holds the frames it was said to hold.
        for line in checked where line.hasPrefix("checked recovered-") {
            let frames = line.components(separatedBy: "frames=").dropFirst().first?.split(separator: " ").first.map(String.init)
            let said = line.components(separatedBy: "said=[").last?.split(separator: "]").first?.split(separator: " ").first.map(String.init)
            #expect(frames != nil && frames == said, "\(line)")
        }
        // Every pull said it pulled its file before the cut.
        for line in checked where line.hasPrefix("checked pull-") { #expect(line.contains("said=[rc=0]"), "\(line)") }
        let lost = checked.filter { !($0.contains("present=yes") && $0.contains(": OK]")) }.count
        print("AnnouncedFilesBoardTests: \(checked.count) cuts right after an announcement, \(lost) announced files lost")
    }
}
}
