import Foundation
import Testing
import ObscuraFiles
import ObscuraRetrieval
import ObscuraSystem
import TestSupport

/// A device whose host key changed is refused by `obscura pull` (and so by
/// the collector, which pulls the same way) even when the ssh options in
/// force say `StrictHostKeyChecking no`, with a message that says so and
/// gives both keys' fingerprints; nothing from it is stored and known_hosts
/// is left as it was. Against OpenSSH's own sshd on loopback.
@Suite(.enabled(if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/sbin/sshd"),
                "needs root and /usr/sbin/sshd (openssh-server) to start a device's sshd"))
struct HostKeyTests {
    @Test func aChangedHostKeyIsRefusedWhateverTheOptionsSayAndNamed() throws {
        let dir = try TemporaryDirectory()
        let k = URL(fileURLWithPath: dir.path).standardizedFileURL.path
        for key in ["old", "new", "user"] {
            let made = try runProgram("/usr/bin/ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", key, "-f", "\(k)/\(key)"])
            try #require(made.status == 0, "\(made.stderr)")
        }
        try FileManager.default.createDirectory(atPath: "\(k)/device", withIntermediateDirectories: true)
        let clip = Array(repeating: UInt8(7), count: 4096)
        try #require(FileManager.default.createFile(atPath: "\(k)/device/clip.mp4", contents: Data(clip)))
        try Checksum.write(for: "\(k)/device/clip.mp4")
        try FileManager.default.copyItem(atPath: "\(k)/user.pub", toPath: "\(k)/authorized_keys")
        let port = try freePort()
        let sshd = try startSSHD(k, port: port, hostKey: "\(k)/new")
        defer { stop(sshd) }

        // known_hosts holds the old key: a changed key, with options that would let it through.
        let known = "[127.0.0.1]:\(port) " + (try String(contentsOfFile: "\(k)/old.pub", encoding: .utf8))
        try Data(known.utf8).write(to: URL(fileURLWithPath: "\(k)/known_hosts"))
        var options = PullOptions(target: "root@127.0.0.1", destination: "\(k)/dest")
        options.port = Int(port)
        options.identity = "\(k)/user"
        options.knownHosts = "\(k)/known_hosts"
        options.sshOptions = ["StrictHostKeyChecking=no"]
        options.remoteFolders = ["\(k)/device"]
        var refusal = ""
        do { _ = try Puller(options: options).run() } catch { refusal = error.description }
        #expect(refusal.contains("host key has changed") && refusal.contains("nothing was fetched"), "\(refusal)")
        #expect(refusal.contains("sent \(try fingerprint("\(k)/new.pub"))"), "\(refusal)")
        #expect(refusal.contains("known is \(try fingerprint("\(k)/old.pub"))") && refusal.contains("\(k)/known_hosts:1"), "\(refusal)")
        let stored = (try? FileManager.default.contentsOfDirectory(atPath: "\(k)/dest")) ?? []
        #expect(!stored.contains { $0.hasSuffix(".mp4") || $0.hasSuffix(".sha256") }, "\(stored)")
        #expect(try String(contentsOfFile: "\(k)/known_hosts", encoding: .utf8) == known)

        // The same device with its key known: pulled (the refusal was the key's).
        let current = "[127.0.0.1]:\(port) " + (try String(contentsOfFile: "\(k)/new.pub", encoding: .utf8))
        try Data(current.utf8).write(to: URL(fileURLWithPath: "\(k)/known_hosts"))
        let summary = try Puller(options: options).run()
        #expect(summary.pulled == ["clip.mp4"] && summary.failed.isEmpty, "\(summary)")
    }

    private func fingerprint(_ publicKey: String) throws -> String {
        let listed = try runProgram("/usr/bin/ssh-keygen", ["-l", "-E", "sha256", "-f", publicKey])
        return String(listed.stdout.split(separator: " ")[1])
    }

    private func freePort() throws -> UInt16 {
        let socket = try Syscalls.socket(AF_INET, Int32(SOCK_STREAM.rawValue), what: "AF_INET")
        return try Syscalls.bindLoopback(socket.rawValue, port: 0)
    }

    /// sshd as a daemon of its own (it forks and writes its pid file), so
    /// that nothing here waits on it; stopped by its pid.
    private func startSSHD(_ k: String, port: UInt16, hostKey: String) throws -> String {
        try FileManager.default.createDirectory(atPath: "/run/sshd", withIntermediateDirectories: true)
        let started = try runProgram("/usr/sbin/sshd", [
            "-f", "/dev/null", "-p", String(port), "-h", hostKey, "-E", "\(k)/sshd.log",
            "-o", "ListenAddress=127.0.0.1", "-o", "PidFile=\(k)/sshd.pid", "-o", "AuthorizedKeysFile=\(k)/authorized_keys",
            "-o", "StrictModes=no", "-o", "UsePAM=no", "-o", "PermitRootLogin=prohibit-password", "-o", "Subsystem=sftp internal-sftp",
        ])
        try #require(started.status == 0, "sshd: \(started.stderr)")
        for _ in 0..<100 where !FileManager.default.fileExists(atPath: "\(k)/sshd.pid") { usleep(50_000) }
        return "\(k)/sshd.pid"
    }

    private func stop(_ pidFile: String) {
        if let text = try? String(contentsOfFile: pidFile, encoding: .utf8), let pid = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)) {
            kill(pid, SIGTERM)
        }
    }
}
