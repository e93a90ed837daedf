import Foundation
import ObscuraAge
#if canImport(Glibc)
import Glibc
#endif

/// Decrypts fetched age files (`x.mp4.age` → `x.mp4`) with the collecting
/// computer's identities: the plaintext is written under a hidden temporary
/// name beside the file and given its name only when the decryption went
/// through, so a wrong identity or a damaged file leaves no partial
/// plaintext behind. An interrupted recording (its file ends without age's
/// last chunk) gives its complete chunks and is said to be interrupted.
public enum Decryption {
    public struct Result: Sendable, Equatable {
        public var output: String
        public var decryption: AgeDecryption
    }

    /// The plaintext's name: the file's without `.age`.
    public static func plainName(of path: String) -> String? {
        path.lowercased().hasSuffix(".age") && path.count > 4 ? String(path.dropLast(4)) : nil
    }

    /// Decrypts `path` next to itself. Throws `AgeError` naming the file.
    public static func decrypt(_ path: String, identities: [AgeIdentity]) throws(AgeError) -> Result {
        guard let output = plainName(of: path) else { throw AgeError("\(path): not an .age file") }
        let name = (output as NSString).lastPathComponent
        let folder = (output as NSString).deletingLastPathComponent
        let temporary = (folder.isEmpty ? "." : folder) + "/." + name + ".decrypting"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw AgeError("cannot create \(temporary): \(String(cString: strerror(errno)))") }
        do {
            let result = try AgeDecryptor.decrypt(file: path, to: fd, identities: identities, truncated: .allowed)
            guard fsync(fd) == 0 else { throw AgeError("fsync of \(temporary) failed: \(String(cString: strerror(errno)))") }
            close(fd)
            guard rename(temporary, output) == 0 else {
                throw AgeError("rename \(temporary) → \(output) failed: \(String(cString: strerror(errno)))")
            }
            return Result(output: output, decryption: result)
        } catch {
            close(fd)
            unlink(temporary)
            let said = (error as? AgeError)?.description ?? "\(error)"
            throw AgeError(said.hasPrefix(path) ? said : "\(path): \(said)")
        }
    }

    /// Identities from an identity file (age-keygen's), errors naming it.
    public static func identities(file: String) throws(AgeError) -> [AgeIdentity] {
        guard let text = try? String(contentsOfFile: file, encoding: .utf8) else {
            throw AgeError("cannot read the identity file \(file): \(String(cString: strerror(errno)))")
        }
        return try AgeIdentity.parseFile(text, name: file)
    }

    /// A line for a person about one decryption.
    public static func describe(_ result: Result) -> String {
        let d = result.decryption
        let size = String(format: "%.1f MB", Double(d.plaintextBytes) / 1e6)
        return d.truncated
            ? "\(result.output): \(size) decrypted; the recording was interrupted (its file ends after \(d.chunks) complete chunks, without the last one), so it plays up to its last whole fragment"
            : "\(result.output): \(size) decrypted"
    }
}

/// Encrypts existing files (`x.mp4` → `x.mp4.age`, beside it), read and
/// sealed 1 MiB at a time, written under a hidden temporary name and named
/// when whole. The original is left as it is.
public enum Encryption {
    public static func encrypt(_ path: String, to recipients: [AgeRecipient]) throws(AgeError) -> String {
        let output = path + ".age"
        let name = (output as NSString).lastPathComponent
        let folder = (output as NSString).deletingLastPathComponent
        let temporary = (folder.isEmpty ? "." : folder) + "/." + name + ".encrypting"
        let input = open(path, O_RDONLY | O_CLOEXEC)
        guard input >= 0 else { throw AgeError("cannot open \(path): \(String(cString: strerror(errno)))") }
        defer { close(input) }
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw AgeError("cannot create \(temporary): \(String(cString: strerror(errno)))") }
        do {
            let encryptor = try AgeEncryptor(recipients: recipients)
            try AgeDecryptor.write(encryptor.header, to: fd)
            var buffer = [UInt8](repeating: 0, count: 1 << 20)
            while true {
                let n = buffer.withUnsafeMutableBytes { read(input, $0.baseAddress, $0.count) }
                if n < 0 {
                    if errno == EINTR { continue }
                    throw AgeError("read of \(path) failed: \(String(cString: strerror(errno)))")
                }
                if n == 0 { break }
                try AgeDecryptor.write(buffer.withUnsafeBytes { encryptor.update(UnsafeRawBufferPointer(rebasing: $0[..<n])) }, to: fd)
            }
            try AgeDecryptor.write(encryptor.finish(), to: fd)
            guard fsync(fd) == 0 else { throw AgeError("fsync of \(temporary) failed: \(String(cString: strerror(errno)))") }
            close(fd)
            guard rename(temporary, output) == 0 else {
                throw AgeError("rename \(temporary) → \(output) failed: \(String(cString: strerror(errno)))")
            }
            return output
        } catch {
            close(fd)
            unlink(temporary)
            throw (error as? AgeError) ?? AgeError("\(path): \(error)")
        }
    }
}
