import Foundation
import ObscuraAge
@testable import ObscuraService
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// A file's bytes, read with POSIX calls: Foundation's Data(contentsOf:)
/// leaks its buffer on an empty file (FoundationEssentials' readBytesFromFile,
/// seen by LeakSanitizer), and the files here may be empty.
private func bytes(of path: String) throws -> [UInt8] {
    let fd = open(path, O_RDONLY)
    guard fd >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
    defer { close(fd) }
    var out: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 1 << 16)
    while true {
        let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if n <= 0 { break }
        out += buffer[0..<n]
    }
    return out
}

private func scratch(_ name: String) -> String { scratchPath("age", name) }

/// The age format against the real `age` tool (Debian's package): what
/// Obscura encrypts, `age -d` decrypts; what `age` encrypts, Obscura does.
@Suite struct AgeTests {
    /// A fresh key pair from `age-keygen`: (identity file, recipient).
    static func keyPair(_ name: String) throws -> (String, String) {
        let file = scratch("\(name).key")
        unlink(file)
        let made = try runProgram("age-keygen", ["-o", file])
        try #require(made.status == 0, "age-keygen: \(made.stderr)")
        let text = try String(contentsOfFile: file, encoding: .utf8)
        let line = try #require(text.split(separator: "\n").first { $0.hasPrefix("# public key: ") }.map(String.init))
        return (file, String(line.dropFirst("# public key: ".count)))
    }

    static func pattern(_ count: Int) -> [UInt8] { (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 9) } }

    @Test(arguments: [0, 1, 65_535, 65_536, 65_537, 3 * 65_536, 200_000])
    func ageDecryptsWhatObscuraEncrypts(size: Int) throws {
        let (identity, recipient) = try Self.keyPair("a-\(size)")
        let plain = Self.pattern(size)
        let file = scratch("size-\(size).age")
        try Data(try AgeEncryptor.encrypt(plain, to: [AgeRecipient(recipient)])).write(to: URL(fileURLWithPath: file))
        let out = file + ".out"
        let decrypted = try runProgram("sh", ["-c", "age -d -i '\(identity)' '\(file)' > '\(out)'"])
        #expect(decrypted.status == 0, "age -d: \(decrypted.stderr)")
        #expect(try bytes(of: out) == plain)
    }

    @Test func everyRecipientCanDecryptAndTheKeysReadBack() throws {
        let (first, r1) = try Self.keyPair("one")
        let (second, r2) = try Self.keyPair("two")
        #expect(try AgeRecipient(r1).description == r1)
        let identity = try AgeIdentity.parseFile(String(contentsOfFile: first, encoding: .utf8), name: first)
        #expect(identity.first?.recipient.description == r1)
        let plain = Self.pattern(100_000)
        let file = scratch("two.age")
        try Data(try AgeEncryptor.encrypt(plain, to: [AgeRecipient(r1), AgeRecipient(r2)])).write(to: URL(fileURLWithPath: file))
        try Data(plain).write(to: URL(fileURLWithPath: file + ".plain"))
        for key in [first, second] {
            let compared = try runProgram("sh", ["-c", "age -d -i '\(key)' '\(file)' | cmp - '\(file).plain'"])
            #expect(compared.status == 0, "\(key): \(compared.stdout)\(compared.stderr)")
        }
    }

    @Test func obscuraDecryptsWhatAgeEncrypts() throws {
        let (identityFile, recipient) = try Self.keyPair("b")
        let plain = Self.pattern(150_000)
        let file = scratch("from-age.age")
        try Data(plain).write(to: URL(fileURLWithPath: file + ".plain"))
        let made = try runProgram("age", ["-r", recipient, "-o", file, file + ".plain"])
        try #require(made.status == 0, "\(made.stderr)")
        let identities = try AgeIdentity.parseFile(String(contentsOfFile: identityFile, encoding: .utf8), name: identityFile)
        let (fd, out) = try Self.output("from-age.out")
        defer { close(fd) }
        let result = try AgeDecryptor.decrypt(file: file, to: fd, identities: identities, truncated: .refused)
        #expect(result == AgeDecryption(plaintextBytes: 150_000, chunks: 3, truncated: false))
        #expect(try Data(contentsOf: URL(fileURLWithPath: out)) == Data(plain))
    }

    static func output(_ name: String) throws -> (Int32, String) {
        let path = scratch(name)
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        try #require(fd >= 0)
        return (fd, path)
    }

    @Test func aFileCutOffBeforeItsEndGivesItsCompleteChunksOnlyWhenAllowed() throws {
        let (identityFile, recipient) = try Self.keyPair("c")
        let identities = try AgeIdentity.parseFile(String(contentsOfFile: identityFile, encoding: .utf8), name: identityFile)
        let plain = Self.pattern(200_000)
        let encryptor = try AgeEncryptor(recipients: [AgeRecipient(recipient)])
        // Killed before finish: the header and the chunks given back, and a
        // torn piece of a next write.
        var bytes = encryptor.header + encryptor.update(plain)
        #expect(encryptor.chunksSealed == 3)
        #expect(encryptor.heldBytes == 200_000 - 3 * 65_536)
        bytes += [1, 2, 3]
        let file = scratch("cut.age")
        try Data(bytes).write(to: URL(fileURLWithPath: file))

        let age = try runProgram("age", ["-d", "-i", identityFile, "-o", file + ".age-out", file])
        #expect(age.status != 0)

        let (strict, _) = try Self.output("cut.strict")
        defer { close(strict) }
        #expect(throws: AgeError.self) {
            try AgeDecryptor.decrypt(file: file, to: strict, identities: identities, truncated: .refused)
        }
        let (fd, out) = try Self.output("cut.out")
        defer { close(fd) }
        let result = try AgeDecryptor.decrypt(file: file, to: fd, identities: identities, truncated: .allowed)
        #expect(result == AgeDecryption(plaintextBytes: 3 * 65_536, chunks: 3, truncated: true))
        #expect(try Data(contentsOf: URL(fileURLWithPath: out)) == Data(plain.prefix(3 * 65_536)))

        // Cut back to its whole chunks, it decrypts the same.
        let header = try #require(AgeDecryptor.headerLength(of: file))
        #expect(header == encryptor.header.count)
        #expect(AgeDecryptor.completeLength(headerAndNonce: header, fileSize: Int64(bytes.count)) == Int64(bytes.count - 3))
    }

    @Test func aWrongIdentityIsSaidAndNothingIsWritten() throws {
        let (_, recipient) = try Self.keyPair("d")
        let (otherFile, other) = try Self.keyPair("e")
        let file = scratch("wrong.age")
        try Data(try AgeEncryptor.encrypt(Self.pattern(70_000), to: [AgeRecipient(recipient)])).write(to: URL(fileURLWithPath: file))
        let identities = try AgeIdentity.parseFile(String(contentsOfFile: otherFile, encoding: .utf8), name: otherFile)
        let (fd, out) = try Self.output("wrong.out")
        defer { close(fd) }
        let error = #expect(throws: AgeError.self) {
            try AgeDecryptor.decrypt(file: file, to: fd, identities: identities, truncated: .allowed)
        }
        #expect(error?.description.contains("no identity matches") == true, "\(String(describing: error))")
        #expect(error?.description.contains(other) == true)
        #expect(try bytes(of: out).isEmpty)
    }

    /// A header altered after it was sealed (one character of its MAC) is
    /// refused before anything is written, by Obscura as by `age -d`.
    @Test func anAlteredHeaderIsRefusedByItsMAC() throws {
        let (identityFile, recipient) = try Self.keyPair("m")
        var sealed = try AgeEncryptor.encrypt(Self.pattern(1_000), to: [AgeRecipient(recipient)])
        let marker = Array("\n--- ".utf8)
        let at = try #require((0...(sealed.count - marker.count)).first { Array(sealed[$0..<$0 + marker.count]) == marker })
        let first = at + marker.count
        sealed[first] = sealed[first] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        let file = scratch("altered.age")
        try Data(sealed).write(to: URL(fileURLWithPath: file))
        let identities = try AgeIdentity.parseFile(String(contentsOfFile: identityFile, encoding: .utf8), name: identityFile)
        let (fd, out) = try Self.output("altered.out")
        defer { close(fd) }
        let error = #expect(throws: AgeError.self) {
            try AgeDecryptor.decrypt(file: file, to: fd, identities: identities, truncated: .allowed)
        }
        #expect(error?.description == "the header's MAC is wrong: the file was altered", "\(String(describing: error))")
        #expect(try bytes(of: out).isEmpty)
        let age = try runProgram("age", ["-d", "-i", identityFile, "-o", "/dev/null", file])
        #expect(age.status != 0, "age -d took the altered file too")
    }

    @Test func badKeysAreNamedWithWhatIsAllowed() throws {
        let (_, recipient) = try Self.keyPair("f")
        var broken = Array(recipient)
        broken[10] = broken[10] == "q" ? "p" : "q"
        for text in [String(broken), "age1", "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI", "AGE-SECRET-KEY-1QQQ", recipient.uppercased()] {
            let error = #expect(throws: AgeError.self) { try AgeRecipient(text) }
            #expect(error?.description.contains("age1") == true, "\(text): \(String(describing: error))")
        }
        let error = #expect(throws: AgeError.self) {
            try AgeRecipient.parseFile("# keys\n\(recipient)\nage1nope\n", name: "recipients.txt")
        }
        #expect(error?.description.hasPrefix("recipients.txt, line 3: ") == true, "\(String(describing: error))")
        #expect(throws: AgeError.self) { try AgeIdentity.parseFile("# nothing\n", name: "key.txt") }
        #expect(throws: AgeError.self) { try AgeIdentity(recipient) }
    }


    @Test func theServiceTakesRecipientsByKeyOrFileAndNamesTheKeyOfABadOne() throws {
        let (_, r1) = try Self.keyPair("svc1")
        let (_, r2) = try Self.keyPair("svc2")
        let file = scratch("recipients.txt")
        try "# the office\n\(r2)\n".write(toFile: file, atomically: true, encoding: .utf8)
        let c = try ServiceConfiguration.parsing("[encryption]\nrecipients = [\"\(r1)\"]\nrecipients_file = \"\(file)\"\n")
        #expect(c.recipients.map(\.description) == [r1, r2])
        #expect(c.recordingExtension == "mp4.age")
        #expect(c.photoExtension(raw: false) == ".jpg.age" && c.photoExtension(raw: true) == ".dng.age")
        #expect(!c.alignsToAgeChunks, "fragments are aligned to age's chunks only when asked")
        let aligned = try ServiceConfiguration.parsing("[encryption]\nrecipients = [\"\(r1)\"]\nalign_to_chunks = true\n")
        #expect(aligned.alignsToAgeChunks)
        let plain = try ServiceConfiguration.parsing("[encryption]\nrecipients = []\nrecipients_file = \"\"\n")
        #expect(plain.recipients.isEmpty && plain.recordingExtension == "mp4" && plain.photoExtension(raw: false) == ".jpg")
        try "age1nope\n".write(toFile: file + ".bad", atomically: true, encoding: .utf8)
        for (text, key, start) in [
            ("[encryption]\nrecipients = [\"age1nope\"]\n", "encryption.recipients", "\"age1nope\" is not an age recipient"),
            ("[encryption]\nrecipients = \"\(r1)\"\n", "encryption.recipients", "must be an array of strings"),
            ("[encryption]\nrecipients_file = \"recipients.txt\"\n", "encryption.recipients_file", "\"recipients.txt\" must be an absolute path"),
            ("[encryption]\nrecipients_file = \"/nonexistent/r.txt\"\n", "encryption.recipients_file", "cannot read /nonexistent/r.txt"),
            ("[encryption]\nrecipients_file = \"\(file).bad\"\n", "encryption.recipients_file", "\(file).bad, line 1: "),
            ("[encryption]\nalign_to_chunks = \"yes\"\n", "encryption.align_to_chunks", "must be true or false"),
        ] {
            do {
                _ = try ServiceConfiguration.parsing(text)
                Issue.record("accepted: \(text)")
            } catch {
                #expect(error.key == key && error.message.hasPrefix(start), "\(error)")
            }
        }
    }
}
