import Foundation
import ObscuraOverlay
import Testing
import TestSupport

extension VirtualBoardTests {
/// Encryption at rest under the service: the device holds only a recipient
/// (a public key); what it writes is age files and nothing else; a
/// collecting computer (`obscura pull --identity-file` over a real sshd)
/// verifies and decrypts them; the real `age` tool decrypts the same files on
/// the test machine.
@Suite struct EvidenceBoardTests {
    /// The key pair, made here once: the board sees the identity only in
    /// the collecting computer's role (the pull), never in the service's.
    static let keys = Result { () throws -> (folder: Folder, recipient: String) in
        let relative = ".build/evidence-\(getpid())", path = packageRoot + "/" + relative
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        let folder = Folder(relative: relative, path: path)
        let made = try runProgram("age-keygen", ["-o", folder.path + "/key.txt"])
        guard made.status == 0, let recipient = made.stderr.split(separator: " ").last?.trimmingCharacters(in: .whitespacesAndNewlines) else {
            throw KeyError(said: made.stderr)
        }
        return (folder, recipient)
    }
    struct KeyError: Error { let said: String }
    /// A folder the board sees too (removed by the test once read).
    struct Folder: Sendable { let relative: String; let path: String }

    /// The board's part (KioskBoard): the service encrypting, segments, a
    /// photo, a kill; then the pull with the identity.
    static var script: String {
        guard case .success(let (folder, recipient)) = keys else { return "echo 'age-keygen failed: \(keys)'; exit 1" }
        return #"""
            export PATH=$PATH:$(pwd)/board/virtual
            out=\#(folder.relative); k=/tmp/pull; mkdir -p $k
            rec=/var/lib/obscura/recordings; photos=/var/lib/obscura/photos; inc=/var/lib/obscura/incoming
            frames() { ffprobe -v error -select_streams v:0 -count_packets -show_entries stream=nb_read_packets -of csv=p=0 "$1" 2>/dev/null; }
            sed -i 's/^recipients = \[\]/recipients = ["\#(recipient)"]/' /etc/obscura/obscura.toml
            sed -i 's/^#* *segment_seconds = .*/segment_seconds = 2/' /etc/obscura/obscura.toml
            # (640x480, not the board's 320x240: the caption is read back
            # glyph by glyph, a 24th of the frame's height.)
            sed -i '/^\[recording\]/,/^\[/ { s/^#* *size = .*/size = "640x480"/ }' /etc/obscura/obscura.toml
            sed -i '/^\[overlay\]/,/^\[/ { s/^enabled = .*/enabled = true/; s/^text = .*/text = "Evidence"/ }' /etc/obscura/obscura.toml
            sed -n '/^\[encryption\]/,$ p' /etc/obscura/obscura.toml | grep -v '^#' | sed 's/^/config: /'
            systemctl restart obscura
            . board/virtual/waiting.sh
            answers() { obscura status > /dev/null 2>&1; }; wait_for 120 "the service to answer" answers
            # Segments, a photo, then a kill mid-recording: systemd restarts
            # the service, which keeps the interrupted file. (Stopped once two
            # segments are sealed: every file costs the pull time on a slow
            # board, and 2 s segments pile up while a photo is awaited.)
            obscura ctl record start | sed 's/^/start: /'
            two_sealed() { [ "$(ls $rec/*.mp4.age.sha256 2>/dev/null | wc -l)" -ge 2 ]; }; wait_for 180 "two finished encrypted segments" two_sealed
            obscura ctl record stop > /dev/null
            obscura ctl photo | sed 's/^/photo: /'
            photo_sealed() { ls $photos/*.jpg.age.sha256 > /dev/null 2>&1; }; wait_for 120 "the encrypted photo" photo_sealed
            incoming_empty() { [ -z "$(ls $inc)" ]; }; wait_for 120 "nothing left in the incoming folder" incoming_empty
            # One file, its fragments aligned to age's chunks, killed once it
            # holds a few seconds of sealed chunks.
            sed -i 's/^segment_seconds = .*/segment_seconds = 0/; s/^align_to_chunks = .*/align_to_chunks = true/' /etc/obscura/obscura.toml
            grep '^align_to_chunks' /etc/obscura/obscura.toml | sed 's/^/config: /'
            systemctl restart obscura
            answers() { obscura status > /dev/null 2>&1; }; wait_for 120 "the service to answer" answers
            obscura ctl record start 2>&1 | sed "s/^/ctl: /"
            sealed_enough() { size=0; for p in $inc/*.partial; do [ -e "$p" ] && size=$(stat -c %s "$p"); done; [ "$size" -ge 300000 ]; }
            wait_for 180 "300000 bytes in the encrypted recording" sealed_enough
            echo "killed-at=$size"
            systemctl kill -s KILL obscura
            restarted() { [ "$(systemctl show -p NRestarts --value obscura)" -ge 1 ] && [ "$(systemctl is-active obscura)" = active ]; }
            wait_for 120 "systemd to restart the service" restarted
            recovered() { journalctl -u obscura | grep -q "recovered an interrupted encrypted recording"; }; wait_for 120 "the interrupted recording recovered" recovered
            obscura ctl record stop > /dev/null 2>&1
            # Nothing on the device is plaintext: every file there begins as an
            # age file and holds no MP4 or JPEG/EXIF marker.
            for f in $(find $rec $photos $inc -type f ! -name '*.sha256' | sort); do
                head -c 22 "$f" | grep -q '^age-encryption.org/v1' && echo "age-file=$(basename $f)" || echo "not-age=$f"
                grep -qaE 'ftypiso|ftypmp4' "$f" && echo "plain-marker=$f ftyp"
                grep -qaP '\xff\xd8\xff\xe0|\xff\xd8\xff\xe1|Exif\x00\x00' "$f" && echo "plain-marker=$f jpeg"
            done
            (cd $rec && sha256sum -c *.sha256; cd $photos && sha256sum -c *.sha256) 2>&1 | sed 's/^/device-sum: /'
            # The encrypted files, for the test machine's own age.
            cp $rec/*.age $photos/*.age $out/
            # The collecting computer: a real sshd, obscura pull with the identity.
            cp $out/key.txt $k/identity.txt
            ssh-keygen -q -t ed25519 -N '' -f $k/hostkey
            ssh-keygen -q -t ed25519 -N '' -C puller@test -f $k/user
            obscura keys add $k/user.pub > /dev/null
            mkdir -p /run/sshd
            /usr/sbin/sshd -p 2222 -o ListenAddress=127.0.0.1 -o PidFile=$k/sshd.pid -h $k/hostkey -E $k/sshd.log
            echo "[127.0.0.1]:2222 $(cut -d' ' -f1,2 $k/hostkey.pub)" > $k/known_hosts
            sshd_up() { [ -s $k/sshd.pid ]; }; wait_for 60 "sshd to start" sshd_up
            obscura pull --port 2222 --identity $k/user --known-hosts $k/known_hosts --identity-file $k/identity.txt \
                obscura-fetch@127.0.0.1 $k/dest > $k/pull.out 2> $k/pull.err; echo "pull-rc=$?"
            sed 's/^/pull: /' $k/pull.out $k/pull.err
            for f in $k/dest/*.mp4; do echo "pulled=$(basename $f) frames=$(frames $f)"; done
            for f in $k/dest/*.jpg; do echo "pulled-photo=$(basename $f) $(exiftool -s -s -s -Make -ImageSize $f | tr '\n' ' ')"; done
            journalctl -u obscura --no-pager -o cat | grep -E "recovered an interrupted|encrypt|first frame taken|encoder " | sed 's/^/journal: /'
            echo "active=$(systemctl is-active obscura) restarts=$(systemctl show -p NRestarts --value obscura)"
            """#
    }

    @Test func anEncryptingServiceKeepsNoPlaintextAndWhatItKeepsDecrypts() throws {
        let (folder, recipient) = try Self.keys.get()
        defer { try? FileManager.default.removeItem(atPath: folder.path) }
        let least = 5  // a few frames prove the path ran; no rate is assumed
        let result = try KioskBoard.board.result(of: "evidence")
        let out = result.stdout
        let lines = out.split(separator: "\n").map(String.init)
        #expect(result.status == 0, "\(out)\(result.stderr)")
        #expect(lines.contains("config: recipients = [\"\(recipient)\"]"), "\(out)\(result.stderr)")
        #expect(lines.contains("config: align_to_chunks = true"), "\(out)")
        // Only age files on the device, no plaintext marker in any.
        #expect(!lines.contains { $0.hasPrefix("not-age=") || $0.hasPrefix("plain-marker=") }, "\(out)")
        let onDevice = lines.filter { $0.hasPrefix("age-file=") }.map { String($0.dropFirst("age-file=".count)) }
        #expect(onDevice.filter { $0.hasSuffix(".mp4.age") }.count >= 4, "\(out)")  // 2 s segments, the last one, the killed one
        #expect(onDevice.contains { $0.hasSuffix(".jpg.age") }, "\(out)")
        #expect(!lines.contains { $0.hasPrefix("device-sum: ") && !$0.hasSuffix(": OK") }, "\(out)")
        #expect(lines.contains { $0.hasPrefix("journal: ") && $0.contains("recovered an interrupted encrypted recording: ") }, "\(out)")
        #expect(lines.contains("active=active restarts=1"), "\(out)")
        #expect((Int(lines.first { $0.hasPrefix("killed-at=") }?.dropFirst("killed-at=".count) ?? "") ?? 0) >= 300_000, "\(out)")

        // The collecting computer pulled, verified and decrypted everything.
        #expect(lines.contains("pull-rc=0"), "\(out)")
        let pulled = lines.filter { $0.hasPrefix("pulled=") }
        #expect(pulled.count == onDevice.filter { $0.hasSuffix(".mp4.age") }.count, "\(out)")
        // Every file plays (a segment cut by the stop may be short), the
        // interrupted one too (decrypted and cut back to whole fragments).
        for line in pulled {
            let frames = Int(line.split(separator: "=").last ?? "") ?? 0
            #expect(frames > 0, "\(line)")
        }
        #expect(lines.contains { $0.hasPrefix("pulled-photo=") && $0.contains(" Obscura ") }, "\(out)")
        #expect(lines.contains { $0.hasPrefix("pull: ") && $0.contains("the recording was interrupted") }, "\(out)")

        // The test machine's own age decrypts each file: finished ones fully;
        // the interrupted one up to its complete chunks (then it says the end
        // is missing), the same bytes obscura gave.
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".age") }.sorted()
        #expect(files.count == onDevice.count, "\(files) vs \(onDevice)")
        var interrupted = 0
        for name in files {
            let file = folder.path + "/" + name
            let plain = folder.path + "/" + String(name.dropLast(4))
            let age = try runProgram("sh", ["-c", "age -d -i '\(folder.path)/key.txt' '\(file)' > '\(plain)'"])
            if age.status != 0 {
                interrupted += 1
                #expect(age.stderr.contains("unexpected EOF") || age.stderr.contains("failed to decrypt"), "\(name): \(age.stderr)")
            }
            if name.hasSuffix(".jpg.age") {
                #expect(age.status == 0, "\(name): \(age.stderr)")
                #expect(try exiftoolValidation(plain) == "OK", "\(name)")
            } else {
                // Each recording as age -d gives it (the interrupted one too:
                // its fragments were aligned) decodes with not one FFmpeg error.
                let decoded = try ffmpegDecodeErrors(plain)
                #expect(decoded.status == 0 && decoded.stderr.isEmpty, "\(name), decrypted by age -d: \(decoded.stderr)")
                let probe = try runProgram("ffprobe", ["-v", "error", "-select_streams", "v:0", "-count_packets",
                                                       "-show_entries", "stream=nb_read_packets", "-of", "csv=p=0", plain])
                let frames = Int(probe.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
                // The killed file was let grow to 300 kB: a few seconds of frames.
                #expect(frames >= (age.status != 0 ? least : 1), "\(name): \(probe.stdout)\(probe.stderr)")
            }
        }
        #expect(interrupted == 1, "one file was cut off by the kill: \(files)")

        // The caption the service burned in: the first recording's first
        // file, every frame right to the second from the journaled first
        // frame.
        let first = try #require(lines.first { $0.contains("first frame taken at ") }, "\(out)")
        let path = try #require(first.split(separator: " ").first { $0.hasSuffix(".mp4.age:") }).dropLast()
        let zero = try #require(Double(first.split(separator: "(").last?.split(separator: " ").first ?? ""), "\(first)")
        let base = (String(path) as NSString).lastPathComponent.replacingOccurrences(of: ".mp4.age", with: "")
        var caption = OverlaySettings()
        caption.text = "Evidence"
        caption.cameraName = "Sensor B"
        caption.timeZone = TimeZone(identifier: "UTC")!
        let frames = try OverlayCheck.check(file: "\(folder.path)/\(base)-0001.mp4", size: (636, 480), settings: caption, wallZero: zero)
        #expect(!frames.isEmpty && frames.allSatisfy { $0.right }, "\(frames.count) frames; wrong: \(frames.filter { !$0.right })")
    }
}
}
