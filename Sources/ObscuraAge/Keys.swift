import CNettle
import CSystem
import Foundation
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

/// What went wrong with a key or an age file, said for a person.
public struct AgeError: Error, CustomStringConvertible, Sendable, Equatable {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// An age X25519 recipient: a public key, `age1…` (Bech32).
public struct AgeRecipient: Sendable, Hashable, CustomStringConvertible {
    public let publicKey: [UInt8]

    public init(publicKey: [UInt8]) { self.publicKey = publicKey }

    /// `text`: `age1…` as `age-keygen` prints it.
    public init(_ text: String) throws(AgeError) {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if trimmed.hasPrefix("ssh-") || trimmed.hasPrefix("age1") && trimmed.count > 62 {
            throw AgeError("\"\(Self.abbreviated(trimmed))\" is not an X25519 recipient: only age1… keys (age-keygen's \"public key\") are taken")
        }
        guard let (hrp, data) = Bech32.decode(trimmed), hrp == "age" else {
            throw AgeError("\"\(Self.abbreviated(trimmed))\" is not an age recipient: expected age1 followed by 58 Bech32 characters, as age-keygen prints it")
        }
        guard data.count == 32 else {
            throw AgeError("\"\(Self.abbreviated(trimmed))\" is not an X25519 recipient: it holds \(data.count) bytes, not 32")
        }
        publicKey = data
    }

    public var description: String { Bech32.encode(hrp: "age", publicKey) }

    static func abbreviated(_ text: String) -> String { text.count > 24 ? text.prefix(20) + "…" : text }

    /// Recipients from a file as `age -R` reads it: one per line, `#`
    /// comments and blank lines skipped. Errors name the file and the line.
    public static func parseFile(_ text: String, name: String) throws(AgeError) -> [AgeRecipient] {
        try Age.keyLines(text, name: name, what: "recipient (age1… lines)") { line throws(AgeError) in try AgeRecipient(line) }
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
        try Age.keyLines(text, name: name, what: "identity (AGE-SECRET-KEY-1… lines)") { line throws(AgeError) in try AgeIdentity(line) }
    }
}

extension Age {
    /// A file of keys as age writes them: one per line, `#` comments and
    /// blank lines skipped; an error names the file and line; at least one.
    static func keyLines<Key>(_ text: String, name: String, what: String,
                              _ parse: (String) throws(AgeError) -> Key) throws(AgeError) -> [Key] {
        var keys: [Key] = []
        for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let entry = line.trimmingCharacters(in: .whitespaces)
            guard !entry.isEmpty, !entry.hasPrefix("#") else { continue }
            do { keys.append(try parse(entry)) } catch {
                throw AgeError("\(name), line \(index + 1): \(error)")
            }
        }
        guard !keys.isEmpty else { throw AgeError("\(name) holds no \(what)") }
        return keys
    }
}

/// Bech32 (BIP 173) as age uses it: no length limit, one case.
enum Bech32 {
    static let alphabet = Array("qpzry9x8gf2tvdw0s3jn54khce6mua7l".utf8)

    static func polymod(_ values: [UInt8]) -> UInt32 {
        let generator: [UInt32] = [0x3b6a57b2, 0x26508e6d, 0x1ea119fa, 0x3d4233dd, 0x2a1462b3]
        var check: UInt32 = 1
        for value in values {
            let top = check >> 25
            check = (check & 0x1ffffff) << 5 ^ UInt32(value)
            for i in 0..<5 where (top >> i) & 1 == 1 { check ^= generator[i] }
        }
        return check
    }

    static func expand(_ hrp: [UInt8]) -> [UInt8] { hrp.map { $0 >> 5 } + [0] + hrp.map { $0 & 31 } }

    /// Regroups bits (8 → 5 with padding, 5 → 8 without); nil when the
    /// padding is not zero bits of less than a group.
    static func regroup(_ data: [UInt8], from: Int, to: Int, pad: Bool) -> [UInt8]? {
        var accumulator = 0, bits = 0
        var out: [UInt8] = []
        let mask = (1 << to) - 1
        for value in data {
            accumulator = accumulator << from | Int(value)
            bits += from
            while bits >= to {
                bits -= to
                out.append(UInt8(accumulator >> bits & mask))
            }
        }
        if pad {
            if bits > 0 { out.append(UInt8(accumulator << (to - bits) & mask)) }
        } else if bits >= from || accumulator << (to - bits) & mask != 0 {
            return nil
        }
        return out
    }

    static func encode(hrp: String, _ data: [UInt8]) -> String {
        let h = Array(hrp.utf8)
        let values = regroup(data, from: 8, to: 5, pad: true)!
        let check = polymod(expand(h) + values + [0, 0, 0, 0, 0, 0]) ^ 1
        let checksum = (0..<6).map { UInt8(check >> (5 * (5 - $0)) & 31) }
        return hrp + "1" + String(decoding: (values + checksum).map { alphabet[Int($0)] }, as: UTF8.self)
    }

    /// (hrp, data) of a lowercase Bech32 string; nil when it is not one.
    static func decode(_ text: String) -> (String, [UInt8])? {
        let bytes = Array(text.utf8)
        guard let separator = bytes.lastIndex(of: UInt8(ascii: "1")), separator > 0, bytes.count - separator > 6,
              bytes.allSatisfy({ $0 >= 33 && $0 <= 126 && !($0 >= 65 && $0 <= 90) }) else { return nil }
        let hrp = Array(bytes[..<separator])
        var values: [UInt8] = []
        for byte in bytes[(separator + 1)...] {
            guard let index = alphabet.firstIndex(of: byte) else { return nil }
            values.append(UInt8(index))
        }
        guard polymod(expand(hrp) + values) == 1,
              let data = regroup(Array(values.dropLast(6)), from: 5, to: 8, pad: false) else { return nil }
        return (String(decoding: hrp, as: UTF8.self), data)
    }
}
