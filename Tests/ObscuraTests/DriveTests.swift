import Foundation
import Testing
@testable import ObscuraService
import ObscuraSystem
import TestSupport
import ObscuraFiles

/// The USB drive's lookup: by label through udev's links and the mount table,
/// or by mount point; and its configuration's errors.
@Suite struct DriveTests {

    /// A by-label folder whose link points at a real block device of this
    /// machine (a loop device), and a mount table that mounts it or not.
    private func labels(_ label: String, device: String) throws -> String {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("obscura-by-label-\(getpid())-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: dir + "/" + DriveConfiguration.udevEscape(label), withDestinationPath: device)
        return dir
    }

    private func blockDevice() throws -> (path: String, major: UInt32, minor: UInt32) {
        for name in (try? FileManager.default.contentsOfDirectory(atPath: "/dev"))?.sorted() ?? [] {
            var st = stat()
            if stat("/dev/" + name, &st) == 0, st.st_mode & S_IFMT == S_IFBLK {
                let rdev = UInt64(st.st_rdev)
                return ("/dev/" + name, UInt32((rdev >> 8) & 0xfff), UInt32(rdev & 0xff))
            }
        }
        throw CancellationError()
    }

    @Test func aLabelledDriveIsFoundWhereItIsMountedAndSaidAbsentWhenItIsNot() throws {
        guard let dev = try? blockDevice() else {
            print("DriveTests: no block device on this machine; the label lookup is tested on the board")
            return
        }
        let byLabel = try labels("KIOSK USB", device: dev.path)
        defer { try? FileManager.default.removeItem(atPath: byLabel) }
        #expect(FileManager.default.fileExists(atPath: byLabel + "/KIOSK\\x20USB"))
        let drive = DriveConfiguration(identity: .label("KIOSK USB"))
        let mounted = """
            22 1 0:21 / / rw,relatime shared:1 - ext4 /dev/root rw
            36 22 \(dev.major):\(dev.minor) / /media/kiosk\\040usb rw,relatime shared:96 master:82 - ext4 \(dev.path) rw
            """
        #expect(drive.locate(mountInfo: mounted, byLabel: byLabel)
                == .mounted(mountPoint: "/media/kiosk usb", folder: "/media/kiosk usb/obscura/recordings"))
        let unmounted = "22 1 0:21 / / rw,relatime shared:1 - ext4 /dev/root rw\n"
        #expect(drive.locate(mountInfo: unmounted, byLabel: byLabel)
                == .absent("the filesystem labelled \"KIOSK USB\" (\(dev.path)) is not mounted"))
        // An unknown label names the labels there are.
        #expect(DriveConfiguration(identity: .label("OTHER")).locate(mountInfo: mounted, byLabel: byLabel)
                == .absent("no filesystem labelled \"OTHER\" is attached (labels present: KIOSK USB)"))
    }

    @Test func aMountPointIsPresentWhileItsDeviceIs() throws {
        let drive = DriveConfiguration(identity: .mountPoint("/media/obscura"))
        let sys = FileManager.default.temporaryDirectory.appendingPathComponent("obscura-sys-block-\(getpid())").path
        try FileManager.default.createDirectory(atPath: sys + "/8:1", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: sys) }
        let table = "36 22 8:1 / /media/obscura rw - vfat /dev/sda1 rw\n"
        #expect(drive.locate(mountInfo: table, sysBlock: sys) == .mounted(mountPoint: "/media/obscura", folder: "/media/obscura/obscura/recordings"))
        // Pulled out: still in the table, its device gone.
        #expect(drive.locate(mountInfo: "36 22 8:2 / /media/obscura rw - vfat /dev/sda2 rw\n", sysBlock: sys)
                == .absent("the drive mounted on /media/obscura (/dev/sda2) went away"))
        #expect(drive.locate(mountInfo: "", sysBlock: sys) == .absent("nothing is mounted on /media/obscura"))
    }

    @Test func theDriveKeysAreCheckedAndNamed() throws {
        let c = try ServiceConfiguration.parsing("[usb]\ndrive = \"LABEL=OBSCURA\"\nquota_mb = 1000\nfolder = \"cam/rec\"\n")
        #expect(c.drive == DriveConfiguration(identity: .label("OBSCURA"), folder: "cam/rec", quotaBytes: 1000 << 20))
        #expect(try ServiceConfiguration.parsing("[usb]\ndrive = \"/media/obscura/\"\n").drive?.identity == .mountPoint("/media/obscura"))
        #expect(try ServiceConfiguration.parsing("[usb]\ndrive = \"\"\n").drive == nil)
        for (text, key, message) in [
            ("[usb]\ndrive = \"OBSCURA\"\n", "usb.drive",
             "\"OBSCURA\" is neither LABEL=<filesystem label> nor an absolute mount point (e.g. \"LABEL=OBSCURA\" or \"/media/obscura\")"),
            ("[usb]\ndrive = \"LABEL=\"\n", "usb.drive",
             "\"LABEL=\" is neither LABEL=<filesystem label> nor an absolute mount point (e.g. \"LABEL=OBSCURA\" or \"/media/obscura\")"),
            ("[usb]\ndrive = \"LABEL=X\"\nfolder = \"../etc\"\n", "usb.folder",
             "\"../etc\" must be a folder relative to the drive's root, e.g. \"obscura/recordings\""),
        ] {
            do {
                _ = try ServiceConfiguration.parsing(text)
                Issue.record("accepted: \(text)")
            } catch {
                #expect(error.key == key && error.message == message, "\(error)")
            }
        }
    }

    @Test func labelsAreEscapedAsUdevDoes() {
        #expect(DriveConfiguration.udevEscape("KIOSK USB/1") == "KIOSK\\x20USB\\x2f1")
        #expect(DriveConfiguration.udevEscape("café_1.2") == "café_1.2")
        #expect(DriveConfiguration.udevUnescape("KIOSK\\x20USB") == "KIOSK USB")
        #expect(Mount.unescape("/media/a\\040b") == "/media/a b")
    }
}

/// A storage call that hangs (a drive that stops answering) is given up on
/// at its deadline, on its own thread; one that answers gives its result.
@Suite struct StorageCallTests {
    @Test func aHangingCallIsGivenUpOnAtItsDeadlineAndAnAnsweringOneGivesItsResult() async throws {
        let thread = try ThreadExecutor(name: "storage-call-test")
        let release = DispatchSemaphore(value: 0)
        let clock = ManualClock()
        let hung = Task { await StorageCall.within(.seconds(2), on: thread, clock: clock) { () -> Int in
            release.wait()   // blocks its thread, as a read of a hung drive does
            return 1
        } }
        #expect(await waitUntil { clock.sleeping == 1 })
        clock.advance(by: .seconds(2))
        // Given up on at the deadline on its clock, not when the call ended (it has not).
        #expect(await hung.value == nil)
        release.signal()
        let answered = await StorageCall.within(.seconds(30), on: nil, clock: SystemWaitingClock()) { 42 }
        #expect(answered == 42)
    }

    /// The service's drive question: asked once, waited for with a deadline
    /// each round; given up on while the drive hangs, its answer taken once
    /// it comes (not a new question queued behind the hung one).
    @Test func aQuestionInFlightIsWaitedForAgainAndAnswersOnceTheDriveDoes() async throws {
        let thread = try ThreadExecutor(name: "storage-probe-test")
        let release = DispatchSemaphore(value: 0)
        let probe = Task.detached(executorPreference: thread) { () -> Int in
            release.wait()
            return 7
        }
        #expect(await StorageCall.value(of: probe, within: .milliseconds(100), clock: SystemWaitingClock()) == nil)
        #expect(await StorageCall.value(of: probe, within: .milliseconds(100), clock: SystemWaitingClock()) == nil)
        release.signal()
        #expect(await StorageCall.value(of: probe, within: .seconds(30), clock: SystemWaitingClock()) == 7)
    }
}
