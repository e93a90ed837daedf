import Foundation
import ObscuraSystem
import Logging
#if canImport(Glibc)
import Glibc
#endif

/// swift-log's lines on standard error, one per message, as `obscura: text`.
/// When standard error is the systemd journal (JOURNAL_STREAM names it),
/// each line starts with its syslog priority (`<3>` error … `<7>` debug),
/// which journald takes as the entry's priority and strips: `journalctl -p
/// warning -u obscura` then shows what went wrong and nothing else.
public struct JournalLogHandler: LogHandler {
    public var logLevel: Logger.Level = .info
    public var metadata: Logger.Metadata = [:]
    private let prefix: String
    private let toJournal: Bool
    private let write: @Sendable (String) -> Void

    /// `write` receives each finished line (tests capture them); standard
    /// error by default. `toJournal` nil: standard error is checked against
    /// JOURNAL_STREAM.
    public init(prefix: String = "obscura", toJournal: Bool? = nil,
                write: @escaping @Sendable (String) -> Void = { try? Syscalls.writeAll(STDERR_FILENO, Array($0.utf8), path: "standard error") }) {
        self.prefix = prefix
        self.toJournal = toJournal ?? Self.standardErrorIsJournal()
        self.write = write
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    /// The syslog priority journald files a level under.
    public static func priority(_ level: Logger.Level) -> Int {
        switch level {
        case .critical: 2
        case .error: 3
        case .warning: 4
        case .notice: 5
        case .info: 6
        case .debug, .trace: 7
        }
    }

    #if compiler(>=6.2)
    /// swift-log 1.16's entry point (Package.swift takes swift-log from 1.16.2 with these compilers).
    public func log(event: LogEvent) {
        emit(level: event.level, message: event.message, metadata: event.metadata)
    }
    #endif

    /// swift-log's entry point before 1.16 (and the stand-in module's).
    public func log(level: Logger.Level, message: Logger.Message, metadata extra: Logger.Metadata?,
                    source: String, file: String, function: String, line: UInt) {
        emit(level: level, message: message, metadata: extra)
    }

    private func emit(level: Logger.Level, message: Logger.Message, metadata extra: Logger.Metadata?) {
        var fields = metadata
        if let extra { fields.merge(extra) { $1 } }
        var text = "\(prefix): \(message)"
        if !fields.isEmpty {
            text += " " + fields.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        }
        // One entry per line: a message with line breaks stays one entry.
        text = text.replacingOccurrences(of: "\n", with: " ")
        self.write((toJournal ? "<\(Self.priority(level))>" : "") + text + "\n")
    }

    /// Whether standard error is the stream systemd connected to the
    /// journal: JOURNAL_STREAM is "device:inode" of that stream.
    public static func standardErrorIsJournal() -> Bool {
        guard let value = ProcessInfo.processInfo.environment["JOURNAL_STREAM"] else { return false }
        let parts = value.split(separator: ":")
        guard parts.count == 2, let device = UInt64(parts[0]), let inode = UInt64(parts[1]),
              let st = try? Syscalls.status(STDERR_FILENO, path: "standard error") else { return false }
        return UInt64(st.st_dev) == device && UInt64(st.st_ino) == inode
    }
}
