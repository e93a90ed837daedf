// The part of swift-log's API that Obscura uses, for compilers that cannot
// read swift-log's manifest (swift-log 1.16 declares tools version 6.2;
// Debian 13's swiftlang is 6.0.3). Package.swift builds this module, named
// Logging like swift-log's, only there; every newer compiler gets swift-log
// itself. Same names and meaning, so the sources do not change.

/// A logger: a label and the handler its messages go to.
public struct Logger: Sendable {
    public let label: String
    public var handler: any LogHandler

    public init(label: String, factory: (String) -> any LogHandler) {
        self.label = label
        self.handler = factory(label)
    }

    public var logLevel: Level {
        get { handler.logLevel }
        set { handler.logLevel = newValue }
    }

    public subscript(metadataKey key: String) -> Metadata.Value? {
        get { handler[metadataKey: key] }
        set { handler[metadataKey: key] = newValue }
    }

    public func log(level: Level, _ message: @autoclosure () -> Message, metadata: @autoclosure () -> Metadata? = nil,
                    source: @autoclosure () -> String? = nil,
                    file: String = #fileID, function: String = #function, line: UInt = #line) {
        guard level >= handler.logLevel else { return }
        handler.log(level: level, message: message(), metadata: metadata(),
                    source: source() ?? Self.module(of: file), file: file, function: function, line: line)
    }

    public func debug(_ message: @autoclosure () -> Message, metadata: @autoclosure () -> Metadata? = nil,
                      file: String = #fileID, function: String = #function, line: UInt = #line) {
        log(level: .debug, message(), metadata: metadata(), file: file, function: function, line: line)
    }
    public func info(_ message: @autoclosure () -> Message, metadata: @autoclosure () -> Metadata? = nil,
                     file: String = #fileID, function: String = #function, line: UInt = #line) {
        log(level: .info, message(), metadata: metadata(), file: file, function: function, line: line)
    }
    public func notice(_ message: @autoclosure () -> Message, metadata: @autoclosure () -> Metadata? = nil,
                       file: String = #fileID, function: String = #function, line: UInt = #line) {
        log(level: .notice, message(), metadata: metadata(), file: file, function: function, line: line)
    }
    public func warning(_ message: @autoclosure () -> Message, metadata: @autoclosure () -> Metadata? = nil,
                        file: String = #fileID, function: String = #function, line: UInt = #line) {
        log(level: .warning, message(), metadata: metadata(), file: file, function: function, line: line)
    }
    public func error(_ message: @autoclosure () -> Message, metadata: @autoclosure () -> Metadata? = nil,
                      file: String = #fileID, function: String = #function, line: UInt = #line) {
        log(level: .error, message(), metadata: metadata(), file: file, function: function, line: line)
    }

    static func module(of fileID: String) -> String {
        fileID.split(separator: "/", maxSplits: 1).first.map(String.init) ?? "n/a"
    }
}

extension Logger {
    public enum Level: String, Sendable, CaseIterable, Comparable, Codable {
        case trace, debug, info, notice, warning, error, critical

        private var rank: Int { Self.allCases.firstIndex(of: self)! }
        public static func < (a: Level, b: Level) -> Bool { a.rank < b.rank }
    }

    public typealias Metadata = [String: MetadataValue]

    public enum MetadataValue: Sendable, Equatable, CustomStringConvertible, ExpressibleByStringLiteral,
                               ExpressibleByStringInterpolation {
        case string(String)
        case stringConvertible(any CustomStringConvertible & Sendable)
        case dictionary(Metadata)
        case array([MetadataValue])

        public init(stringLiteral value: String) { self = .string(value) }

        public var description: String {
            switch self {
            case .string(let s): s
            case .stringConvertible(let c): c.description
            case .dictionary(let d): d.mapValues(\.description).description
            case .array(let a): a.map(\.description).description
            }
        }

        public static func == (a: MetadataValue, b: MetadataValue) -> Bool { a.description == b.description }
    }

    public struct Message: Sendable, Equatable, CustomStringConvertible, ExpressibleByStringLiteral,
                           ExpressibleByStringInterpolation {
        public let description: String
        public init(stringLiteral value: String) { description = value }
    }
}

/// Where a logger's messages go.
public protocol LogHandler: Sendable {
    var logLevel: Logger.Level { get set }
    var metadata: Logger.Metadata { get set }
    subscript(metadataKey key: String) -> Logger.Metadata.Value? { get set }
    func log(level: Logger.Level, message: Logger.Message, metadata: Logger.Metadata?,
             source: String, file: String, function: String, line: UInt)
}
