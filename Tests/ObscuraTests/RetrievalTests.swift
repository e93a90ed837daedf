import Foundation
import ObscuraMuxing
import ObscuraRetrieval
import Testing
import TestSupport
import ObscuraFiles

@Suite struct RetrievalTests {
    @Test func theChecksumFileIsSha256sumsFormatAndAgreesWithIt() throws {
        let dir = try TemporaryDirectory()
        let path = dir.path + "/clip.mp4"
        try Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }).write(to: URL(fileURLWithPath: path))
        try Checksum.write(for: path)
        let text = try String(contentsOfFile: path + ".sha256", encoding: .utf8)
        let line = try #require(ChecksumLine.parse(text))
        #expect(line.name == "clip.mp4")
        let check = try runProgram("/usr/bin/sha256sum", ["-c", "clip.mp4.sha256"], cwd: dir.path)
        #expect(check.status == 0 && check.stdout == "clip.mp4: OK\n", "\(check.stdout)\(check.stderr)")
        // Nothing temporary is left beside it.
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted() == ["clip.mp4", "clip.mp4.sha256"])
    }

    @Test func aChecksumBesideARelativePathStaysInItsFolder() throws {
        let dir = try TemporaryDirectory()
        try Data("x".utf8).write(to: URL(fileURLWithPath: dir.path + "/r.mp4"))
        let previous = FileManager.default.currentDirectoryPath
        _ = FileManager.default.changeCurrentDirectoryPath(dir.path)
        defer { _ = FileManager.default.changeCurrentDirectoryPath(previous) }
        try Checksum.write(for: "r.mp4")
        #expect(try String(contentsOfFile: dir.path + "/r.mp4.sha256", encoding: .utf8).hasSuffix("  r.mp4\n"))
    }

    @Test func checksumLinesAreParsedStrictly() {
        let hex = String(repeating: "ab", count: 32)
        #expect(ChecksumLine.parse("\(hex)  a.mp4\n")! == (hex, "a.mp4"))
        #expect(ChecksumLine.parse("\(hex) *a.mp4\n")! == (hex, "a.mp4"))  // sha256sum's binary marker
        #expect(ChecksumLine.parse("\(hex.uppercased())  a.mp4")!.sha256 == hex)
        #expect(ChecksumLine.parse("abc  a.mp4") == nil)
        #expect(ChecksumLine.parse(String(repeating: "z", count: 64) + "  a.mp4") == nil)
        #expect(ChecksumLine.parse("") == nil)
    }

    /// Without sftp on the PATH the pull says what to install; the batch
    /// written to a process already gone is no SIGPIPE death.
    @Test func aMissingSftpIsNamedWithWhatToInstall() throws {
        let dir = try TemporaryDirectory()
        var options = PullOptions(target: "recorder.local", destination: dir.path + "/pulled")
        options.sftp = "obscura-no-such-sftp"
        #expect {
            _ = try Puller(options: options).run()
        } throws: { error in
            "\(error)".hasPrefix("cannot run obscura-no-such-sftp (install openssh-client): ")
        }
    }

    @Test func sftpListingsGiveRegularFilesAndSizes() {
        let output = """
            sftp> -ls -ln "/recordings"
            drwxr-x---    ? 0        0            4096 Nov 22 11:55 /recordings/sub
            -rw-r-----    ? 999      999       3000000 Nov 22 11:55 /recordings/obscura-20261122-115500.mp4
            -rw-r-----    ? 999      999            86 Nov 22 11:55 /recordings/obscura-20261122-115500.mp4.sha256
            -rw-r-----    ? 999      999            12 Jan  1  2025 /recordings/with two spaces.mkv
            sftp> -get /recordings/*.sha256 "/tmp/x/0/"
            """
        let files = SFTPListing.parse(output)
        #expect(files == ["/recordings/obscura-20261122-115500.mp4": 3_000_000,
                          "/recordings/obscura-20261122-115500.mp4.sha256": 86,
                          "/recordings/with two spaces.mkv": 12])
    }

    static let key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOV1gXoHdKJ5TQRs4bM1O9nB1cBLtTx+DHyJq5BxdBTc puller@desk"

    @Test func keysAreAddedRestrictedOnceAndRemovedByAnyName() throws {
        var keys = AuthorizedKeys()
        #expect(try keys.add(Self.key))
        #expect(try keys.add("command=\"x\" " + Self.key) == false)  // the same key, options dropped
        #expect(keys.text.contains("\nrestrict ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOV1gXoHdKJ5TQRs4bM1O9nB1cBLtTx+DHyJq5BxdBTc puller@desk\n"))
        let reread = try AuthorizedKeys(text: keys.text)
        #expect(reread.keys == keys.keys)
        let fingerprint = keys.keys[0].fingerprint
        var copy = keys
        #expect(try copy.remove(fingerprint).count == 1 && copy.keys.isEmpty)
        copy = keys
        #expect(try copy.remove("puller@desk").count == 1)
        copy = keys
        #expect(try copy.remove("1").count == 1)
        #expect(throws: RetrievalError.self) { try copy.remove("2") }
    }

    @Test func theFingerprintIsOpenSSHs() throws {
        let dir = try TemporaryDirectory()
        try Data((Self.key + "\n").utf8).write(to: URL(fileURLWithPath: dir.path + "/k.pub"))
        let keygen = try runProgram("/usr/bin/ssh-keygen", ["-l", "-E", "sha256", "-f", dir.path + "/k.pub"])
        try #require(keygen.status == 0, "\(keygen.stderr)")
        let parsed = try #require(AuthorizedKeys.parse(Self.key))
        #expect(keygen.stdout.split(separator: " ")[1] == parsed.fingerprint)
    }

    @Test func notAKeyIsRefusedWithWhatIsAllowed() {
        var keys = AuthorizedKeys()
        #expect(throws: RetrievalError.self) { try keys.add("ssh-ed25519 bm90IGEga2V5") }  // base64 of something else
        #expect(throws: RetrievalError.self) { try keys.add("-----BEGIN OPENSSH PRIVATE KEY-----") }
        do {
            try keys.add("hello")
        } catch {
            #expect(error.description.contains("ssh-ed25519"))
        }
        #expect(throws: RetrievalError.self) { try AuthorizedKeys(text: "# ok\nnonsense line\n") }
    }

    @Test func aViewKeyMayOnlyWatchAndIsNamedByItsComment() throws {
        // What `obscura view` asks for is allowed, with or without a path.
        #expect(ViewAccount.refusal(originalCommand: "obscura view-serve --name me@desk") == nil)
        #expect(ViewAccount.refusal(originalCommand: "/usr/bin/obscura view-serve") == nil)
        // A shell, SFTP, another command or another obscura command is refused, saying what it asked.
        #expect(ViewAccount.refusal(originalCommand: nil)?.hasSuffix("it asked for a shell") == true)
        #expect(ViewAccount.refusal(originalCommand: "/usr/lib/openssh/sftp-server")?.contains("SFTP") == true)
        #expect(ViewAccount.refusal(originalCommand: "cat /etc/passwd")?.contains("\"cat /etc/passwd\"") == true)
        #expect(ViewAccount.refusal(originalCommand: "obscura ctl record stop") != nil)
        #expect(ViewAccount.refusal(originalCommand: "obscura view-serveX") != nil)
        // The key sshd accepted (ExposeAuthInfo's file) gives its comment, or its fingerprint.
        let folder = try TemporaryDirectory()
        let path = folder.path + "/view_authorized_keys"
        var keys = try AuthorizedKeys.load(path, purpose: .view)
        try keys.add(Self.key)
        try keys.save(path)
        let reread = try AuthorizedKeys.load(path, purpose: .view)
        #expect(try String(contentsOfFile: path, encoding: .utf8).hasPrefix("# Keys allowed to watch the live view"))
        let blob = Self.key.split(separator: " ")[1]
        #expect(ViewAccount.viewerName(authInfo: "publickey ssh-ed25519 \(blob)\n", keys: reread) == "puller@desk")
        #expect(ViewAccount.viewerName(authInfo: "publickey ssh-ed25519 AAAAother\n", keys: reread).contains("not in /etc/obscura/view_authorized_keys"))
        var unnamed = AuthorizedKeys()
        try unnamed.add("ssh-ed25519 \(blob)")
        #expect(ViewAccount.viewerName(authInfo: "publickey ssh-ed25519 \(blob)", keys: unnamed) == unnamed.keys[0].fingerprint)
    }
}
