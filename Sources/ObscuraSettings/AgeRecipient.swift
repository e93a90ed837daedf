import ObscuraSystem

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
        let trimmed = text.trimmingWhitespace
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
        try AgeKeys.lines(text, name: name, what: "recipient (age1… lines)") { line throws(AgeError) in try AgeRecipient(line) }
    }
}

public enum AgeKeys {
    /// A file of keys as age writes them: one per line, `#` comments and
    /// blank lines skipped; an error names the file and line; at least one.
    public static func lines<Key>(_ text: String, name: String, what: String,
                              _ parse: (String) throws(AgeError) -> Key) throws(AgeError) -> [Key] {
        var keys: [Key] = []
        for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let entry = line.trimmingWhitespace
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
public enum Bech32 {
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

    public static func encode(hrp: String, _ data: [UInt8]) -> String {
        let h = Array(hrp.utf8)
        let values = regroup(data, from: 8, to: 5, pad: true)!
        let check = polymod(expand(h) + values + [0, 0, 0, 0, 0, 0]) ^ 1
        let checksum = (0..<6).map { UInt8(check >> (5 * (5 - $0)) & 31) }
        return hrp + "1" + String(decoding: (values + checksum).map { alphabet[Int($0)] }, as: UTF8.self)
    }

    /// (hrp, data) of a lowercase Bech32 string; nil when it is not one.
    public static func decode(_ text: String) -> (String, [UInt8])? {
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
