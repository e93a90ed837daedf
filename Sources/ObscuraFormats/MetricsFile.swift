import Foundation
import ObscuraFiles
import ObscuraSystem
#if canImport(Glibc)
import Glibc
#endif

/// Prometheus' text exposition format (version 0.0.4), as node_exporter's
/// textfile collector reads it: `# HELP`, `# TYPE`, then samples.
///
/// Written here rather than with swift-prometheus: its 2.x manifest needs
/// Swift tools 6.2, and Debian 13's Swift (6.0.3) builds Obscura's package.
/// What is needed is the format's three escapes and its number spelling.
public struct MetricsText: Sendable {
    public enum Kind: String, Sendable { case gauge, counter }
    /// Labels every sample added from now on carries first (a kiosk's
    /// `camera="door"`).
    public var labels: [(String, String)] = []
    /// The families in the order first added: a family added again (for
    /// another camera) gets its samples under its one HELP and TYPE.
    private var families: [(name: String, header: String, samples: String)] = []
    private var index: [String: Int] = [:]

    public init() {}

    public var text: String { families.map { $0.header + $0.samples }.joined() }

    /// A metric family: its help, type and samples (labels, value). A family
    /// with no samples is left out.
    public mutating func add(_ name: String, _ kind: Kind, _ help: String, _ samples: [([(String, String)], Double)]) {
        guard !samples.isEmpty else { return }
        var lines = ""
        for (own, value) in samples {
            let all = labels + own
            let l = all.isEmpty ? "" : "{" + all.map { "\($0.0)=\"\(Self.escapeLabel($0.1))\"" }.joined(separator: ",") + "}"
            lines += "\(name)\(l) \(Self.number(value))\n"
        }
        if let i = index[name] {
            families[i].samples += lines
        } else {
            index[name] = families.count
            families.append((name, "# HELP \(name) \(Self.escapeHelp(help))\n# TYPE \(name) \(kind.rawValue)\n", lines))
        }
    }

    public mutating func add(_ name: String, _ kind: Kind, _ help: String, _ value: Double) {
        add(name, kind, help, [([], value)])
    }

    static func escapeLabel(_ s: String) -> String {
        var out = ""
        for c in s {
            switch c {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            default: out.append(c)
            }
        }
        return out
    }

    static func escapeHelp(_ s: String) -> String {
        s.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\n", with: "\\n")
    }

    static func number(_ v: Double) -> String {
        if v.isNaN { return "NaN" }
        if v.isInfinite { return v > 0 ? "+Inf" : "-Inf" }
        if v == v.rounded(), abs(v) < 1e15 { return String(Int64(v)) }
        return String(v)
    }
}

/// Writes the metrics file for node_exporter's textfile collector: the whole
/// file replaced at once (a temporary beside it, renamed), readable by all.
public struct MetricsFile: Sendable {
    public let path: String

    public init(path: String) { self.path = path }

    public func write(_ text: String) throws(SystemError) {
        let folder = (path as NSString).deletingLastPathComponent
        let temporary = folder + "/." + (path as NSString).lastPathComponent + ".\(getpid())"
        try DurableFile.write(Array(text.utf8), to: path, via: temporary, mode: 0o644, sync: false)
    }

    /// Why the file cannot be written there, or nil when it can.
    public func problem() -> String? {
        let folder = (path as NSString).deletingLastPathComponent
        do {
            guard try Syscalls.status(folder).st_mode & S_IFMT == S_IFDIR else { return "\(folder) is not a folder" }
        } catch {
            return "\(folder) does not exist (\(error))"
        }
        do { try Syscalls.checkAccess(folder, W_OK) } catch { return "\(folder) is not writable by this process (\(error))" }
        return nil
    }
}
