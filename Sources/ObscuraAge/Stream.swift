import Foundation
import ObscuraSystem
#if canImport(Glibc)
import Glibc
#endif

/// Encrypts one file to age X25519 recipients as it is written.
///
/// `header` goes first; then `update` gives back, for the plaintext handed
/// to it, whole sealed 64 KiB chunks (never the last one: it holds up to one
/// chunk of plaintext, since only the end of the file says which chunk is
/// last); `finish` seals what it holds as the last chunk. So a file cut off
/// before `finish` (a killed process) holds every chunk it was given as a
/// complete, authenticated chunk, which `AgeReader` with `truncated:
/// .allowed` decrypts; `age -d` refuses it (no last chunk).
/// The file key lives only in this object.
public final class AgeEncryptor {
    /// The header and the payload's nonce: the file's first bytes.
    public let header: [UInt8]
    private let payloadKey: [UInt8]
    private var counter: UInt64 = 0
    private var held: [UInt8] = []
    private var finished = false
    /// Plaintext taken and sealed chunks given back.
    public private(set) var plaintextBytes: Int64 = 0
    public private(set) var chunksSealed = 0

    public init(recipients: [AgeRecipient]) throws(AgeError) {
        guard !recipients.isEmpty else { throw AgeError("no recipient to encrypt to") }
        let fileKey = try Age.randomBytes(16)
        var text = Age.intro + "\n"
        for recipient in recipients {
            let ephemeral = try Age.randomBytes(32)
            let share = Age.x25519(ephemeral)
            let shared = Age.x25519(ephemeral, recipient.publicKey)
            guard shared.contains(where: { $0 != 0 }) else {
                throw AgeError("\(recipient) is not a usable X25519 key (a low-order point)")
            }
            let wrapKey = Age.hkdf(salt: share + recipient.publicKey, secret: shared, info: Age.x25519Label)
            var body = [UInt8](repeating: 0, count: 32)
            fileKey.withUnsafeBytes { key in
                body.withUnsafeMutableBytes { Age.seal(key: wrapKey, nonce: [UInt8](repeating: 0, count: 12), key, into: $0) }
            }
            text += "-> X25519 \(Age.base64(share))\n\(Age.base64(body))\n"
        }
        text += "---"
        let mac = Age.hmac(key: Age.hkdf(salt: [], secret: fileKey, info: "header"), Array(text.utf8))
        text += " \(Age.base64(mac))\n"
        let nonce = try Age.randomBytes(16)
        header = Array(text.utf8) + nonce
        payloadKey = Age.hkdf(salt: nonce, secret: fileKey, info: "payload")
        held.reserveCapacity(Age.chunkSize)
    }

    /// Takes plaintext; gives back the chunks it completes (possibly none),
    /// sealed, to be appended to the file. Whole chunks of the input are
    /// sealed straight from it into the result (one pass, no staging copy).
    public func update(_ bytes: UnsafeRawBufferPointer) -> [UInt8] {
        precondition(!finished, "AgeEncryptor.update after finish")
        plaintextBytes += Int64(bytes.count)
        let total = held.count + bytes.count
        // Everything but the last 1...chunkSize bytes is sealed now: only
        // the file's end says which chunk is last.
        let emit = total == 0 ? 0 : (total - 1) / Age.chunkSize
        guard emit > 0 else {
            held.append(contentsOf: bytes)
            return []
        }
        var offset = 0
        let out = [UInt8](unsafeUninitializedCapacity: emit * Age.sealedChunkSize) { buffer, count in
            let raw = UnsafeMutableRawBufferPointer(buffer)
            for i in 0..<emit {
                let target = UnsafeMutableRawBufferPointer(rebasing: raw[(i * Age.sealedChunkSize)..<((i + 1) * Age.sealedChunkSize)])
                if i == 0 && !held.isEmpty {
                    let n = Age.chunkSize - held.count
                    held.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[0..<n]))
                    offset = n
                    held.withUnsafeBytes { seal($0, last: false, into: target) }
                    held.removeAll(keepingCapacity: true)
                } else {
                    seal(UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + Age.chunkSize)]), last: false, into: target)
                    offset += Age.chunkSize
                }
            }
            count = emit * Age.sealedChunkSize
        }
        held.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[offset...]))
        return out
    }

    public func update(_ bytes: [UInt8]) -> [UInt8] { bytes.withUnsafeBytes { update($0) } }

    /// The last chunk, sealed (what is held; empty only for an empty file).
    public func finish() -> [UInt8] {
        precondition(!finished, "AgeEncryptor.finish twice")
        finished = true
        defer { held.removeAll() }
        return seal(held, last: true)
    }

    /// Plaintext held, not yet in any chunk given back.
    public var heldBytes: Int { held.count }

    /// Seals the held plaintext now, as a chunk that is not the last, when
    /// it fills a whole chunk (else gives back nothing): the file then ends
    /// exactly where the plaintext given so far ends, so a file cut off here
    /// decrypts, with `age -d` too, to all of it. The caller promises more:
    /// at least one byte of plaintext before `finish`, whose last chunk may
    /// not be empty (`finishNeedsPlaintext`).
    public func sealWholeHeldChunk() -> [UInt8] {
        precondition(!finished, "AgeEncryptor.sealWholeHeldChunk after finish")
        guard held.count == Age.chunkSize else { return [] }
        defer { held.removeAll(keepingCapacity: true) }
        return seal(held, last: false)
    }

    /// Whether `finish` now would seal an empty last chunk after others,
    /// which age does not allow: plaintext must come first.
    public var finishNeedsPlaintext: Bool { held.isEmpty && chunksSealed > 0 }

    private func seal(_ chunk: [UInt8], last: Bool) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: chunk.count + 16) { buffer, count in
            chunk.withUnsafeBytes { seal($0, last: last, into: UnsafeMutableRawBufferPointer(buffer)) }
            count = chunk.count + 16
        }
    }

    private func seal(_ chunk: UnsafeRawBufferPointer, last: Bool, into out: UnsafeMutableRawBufferPointer) {
        Age.seal(key: payloadKey, nonce: AgeDecryptor.nonce(counter, last: last), chunk, into: out)
        counter += 1
        chunksSealed += 1
    }

    /// A whole file's bytes, encrypted (photos).
    public static func encrypt(_ plaintext: [UInt8], to recipients: [AgeRecipient]) throws(AgeError) -> [UInt8] {
        let encryptor = try AgeEncryptor(recipients: recipients)
        return encryptor.header + encryptor.update(plaintext) + encryptor.finish()
    }
}

/// How a file that ends without its last chunk is taken.
public enum AgeTruncation: Sendable {
    /// An error, and nothing is given out for it (a finished file).
    case refused
    /// Its complete chunks are given out and the cut is reported (an
    /// interrupted recording).
    case allowed
}

/// What a decryption found.
public struct AgeDecryption: Sendable, Equatable {
    public var plaintextBytes: Int64 = 0
    public var chunks = 0
    /// The file ended without its last chunk (cut off while being written):
    /// everything up to the cut was decrypted.
    public var truncated = false

    public init(plaintextBytes: Int64 = 0, chunks: Int = 0, truncated: Bool = false) {
        self.plaintextBytes = plaintextBytes
        self.chunks = chunks
        self.truncated = truncated
    }
}

/// Decrypts age files (X25519 identities), chunk by chunk.
public enum AgeDecryptor {
    static func nonce(_ counter: UInt64, last: Bool) -> [UInt8] {
        var nonce = [UInt8](repeating: 0, count: 12)
        for i in 0..<8 { nonce[10 - i] = UInt8(counter >> (8 * UInt64(i)) & 0xff) }
        nonce[11] = last ? 1 : 0
        return nonce
    }

    /// Whether `prefix` (a file's first bytes) starts as an age file does.
    public static func isAge(_ prefix: some Collection<UInt8>) -> Bool {
        Array(prefix.prefix(Age.intro.utf8.count + 1)) == Array((Age.intro + "\n").utf8)
    }

    /// The header's length (up to and with the payload nonce), and the
    /// payload key, found with one of `identities`.
    static func openHeader(_ read: (Int) throws -> [UInt8], identities: [AgeIdentity]) throws -> (Int, [UInt8]) {
        var headerBytes: [UInt8] = []
        func line() throws -> String {
            var bytes: [UInt8] = []
            while true {
                let b = try read(1)
                guard let byte = b.first else { throw AgeError("not an age file: its header ends early") }
                headerBytes.append(byte)
                if byte == 0x0a { break }
                bytes.append(byte)
                guard bytes.count <= 4096 else { throw AgeError("not an age file: a header line is too long") }
            }
            return String(decoding: bytes, as: UTF8.self)
        }
        guard try line() == Age.intro else { throw AgeError("not an age file (it does not begin with \(Age.intro))") }
        var stanzas: [(type: String, arguments: [Substring], body: [UInt8])] = []
        var macLine = ""
        var pending = try line()
        while true {
            if pending.hasPrefix("--- ") || pending == "---" {
                macLine = pending
                break
            }
            guard pending.hasPrefix("-> ") else { throw AgeError("not an age file: a header line is neither a stanza nor its end") }
            let words = pending.dropFirst(3).split(separator: " ", omittingEmptySubsequences: false)
            guard let type = words.first, !type.isEmpty else { throw AgeError("not an age file: a stanza without a type") }
            var body: [UInt8] = []
            while true {
                let bodyLine = try line()
                guard let chunk = Age.unbase64(Substring(bodyLine)), bodyLine.count <= 64 else {
                    throw AgeError("not an age file: a stanza's body is not base64")
                }
                body += chunk
                if bodyLine.count < 64 { break }
            }
            stanzas.append((String(type), Array(words.dropFirst()), body))
            pending = try line()
        }
        var fileKey: [UInt8]?
        let x25519 = stanzas.filter { $0.type == "X25519" }
        search: for stanza in x25519 {
            guard stanza.arguments.count == 1, let share = Age.unbase64(stanza.arguments[0]), share.count == 32,
                  stanza.body.count == 32 else { throw AgeError("not an age file: a malformed X25519 stanza") }
            for identity in identities {
                let shared = Age.x25519(identity.secret, share)
                guard shared.contains(where: { $0 != 0 }) else { continue }
                let wrapKey = Age.hkdf(salt: share + identity.recipient.publicKey, secret: shared, info: Age.x25519Label)
                if let key = stanza.body.withUnsafeBytes({ Age.open(key: wrapKey, nonce: [UInt8](repeating: 0, count: 12), $0) }) {
                    fileKey = key
                    break search
                }
            }
        }
        guard let fileKey, fileKey.count == 16 else {
            let types = Set(stanzas.map(\.type)).sorted().joined(separator: ", ")
            throw AgeError(x25519.isEmpty
                ? "no X25519 recipient in the file (its recipients: \(types.isEmpty ? "none" : types))"
                : "no identity matches: the file was encrypted to \(x25519.count) X25519 recipient\(x25519.count == 1 ? "" : "s"), none of them \(identities.map { "\($0.recipient)" }.joined(separator: ", "))")
        }
        guard macLine.hasPrefix("--- "), let mac = Age.unbase64(macLine.dropFirst(4)), mac.count == 32 else {
            throw AgeError("not an age file: the header's MAC line is malformed")
        }
        let macInput = Array(headerBytes.dropLast(macLine.utf8.count + 1)) + Array("---".utf8)
        let expected = Age.hmac(key: Age.hkdf(salt: [], secret: fileKey, info: "header"), macInput)
        guard Age.sameMAC(expected, mac) else { throw AgeError("the header's MAC is wrong: the file was altered") }
        let nonce = try read(16)
        guard nonce.count == 16 else { throw AgeError("the file ends before its payload") }
        return (headerBytes.count + 16, Age.hkdf(salt: nonce, secret: fileKey, info: "payload"))
    }

    /// Decrypts the age file at `input` into `output` (a descriptor), chunk
    /// by chunk. With `.refused`, a file cut short is an error; the caller
    /// removes what was written. A wrong identity fails before anything is
    /// written.
    public static func decrypt(file input: String, to output: Int32, identities: [AgeIdentity],
                               truncated: AgeTruncation) throws -> AgeDecryption {
        guard let handle = FileHandle(forReadingAtPath: input) else {
            throw AgeError("cannot open \(input): \(String(cString: strerror(errno)))")
        }
        defer { try? handle.close() }
        // Read a MiB at a time; what is handed out is skipped by `offset`,
        // and dropped only when more is read (once per MiB, not per chunk).
        var buffered: [UInt8] = []
        var offset = 0
        func read(_ count: Int) throws -> [UInt8] {
            while buffered.count - offset < count {
                guard let data = try handle.read(upToCount: max(count - (buffered.count - offset), 1 << 20)), !data.isEmpty else { break }
                if offset > 0 {
                    buffered.removeFirst(offset)
                    offset = 0
                }
                buffered += data
            }
            let n = min(count, buffered.count - offset)
            let out = Array(buffered[offset..<(offset + n)])
            offset += n
            return out
        }
        do {
            let (_, key) = try openHeader(read, identities: identities)
            var result = AgeDecryption()
            var counter: UInt64 = 0
            var chunk = try read(Age.sealedChunkSize)
            while true {
                // A full chunk followed by more is not the last one.
                let next = chunk.count == Age.sealedChunkSize ? try read(Age.sealedChunkSize) : []
                let last = next.isEmpty
                var plain = last ? chunk.withUnsafeBytes { Age.open(key: key, nonce: nonce(counter, last: true), $0) } : nil
                if plain == nil {
                    plain = chunk.withUnsafeBytes { Age.open(key: key, nonce: nonce(counter, last: false), $0) }
                    if plain != nil, last {
                        // A complete chunk, but not the last: the file was cut here.
                        guard truncated == .allowed else {
                            throw AgeError("\(input) is cut short: it ends after chunk \(counter + 1) without the last one (an interrupted recording?)")
                        }
                        result.truncated = true
                    }
                }
                guard let plain else {
                    if truncated == .allowed, last, chunk.count < Age.sealedChunkSize {
                        // A torn chunk at the end: everything before it is out.
                        result.truncated = true
                        return result
                    }
                    throw AgeError("\(input): chunk \(counter + 1) does not authenticate (damaged, or cut short)")
                }
                if plain.isEmpty && (counter > 0 || !last) {
                    throw AgeError("\(input): an empty chunk where there must be data")
                }
                try write(plain, to: output)
                result.plaintextBytes += Int64(plain.count)
                result.chunks += 1
                if last { return result }
                counter += 1
                chunk = next
            }
        }
    }

    /// Writes all of `bytes` to `fd` (retrying short writes).
    public static func write(_ bytes: [UInt8], to fd: Int32) throws(AgeError) {
        do throws(SystemError) {
            try Syscalls.writeAll(fd, bytes, path: "fd \(fd)")
        } catch {
            throw AgeError("\(error)")
        }
    }

    /// The length of the leading part of an age file that is whole: its
    /// header and every complete sealed chunk (what an interrupted file is
    /// cut back to). Nil when the file's header cannot be read.
    public static func completeLength(headerAndNonce: Int, fileSize: Int64) -> Int64 {
        let payload = max(0, fileSize - Int64(headerAndNonce))
        return Int64(headerAndNonce) + payload / Int64(Age.sealedChunkSize) * Int64(Age.sealedChunkSize)
    }

    /// The length of an age file's header and payload nonce (read without a
    /// key: the header's lines up to `---`, and 16 bytes). Nil when it is not
    /// an age file.
    public static func headerLength(of path: String) -> Int? {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? handle.close() }
        guard let data = try? handle.read(upToCount: 64 << 10) else { return nil }
        let bytes = [UInt8](data)
        guard isAge(bytes) else { return nil }
        var start = 0
        while start < bytes.count {
            guard let end = bytes[start...].firstIndex(of: 0x0a) else { return nil }
            if bytes[start..<end].starts(with: Array("---".utf8)) { return end + 1 + 16 }
            start = end + 1
        }
        return nil
    }
}
