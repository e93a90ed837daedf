import Foundation
import Testing
import TestSupport

extension VirtualBoardTests {
/// Fetching recordings over SSH as a user does it: the service installed by
/// deploy/install under systemd, a real OpenSSH server started on
/// 127.0.0.1:2222 with the system's configuration (and so the installed
/// drop-in), test host and user keys, `obscura pull` as the client.
@Suite struct RetrievalBoardTests {

    @Test func theRetrievalAccountGetsFinishedFilesOnlyVerifiedAndNothingElse() throws {
        let result = try KioskBoard.board.result(of: "retrieval")
        let out = result.stdout
        let lines = out.split(separator: "\n").map(String.init)
        func value(_ prefix: String) -> String? { lines.first { $0.hasPrefix(prefix) }.map { String($0.dropFirst(prefix.count)) } }

        #expect(lines.contains { $0.hasPrefix("keys: 1 SHA256:") && $0.hasSuffix("ssh-ed25519 puller@test") }, "\(out)\(result.stderr)")
        #expect(value("keyfile: ") == "644:root")
        // The chroot shows the two shared folders; nothing being written is in them.
        let view = lines.filter { $0.hasPrefix("view: ") }
        #expect(view.contains("view: /recordings") && view.contains("view: /photos"), "\(view)")
        #expect(!view.contains { $0.contains("incoming") || $0.contains(".partial") }, "\(view)")
        let incoming = lines.filter { $0.hasPrefix("incoming: ") && $0.hasSuffix(".mp4.partial") }
        try #require(incoming.count == 1, "a recording is in progress: \(out)")
        let inProgress = String(incoming[0].dropFirst("incoming: ".count).dropLast(".partial".count))

        // First pull: the finished recording and the photo, verified; not the one being written.
        #expect(value("pull1-rc=") == "0", "\(out)")
        let dest1 = Set(lines.filter { $0.hasPrefix("dest1: ") }.map { String($0.dropFirst(7)) })
        #expect(dest1.filter { $0.hasSuffix(".mp4") }.count == 1 && dest1.filter { $0.hasSuffix(".jpg") }.count == 1, "\(dest1)")
        #expect(!dest1.contains(inProgress) && !dest1.contains { $0.hasSuffix(".partial") })
        let verify = lines.filter { $0.hasPrefix("verify1: ") }
        #expect(verify.count == 2 && verify.allSatisfy { $0.hasSuffix(": OK") }, "\(verify)")
        // Second pull, after that recording finished: only it.
        #expect(value("pull2-rc=") == "0")
        #expect(lines.filter { $0.hasPrefix("pull2: pulled ") }.count == 1)
        #expect(lines.contains { $0.hasPrefix("pull2: pulled ") && $0.contains(inProgress) }, "\(out)")
        #expect(lines.contains { $0.hasPrefix("pull2: obscura: 1 pulled") && $0.contains("2 already here") }, "\(out)")
        let frames = lines.filter { $0.hasPrefix("pulled-frames=") }.compactMap { Int($0.dropFirst(14)) }
        #expect(frames.count == 2 && frames.allSatisfy { $0 >= 5 }, "\(frames)")

        // Resume: the second run sends what was missing, not the whole file.
        #expect(value("interrupted-rc=") == "1")
        #expect(value("resume-rc=") == "0", "\(out)")
        let resume = value("resume part=").map { ("part=" + $0).split(separator: " ").reduce(into: [String: String]()) { d, kv in
            let p = kv.split(separator: "=", maxSplits: 1)
            if p.count == 2 { d[String(p[0])] = String(p[1]) }
        } } ?? [:]
        let part = Int(resume["part"] ?? "") ?? 0, wire = Int(resume["wire"] ?? "") ?? 0, need = Int(resume["need"] ?? "") ?? 0
        #expect(part > 100_000 && part < 6_000_000, "interrupted with \(part) bytes here")
        #expect(resume["same"] == "yes")
        // Loopback counts every byte once: the missing data, encryption and headers.
        #expect(need > 6_000_000 - part && wire >= need && wire < need * 105 / 100 + 200_000,
                "resuming big.mkv at \(part) sent \(wire) bytes over loopback for \(need) missing")
        #expect(lines.contains("resume: obscura: resuming big.mkv at \(part) bytes"), "\(out)")

        // No shell, no terminal, no forwarding, no writing, nothing outside.
        #expect(value("shell-rc=")?.hasSuffix("ran=no said-uid=0") == true, "\(out)")
        #expect(value("tty: ") == "1")
        #expect(value("forward-banner=") == "0")
        #expect(value("upload-rc=").map { !$0.hasPrefix("0 ") && $0.hasSuffix("exists=0") } == true, "\(out)")
        #expect(value("outside-rc=").map { !$0.hasPrefix("0 ") && $0.hasSuffix("got=0") } == true)
        #expect(value("incoming-rc=") != "0")
        #expect(value("rm-readonly-rc=").map { !$0.hasPrefix("0 ") && $0.hasSuffix("still=1") } == true, "\(out)")

        // --allow-delete: verified files go, the one whose checksum is wrong stays.
        #expect(value("install-rc=") == "0 mode=770 mount=rw", "\(out)")
        #expect(value("delete-rc=") == "1", "the bogus file fails: \(out)")
        #expect(lines.contains { $0.hasPrefix("delete: obscura: failed: bogus.mkv: checksum mismatch") })
        let left = Set(lines.filter { $0.hasPrefix("left: ") }.map { String($0.dropFirst(6)) })
        #expect(left.subtracting(["/var/lib/obscura/recordings:", "/var/lib/obscura/photos:", ""]) == ["bogus.mkv", "bogus.mkv.sha256"], "\(left)")
        #expect(lines.filter { $0.hasPrefix("delete: deleted on the device: ") }.count == 4, "\(out)")
        #expect(value("upload-delete-mode-rc=").map { !$0.hasPrefix("0 ") && !$0.hasSuffix("bytes=5") } == true, "\(out)")
    }
}
}
