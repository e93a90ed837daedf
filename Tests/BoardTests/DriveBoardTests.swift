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
        let result = try VirtualBoard.run("""
            drive=/media/obscura/obscura/recordings
            sd=/var/lib/obscura/recordings
            frames() { n=$(ffprobe -v error -select_streams v:0 -count_packets -show_entries stream=nb_read_packets -of csv=p=0 "$1" 2>/dev/null); echo "${n:-0}"; }
            . board/virtual/waiting.sh
            uptime_s() { cut -d' ' -f1 /proc/uptime; }
            # The drive, prepared once (README) and mounted by the system.
            mkdir -p /media/obscura && mount LABEL=OBSCURA /media/obscura
            mkdir -p $drive /media/obscura/.obscura-incoming && chown obscura:obscura $drive /media/obscura/obscura /media/obscura/.obscura-incoming
            sed -i '/^\\[usb\\]/,/^\\[/ { s/^drive = .*/drive = "LABEL=OBSCURA"/; s/^quota_mb = .*/quota_mb = 200/; s/^min_free_space_mb = .*/min_free_space_mb = 32/ }' /etc/obscura/obscura.toml
            sed -n '/^\\[usb\\]/,$ p' /etc/obscura/obscura.toml | grep -v '^#' | sed 's/^/config: /'
            sed -i 's/^#* *segment_seconds = .*/segment_seconds = 2/' /etc/obscura/obscura.toml
            systemctl restart obscura
            for i in $(seq 40); do obscura status | grep -q '^storage usb: /media' && break; sleep 0.5; done
            obscura status | grep '^storage' | sed 's/^/before: /'
            obscura ctl record start | sed 's/^/start: /'
            two_on_drive() { [ "$(ls $drive/*.sha256 2>/dev/null | wc -l)" -ge 2 ]; }
            wait_for 120 "two finished segments on the drive" two_on_drive
            (cd $drive && sha256sum -c *.sha256 | sed 's/^/on-drive: /')
            ls /srv/obscura/media/obscura/obscura/recordings | sed 's/^/fetch-view: /'
            echo "unplug uptime=$(uptime_s)"
            board/virtual/unplug
            echo "gone uptime=$(uptime_s)"
            # What happened, not a frame count: the journal's line, then a few
            # of the camera's frames in the SD card's files.
            failed_over() { journalctl -u obscura | grep -q "recording goes on on the SD card"; }
            wait_for 60 "the journal to say the recording goes on on the SD card" failed_over
            on_sd() { # stops counting once there are enough
                n=0; for f in /var/lib/obscura/incoming/*.partial $sd/*.mp4; do
                    [ -e "$f" ] && n=$((n + $(frames "$f"))); [ $n -ge \(least) ] && return 0
                done; return 1; }
            wait_for 120 "\(least) frames in the SD card's files" on_sd
            echo "active=$(systemctl is-active obscura) restarts=$(systemctl show -p NRestarts --value obscura)"
            obscura ctl record stop > /dev/null
            for i in $(seq 100); do ls $sd | grep -q sha256 && [ -z "$(ls /var/lib/obscura/incoming)" ] && break; sleep 0.2; done
            for f in $sd/*.mp4; do echo "sd-file=$(basename $f) frames=$(frames $f)"; done
            (cd $sd && sha256sum -c *.sha256 | sed 's/^/sum: /')
            obscura status | sed 's/^/status: /'
            grep -E '^obscura_(storage_present|storage_active|stage_restarts_total)' /run/obscura-metrics/obscura.prom | sed 's/^/metric: /'
            journalctl -u obscura --no-pager -o short-monotonic | grep -E "recording goes on on the SD card" | sed 's/^/mono: /'
            journalctl -u obscura --no-pager -o cat | grep -v "thread priority" | grep -v "^obscura: encoder" | sed 's/^/journal: /'
            """, timeout: 300, options: ["--systemd", "--usb-disk", image])
        let out = result.stdout
        let lines = out.split(separator: "\n").map(String.init)
        #expect(!out.contains("gave up after"), "\(out)")
        func number(after prefix: String) -> Double? {
            lines.first { $0.hasPrefix(prefix) }.flatMap { Double($0.dropFirst(prefix.count)) }
        }
        func monotonicOf(_ line: String) -> Double? {
            guard let open = line.firstIndex(of: "["), let close = line.firstIndex(of: "]") else { return nil }
            return Double(line[line.index(after: open)..<close].trimmingCharacters(in: .whitespaces))
        }
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
        let gone = try #require(number(after: "gone uptime="), "\(out)\(result.stderr)")
        let resumed = try #require(lines.first { $0.hasPrefix("mono: ") }.flatMap(monotonicOf), "\(out)")
        print(String(format: "DriveBoardTests: the recording went on on the SD card %.2f s after the drive was gone", resumed - gone))
        #expect(resumed - gone < 2.0, "went on \(resumed - gone) s after the drive was gone")
        #expect(lines.contains("active=active restarts=0"), "\(out)")
        let sdFiles = lines.filter { $0.hasPrefix("sd-file=") }
        #expect(!sdFiles.isEmpty, "\(out)")
        let sdFrames = sdFiles.compactMap { Int($0.components(separatedBy: "frames=").last ?? "") }.reduce(0, +)
        #expect(sdFrames >= least, "the fallback files play: \(sdFiles)")
        #expect(lines.filter { $0.hasPrefix("sum: ") && $0.hasSuffix(": OK") }.count == sdFiles.count, "\(out)")
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
