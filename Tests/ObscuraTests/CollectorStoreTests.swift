import Foundation
@testable import ObscuraFleet
import ObscuraFiles
import ObscuraSystem
import Testing
import TestSupport

/// How the collector stores a kiosk's batch, against a store in memory (the
/// real ones, Ceph through rclone and a folder, are FleetCollectionTests').
@Suite struct CollectorStoreTests {
    /// A store that remembers what it was asked, holds what it is given, and
    /// can be told to lose some of a batch.
    final class MemoryStore: ObjectStore {
        struct State {
            var objects: [String: StoredObject] = [:]
            var questions = 0
            var puts: [[String]] = []
            var losing: Set<String> = []
        }
        let state = Mutex(State())
        var place: String { "memory" }

        func holdings(_ keys: [String]) throws(CollectError) -> [String: StoredObject] {
            state.withLock { s in
                s.questions += 1
                return s.objects.filter { keys.contains($0.key) }
            }
        }

        func put(_ uploads: [Upload], staging: String) throws(CollectError) {
            let lost = state.withLock { s -> [String] in
                s.puts.append(uploads.map(\.key))
                var lost: [String] = []
                for upload in uploads {
                    if s.losing.contains(upload.key) { lost.append(upload.key); continue }
                    if s.objects[upload.key] == nil { s.objects[upload.key] = StoredObject(size: upload.size, sha256: upload.sha256) }
                }
                return lost
            }
            if !lost.isEmpty { throw CollectError("lost \(lost.joined(separator: ", "))") }
        }

        func cleanUp(prefix: String) throws(CollectError) -> String? { nil }
    }

    struct Rig {
        let folder: String
        let collector: Collector
        let store = MemoryStore()
        let kiosk: Kiosk

        init() throws {
            folder = NSTemporaryDirectory() + "collector-store-\(UUID().uuidString)"
            try FileManager.default.createDirectory(atPath: folder + "/k/files", withIntermediateDirectories: true)
            let fleet = try FleetFile(file: "fleet.toml", text: "[collector]\nspool = \"\(folder)\"\n[store]\nfolder = \"/unused\"\n[kiosks.k]\naddress = \"a@b\"\n")
            kiosk = fleet.kiosks[0]
            collector = Collector(fleet: fleet, store: store)
        }

        /// A pulled file and its .sha256, as the pull leaves them.
        func pulled(_ name: String, _ text: String) throws -> String {
            let path = folder + "/k/files/" + name
            try Data(text.utf8).write(to: URL(fileURLWithPath: path))
            let sha = try Checksum.sha256(of: path)
            try Data("\(sha)  \(name)\n".utf8).write(to: URL(fileURLWithPath: path + ".sha256"))
            return sha
        }

        func store(_ names: [String]) throws -> (KioskReport, Ledger) {
            let ledger = try Ledger(path: folder + "/k/stored")
            var report = KioskReport(kiosk: "k")
            let batch = try names.map { name throws(CollectError) in try collector.fetched(name, of: kiosk, in: folder + "/k/files") }
            collector.store(batch, of: kiosk, ledger: ledger, report: &report, say: { _ in })
            return (report, try Ledger(path: folder + "/k/stored"))
        }
    }

    @Test func aBatchIsAskedAboutOnceStoredOnceAndCheckedOnce() throws {
        let rig = try Rig()
        defer { try? FileManager.default.removeItem(atPath: rig.folder) }
        let names = (1...5).map { "obscura-20261128-10000\($0).mp4" }
        var hashes: [String] = []
        for name in names { hashes.append(try rig.pulled(name, "frames of \(name)")) }
        let (report, ledger) = try rig.store(names)
        #expect(report.failures.isEmpty, "\(report.failures)")
        #expect(report.stored == names.map { "k/2026/11/28/" + $0 })
        let state = rig.store.state.withLock { $0 }
        #expect(state.questions == 2 && state.puts.count == 1 && state.puts[0].count == 5)
        #expect(ledger.hashes == Set(hashes))
        for name in names { #expect(!FileManager.default.fileExists(atPath: rig.folder + "/k/files/" + name)) }
    }

    @Test func anotherFileUnderTheKeyIsNotOverwrittenAndALostUploadIsKeptForTheNextRun() throws {
        let rig = try Rig()
        defer { try? FileManager.default.removeItem(atPath: rig.folder) }
        let names = ["obscura-20261128-100001.mp4", "obscura-20261128-100002.mp4", "obscura-20261128-100003.mp4"]
        for name in names { _ = try rig.pulled(name, "frames of \(name)") }
        let sameSHA = try Checksum.sha256(of: rig.folder + "/k/files/" + names[2])
        let sameSize = try #require(try FileSize.of(rig.folder + "/k/files/" + names[2]))
        rig.store.state.withLock { s in
            s.objects["k/2026/11/28/" + names[0]] = StoredObject(size: 3, sha256: "another")
            s.objects["k/2026/11/28/" + names[2]] = StoredObject(size: sameSize, sha256: sameSHA)
            s.losing = ["k/2026/11/28/" + names[1]]
        }
        let (report, ledger) = try rig.store(names)
        // The one already there (an interrupted run's) is counted and recorded; the other two stay here.
        #expect(report.stored == ["k/2026/11/28/" + names[2]])
        #expect(ledger.hashes == [sameSHA])
        #expect(report.failures.count == 2)
        #expect(report.failures.contains { $0.hasPrefix(names[0]) && $0.contains("another file") && $0.contains("not overwritten") })
        #expect(report.failures.contains { $0.hasPrefix(names[1]) && $0.contains("holds nothing") && $0.contains("lost") })
        #expect(rig.store.state.withLock { $0.objects["k/2026/11/28/" + names[0]]?.sha256 } == "another")
        // Only the one not there was uploaded.
        #expect(rig.store.state.withLock { $0.puts } == [["k/2026/11/28/" + names[1]]])
        for name in names[0...1] { #expect(FileManager.default.fileExists(atPath: rig.folder + "/k/files/" + name)) }
    }
}
