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
@Suite(.enabled(if: LoopbackDevice.canStart, LoopbackDevice.cannotStartReason))
struct HostKeyTests {
    @Test func aChangedHostKeyIsRefusedWhateverTheOptionsSayAndNamed() throws {
        let dir = try TemporaryDirectory()
        let device = try LoopbackDevice(in: dir.path, extraKeys: ["old"])
        defer { device.stop() }
        let k = device.folder, port = device.port

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
        #expect(refusal.contains("sent \(try LoopbackDevice.fingerprint("\(k)/host.pub"))"), "\(refusal)")
        #expect(refusal.contains("known is \(try LoopbackDevice.fingerprint("\(k)/old.pub"))") && refusal.contains("\(k)/known_hosts:1"), "\(refusal)")
        let stored = (try? FileManager.default.contentsOfDirectory(atPath: "\(k)/dest")) ?? []
        #expect(!stored.contains { $0.hasSuffix(".mp4") || $0.hasSuffix(".sha256") }, "\(stored)")
        #expect(try String(contentsOfFile: "\(k)/known_hosts", encoding: .utf8) == known)

        // The same device with its key known: pulled (the refusal was the key's).
        try Data(try device.knownHosts().utf8).write(to: URL(fileURLWithPath: "\(k)/known_hosts"))
        let summary = try Puller(options: options).run()
        #expect(summary.pulled == ["clip.mp4"] && summary.failed.isEmpty, "\(summary)")
    }
}

/// A device to fetch from: OpenSSH's sshd on loopback (a daemon of its own,
/// stopped by its pid), root's login by the key `user`, its host key `host`,
/// and one finished file with its checksum in `device/`.
struct LoopbackDevice {
    static let canStart = getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/sbin/sshd")
    static let cannotStartReason: Comment = "needs root and /usr/sbin/sshd (openssh-server) to start a device's sshd"

    let folder: String
    let port: UInt16
    let files: String

    /// `extraKeys`: more key pairs made beside (a host key known instead).
    init(in parent: String, extraKeys: [String] = []) throws {
        let k = URL(fileURLWithPath: parent).standardizedFileURL.path
        folder = k
        for key in ["host", "user"] + extraKeys {
            let made = try runProgram("/usr/bin/ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", key, "-f", "\(k)/\(key)"])
            try #require(made.status == 0, "\(made.stderr)")
        }
        files = k + "/device"
        try FileManager.default.createDirectory(atPath: files, withIntermediateDirectories: true)
        try #require(FileManager.default.createFile(atPath: "\(files)/clip.mp4", contents: Data(repeating: 7, count: 4096)))
        try Checksum.write(for: "\(files)/clip.mp4")
        try FileManager.default.copyItem(atPath: "\(k)/user.pub", toPath: "\(k)/authorized_keys")
        let socket = try Syscalls.socket(AF_INET, Int32(SOCK_STREAM.rawValue), what: "AF_INET")
        port = try Syscalls.bindLoopback(socket.rawValue, port: 0)
        socket.close()
        try FileManager.default.createDirectory(atPath: "/run/sshd", withIntermediateDirectories: true)
        // sshd forks and its parent exits once it listens: nothing here waits on it.
        let started = try runProgram("/usr/sbin/sshd", [
            "-f", "/dev/null", "-p", String(port), "-h", "\(k)/host", "-E", "\(k)/sshd.log",
            "-o", "ListenAddress=127.0.0.1", "-o", "PidFile=\(k)/sshd.pid", "-o", "AuthorizedKeysFile=\(k)/authorized_keys",
            "-o", "StrictModes=no", "-o", "UsePAM=no", "-o", "PermitRootLogin=prohibit-password", "-o", "Subsystem=sftp internal-sftp",
        ])
        try #require(started.status == 0, "sshd: \(started.stderr)")
    }

    /// known_hosts text with the device's own key.
    func knownHosts() throws -> String {
        "[127.0.0.1]:\(port) " + (try String(contentsOfFile: "\(folder)/host.pub", encoding: .utf8))
    }

    func stop() {
        _ = waitUntilBlocking(within: .seconds(5), every: .milliseconds(20)) { FileManager.default.fileExists(atPath: "\(folder)/sshd.pid") }
        if let text = try? String(contentsOfFile: "\(folder)/sshd.pid", encoding: .utf8), let pid = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)) {
            kill(pid, SIGTERM)
        }
    }

    static func fingerprint(_ publicKey: String) throws -> String {
        let listed = try runProgram("/usr/bin/ssh-keygen", ["-l", "-E", "sha256", "-f", publicKey])
        return String(listed.stdout.split(separator: " ")[1])
    }
}
