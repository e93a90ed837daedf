import Foundation
import Testing
import TestSupport

/// `obscura collect` against real parts: a single-node Ceph cluster with its
/// S3 gateway (Tests/fleet/ceph: monitor, manager, an in-memory OSD,
/// radosgw on loopback, a user made with radosgw-admin) and eight kiosks,
/// each an OpenSSH sshd with the retrieval account as deploy/ makes it
/// (chrooted, SFTP only, read-only; Tests/fleet/kiosks), plus a ninth whose
/// network has gone quiet (it takes the connection and never answers).
/// Kiosks 2 and 5 hold encrypted recordings, stored as they are; kiosk 7's
/// are encrypted and stored decrypted (its fleet entry says so). Kiosk 3's
/// connection is cut mid-file. The collector is then killed mid-upload.
///
/// Checked with Ceph's own radosgw-admin and s3cmd (not the collector's
/// rclone): every finished file of every reachable kiosk is in the bucket
/// once, under KIOSK/YYYY/MM/DD/NAME, with the right sha256 (downloaded and
/// hashed, and as the object's metadata); the unfinished file is not; the
/// cut transfer resumed; the quiet kiosk is reported and the others were
/// collected while it was still being waited for; no multipart upload is
/// left open; the metrics count what was stored.
///
/// Needs root (sshd's chroot) and Ceph, rclone and s3cmd
/// (deploy/install-dependencies); skipped with the reason without them,
/// except under CI=true.
@Suite(.serialized) struct FleetCollectionTests {
    @Test func aFleetIsCollectedIntoCephWholeOnceAndVerified() throws {
        guard let rig = try FleetRig.start() else { return }
        defer { rig.stop() }
        try rig.makeKiosks()
        try rig.writeFleetFile()

        // Run 1: everything, kiosk 3 cut mid-file, the quiet kiosk held.
        let first = try rig.startCollector([])
        let cutFile = rig.spool + "/k3/files/.obscura-pull/\(rig.bigName).part"
        let grown = waitUntilBlocking(within: .seconds(600), every: .milliseconds(50)) {
            (FleetRig.size(cutFile) ?? 0) >= 1_000_000 || first.isDone
        }
        #expect(grown && !first.isDone, "kiosk 3's transfer never reached 1 MB: \(first.said())")
        let cut = try runProgram(rig.kiosksScript, ["cut", rig.dir, "3"])
        #expect(cut.status == 0, "\(cut.stderr)")
        // The others are done while the quiet kiosk is still waited for.
        let othersDone = waitUntilBlocking(within: .seconds(600), every: .milliseconds(100)) {
            let metrics = rig.metrics()
            return (1...8).allSatisfy { metrics["obscura_collect_last_attempt_timestamp_seconds{kiosk=\"k\($0)\"}"] != nil }
        }
        #expect(othersDone, "the reachable kiosks were not all done while the quiet one was waited for: \(first.said())")
        #expect(!first.isDone, "the collector ended before the quiet kiosk was released")
        try #require(try runProgram(rig.kiosksScript, ["release", rig.dir]).status == 0)
        let firstStatus = first.wait()
        let firstSaid = first.said()
        #expect(firstStatus == 1, "run 1 fails (a kiosk not collected, a file cut): \(firstSaid)")
        #expect(firstSaid.contains("quiet: not collected: sftp to obscura-fetch@127.0.0.1 failed"), "\(firstSaid)")
        #expect(firstSaid.contains("k3: not collected: sftp to obscura-fetch@127.0.0.1 failed"), "\(firstSaid)")
        let afterFirst = rig.metrics()
        #expect(afterFirst["obscura_collect_up{kiosk=\"quiet\"}"] == 0 && afterFirst["obscura_collect_failures_total{kiosk=\"quiet\"}"] == 1)
        #expect(afterFirst["obscura_collect_up{kiosk=\"k3\"}"] == 0)
        for k in [1, 2, 4, 5, 6, 7, 8] { #expect(afterFirst["obscura_collect_up{kiosk=\"k\(k)\"}"] == 1, "k\(k): \(firstSaid)") }

        // Run 2: kiosk 3's transfer resumes where it was cut.
        let second = try rig.startCollector(rig.reachable)
        let secondStatus = second.wait()
        let secondSaid = second.said()
        #expect(secondStatus == 0, "\(secondSaid)")
        #expect(secondSaid.contains("k3: resuming \(rig.bigName) at "), "\(secondSaid)")
        #expect(secondSaid.contains("k3: 3 stored"), "\(secondSaid)")

        // Run 3: new files, the collector killed while it uploads one in parts.
        try rig.addLaterFiles()
        let third = try rig.startCollector(rig.reachable)
        // Killed once the store shows one of its uploads in parts open.
        let uploading = waitUntilBlocking(within: .seconds(600), every: .milliseconds(50)) {
            !rig.openUploads().isEmpty || third.isDone
        }
        #expect(uploading && !third.isDone, "no upload in parts was seen open: \(third.said())")
        third.kill()
        _ = third.wait()
        let leftOpen = rig.openUploads()
        print("FleetCollectionTests: the killed collector left \(leftOpen.count) upload(s) in parts open: \(leftOpen)")
        // What it started dies with it.
        #expect(waitUntilBlocking(within: .seconds(60)) { FleetRig.processes(matching: "rclone").allSatisfy { $0.contains("<defunct>") } })

        // Run 4: takes up what is left.
        let fourth = try rig.startCollector(rig.reachable)
        let fourthStatus = fourth.wait()
        #expect(fourthStatus == 0, "\(fourth.said())")

        try rig.checkTheStore()

        // The same fleet into a folder: the same files, the same bytes.
        try rig.writeFleetFile(folder: rig.dir + "/folder-store")
        let folder = try rig.startCollector(rig.reachable)
        #expect(folder.wait() == 0, "\(folder.said())")
        for (key, sha) in rig.expected {
            let path = rig.dir + "/folder-store/" + key
            #expect(FileManager.default.fileExists(atPath: path) && (try? FleetRig.sha256(path)) == sha, "\(key) in the folder")
        }
        let inFolder = FileManager.default.enumerator(atPath: rig.dir + "/folder-store")?.allObjects.compactMap { $0 as? String }
            .filter { !$0.hasSuffix("/") && (try? FileManager.default.attributesOfItem(atPath: rig.dir + "/folder-store/" + $0)[.type] as? FileAttributeType) == .typeRegular } ?? []
        #expect(inFolder.sorted() == rig.expected.keys.sorted(), "the folder holds \(inFolder.sorted())")
    }
}

/// The fleet test's parts: Ceph, the kiosks, their files, the collector.
final class FleetRig: @unchecked Sendable {
    // Unchecked: written only while the rig is made (one thread); read after.
    let dir: String
    let cephDir: String
    var s3: [String: String] = [:]
    let spool: String
    let clips: String
    let kiosksScript = packageRoot + "/Tests/fleet/kiosks"
    let cephScript = packageRoot + "/Tests/fleet/ceph"
    let firstPort = 22_301
    let cephPort = 17_480
    let bigName = "obscura-20261126-090000.mp4"
    let laterBigName = "obscura-20261128-090000.mp4"
    let reachable = (1...8).map { "k\($0)" }
    /// Every finished file: its key in the store and its sha256 there.
    var expected: [String: String] = [:]
    var unfinished: [String] = []
    var ageKey = ""

    init(dir: String) {
        self.dir = dir
        cephDir = dir + "/ceph"
        spool = dir + "/spool"
        clips = dir + "/clips"
    }

    /// The rig, or nil (said why) when this machine cannot make it and CI does not demand it.
    static func start() throws -> FleetRig? {
        var missing = ["ceph-mon", "ceph-osd", "ceph-mgr", "radosgw", "radosgw-admin", "rclone", "s3cmd", "age", "ffmpeg", "unshare", "setpriv"]
            .filter { (try? runProgram("/bin/sh", ["-c", "command -v \($0)"]))?.status != 0 }
        if !FileManager.default.isExecutableFile(atPath: "/usr/sbin/sshd") { missing.append("sshd") }
        if getuid() != 0 { missing.append("root (sshd's chroot)") }
        if !missing.isEmpty {
            let why = "the fleet test needs \(missing.joined(separator: ", ")) (deploy/install-dependencies)"
            if ProcessInfo.processInfo.environment["CI"] == "true" { Issue.record("\(why); CI must run it") } else { print("skipped: \(why)") }
            return nil
        }
        _ = try scratchForBuiltObscura("fleet-check")
        let made = try runProgram("/bin/mktemp", ["-d", "/run/obscura-fleet.XXXXXX"])
        try #require(made.status == 0, "\(made.stderr)")
        let rig = FleetRig(dir: made.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
        // Its daemons outlive it: waited for by pid, its words in a file.
        let ceph = try rig.script(rig.cephScript, ["start", rig.cephDir, String(rig.cephPort), "1536"])
        guard ceph.status == 0 else {
            rig.stop()
            Issue.record("Ceph did not start (exit \(ceph.status)): \(ceph.output)")
            return nil
        }
        for line in ceph.output.split(separator: "\n") {
            let parts = line.split(separator: "=", maxSplits: 1)
            if parts.count == 2 { rig.s3[String(parts[0])] = String(parts[1]) }
        }
        let bucket = try rig.s3cmd(["mb", "s3://fleet"])
        try #require(bucket.status == 0, "s3cmd mb: \(bucket.stderr)")
        return rig
    }

    func stop() {
        _ = try? runProgram(kiosksScript, ["stop", dir])
        _ = try? runProgram(cephScript, ["stop", cephDir])
        // OBSCURA_FLEET_KEEP=1 keeps the rig's folder (logs, spool) to look at.
        if ProcessInfo.processInfo.environment["OBSCURA_FLEET_KEEP"] == nil { try? FileManager.default.removeItem(atPath: dir) }
    }

    func s3cmd(_ arguments: [String]) throws -> ProcessResult {
        let endpoint = (s3["S3_ENDPOINT"] ?? "").replacingOccurrences(of: "http://", with: "")
        return try runProgram("/usr/bin/s3cmd", ["-c", "/dev/null", "--access_key=\(s3["S3_ACCESS_KEY"] ?? "")", "--secret_key=\(s3["S3_SECRET_KEY"] ?? "")",
                                                 "--host=\(endpoint)", "--host-bucket=\(endpoint)", "--no-ssl"] + arguments)
    }

    static func size(_ path: String) -> Int? {
        (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? nil
    }

    static func sha256(_ path: String) throws -> String {
        let r = try runProgram("/usr/bin/sha256sum", [path])
        return String(r.stdout.prefix(64))
    }

    /// Command lines of running processes whose name is `name`.
    static func processes(matching name: String) -> [String] {
        let r = try? runProgram("/usr/bin/pgrep", ["-a", name])
        return (r?.stdout ?? "").split(separator: "\n").map(String.init)
    }

    // MARK: Kiosks and their files

    /// A recording made once, then given distinct bytes per kiosk file (its
    /// metadata says whose it is), as a remux does.
    func makeKiosks() throws {
        try FileManager.default.createDirectory(atPath: clips, withIntermediateDirectories: true)
        let base = clips + "/base.mp4"
        let recorded = try runProgram(builtObscura, ["record", "--camera", "synthetic", "--size", "640x480", "--duration", "2", "--output", base])
        try #require(recorded.status == 0, "\(recorded.stderr)")
        let keygen = try runProgram("/usr/bin/age-keygen", ["-o", clips + "/key.txt"])
        try #require(keygen.status == 0, "\(keygen.stderr)")
        ageKey = clips + "/key.txt"
        let started = try script(kiosksScript, ["start", dir, String(firstPort), "8"])
        try #require(started.status == 0, "\(started.output)")
        let silent = try script(kiosksScript, ["silent", dir, String(firstPort + 8)])
        try #require(silent.status == 0, "\(silent.output)")
        for k in 1...8 {
            try add(k, "obscura-20261125-101500.mp4", bytes: nil)
            try add(k, "obscura-20261127-183000.mp4", bytes: nil)
        }
        try add(3, bigName, bytes: 6_500_000)
        try add(4, "obscura-boot-0f3c2a-0000123.mp4", bytes: nil)
        // Being written on the kiosk: no checksum yet.
        let partial = try variant("unfinished", bytes: nil)
        let folder = "\(dir)/kiosk-1/root/recordings"
        try FileManager.default.copyItem(atPath: partial, toPath: folder + "/obscura-20261128-120000.mp4")
        unfinished.append("k1/2026/11/28/obscura-20261128-120000.mp4")
    }

    func addLaterFiles() throws {
        try add(1, laterBigName, bytes: 6_500_000)
        try add(6, laterBigName, bytes: 6_500_000)
        try add(2, "obscura-20261128-091500.mp4", bytes: nil)
    }

    /// A distinct playable file: the base recording remuxed (looped until
    /// `bytes` when given) with its own title.
    func variant(_ title: String, bytes: Int?) throws -> String {
        let out = "\(clips)/\(title).mp4"
        var loops = 0
        if let bytes, let base = Self.size(clips + "/base.mp4"), base > 0 { loops = bytes / base + 1 }
        let r = try runProgram("/usr/bin/ffmpeg", ["-v", "error", "-y", "-stream_loop", String(loops), "-i", clips + "/base.mp4",
                                                   "-c", "copy", "-metadata", "title=\(title)", out])
        try #require(r.status == 0, "ffmpeg: \(r.stderr)")
        return out
    }

    /// Puts a finished file on kiosk `k` (encrypted on kiosks 2, 5 and 7)
    /// and records what the store must then hold.
    func add(_ k: Int, _ name: String, bytes: Int?) throws {
        let plain = try variant("k\(k)-\(name)", bytes: bytes)
        var file = plain, stored = name, sha = try Self.sha256(plain)
        if [2, 5, 7].contains(k) {
            file = plain + ".age"
            let recipient = try runProgram("/usr/bin/age-keygen", ["-y", ageKey]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            let r = try runProgram("/usr/bin/age", ["-r", recipient, "-o", file, plain])
            try #require(r.status == 0, "age: \(r.stderr)")
            if k != 7 {
                stored = name + ".age"
                sha = try Self.sha256(file)
            }
        }
        let added = try runProgram(kiosksScript, ["add", dir, String(k), file, k == 2 || k == 5 || k == 7 ? name + ".age" : name])
        try #require(added.status == 0, "\(added.stderr)")
        let digits = name.dropFirst("obscura-".count).prefix(8)
        let date = name.hasPrefix("obscura-boot-") ? "undated" : "\(digits.prefix(4))/\(digits.dropFirst(4).prefix(2))/\(digits.suffix(2))"
        expected["k\(k)/\(date)/\(stored)"] = sha
    }

    /// The fleet file: the bucket, or `folder` (with a spool of its own).
    func writeFleetFile(folder: String? = nil) throws {
        var text = """
            [collector]
            spool = "\(spool)\(folder == nil ? "" : "-folder")"
            metrics = "\(dir)/collect\(folder == nil ? "" : "-folder").prom"
            parallel = 3
            connect_timeout_seconds = 3600
            age_identities = ["\(ageKey)"]


            """
        text += folder.map { "[store]\nfolder = \"\($0)\"\n" } ?? """
            [store.s3]
            provider = "Ceph"
            endpoint = "\(s3["S3_ENDPOINT"] ?? "")"
            bucket = "fleet"
            access_key_id = "\(s3["S3_ACCESS_KEY"] ?? "")"
            secret_access_key_file = "\(dir)/s3-secret"
            multipart_from_mib = 5
            part_mib = 5
            limit_kbps = 8000

            """
        text += """

            [ssh]
            key = "\(dir)/collector_key"
            known_hosts = "\(dir)/known_hosts"

            """
        // The quiet kiosk first: the others must not wait for it.
        for k in [9] + Array(1...8) {
            text += "\n[kiosks.\(k == 9 ? "quiet" : "k\(k)")]\naddress = \"obscura-fetch@127.0.0.1\"\nport = \(firstPort + k - 1)\n"
            if k == 3 { text += "limit_kbps = 4000\n" }
            if k == 7 { text += "decrypt = true\n" }
        }
        try Data(text.utf8).write(to: URL(fileURLWithPath: dir + "/fleet.toml"))
        try Data((s3["S3_SECRET_KEY"] ?? "").utf8).write(to: URL(fileURLWithPath: dir + "/s3-secret"))
        chmod(dir + "/s3-secret", 0o600)
    }

    // MARK: The collector

    /// A program started with its output in a file, and waited for with
    /// waitpid (its status kept once reaped).
    final class Run: @unchecked Sendable {
        // Unchecked: `status` is guarded by `lock`; the rest is set in init.
        let pid: pid_t
        let log: String
        private let lock = NSLock()
        private var status: Int32?

        /// Spawned with posix_spawn, not Foundation's Process, whose own
        /// reaping of its children would race this waitpid.
        init(_ program: String, _ arguments: [String], log: String) throws {
            self.log = log
            var actions = posix_spawn_file_actions_t()
            posix_spawn_file_actions_init(&actions)
            defer { posix_spawn_file_actions_destroy(&actions) }
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
            posix_spawn_file_actions_addopen(&actions, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            posix_spawn_file_actions_adddup2(&actions, 1, 2)
            let argv = ([program] + arguments).map { strdup($0) } + [nil]
            defer { argv.forEach { free($0) } }
            var child: pid_t = 0
            // The test's threads block and ignore signals the child must have.
            var attributes = posix_spawnattr_t()
            posix_spawnattr_init(&attributes)
            defer { posix_spawnattr_destroy(&attributes) }
            var none = sigset_t(), all = sigset_t()
            sigemptyset(&none)
            sigfillset(&all)
            posix_spawnattr_setsigmask(&attributes, &none)
            posix_spawnattr_setsigdefault(&attributes, &all)
            posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
            let rc = posix_spawn(&child, program, &actions, &attributes, argv, environ)
            guard rc == 0 else { throw POSIXError(POSIXErrorCode(rawValue: rc) ?? .EIO) }
            pid = child
        }

        private func reap(_ options: Int32) -> Int32? {
            lock.lock()
            defer { lock.unlock() }
            if let status { return status }
            var raw: Int32 = 0
            var r: pid_t
            repeat { r = waitpid(pid, &raw, options) } while r < 0 && errno == EINTR
            guard r == pid else { return nil }
            status = raw & 0x7f == 0 ? (raw >> 8) & 0xff : 128 + (raw & 0x7f)
            return status
        }

        var isDone: Bool { reap(WNOHANG) != nil }
        func wait() -> Int32 { reap(0) ?? -1 }
        func kill() { Glibc.kill(pid, SIGKILL) }
        func said() -> String { (try? String(contentsOfFile: log, encoding: .utf8)) ?? "" }
    }

    private var runs = 0

    func startCollector(_ kiosks: [String]) throws -> Run {
        runs += 1
        return try Run(builtObscura, ["collect", "--fleet", dir + "/fleet.toml"] + kiosks.flatMap { ["--kiosk", $0] },
                       log: "\(dir)/collect-\(runs).log")
    }

    /// Runs one of the rig's scripts to its end: (status, what it said).
    func script(_ path: String, _ arguments: [String]) throws -> (status: Int32, output: String) {
        runs += 1
        let run = try Run(path, arguments, log: "\(dir)/script-\(runs).log")
        return (run.wait(), run.said())
    }

    /// The multipart uploads the store has open (s3cmd's listing).
    func openUploads() -> [String] {
        guard let r = try? s3cmd(["multipart", "s3://fleet"]), r.status == 0 else { return ["(s3cmd multipart failed)"] }
        return r.stdout.split(separator: "\n").filter { $0.contains("\ts3://fleet/") }.map(String.init)
    }

    /// The metrics file's samples by series.
    func metrics() -> [String: Double] {
        let text = (try? String(contentsOfFile: dir + "/collect.prom", encoding: .utf8)) ?? ""
        var samples: [String: Double] = [:]
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else { continue }
            samples[String(line[..<space])] = value
        }
        return samples
    }

    // MARK: The store, as Ceph's tools see it

    func checkTheStore() throws {
        let listing = try s3cmd(["ls", "-r", "s3://fleet"])
        try #require(listing.status == 0, "\(listing.stderr)")
        let keyList = listing.stdout.split(separator: "\n").compactMap { line -> String? in
            guard let r = line.range(of: "s3://fleet/") else { return nil }
            return String(line[r.upperBound...])
        }
        #expect(keyList.sorted() == expected.keys.sorted(), "the bucket holds \(keyList.sorted()), expected \(expected.keys.sorted())")
        #expect(Set(keyList).count == keyList.count, "a key is listed twice")
        for key in unfinished { #expect(!keyList.contains(key), "\(key) was stored before it was finished") }
        let download = dir + "/download"
        for (key, sha) in expected.sorted(by: { $0.key < $1.key }) {
            try? FileManager.default.removeItem(atPath: download)
            let got = try s3cmd(["get", "s3://fleet/\(key)", download])
            #expect(got.status == 0, "s3cmd get \(key): \(got.stderr)")
            #expect(try Self.sha256(download) == sha, "\(key): its bytes are not the kiosk's")
            let stat = try runProgram("/usr/bin/radosgw-admin", ["-c", cephDir + "/ceph.conf", "object", "stat", "--bucket", "fleet", "--object", key])
            #expect(stat.stdout.contains("\"user.rgw.x-amz-meta-sha256\": \"\(sha)"), "\(key): radosgw-admin does not show its sha256 \(sha)")
        }
        let stats = try runProgram("/usr/bin/radosgw-admin", ["-c", cephDir + "/ceph.conf", "bucket", "stats", "--bucket", "fleet"])
        #expect(stats.stdout.contains("\"num_objects\": \(expected.count)"), "radosgw-admin bucket stats: \(stats.stdout)")
        #expect(openUploads().isEmpty, "multipart uploads left open: \(openUploads())")
        let metrics = metrics()
        for k in 1...8 {
            let count = expected.keys.filter { $0.hasPrefix("k\(k)/") }.count
            #expect(metrics["obscura_collect_files_total{kiosk=\"k\(k)\"}"] == Double(count), "k\(k): metrics \(metrics)")
        }
    }
}
