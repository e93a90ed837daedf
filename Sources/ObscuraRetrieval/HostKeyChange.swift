import Foundation

/// A device whose SSH host key is not the one known for it, as OpenSSH
/// reports it ("REMOTE HOST IDENTIFICATION HAS CHANGED"): a man in the
/// middle, or a device reinstalled. Read from ssh's own words, so that the
/// operator is told that, with both keys' fingerprints, rather than the
/// first line of ssh's banner.
public struct HostKeyChange: Sendable, Equatable {
    /// The fingerprint of the key the device sent (SHA256:…), when ssh gave it.
    public var sent: String?
    /// The fingerprint of the key known for it, read from known_hosts.
    public var known: String?
    /// The known_hosts file and line that hold the known key ("file:line").
    public var knownAt: String?

    /// Nil when `sshErrors` do not say the host key changed.
    public init?(sshErrors: String) {
        guard sshErrors.contains("REMOTE HOST IDENTIFICATION HAS CHANGED") else { return nil }
        // (ssh ends these lines with CR LF: one Character in Swift.)
        let lines = sshErrors.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
        if let i = lines.firstIndex(where: { $0.hasPrefix("The fingerprint for the") && $0.hasSuffix("sent by the remote host is") }),
           i + 1 < lines.count {
            sent = lines[i + 1].hasSuffix(".") ? String(lines[i + 1].dropLast()) : lines[i + 1]
        }
        if let offending = lines.first(where: { $0.hasPrefix("Offending ") && $0.contains(" key in ") }),
           let range = offending.range(of: " key in ") {
            let place = String(offending[range.upperBound...])
            knownAt = place
            known = Self.fingerprint(at: place)
        }
    }

    /// What the pull or the collector says of it for `target`.
    public func message(for target: String) -> String {
        var text = "\(target): its SSH host key has changed, so nothing was fetched from it (a man in the middle, or the device was reinstalled)"
        text += ": it sent \(sent ?? "a key ssh did not print")"
        if let known { text += ", known is \(known)" }
        if let knownAt { text += " (\(knownAt))" }
        text += ". If the change is expected, check the new key on the device (ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub) and remove the old one with ssh-keygen -R"
        return text
    }

    /// The SHA256 fingerprint (as ssh-keygen -l prints it) of the key on the
    /// line "file:line" of a known_hosts file; nil when it cannot be read.
    static func fingerprint(at place: String) -> String? {
        guard let colon = place.lastIndex(of: ":"), let number = Int(place[place.index(after: colon)...]), number > 0,
              let text = try? String(contentsOfFile: String(place[..<colon]), encoding: .utf8) else { return nil }
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        guard number <= lines.count else { return nil }
        // A known_hosts line is hosts, then a key as authorized_keys has it.
        return AuthorizedKeys.parse(lines[number - 1].replacingOccurrences(of: "\t", with: " "))?.fingerprint
    }
}
