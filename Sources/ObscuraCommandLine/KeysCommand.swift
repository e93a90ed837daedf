import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ObscuraAccess
import ObscuraSystem
#if canImport(Glibc)
import Glibc
#endif

public struct KeysCommand: ParsableCommand {
    public static let configuration = CommandDescriptions.keys.with(subcommands: [Add.self, List.self, Remove.self])

    public init() {}

    public struct Location: ParsableArguments {
        public init() {}
        @Flag(help: "The live view account's keys (view only), not the retrieval account's.") var view = false
        @Option(help: "The authorized keys file (default: /etc/obscura/fetch_authorized_keys; with --view, /etc/obscura/view_authorized_keys).")
        var file: String?
        var purpose: AuthorizedKeys.Purpose { view ? .view : .fetch }
        var path: String { file ?? purpose.path }
        func load() throws(RetrievalError) -> AuthorizedKeys { try AuthorizedKeys.load(path, purpose: purpose) }
    }

    public struct Add: ParsableCommand {
        public init() {}

        public static let configuration = CommandConfiguration(abstract: "Allow a public key (a .pub file, or - for standard input).")
        @Argument(help: "A public key file, e.g. ~/.ssh/id_ed25519.pub copied from the computer that pulls; - reads standard input.")
        var key: String
        @OptionGroup var location: Location

        public func run() throws {
            do {
                let text: String
                if key == "-" {
                    text = String(decoding: try Syscalls.readToEnd(STDIN_FILENO, path: "standard input"), as: UTF8.self)
                } else {
                    guard let t = try? String(contentsOfFile: key, encoding: .utf8) else { throw RetrievalError("cannot read \(key)") }
                    text = t
                }
                var keys = try location.load()
                var added = 0
                for line in text.split(separator: "\n") where line.contains(where: { !$0.isWhitespace }) {
                    if try keys.add(String(line)) { added += 1 }
                }
                try keys.save(location.path)
                for k in keys.keys.suffix(added) { Log.output("added \(k.fingerprint) \(k.type) \(k.comment)") }
                if added == 0 { Log.note("already allowed; nothing changed") }
            } catch {
                Log.note("error: \(error)")
                throw ExitCode.failure
            }
        }
    }

    public struct List: ParsableCommand {
        public init() {}

        public static let configuration = CommandConfiguration(abstract: "List the allowed keys: number, fingerprint, type, comment.")
        @OptionGroup var location: Location
        public func run() throws {
            do {
                let keys = try location.load()
                if keys.keys.isEmpty { Log.note("no keys in \(location.path); `obscura keys add\(location.view ? " --view" : "") KEY.pub` allows one") }
                for (i, k) in keys.keys.enumerated() { Log.output("\(i + 1) \(k.fingerprint) \(k.type) \(k.comment)") }
            } catch {
                Log.note("error: \(error)")
                throw ExitCode.failure
            }
        }
    }

    public struct Remove: ParsableCommand {
        public init() {}

        public static let configuration = CommandConfiguration(abstract: "Remove keys by number, fingerprint or comment (see `obscura keys list`).")
        @Argument(help: "A number, a SHA256: fingerprint or a comment.") var which: String
        @OptionGroup var location: Location
        public func run() throws {
            do {
                var keys = try location.load()
                let gone = try keys.remove(which)
                try keys.save(location.path)
                for k in gone { Log.output("removed \(k.fingerprint) \(k.type) \(k.comment)") }
            } catch {
                Log.note("error: \(error)")
                throw ExitCode.failure
            }
        }
    }
}
