import Foundation
import Testing
import TestSupport

/// Rules the sources keep: every system call through `Syscalls` (EINTR
/// retried, errors naming the call), and functions short enough to read.
@Suite struct SourceRulesTests {
    /// Every Swift file under Sources, as (path relative to the package, lines).
    static func sources() throws -> [(String, [String])] {
        let root = packageRoot + "/Sources"
        let files = FileManager.default.enumerator(atPath: root)?.compactMap { $0 as? String }.filter { $0.hasSuffix(".swift") } ?? []
        return try files.sorted().map { file in
            ("Sources/" + file, try String(contentsOfFile: root + "/" + file, encoding: .utf8).components(separatedBy: "\n"))
        }
    }

    /// The line without its string literals and its comment.
    static func code(_ line: String) -> String {
        let noStrings = line.replacingOccurrences(of: #""(?:\\.|[^"\\])*""#, with: "\"\"", options: .regularExpression)
        return noStrings.components(separatedBy: "//").first ?? ""
    }

    @Test func systemCallsGoThroughTheDoor() throws {
        // A call of the C function itself: not a method (`x.close()`), not
        // one of Syscalls' own (`Syscalls.read(`), not a Swift function of
        // the same name being declared or called with a label.
        let raw = try NSRegularExpression(pattern: #"(?<![.\w])(write|read|pread|pwrite|poll|close|socket|recv|send|sendto|connect|bind|listen|fsync|fdatasync)\((?!\s*\))(?![a-z]+:)"#)
        var found: [String] = []
        for (path, lines) in try Self.sources() where path != "Sources/ObscuraSystem/Syscalls.swift" {
            for (n, line) in lines.enumerated() {
                let code = Self.code(line)
                guard !code.contains("func "), !code.contains("try write("), !code.contains("try read(") else { continue }
                if raw.firstMatch(in: code, range: NSRange(code.startIndex..., in: code)) != nil {
                    found.append("\(path):\(n + 1): \(line.trimmingCharacters(in: .whitespaces))")
                }
            }
        }
        #expect(found.isEmpty, "system calls outside Syscalls:\n\(found.joined(separator: "\n"))")
    }

    /// The service and the capture session decide on time (rounds, give-ups,
    /// retries, stalls): they read and wait on their injected `WaitingClock`,
    /// never the system's clock itself.
    @Test func logicThatWaitsTakesItsClock() throws {
        let direct = try NSRegularExpression(pattern: #"ContinuousClock\.now|ContinuousClock\(\)|Task\.sleep|monotonicNanoseconds\(|DispatchTime\.now|\.asyncAfter\(|\(at: \.now\)"#)
        let rooms = ["Sources/ObscuraService/", "Sources/ObscuraCapture/CaptureSession.swift"]
        // The control socket's I/O deadlines bound a peer's reads and writes,
        // and a file's boot-relative name is the moment it is named: neither
        // decides anything about the recorder.
        let exempt = ["Sources/ObscuraService/ControlSocket.swift", "Sources/ObscuraService/FileNames.swift"]
        var found: [String] = []
        for (path, lines) in try Self.sources() where rooms.contains(where: path.hasPrefix) && !exempt.contains(path) {
            for (n, line) in lines.enumerated() {
                let code = Self.code(line)
                if direct.firstMatch(in: code, range: NSRange(code.startIndex..., in: code)) != nil {
                    found.append("\(path):\(n + 1): \(line.trimmingCharacters(in: .whitespaces))")
                }
            }
        }
        #expect(found.isEmpty, "the system's clock read or waited on directly:\n\(found.joined(separator: "\n"))")
    }

    /// No function longer than 80 lines, unless a comment just above it
    /// says why ("longer than 80 lines: …").
    @Test func functionsAreShortOrSayWhyNot() throws {
        let declaration = try NSRegularExpression(pattern: #"^\s*(@\w+\s+)*((public|private|fileprivate|internal|static|class|mutating|nonisolated|override|final|convenience|required)\s+)*(func\s|init[?!]?[(<]|deinit\b)"#)
        var long: [String] = []
        for (path, lines) in try Self.sources() {
            for (start, line) in lines.enumerated()
            where declaration.firstMatch(in: line, range: NSRange(line.startIndex..., in: line)) != nil {
                var depth = 0, opened = false, end = start
                scan: while end < lines.count {
                    for c in Self.code(lines[end]) {
                        if c == "{" { depth += 1; opened = true }
                        if c == "}" { depth -= 1 }
                        if opened && depth == 0 { break scan }
                    }
                    if !opened && end > start + 15 { break }  // a requirement without a body
                    end += 1
                }
                let length = end - start + 1
                let reason = lines[max(0, start - 4)..<start].contains { $0.contains("longer than 80 lines:") }
                if opened, length > 80, !reason { long.append("\(path):\(start + 1): \(length) lines") }
            }
        }
        #expect(long.isEmpty, "functions over 80 lines without a reason:\n\(long.joined(separator: "\n"))")
    }
}
