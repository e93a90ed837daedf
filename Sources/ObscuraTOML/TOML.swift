import ObscuraSystem
import CTOML
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A TOML document as Obscura's configuration and board profiles read it,
/// parsed by toml++ (the whole of TOML 1.0). Tables — headers, dotted keys
/// and inline tables alike — flatten to dotted keys ("gpio.buttons.record"),
/// each value with its line, so errors can name file, line and key. Valid
/// TOML of a kind no setting takes (dates and times, arrays of tables,
/// tables inside arrays) is refused, naming the key, never misread.
public struct TOMLDocument: Sendable {
    public enum Value: Sendable, Equatable {
        case string(String)
        case integer(Int)
        case float(Double)
        case bool(Bool)
        case array([Value])

        var typeName: String {
            switch self {
            case .string: "a string"
            case .integer: "an integer"
            case .float: "a number"
            case .bool: "true or false"
            case .array: "an array"
            }
        }
    }

    public let file: String
    /// Values by dotted key ("gpio.buttons.record"), with their line.
    public private(set) var values: [String: (value: Value, line: Int)] = [:]
    /// Tables, with their line.
    public private(set) var tables: [String: Int] = [:]

    /// The toml++ version the parser was built with, e.g. "3.3.0".
    public static var parserVersion: String {
        let v = Int(ot_version())
        return "\(v / 10000).\(v / 100 % 100).\(v % 100)"
    }

    public init(file: String, text: String) throws(ConfigurationError) {
        try self.init(file: file, bytes: Array(text.utf8))
    }

    public init(file: String, bytes: [UInt8]) throws(ConfigurationError) {
        self.file = file
        let builder = Builder()
        var message = [CChar](repeating: 0, count: 512)
        var line: Int32 = 0, column: Int32 = 0
        let terminated = bytes.map { CChar(bitPattern: $0) } + [0]  // never empty, so never without a base
        let status = withExtendedLifetime(builder) {
            ot_parse(terminated, bytes.count, { context, event in
                guard let context, let event else { return }
                Unmanaged<Builder>.fromOpaque(context).takeUnretainedValue().take(event.pointee)
            }, Unmanaged.passUnretained(builder).toOpaque(), &message, message.count, &line, &column)
        }
        if status != 0 {
            let text = message.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
            throw Self.parseError(file: file, bytes: bytes, line: Int(line), column: Int(column), message: text)
        }
        if let (key, line, what) = builder.unsupported {
            throw ConfigurationError(file: file, line: line, key: key,
                                     message: "is \(what); no setting takes one (allowed: strings, numbers, true/false, arrays of them, tables)")
        }
        values = builder.values
        tables = builder.tables
    }

    /// toml++'s error, with the key of the line it is on when that line is
    /// `key = value` (and the table it is in), and a hint for the commonest
    /// mistake: a word without quotes.
    static func parseError(file: String, bytes: [UInt8], line: Int, column: Int, message: String) -> ConfigurationError {
        let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
        guard line > 0, line <= lines.count else {
            return ConfigurationError(file: file, line: line > 0 ? line : nil, key: nil, message: "not valid TOML: \(message)")
        }
        func stripped(_ s: Substring) -> String {
            let blank: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\r" }
            return String(s.drop(while: blank).reversed().drop(while: blank).reversed())
        }
        let text = stripped(lines[line - 1])
        var key: String?, hint: String?
        if let eq = text.firstIndex(of: "="), !text.hasPrefix("[") {
            let name = stripped(text[..<eq])
            if !name.isEmpty, name.allSatisfy({ $0.isLetter || $0.isNumber || "_-.".contains($0) }) {
                let table = lines[..<(line - 1)].reversed().lazy.map(stripped).first { $0.hasPrefix("[") && !$0.hasPrefix("[[") }
                    .map { stripped($0.dropFirst().prefix { $0 != "]" }) }
                key = table.map { $0.isEmpty ? name : $0 + "." + name } ?? name
                var value = stripped(text[text.index(after: eq)...])
                if let hash = value.firstIndex(of: "#") { value = stripped(value[..<hash]) }
                if let first = value.first, first.isLetter, value.allSatisfy({ $0.isLetter || $0.isNumber || "_-".contains($0) }),
                   !["true", "false", "inf", "nan"].contains(value) {
                    hint = "\"\(value)\" is not a value (strings go in quotes)"
                }
            }
        }
        return ConfigurationError(file: file, line: line, key: key,
                                  message: hint ?? "not valid TOML: \(message)\(column > 0 ? " (column \(column))" : "")")
    }

    public init(contentsOf path: String) throws(ConfigurationError) {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ConfigurationError(file: path, line: nil, key: nil, message: "cannot read the file")
        }
        try self.init(file: path, bytes: Array(data))
    }

    /// Collects the parser's events: values (arrays built on a stack) and tables.
    private final class Builder {
        var values: [String: (value: Value, line: Int)] = [:]
        var tables: [String: Int] = [:]
        var unsupported: (key: String, line: Int, what: String)?
        private var arrays: [(key: String, line: Int, items: [Value])] = []

        func take(_ event: ot_event) {
            let key = event.key.map { String(cString: $0) } ?? ""
            let line = Int(event.line)
            let value: Value
            switch event.kind {
            case Int32(OT_TABLE.rawValue):
                tables[key] = line
                return
            case Int32(OT_ARRAY_BEGIN.rawValue):
                arrays.append((key, line, []))
                return
            case Int32(OT_ARRAY_END.rawValue):
                guard let done = arrays.popLast() else { return }
                value = .array(done.items)
            case Int32(OT_STRING.rawValue):
                let bytes = UnsafeRawBufferPointer(start: event.string, count: event.string_length)
                value = .string(String(decoding: bytes, as: UTF8.self))
            case Int32(OT_INTEGER.rawValue):
                value = .integer(Int(event.integer))
            case Int32(OT_FLOAT.rawValue):
                value = .float(event.number)
            case Int32(OT_BOOL.rawValue):
                value = .bool(event.boolean != 0)
            default:
                if unsupported == nil {
                    let what = UnsafeRawBufferPointer(start: event.string, count: event.string_length)
                    unsupported = (key, line, String(decoding: what, as: UTF8.self))
                }
                return
            }
            if arrays.isEmpty {
                values[key] = (value, line)
            } else {
                arrays[arrays.count - 1].items.append(value)
            }
        }
    }
}

/// A configuration or profile error, naming file, line and key.
public struct ConfigurationError: Error, CustomStringConvertible, Equatable {
    public let file: String
    public let line: Int?
    public let key: String?
    public let message: String

    public init(file: String, line: Int?, key: String?, message: String) {
        self.file = file
        self.line = line
        self.key = key
        self.message = message
    }

    public var description: String {
        var where_ = file
        if let line { where_ += ":\(line)" }
        if let key { where_ += ": \(key)" }
        return "\(where_): \(message)"
    }
}

/// Typed reading of a document, recording which keys were used, so that
/// unknown keys (typos) are errors too.
public final class TOMLReader {
    public let document: TOMLDocument
    private var used: Set<String> = []

    public init(_ document: TOMLDocument) { self.document = document }

    /// Every key read so far, present or not: after a configuration is read,
    /// every key it knows.
    public var keysRead: Set<String> { used }

    private func error(_ key: String, _ message: String) -> ConfigurationError {
        ConfigurationError(file: document.file, line: document.values[key]?.line ?? document.tables[key], key: key, message: message)
    }

    private func raw(_ key: String) -> TOMLDocument.Value? {
        used.insert(key)
        return document.values[key]?.value
    }

    public func string(_ key: String, allowed: [String]? = nil) throws(ConfigurationError) -> String? {
        guard let v = raw(key) else { return nil }
        guard case .string(let s) = v else { throw error(key, "must be a string, not \(v.typeName)") }
        if let allowed, !allowed.contains(s) {
            throw error(key, "\"\(s)\" is not allowed; allowed: \(allowed.joined(separator: ", "))")
        }
        return s
    }

    public func int(_ key: String, range: ClosedRange<Int>? = nil) throws(ConfigurationError) -> Int? {
        guard let v = raw(key) else { return nil }
        guard case .integer(let i) = v else { throw error(key, "must be an integer, not \(v.typeName)") }
        if let range, !range.contains(i) { throw error(key, "\(i) is out of range; allowed: \(range.lowerBound)…\(range.upperBound)") }
        return i
    }

    public func double(_ key: String, range: ClosedRange<Double>? = nil) throws(ConfigurationError) -> Double? {
        guard let v = raw(key) else { return nil }
        let d: Double
        switch v {
        case .integer(let i): d = Double(i)
        case .float(let f): d = f
        default: throw error(key, "must be a number, not \(v.typeName)")
        }
        if let range, !range.contains(d) { throw error(key, "\(d) is out of range; allowed: \(range.lowerBound)…\(range.upperBound)") }
        return d
    }

    /// An integer within `limit` (the table the command line shares).
    public func int(_ key: String, _ limit: Limit<Int>) throws(ConfigurationError) -> Int? {
        guard let i = try int(key) else { return nil }
        guard limit.range.contains(i) else { throw error(key, "\(i) is not allowed; allowed: \(limit.allowed)") }
        return i
    }

    /// A finite number within `limit`; an integer is taken as one.
    public func double(_ key: String, _ limit: Limit<Double>) throws(ConfigurationError) -> Double? {
        guard let d = try double(key) else { return nil }
        guard d.isFinite, limit.range.contains(d) else { throw error(key, "\(d) is not allowed; allowed: \(limit.allowed)") }
        return d
    }

    public func bool(_ key: String) throws(ConfigurationError) -> Bool? {
        guard let v = raw(key) else { return nil }
        guard case .bool(let b) = v else { throw error(key, "must be true or false, not \(v.typeName)") }
        return b
    }

    public func strings(_ key: String, allowed: [String]? = nil) throws(ConfigurationError) -> [String]? {
        guard let v = raw(key) else { return nil }
        guard case .array(let items) = v else { throw error(key, "must be an array of strings, not \(v.typeName)") }
        var out: [String] = []
        for item in items {
            guard case .string(let s) = item else { throw error(key, "must be an array of strings") }
            if let allowed, !allowed.contains(s) {
                throw error(key, "\"\(s)\" is not allowed; allowed: \(allowed.joined(separator: ", "))")
            }
            out.append(s)
        }
        return out
    }

    /// A required value.
    public func require<T>(_ key: String, _ read: (String) throws(ConfigurationError) -> T?) throws(ConfigurationError) -> T {
        guard let v = try read(key) else {
            throw ConfigurationError(file: document.file, line: nil, key: key, message: "is required")
        }
        return v
    }

    /// Fails on any key that was never read (a typo, or a key from
    /// elsewhere), and on a table none of whose keys is a setting.
    public func rejectUnknownKeys() throws(ConfigurationError) {
        for (key, entry) in document.values.sorted(by: { $0.value.line < $1.value.line }) where !used.contains(key) {
            throw ConfigurationError(file: document.file, line: entry.line, key: key, message: "unknown key")
        }
        for (table, line) in document.tables.sorted(by: { $0.value < $1.value })
        where !used.contains(where: { $0.hasPrefix(table + ".") }) {
            throw ConfigurationError(file: document.file, line: line, key: table, message: "unknown table")
        }
    }
}
