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

    /// The C library's file, descriptor, socket, process and environment
    /// calls: outside ObscuraSystem each goes through `Syscalls` (EINTR
    /// retried, errno named), or is listed in `doorExemptions` with why.
    static let doorCalls = """
        open openat creat close read write pread pwrite readv writev lseek fsync fdatasync sync syncfs ftruncate truncate
        fallocate posix_fallocate stat fstat lstat fstatat statvfs fstatvfs statfs fstatfs access faccessat flock fcntl
        ioctl mmap munmap mprotect msync dup dup2 dup3 pipe pipe2 unlink unlinkat rename renameat renameat2 link linkat
        symlink readlink mkdir mkdirat mkdtemp mkstemp mkfifo mknod rmdir chmod fchmod chown fchown lchown umask utimes
        futimens opendir readdir closedir realpath socket socketpair bind listen accept accept4 connect send sendto
        sendmsg recv recvfrom recvmsg shutdown setsockopt getsockopt poll ppoll select epoll_create1 epoll_ctl
        epoll_wait eventfd timerfd_create timerfd_settime memfd_create fork vfork execv execve execvp posix_spawn
        waitpid kill raise setenv unsetenv putenv clock_gettime clock_nanosleep nanosleep getgrnam getgrgid getpwnam
        getpwuid sched_setscheduler prctl
        """.split(whereSeparator: \.isWhitespace).map(String.init)

    /// Calls of those names that stay where they are, and why.
    /// (None today: a call added here names its file and says why.)
    static let doorExemptions: [(file: String, call: String, why: String)] = []

    @Test func systemCallsGoThroughTheDoor() throws {
        // A call of the C function itself: not a method (`x.close()`), not
        // one of Syscalls' own (`Syscalls.read(`), not a Swift function of
        // the same name being declared, called with a label, or with `try`
        // (no C call throws).
        let raw = try NSRegularExpression(pattern: #"(?<![.\w])("# + Self.doorCalls.joined(separator: "|") + #")\((?!\s*\))(?![a-z]+:)"#)
        var found: [String] = []
        for (path, lines) in try Self.sources() where !path.hasPrefix("Sources/ObscuraSystem/") {
            for (n, line) in lines.enumerated() {
                let code = Self.code(line)
                guard !code.contains("func ") else { continue }
                for match in raw.matches(in: code, range: NSRange(code.startIndex..., in: code)) {
                    let call = (code as NSString).substring(with: match.range(at: 1))
                    let before = (code as NSString).substring(to: match.range.location)
                    if before.hasSuffix("try ") || before.hasSuffix("try? ") { continue }
                    if Self.doorExemptions.contains(where: { $0.file == path && $0.call == call }) { continue }
                    found.append("\(path):\(n + 1): \(call): \(line.trimmingCharacters(in: .whitespaces))")
                }
            }
        }
        #expect(found.isEmpty, "system calls outside Syscalls:\n\(found.joined(separator: "\n"))")
    }

    /// No C code of the program runs as it loads: the Swift runtime of a
    /// static build finds argv by walking back from `environ` at load, and a
    /// load-time constructor that set the environment (setenv moves
    /// `environ` to the heap) left the arm64 program without its arguments:
    /// every subcommand printed the overview. What must happen before any
    /// thread happens at the top of the program's main.
    @Test func noCodeRunsAsTheProgramLoads() throws {
        let root = packageRoot + "/Sources"
        let files = FileManager.default.enumerator(atPath: root)?.compactMap { $0 as? String }
            .filter { [".c", ".cpp", ".h"].contains(where: $0.hasSuffix) } ?? []
        var found: [String] = []
        for file in files.sorted() {
            let text = try String(contentsOfFile: root + "/" + file, encoding: .utf8)
            for (n, line) in text.components(separatedBy: "\n").enumerated()
            where line.contains("__attribute__((constructor") || line.contains(".init_array") {
                found.append("Sources/\(file):\(n + 1): \(line.trimmingCharacters(in: .whitespaces))")
            }
        }
        #expect(!files.isEmpty)
        #expect(found.isEmpty, "code run as the program loads:\n\(found.joined(separator: "\n"))")
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
        let exempt = ["Sources/ObscuraService/Control/ControlSocket.swift", "Sources/ObscuraService/Recording/FileNames.swift"]
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
