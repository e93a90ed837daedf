import Foundation
import Testing
@testable import ObscuraMuxing
import ObscuraFiles

@Suite struct DataSyncerTests {
    /// No request is dropped: every one is followed by a sync that begins
    /// after it (requests made while a sync runs share the next one). Before,
    /// a request during a sync, or within a fragment's time of the last one,
    /// was dropped, so a fragment could wait up to 1.5 s for the storage.
    @Test func everyRequestIsFollowedByASync() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("sync-\(getpid())-\(UInt32.random(in: 0 ... .max))").path
        try #require(FileManager.default.createFile(atPath: path, contents: Data(count: 4096)))
        defer { unlink(path) }
        let syncer = try DataSyncer(path: path)
        for i in 0..<1000 {
            syncer.request()
            if i % 100 == 0 { usleep(1000) }
        }
        syncer.close()  // waits for the syncs in flight
        #expect(syncer.everyRequestCovered)
        #expect(syncer.syncs >= 2 && syncer.syncs <= 1000, "\(syncer.syncs) syncs for 1000 requests")
    }
}
