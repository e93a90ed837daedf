import Foundation
import Testing
import TestSupport

extension VirtualBoardTests {
/// Recording to a USB drive under the service: a real USB stick (qemu's
/// usb-storage, an ext4 filesystem labelled OBSCURA) that is pulled out
/// mid-recording through qemu's monitor (`device_del`).
@Suite struct DriveBoardTests {
    /// Recordings go to the labelled drive while it is there; pulled out,
    /// the recording goes on on the SD card within 2 s, the new file plays,
    /// and every file finished on the drive before is still on it, intact.
    @Test func aDrivePulledOutMidRecordingFallsBackToTheSDCardAndKeepsWhatItHad() throws {
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("obscura-drive-\(getpid())").path
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: work) }
        let image = work + "/usb.img"
        let made = try runProgram("/bin/sh", ["-c", "PATH=$PATH:/usr/sbin:/sbin; truncate -s 256M \(image) && mke2fs -q -t ext4 -L OBSCURA -F \(image)"])
        try #require(made.status == 0, "mke2fs: \(made.stderr)")
        let least = 5  // a few frames prove the path ran; no rate is assumed
        let result = try VirtualBoard.run(scenario: "Drive/aDrivePulledOutMidRecordingFallsBackToTheSDCardAndKeepsWhatItHad", ["\(least)"], timeout: 300, options: ["--systemd", "--usb-disk", image])
        let out = result.stdout
        let board = BoardLines(out)
        let lines = board.lines
        #expect(!out.contains("gave up after"), "\(out)")
        // The drive was where recordings went.
        #expect(lines.contains { $0.hasPrefix("before: storage usb: /media/obscura/obscura/recordings, ") && $0.contains("of a 200 MiB quota (recording here)") },
                "\(out)\(result.stderr)")
        #expect(lines.contains { $0.hasPrefix("start: ") && $0.replacingOccurrences(of: "\\/", with: "/").contains("/media/obscura/obscura/recordings/") })
        let onDrive = lines.filter { $0.hasPrefix("on-drive: ") && $0.hasSuffix(": OK") }
            .map { String($0.dropFirst("on-drive: ".count).dropLast(": OK".count)) }
        #expect(onDrive.count >= 2, "\(out)")
        // The retrieval account's view (its chroot) has the drive's files too.
        for name in onDrive { #expect(lines.contains("fetch-view: \(name)"), "\(name) is not in /srv/obscura/media: \(out)") }
        // Pulled out: the recording went on on the SD card within 2 s of the kernel letting go.
        let gone = try #require(board.number(after: "gone uptime="), "\(out)\(result.stderr)")
        let resumed = try #require(lines.first { $0.hasPrefix("mono: ") }.flatMap(BoardLines.monotonic(of:)), "\(out)")
        print(String(format: "DriveBoardTests: the recording went on on the SD card %.2f s after the drive was gone", resumed - gone))
        #expect(resumed - gone < 2.0, "went on \(resumed - gone) s after the drive was gone")
        #expect(lines.contains("active=active restarts=0"), "\(out)")
        let sdFiles = lines.filter { $0.hasPrefix("sd-file=") }
        #expect(!sdFiles.isEmpty, "\(out)")
        let sdFrames = sdFiles.compactMap { Int($0.components(separatedBy: "frames=").last ?? "") }.reduce(0, +)
        #expect(sdFrames >= least, "the fallback files play: \(sdFiles)")
        let sdCount = try #require(board.number(after: "sd-files="), "\(out)")
        #expect(sdCount >= Double(sdFiles.count) && lines.filter { $0.hasPrefix("sum: ") && $0.hasSuffix(": OK") }.count == Int(sdCount), "\(out)")
        #expect(lines.contains("status: storage usb: LABEL=OBSCURA, absent"), "\(out)")
        #expect(lines.contains("metric: obscura_storage_present{storage=\"usb\",path=\"LABEL=OBSCURA\"} 0"), "\(out)")
        #expect(lines.contains("metric: obscura_stage_restarts_total{stage=\"storage\"} 1"), "\(out)")
        #expect(lines.contains { $0.hasPrefix("journal: obscura: usb.drive: ") && $0.contains("OBSCURA") && $0.contains("recording to the SD card") }, "\(out)")

        // On this machine: the stick's filesystem (its journal replayed, as a
        // mount would) holds every file finished on it before the removal,
        // each matching its checksum, each playing.
        let fsck = try runProgram("/bin/sh", ["-c", "PATH=$PATH:/usr/sbin:/sbin; e2fsck -fy \(image)"])
        #expect(fsck.status <= 1, "e2fsck: \(fsck.stdout)\(fsck.stderr)")
        for name in onDrive {
            let copy = work + "/" + name
            for file in [name, name + ".sha256"] {
                let dumped = try runProgram("/bin/sh", ["-c", "PATH=$PATH:/usr/sbin:/sbin; debugfs -R 'dump /obscura/recordings/\(file) \(work)/\(file)' \(image)"])
                #expect(dumped.status == 0, "\(dumped.stderr)")
            }
            let sum = try runProgram("/bin/sh", ["-c", "cd \(work) && sha256sum -c \(name).sha256"])
            #expect(sum.status == 0 && sum.stdout.contains("\(name): OK"), "\(name): \(sum.stdout)\(sum.stderr)")
            let probed = try ProbedVideo.read(copy)
            #expect(probed.frameCount > 0, "\(name) plays")
        }
    }
}
}

extension VirtualBoardTests.DriveBoardTests {
    /// A drive that hangs rather than vanishes: the recordings' drive is a
    /// network filesystem (sshfs, a FUSE filesystem, over the board's own
    /// sshd), and its FUSE daemon is stopped (SIGSTOP) mid-recording for ten
    /// seconds, so every call into it blocks, statfs and the recorder's
    /// writes included. Meanwhile status and control answer, a photo button
    /// press gives a photo, the status says the drive does not answer, and
    /// the service is not restarted; let go, the recording goes on on the
    /// drive, and its file verifies and plays. A recording started while the
    /// drive hangs goes to the SD card, and the drive is used again once it
    /// answers. (Each is awaited while the
    /// drive hangs, however long this board takes; the hang lasts until
    /// they all happened and ten seconds at least.)
    @Test func aDriveThatHangsHoldsUpNeitherStatusNorButtons() throws {
        let least = 5  // a few frames prove the path ran; no rate is assumed
        let result = try VirtualBoard.run(scenario: "Drive/aDriveThatHangsHoldsUpNeitherStatusNorButtons", ["\(least)"], timeout: 1200, options: ["--systemd"])
        let out = result.stdout
        let board = BoardLines(out)
        let lines = board.lines
        #expect(!out.contains("gave up after") && !out.contains("sshfs failed"), "\(out)\(result.stderr)")
        func uptime(_ prefix: String) -> Double? {
            lines.first { $0.hasPrefix(prefix) }.flatMap { Double($0.dropFirst(prefix.count).split(separator: " ").first ?? "") }
        }
        let hang = try #require(uptime("hang uptime="), "\(out)\(result.stderr)")
        let release = try #require(uptime("release uptime="), "\(out)")
        // Each answered while the drive hung (before it was let go), whatever
        // this board's speed.
        for event in ["status rc=0 uptime=", "ctl uptime=", "photo uptime=", "silent uptime="] {
            let at = try #require(uptime(event), "no \(event) in \(out)")
            #expect(at > hang && at < release, "\(event)\(at): the hang lasted from \(hang) to \(release)")
        }
        let answered = ["status rc=0 uptime=", "ctl uptime=", "photo uptime="].map { uptime($0).map { String(format: "%.1f", $0 - hang) } ?? "-" }
        print("DriveBoardTests: while the drive hung (\(String(format: "%.1f", release - hang)) s): status answered after \(answered[0]) s, "
              + "control after \(answered[1]) s, a photo was on the SD card after \(answered[2]) s")
        #expect(lines.contains { $0.hasPrefix("hung: state: recording") }, "\(out)")
        #expect(lines.contains { $0.hasPrefix("during: storage usb: /media/net/obscura/recordings, not answering for ") }, "\(out)")
        #expect(lines.contains { $0.hasPrefix("journal: obscura: usb.drive: /media/net/obscura/recordings has not answered for") }, "\(out)")
        #expect(lines.contains { $0.hasPrefix("journal: obscura: usb.drive: /media/net/obscura/recordings answers again") }, "\(out)")
        // Not restarted (a recording held inside a write by the drive is
        // waiting, not wedged), the recording went on and is whole. (How long
        // its writes were held depends on how much the page cache took:
        // from under a second to the whole hang; said when over 5 s.)
        if let held = lines.first(where: { $0.hasPrefix("journal: obscura: the recording has waited") }) {
            print("DriveBoardTests: \(held.dropFirst("journal: obscura: ".count))")
        }
        #expect(lines.contains("active=active restarts=0"), "\(out)")
        let files = lines.filter { $0.hasPrefix("file=") }
        #expect(files.count == 1, "\(out)")
        let frames = files.first.flatMap { Int($0.components(separatedBy: "frames=").last ?? "") } ?? 0
        let atHang = lines.first { $0.hasPrefix("hang uptime=") }.flatMap { Int($0.components(separatedBy: "frames=").last ?? "") } ?? Int.max
        #expect(frames > atHang, "the file holds \(frames) frames, \(atHang) when the drive hung: \(files)")
        #expect(lines.contains { $0.hasPrefix("sum: ") && $0.hasSuffix(": OK") }, "\(out)")
        // Started while the drive hung: on the SD card, finished there before the drive answered.
        let hang2 = try #require(uptime("hang2 uptime="), "\(out)")
        let release2 = try #require(uptime("release2 uptime="), "\(out)")
        let sdDone = try #require(uptime("sd-done uptime="), "\(out)")
        #expect(sdDone > hang2 && sdDone < release2)
        if let started = uptime("started uptime=") {
            print(String(format: "DriveBoardTests: a recording started while the drive hung was on the SD card %.1f s after it was asked for", started - hang2))
        }
        #expect(lines.contains { $0.hasPrefix("start-hung: ") && $0.replacingOccurrences(of: "\\/", with: "/").contains("/var/lib/obscura/recordings/") }, "\(out)")
        #expect(lines.contains { $0.hasPrefix("sd-sum: ") && $0.hasSuffix(": OK") }, "\(out)")
        #expect(lines.contains { $0.hasPrefix("journal: obscura: usb.drive: /media/net/obscura/recordings did not answer within") }, "\(out)")
    }
}
