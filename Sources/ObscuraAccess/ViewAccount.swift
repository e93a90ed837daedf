import ObscuraSystem

/// The live view account (obscura-view): sshd runs `obscura view-serve
/// --ssh-forced` for each of its keys, whatever the key asked for (its
/// ForceCommand). What the key asked for comes in SSH_ORIGINAL_COMMAND, and
/// which key it was in the file SSH_USER_AUTH names (ExposeAuthInfo).
public enum ViewAccount {
    /// Why a session that asked for `originalCommand` is refused, or nil when
    /// it asked to watch (`obscura view-serve`, as `obscura view` asks).
    public static func refusal(originalCommand: String?) -> String? {
        let asked = (originalCommand ?? "").trimmingWhitespace
        let words = asked.split(separator: " ", omittingEmptySubsequences: true)
        if words.count >= 2, words[0] == "obscura" || words[0].hasSuffix("/obscura"), words[1] == "view-serve" { return nil }
        let what = asked.isEmpty ? "a shell"
            : asked.contains("sftp") ? "SFTP (\(asked.prefix(60)))"
            : "the command \"\(asked.prefix(60))\""
        return "refused: this key may only watch the live view (`obscura view KIOSK`); it asked for \(what)"
    }

    /// Who watches, for the journal: the comment of the key sshd accepted
    /// (its fingerprint when it has none), found by the key in `authInfo`.
    public static func viewerName(authInfo: String?, keys: AuthorizedKeys) -> String {
        guard let authInfo else { return "(a view key sshd did not name)" }
        guard let key = keys.key(inAuthInfo: authInfo) else { return "(a view key not in \(keys.purpose.path))" }
        return key.comment.isEmpty ? key.fingerprint : key.comment
    }
}
