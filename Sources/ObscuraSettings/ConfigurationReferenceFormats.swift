/// The configuration reference written out: for a terminal (`obscura
/// config`), as docs/configuration.md, and as the obscura.toml(5) manual
/// page (mdoc, as swift-argument-parser writes obscura(1)).
extension ConfigurationReference {
    static let intro = """
        The recorder service reads /etc/obscura/obscura.toml (or the file `obscura run --config` names). \
        Every key is optional: without it, or without the file, the default applies. \
        A key the service does not know, a value of the wrong type or out of range is an error that names \
        the file, the line and the key, and the service does not start; `obscura config --check` reads a file \
        the same way without starting anything. The package installs an example at /etc/obscura/obscura.toml.
        """

    static func keys(in table: Table) -> [Key] { keys.filter { $0.table == table.name } }

    /// For a terminal: each table, each key with its type, default, what is allowed and what it means.
    public static func text() -> String {
        var out = plain(intro) + "\n"
        for table in tables {
            out += "\n" + (table.name.isEmpty ? "(top level)" : "[\(table.name)]") + "  " + plain(table.about) + "\n"
            for k in keys(in: table) {
                out += "  \(k.key) = \(k.example)\n"
                out += "      \(plain(k.meaning))\n"
                out += "      \(k.type); default: \(plain(k.defaultValue)); allowed: \(plain(k.allowed))\n"
            }
        }
        return out
    }

    /// docs/configuration.md.
    public static func markdown() -> String {
        var out = """
            # Configuration reference

            <!-- Made by `obscura config --format markdown` from the code's own reference; \
            deploy/make-manuals writes it here. -->

            \(intro)

            """
        for table in tables {
            out += "\n## " + (table.name.isEmpty ? "The top level" : "`[\(table.name)]`") + "\n\n\(table.about)\n\n"
            for k in keys(in: table) {
                out += "- **`\(k.key)`** (\(k.type); default \(code(k.defaultValue))). \(k.meaning) Allowed: \(k.allowed). Example: `\(k.key) = \(k.example)`\n"
            }
        }
        return out
    }

    /// obscura.toml(5), dated `date` (YYYY-MM-DD).
    public static func manual(date: String) -> String {
        var out = """
            .\\" Made by `obscura config --format man` from the code's own reference.
            .Dd \(mdocDate(date))
            .Dt OBSCURA.TOML 5
            .Os
            .Sh NAME
            .Nm obscura.toml
            .Nd configuration of the Obscura kiosk recorder
            .Sh SYNOPSIS
            .Pa /etc/obscura/obscura.toml
            .Sh DESCRIPTION
            \(roff(plain(intro)))

            """
        for table in tables {
            out += ".Ss " + (table.name.isEmpty ? "The top level" : "[\(table.name)]") + "\n" + roff(plain(table.about)) + "\n.Bl -tag -width Ds\n"
            for k in keys(in: table) {
                out += ".It Sy \(k.key) No (\(k.type))\n\(roff(plain(k.meaning)))\n.br\n"
                out += roff("Default: \(plain(k.defaultValue)). Allowed: \(plain(k.allowed)). Example: \(k.key) = \(k.example)") + "\n"
            }
            out += ".El\n"
        }
        out += """
            .Sh FILES
            .Bl -tag -width Ds
            .It Pa /etc/obscura/obscura.toml
            the configuration
            .It Pa /usr/share/obscura/profiles
            the board profiles
            .El
            .Sh SEE ALSO
            .Xr obscura 1 ,
            .Xr obscura-config 1 ,
            .Xr obscura-run 1

            """
        return out
    }

    /// Markdown's code spans kept out of terminal and roff text.
    static func plain(_ s: String) -> String { s.replacing("`", with: "") }
    /// A default as code unless it is words.
    static func code(_ s: String) -> String { s.first == "\"" || s.first == "[" || s.first?.isNumber == true || s == "true" || s == "false" || s.first == "-" ? "`\(s)`" : s }
    /// Text safe in roff: backslashes escaped, no line starting with a control character.
    static func roff(_ s: String) -> String {
        s.replacing("\\", with: "\\e").split(separator: "\n", omittingEmptySubsequences: false).map { line in
            line.hasPrefix(".") || line.hasPrefix("'") ? "\\&" + line : String(line)
        }.joined(separator: "\n")
    }
    /// "2026-12-01" as mdoc writes a date: "December 1, 2026".
    static func mdocDate(_ date: String) -> String {
        let parts = date.split(separator: "-").compactMap { Int($0) }
        let months = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"]
        guard parts.count == 3, (1...12).contains(parts[1]) else { return date }
        return "\(months[parts[1] - 1]) \(parts[2]), \(parts[0])"
    }
}
