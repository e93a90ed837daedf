import Foundation
import ObscuraFleet
import ObscuraService
import Testing
import TestSupport

@Suite struct FleetFileTests {
    @Test func theExampleFleetFileReadsAsWritten() throws {
        let fleet = try FleetFile(contentsOf: packageRoot + "/deploy/fleet.toml")
        #expect(fleet.kiosks.map(\.name) == ["shop-1", "school-hall", "library"])  // in the file's order
        #expect(fleet.kiosks[1].port == 2222 && fleet.kiosks[1].limitKbps == 8000)
        #expect(fleet.kiosks.allSatisfy { $0.key == "/etc/obscura/collect/id_ed25519" && !$0.decrypt })
        guard case .s3(let s3) = fleet.store else { Issue.record("not S3: \(fleet.store)"); return }
        #expect(s3.bucket == "kiosks" && s3.provider == "Ceph" && s3.secretAccessKeyFile == "/etc/obscura/collect/s3-secret")
        #expect(fleet.parallel == 4 && fleet.spool == "/var/lib/obscura-collect")
    }

    @Test func mistakesAreNamedWithWhatIsAllowed() {
        func error(_ text: String) -> String {
            do { _ = try FleetFile(file: "fleet.toml", text: text); return "" } catch { return "\(error)" }
        }
        let kiosk = "\n[kiosks.a]\naddress = \"obscura-fetch@10.0.0.1\"\n"
        #expect(error("[store]\nfolder = \"/srv\"\nfolders = 1" + kiosk) == "fleet.toml:3: store.folders: unknown key")
        #expect(error(kiosk).contains("store: is required"))
        #expect(error("[store]\nfolder = \"/srv\"\n[store.s3]\nbucket = \"b\"" + kiosk).contains("has both folder and s3.bucket"))
        #expect(error("[store]\nfolder = \"/srv\"\n").contains("no kiosk"))
        #expect(error("[store]\nfolder = \"/srv\"\n[kiosks.\"a b\"]\naddress = \"x\"\n").contains("\"a b\" is not a kiosk name"))
        #expect(error("[store]\nfolder = \"/srv\"\n[kiosks.a]\nport = 22\n").contains("kiosks.a.address: is required"))
        #expect(error("[store]\nfolder = \"/srv\"" + kiosk + "decrypt = true\n").contains("needs age_identities"))
        #expect(error("[collector]\nparallel = 0\n[store]\nfolder = \"/srv\"" + kiosk).contains("collector.parallel"))
    }

    @Test func keysAreKioskAndTheDateInTheName() {
        #expect(StoreKey.key(kiosk: "shop-1", name: "obscura-20261122-115500.mp4") == "shop-1/2026/11/22/obscura-20261122-115500.mp4")
        #expect(StoreKey.key(kiosk: "shop-1", name: "obscura-20261122-115500-0003.mkv.age") == "shop-1/2026/11/22/obscura-20261122-115500-0003.mkv.age")
        #expect(StoreKey.key(kiosk: "k", name: "obscura-boot-3f2a-0000123.mp4") == "k/undated/obscura-boot-3f2a-0000123.mp4")
        #expect(StoreKey.key(kiosk: "k", name: "obscura-20261399-000000.mp4") == "k/undated/obscura-20261399-000000.mp4")
        #expect(StoreKey.key(kiosk: "k", name: "holiday.jpg") == "k/undated/holiday.jpg")
    }
}
