#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ObscuraSystem
import ObscuraFiles

/// An account's authorized keys, named by its sshd drop-in: the retrieval
/// account's (/etc/obscura/fetch_authorized_keys: SFTP only, chrooted) or the
/// live view account's (/etc/obscura/view_authorized_keys: `obscura
/// view-serve` only). Every key is written with OpenSSH's `restrict` option
/// — no forwarding, no terminal, no ~/.ssh/rc — on top of the account's
/// ForceCommand.
public struct AuthorizedKeys: Sendable, Equatable {
    public static let defaultPath = Purpose.fetch.path

    /// Which account the keys open.
    public enum Purpose: Sendable, Equatable {
        case fetch, view
        public var path: String {
            switch self {
            case .fetch: "/etc/obscura/fetch_authorized_keys"
            case .view: "/etc/obscura/view_authorized_keys"
            }
        }
        var header: String {
            switch self {
            case .fetch: "# Keys allowed to fetch recordings (SFTP only, read-only, chrooted). Managed by `obscura keys`."
            case .view: "# Keys allowed to watch the live view (obscura view-serve only). Managed by `obscura keys add|list|remove --view`."
            }
        }
    }

    public var purpose = Purpose.fetch

    public struct Key: Sendable, Equatable {
        public var type: String
        /// The key blob, base64 as in the file.
        public var blob: String
        public var comment: String
        /// OpenSSH's fingerprint: "SHA256:" and the unpadded base64 of the blob's digest.
        public var fingerprint: String {
            let bytes = Data(base64Encoded: blob).map { [UInt8]($0) } ?? []
            let digest = Data(Checksum.sha256(bytes: bytes)).base64EncodedString()
            return "SHA256:" + String(digest.filter { $0 != "=" })
        }
        public var line: String { "restrict \(type) \(blob)" + (comment.isEmpty ? "" : " \(comment)") }
    }

    public private(set) var keys: [Key] = []
    /// Lines that are not keys (comments), kept as they are.
    private var header: [String] = []

    public static let keyTypes: Set<String> = [
        "ssh-ed25519", "ssh-rsa", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384", "ecdsa-sha2-nistp521",
        "sk-ssh-ed25519@openssh.com", "sk-ecdsa-sha2-nistp256@openssh.com",
    ]

    public init() {}

    /// Parses a file's text; lines that are neither keys nor comments are an error naming the line.
    public init(text: String) throws(RetrievalError) {
        for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.trimmingWhitespace
            if line.isEmpty { continue }
            if line.hasPrefix("#") { header.append(line); continue }
            guard let key = Self.parse(line) else {
                throw RetrievalError("line \(index + 1) is not a public key: \(line.prefix(60))")
            }
            keys.append(key)
        }
    }

    /// One public key line as `ssh-keygen` writes it (`type base64 [comment]`),
    /// with or without options before it.
    public static func parse(_ line: String) -> Key? {
        let words = line.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
        guard let typeIndex = words.firstIndex(where: { keyTypes.contains($0) }), typeIndex + 1 < words.count else { return nil }
        let blob = words[typeIndex + 1]
        // The blob starts with the key type itself, length-prefixed.
        guard let data = Data(base64Encoded: blob), data.count > 4 + words[typeIndex].utf8.count else { return nil }
        let bytes = [UInt8](data)
        let length = Int(bytes[0]) << 24 | Int(bytes[1]) << 16 | Int(bytes[2]) << 8 | Int(bytes[3])
        guard length == words[typeIndex].utf8.count,
              String(decoding: bytes[4..<(4 + length)], as: UTF8.self) == words[typeIndex] else { return nil }
        return Key(type: words[typeIndex], blob: blob, comment: words[(typeIndex + 2)...].joined(separator: " "))
    }

    /// Adds a key; false when it is already there.
    @discardableResult
    public mutating func add(_ line: String) throws(RetrievalError) -> Bool {
        guard let key = Self.parse(line.trimmingWhitespace) else {
            throw RetrievalError("not an SSH public key (expected a line like \"ssh-ed25519 AAAA… user@host\"; key types: \(Self.keyTypes.sorted().joined(separator: ", ")))")
        }
        if keys.contains(where: { $0.blob == key.blob }) { return false }
        keys.append(key)
        return true
    }

    /// Removes keys whose fingerprint, comment or 1-based position is `which`;
    /// returns them. None matching is an error listing what there is.
    public mutating func remove(_ which: String) throws(RetrievalError) -> [Key] {
        let matches = keys.enumerated().filter { index, key in
            key.fingerprint == which || (!key.comment.isEmpty && key.comment == which) || String(index + 1) == which
        }.map(\.element)
        guard !matches.isEmpty else {
            throw RetrievalError("no key matches \"\(which)\"; give a number, a fingerprint or a comment from `obscura keys list`")
        }
        keys.removeAll { key in matches.contains(key) }
        return matches
    }

    public var text: String {
        let top = header.isEmpty ? [purpose.header] : header
        return (top + keys.map(\.line)).joined(separator: "\n") + "\n"
    }

    public static func load(_ path: String, purpose: Purpose = .fetch) throws(RetrievalError) -> AuthorizedKeys {
        var keys = AuthorizedKeys()
        if FileManager.default.fileExists(atPath: path) {
            let text: String
            do throws(SystemError) { text = String(decoding: try Syscalls.readFile(path), as: UTF8.self) } catch {
                throw RetrievalError("cannot read \(path): \(error)")
            }
            do { keys = try AuthorizedKeys(text: text) } catch { throw RetrievalError("\(path): \(error.description)") }
        }
        keys.purpose = purpose
        return keys
    }

    /// The key whose blob `authInfo` names: sshd's ExposeAuthInfo file, whose
    /// lines read `publickey TYPE BLOB` for the key that was accepted.
    public func key(inAuthInfo authInfo: String) -> Key? {
        for line in authInfo.split(separator: "\n") {
            let words = line.split(separator: " ")
            guard words.count >= 3, words[0] == "publickey" else { continue }
            if let key = keys.first(where: { $0.blob == words[2] }) { return key }
        }
        return nil
    }

    /// Writes the file atomically (temporary file, fsync, rename), mode 0644:
    /// sshd refuses key files others can write.
    public func save(_ path: String) throws(RetrievalError) {
        do { try DurableFile.write(text.utf8, to: path, via: path + ".tmp", mode: 0o644) } catch {
            throw RetrievalError("cannot write \(path): \(error)")
        }
    }
}

/// A retrieval failure, said in one line.
public struct RetrievalError: Error, CustomStringConvertible, Sendable, Equatable {
    public let description: String
    public init(_ description: String) { self.description = description }
}
