import CNettle
import CSystem
import Foundation
@_exported import ObscuraSettings
#if canImport(Glibc)
import Glibc
#endif

/// The age file format, version 1 (age-encryption.org/v1), with X25519
/// recipients: what the `age` tool reads and writes. The primitives are
/// Nettle's (X25519, ChaCha20-Poly1305, HKDF-SHA256, HMAC-SHA256).
public enum Age {
    /// The first line of every age file.
    public static let intro = "age-encryption.org/v1"
    /// Plaintext bytes per payload chunk.
    public static let chunkSize = 64 * 1024
    /// A sealed chunk: its plaintext and the 16-byte Poly1305 tag.
    public static let sealedChunkSize = chunkSize + 16
    static let x25519Label = "age-encryption.org/v1/X25519"

    /// `count` bytes from the kernel's random number generator (getrandom).
    static func randomBytes(_ count: Int) throws(AgeError) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        guard bytes.withUnsafeMutableBytes({ obscura_random($0.baseAddress, count) }) == 0 else {
            throw AgeError("getrandom failed: \(String(cString: strerror(errno)))")
        }
        return bytes
    }

    static func hkdf(salt: [UInt8], secret: [UInt8], info: String, count: Int = 32) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        let label = Array(info.utf8)
        obscura_hkdf_sha256(salt.count, salt, secret.count, secret, label.count, label, count, &out)
        return out
    }

    static func hmac(key: [UInt8], _ message: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        obscura_hmac_sha256(key.count, key, message.count, message, &out)
        return out
    }

    /// Whether two MACs are equal, compared in constant time (Nettle's
    /// memeql_sec): how long it takes says nothing of where they differ.
    static func sameMAC(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count, !a.isEmpty else { return a.count == b.count }
        return a.withUnsafeBufferPointer { x in
            b.withUnsafeBufferPointer { y in nettle_memeql_sec(x.baseAddress, y.baseAddress, x.count) != 0 }
        }
    }

    /// `out` holds the plaintext's length and 16 bytes more (the tag).
    static func seal(key: [UInt8], nonce: [UInt8], _ plaintext: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) {
        let input = plaintext.baseAddress?.assumingMemoryBound(to: UInt8.self)
        obscura_chacha_poly1305_seal(key, nonce, plaintext.count, input, out.baseAddress!.assumingMemoryBound(to: UInt8.self))
    }

    /// Nil when the tag is wrong.
    static func open(key: [UInt8], nonce: [UInt8], _ sealed: UnsafeRawBufferPointer) -> [UInt8]? {
        guard sealed.count >= 16 else { return nil }
        // One spare byte, so an empty chunk still has an address to write to.
        var out = [UInt8](repeating: 0, count: sealed.count - 16 + 1)
        let ok = out.withUnsafeMutableBufferPointer {
            obscura_chacha_poly1305_open(key, nonce, sealed.count, sealed.baseAddress!.assumingMemoryBound(to: UInt8.self), $0.baseAddress)
        }
        out.removeLast()
        return ok == 1 ? out : nil
    }

    /// X25519: `scalar` × `point` (nil: the base point).
    static func x25519(_ scalar: [UInt8], _ point: [UInt8]? = nil) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        if let point { nettle_curve25519_mul(&out, scalar, point) } else { nettle_curve25519_mul_g(&out, scalar) }
        return out
    }

    /// Base64 as age writes it: the standard alphabet, no padding.
    static func base64(_ bytes: [UInt8]) -> String {
        var text = Data(bytes).base64EncodedString()
        while text.hasSuffix("=") { text.removeLast() }
        return text
    }

    /// Age's base64: unpadded and canonical (nil otherwise).
    static func unbase64(_ text: Substring) -> [UInt8]? {
        guard !text.contains("="), text.utf8.allSatisfy({ $0 != 0x0d && $0 != 0x0a }) else { return nil }
        let padded = String(text) + String(repeating: "=", count: (4 - text.count % 4) % 4)
        guard let data = Data(base64Encoded: padded) else { return nil }
        let bytes = [UInt8](data)
        return base64(bytes) == text ? bytes : nil
    }
}

/// An age X25519 identity: a secret key, `AGE-SECRET-KEY-1…`. Kept on the
/// computer that collects recordings, never on the device.
public struct AgeIdentity: Sendable {
    let secret: [UInt8]
    public let recipient: AgeRecipient

    public init(_ text: String) throws(AgeError) {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        guard trimmed.hasPrefix("AGE-SECRET-KEY-1"), trimmed == trimmed.uppercased(),
              let (hrp, data) = Bech32.decode(trimmed.lowercased()), hrp == "age-secret-key-", data.count == 32 else {
            throw AgeError("not an age identity: expected AGE-SECRET-KEY-1… as age-keygen writes it")
        }
        secret = data
        recipient = AgeRecipient(publicKey: Age.x25519(data))
    }

    /// Identities from a file as age-keygen writes it (`#` comments, one
    /// key per line). Errors name the file and the line, never the key.
    public static func parseFile(_ text: String, name: String) throws(AgeError) -> [AgeIdentity] {
        try AgeKeys.lines(text, name: name, what: "identity (AGE-SECRET-KEY-1… lines)") { line throws(AgeError) in try AgeIdentity(line) }
    }
}
