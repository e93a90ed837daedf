import Foundation
import ObscuraAge
import ObscuraMuxing
import ObscuraSystem
#if canImport(Glibc)
import Glibc
#endif

/// Decrypts fetched age files (`x.mp4.age` → `x.mp4`) with the collecting
/// computer's identities: the plaintext is written under a hidden temporary
/// name beside the file and given its name only when the decryption went
/// through, so a wrong identity or a damaged file leaves no partial
/// plaintext behind. An interrupted recording (its file ends without age's
/// last chunk, or still named `.age.partial`) gives its complete chunks, cut
/// back to the end of its last whole fragment or cluster (WholeFragments), so
/// that no decoder meets a torn tail; it is said to be interrupted, and how
/// much was cut.
public enum Decryption {
    public struct Result: Sendable, Equatable {
        public var output: String
        public var decryption: AgeDecryption
        /// An interrupted recording's whole part (nil: not interrupted, or
        /// not a container whose fragments can be told).
        public var whole: WholeFragments.Extent?
        /// The samples (frames, sound) kept of the torn fragment after the
        /// whole ones, rebuilt with them (`TornFragment`); 0: none kept.
        public var salvaged = 0
        /// The bytes left out after them (those of the torn fragment
        /// without a sample kept, or the whole torn part).
        public var leftOut: Int64 = 0
    }

    /// The plaintext's name: the file's without `.age` (`x.mp4.age` →
    /// `x.mp4`); an interrupted file keeps saying so (`x.mp4.age.partial` →
    /// `x.mp4.partial`).
    public static func plainName(of path: String) -> String? {
        let lower = path.lowercased()
        if lower.hasSuffix(".age.partial"), path.count > 12 { return String(path.dropLast(12)) + ".partial" }
        return lower.hasSuffix(".age") && path.count > 4 ? String(path.dropLast(4)) : nil
    }

    /// Decrypts `path` next to itself. Throws `AgeError` naming the file.
    public static func decrypt(_ path: String, identities: [AgeIdentity]) throws(AgeError) -> Result {
        guard let output = plainName(of: path) else { throw AgeError("\(path): not an encrypted file (its name ends in neither .age nor .age.partial)") }
        let name = (output as NSString).lastPathComponent
        let folder = (output as NSString).deletingLastPathComponent
        let temporary = (folder.isEmpty ? "." : folder) + "/." + name + ".decrypting"
        let file: OwnedFileDescriptor
        do { file = try Syscalls.open(temporary, O_RDWR | O_CREAT | O_TRUNC, 0o600) }  // read back for the cut
        catch { throw AgeError("cannot create \(temporary): \(error)") }
        let fd = file.rawValue
        do {
            let result = try AgeDecryptor.decrypt(file: path, to: fd, identities: identities, truncated: .allowed)
            let interrupted = result.truncated || output.hasSuffix(".partial")
            let cut = interrupted ? try cutToWholeFragments(fd, temporary, size: result.plaintextBytes, output: output) : nil
            try Syscalls.fsync(fd, path: temporary)
            file.close()
            do { try Syscalls.publish(temporary, as: output) } catch { throw AgeError("\(error)") }
            return Result(output: output, decryption: result, whole: cut?.extent, salvaged: cut?.salvaged ?? 0,
                          leftOut: cut?.leftOut ?? 0)
        } catch {
            file.close()
            try? Syscalls.remove(temporary)  // (the error said is the decryption's)
            let said = (error as? AgeError)?.description ?? "\(error)"
            throw AgeError(said.hasPrefix(path) ? said : "\(path): \(said)")
        }
    }

    /// Cuts an interrupted recording's plaintext (open as `fd`, `size`
    /// bytes) back to its last whole fragment or cluster, and the whole
    /// samples of the torn one after it (rebuilt with them); nil for a
    /// container whose fragments cannot be told.
    static func cutToWholeFragments(_ fd: Int32, _ temporary: String, size: Int64, output: String) throws
        -> (extent: WholeFragments.Extent, salvaged: Int, leftOut: Int64)? {
        let named = output.hasSuffix(".partial") ? String(output.dropLast(8)) : output
        let read: WholeFragments.Reader = { offset, count in try Syscalls.readAt(fd, offset: offset, count: count, path: temporary) }
        guard let container = MovieContainer(path: named),
              let extent = try WholeFragments.extent(of: container, size: size, read: read) else { return nil }
        guard extent.tornBytes > 0 else { return (extent, 0, 0) }
        guard let kept = try TornFragment.salvage(of: container, extent: extent, size: size, read: read) else {
            try Syscalls.truncate(fd, to: extent.wholeBytes, path: temporary)
            return (extent, 0, extent.tornBytes)
        }
        try write(kept.bytes, to: fd, at: kept.offset, path: temporary)
        let end = kept.offset + Int64(kept.bytes.count)
        try Syscalls.truncate(fd, to: end, path: temporary)
        return (extent, kept.samples, size - end)
    }

    private static func write(_ bytes: [UInt8], to fd: Int32, at offset: Int64, path: String) throws(SystemError) {
        var done = 0
        let result = bytes.withUnsafeBytes { b in
            Swift.Result { () throws(SystemError) in
                try Syscalls.pwriteAll(fd, b.baseAddress!, count: b.count, at: offset, path: path, written: &done)
            }
        }
        try result.get()
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
        var line = "\(result.output): \(size) decrypted"
        if d.truncated {
            line += "; the recording was interrupted (its file ends after \(d.chunks) complete chunks, without the last one)"
        } else if result.whole != nil {
            line += "; the recording was interrupted"
        }
        if let whole = result.whole {
            let unit = result.output.lowercased().contains(".mkv") ? "cluster" : "fragment"
            line += result.salvaged > 0
                ? "; cut back to its last whole \(unit) (\(whole.fragments) whole) and \(result.salvaged == 1 ? "the one whole sample" : "the \(result.salvaged) whole samples") "
                    + "(frames, and sound where there is) of the torn one after it, leaving out \(result.leftOut) bytes"
                : whole.fragments == 0
                ? ", before its first whole \(unit) ended: it holds no frame"
                : whole.tornBytes > 0
                ? "; cut back to its last whole \(unit) (\(whole.fragments) whole), leaving out the torn \(whole.tornBytes) bytes after it"
                : "; it ends at a whole \(unit) (\(whole.fragments) whole), nothing cut"
        } else if d.truncated {
            line += ", so it plays up to its last whole fragment"
        }
        return line
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
        let input: OwnedFileDescriptor, file: OwnedFileDescriptor
        do { input = try Syscalls.open(path, O_RDONLY) } catch { throw AgeError("cannot open \(path): \(error)") }
        do { file = try Syscalls.open(temporary, O_WRONLY | O_CREAT | O_TRUNC, 0o644) }
        catch { throw AgeError("cannot create \(temporary): \(error)") }
        let fd = file.rawValue
        do {
            let encryptor = try AgeEncryptor(recipients: recipients)
            try AgeDecryptor.write(encryptor.header, to: fd)
            var buffer = [UInt8](repeating: 0, count: 1 << 20)
            while true {
                let n = try buffer.withUnsafeMutableBytes { b throws(SystemError) in try Syscalls.read(input.rawValue, into: b, path: path) }
                if n == 0 { break }
                try AgeDecryptor.write(buffer.withUnsafeBytes { encryptor.update(UnsafeRawBufferPointer(rebasing: $0[..<n])) }, to: fd)
            }
            try AgeDecryptor.write(encryptor.finish(), to: fd)
            try Syscalls.fsync(fd, path: temporary)
            file.close()
            do { try Syscalls.publish(temporary, as: output) } catch { throw AgeError("\(error)") }
            return output
        } catch {
            file.close()
            try? Syscalls.remove(temporary)  // (the error said is the decryption's)
            throw (error as? AgeError) ?? AgeError("\(path): \(error)")
        }
    }
}
