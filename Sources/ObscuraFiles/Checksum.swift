import CNettleHash
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ObscuraSystem
#if canImport(Glibc)
import Glibc
#endif

/// SHA-256 (Nettle's, which uses the CPU's SHA instructions where it has
/// them: x86 SHA-NI, Armv8 crypto extensions).
public final class SHA256 {
    private var context = sha256_ctx()
    /// Bytes taken so far.
    public private(set) var count = 0

    public init() { nettle_sha256_init(&context) }

    public func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        nettle_sha256_update(&context, bytes.count, base.assumingMemoryBound(to: UInt8.self))
        count += bytes.count
    }

    public func update(_ bytes: some Collection<UInt8>) {
        if bytes.withContiguousStorageIfAvailable({ update(UnsafeRawBufferPointer($0)) }) == nil {
            Array(bytes).withUnsafeBytes { update($0) }
        }
    }

    /// The digest (32 bytes). The hash starts over afterwards.
    public func finalize() -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: 32)
        nettle_sha256_digest(&context, 32, &digest)
        count = 0
        return digest
    }

    /// Lowercase hex, as sha256sum prints it.
    public static func hex(_ digest: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text = [UInt8]()
        text.reserveCapacity(digest.count * 2)
        for byte in digest {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 15)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}

/// SHA-256 of finished recordings, beside each as `<name>.sha256` in
/// sha256sum's format (`<hex>  <name>`), so a copy can be verified with
/// `sha256sum -c` or `obscura pull`. Written after the recording has its
/// final name (via a temporary name and a rename): a recording with a
/// checksum is complete.
public enum Checksum {
    /// `digest`: the file's SHA-256 when it is already known (a movie writer
    /// hashes what it writes as it writes it); nil: the file is read.
    public static func write(for path: String, digest: String? = nil) throws {
        let hex = try digest ?? sha256(of: path)
        let name = Paths.name(path)
        let target = path + ".sha256"
        let directory = Paths.folder(path)
        let temporary = (directory.isEmpty ? "." : directory) + "/." + name + ".sha256.tmp"
        try DurableFile.write("\(hex)  \(name)\n".utf8, to: target, via: temporary)
    }

    /// The SHA-256 digest of `bytes`.
    public static func sha256(bytes: [UInt8]) -> [UInt8] {
        let hash = SHA256()
        hash.update(bytes)
        return hash.finalize()
    }

    /// The file's SHA-256 as lowercase hex.
    public static func sha256(of path: String) throws -> String {
        let fd = try Syscalls.open(path, O_RDONLY)
        let hash = SHA256()
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let n = try buffer.withUnsafeMutableBytes { b throws(SystemError) in try Syscalls.read(fd.rawValue, into: b, path: path) }
            if n == 0 { break }
            buffer.withUnsafeBytes { hash.update(UnsafeRawBufferPointer(rebasing: $0[..<n])) }
        }
        return SHA256.hex(hash.finalize())
    }
}
