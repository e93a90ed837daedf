import Foundation

/// The TOML Obscura's configuration and board profiles use: tables
/// (`[a.b]`), `key = value` with strings ("basic" and 'literal'), integers,
/// floats, booleans and arrays of them (over several lines if need be), and
/// comments. Every value remembers its line, so errors can name file, line
/// and key.
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
    /// Tables declared, with their line.
    public private(set) var tables: [String: Int] = [:]

    public init(file: String, text: String) throws(ConfigurationError) {
        self.file = file
        var table = ""
        var lines = text.components(separatedBy: "\n")[...]
        var number = 0
        while let raw = lines.popFirst() {
            number += 1
            var line = Self.stripComment(raw).trimmingCharacters(in: .whitespaces)
            if line.isEmpty { continue }
            if line.hasPrefix("[") {
                guard line.hasSuffix("]"), !line.hasPrefix("[[") else {
                    throw ConfigurationError(file: file, line: number, key: nil, message: "a table header is written [name]")
                }
                table = String(line.dropFirst().dropLast()).trimmingCharacters(in: .whitespaces)
                guard !table.isEmpty, table.split(separator: ".").allSatisfy({ Self.isBareKey(String($0)) }) else {
                    throw ConfigurationError(file: file, line: number, key: nil, message: "\"\(table)\" is not a table name")
                }
                if tables[table] != nil {
                    throw ConfigurationError(file: file, line: number, key: table, message: "table defined twice")
                }
                tables[table] = number
                continue
            }
            guard let eq = line.firstIndex(of: "=") else {
                throw ConfigurationError(file: file, line: number, key: nil, message: "expected key = value")
            }
            let key = line[..<eq].trimmingCharacters(in: .whitespaces)
            guard Self.isBareKey(key) else {
                throw ConfigurationError(file: file, line: number, key: key, message: "keys are letters, digits, - and _")
            }
            let full = table.isEmpty ? key : table + "." + key
            var valueText = line[line.index(after: eq)...].trimmingCharacters(in: .whitespaces)
            let startLine = number
            // An array may go on over several lines.
            while valueText.hasPrefix("["), Self.depth(valueText) > 0, let next = lines.popFirst() {
                number += 1
                valueText += " " + Self.stripComment(next).trimmingCharacters(in: .whitespaces)
            }
            line = valueText
            var parser = ValueParser(text: Substring(line))
            let value: Value
            do {
                value = try parser.value()
                parser.skipSpaces()
                guard parser.atEnd else { throw ValueParser.Failure(message: "unexpected text after the value") }
            } catch let failure as ValueParser.Failure {
                throw ConfigurationError(file: file, line: startLine, key: full, message: failure.message)
            } catch {
                throw ConfigurationError(file: file, line: startLine, key: full, message: "\(error)")
            }
            if values[full] != nil {
                throw ConfigurationError(file: file, line: startLine, key: full, message: "key given twice")
            }
            values[full] = (value, startLine)
        }
    }

    public init(contentsOf path: String) throws(ConfigurationError) {
        guard let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8) else {
            throw ConfigurationError(file: path, line: nil, key: nil, message: "cannot read the file")
        }
        try self.init(file: path, text: text)
    }

    static func isBareKey(_ key: String) -> Bool {
        !key.isEmpty && key.unicodeScalars.allSatisfy { CharacterSet.alphanumerics.contains($0) || $0 == "-" || $0 == "_" }
    }

    static func stripComment(_ line: String) -> String {
        var inBasic = false, inLiteral = false, escaped = false
        for (i, c) in line.enumerated() {
            if escaped { escaped = false; continue }
            if c == "\\" && inBasic { escaped = true; continue }
            if c == "\"" && !inLiteral { inBasic.toggle() }
            if c == "'" && !inBasic { inLiteral.toggle() }
            if c == "#" && !inBasic && !inLiteral { return String(line.prefix(i)) }
        }
        return line
    }

    static func depth(_ text: String) -> Int {
        var d = 0, inString = false
        for c in text {
            if c == "\"" || c == "'" { inString.toggle() }
            if inString { continue }
            if c == "[" { d += 1 }
            if c == "]" { d -= 1 }
        }
        return d
    }

    struct ValueParser {
        struct Failure: Error { let message: String }
        var text: Substring

        var atEnd: Bool { text.isEmpty }
        mutating func skipSpaces() { text = text.drop { $0 == " " || $0 == "\t" } }

        mutating func value() throws(Failure) -> Value {
            skipSpaces()
            guard let c = text.first else { throw Failure(message: "a value is missing") }
            switch c {
            case "\"":
                text = text.dropFirst()
                var out = ""
                while let ch = text.first {
                    text = text.dropFirst()
                    if ch == "\"" { return .string(out) }
                    if ch == "\\" {
                        guard let e = text.first else { break }
                        text = text.dropFirst()
                        switch e {
                        case "n": out.append("\n")
                        case "t": out.append("\t")
                        case "\"": out.append("\"")
                        case "\\": out.append("\\")
                        default: throw Failure(message: "unknown escape \\\(e)")
                        }
                    } else {
                        out.append(ch)
                    }
                }
                throw Failure(message: "a string is not closed")
            case "'":
                text = text.dropFirst()
                guard let end = text.firstIndex(of: "'") else { throw Failure(message: "a string is not closed") }
                let s = String(text[..<end])
                text = text[text.index(after: end)...]
                return .string(s)
            case "[":
                text = text.dropFirst()
                var items: [Value] = []
                while true {
                    skipSpaces()
                    if text.first == "]" { text = text.dropFirst(); return .array(items) }
                    items.append(try value())
                    skipSpaces()
                    if text.first == "," { text = text.dropFirst(); continue }
                    if text.first == "]" { text = text.dropFirst(); return .array(items) }
                    throw Failure(message: "an array needs , between items and ] at the end")
                }
            default:
                let word = text.prefix { !" \t,]".contains($0) }
                text = text.dropFirst(word.count)
                if word == "true" { return .bool(true) }
                if word == "false" { return .bool(false) }
                let digits = word.replacingOccurrences(of: "_", with: "")
                if let i = Int(digits) { return .integer(i) }
                if let d = Double(digits), d.isFinite { return .float(d) }
                throw Failure(message: "\"\(word)\" is not a value (strings go in quotes)")
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

    /// Fails on any key that was never read (a typo, or a key from elsewhere).
    public func rejectUnknownKeys() throws(ConfigurationError) {
        for (key, entry) in document.values.sorted(by: { $0.value.line < $1.value.line }) where !used.contains(key) {
            throw ConfigurationError(file: document.file, line: entry.line, key: key, message: "unknown key")
        }
    }
}
