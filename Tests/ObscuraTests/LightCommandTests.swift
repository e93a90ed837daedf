import Foundation
import Testing
import TestSupport
import ObscuraCommandLine
import ObscuraControl
import ObscuraSystem

/// The owner's `obscura` is light where a kiosk needs it: what only talks to
/// the service or reads a configuration, the doctor's checks that need no
/// camera, `--version` and `--help` run in the front, whose process loads
/// neither FFmpeg nor libcamera nor ICU; the rest runs in the engine.
@Suite struct LightCommandTests {
    /// Libraries a light command must not load: FFmpeg's, libcamera, and
    /// ICU (Foundation's own, lib_FoundationICU, or Debian's libicu).
    static let heavy = ["libavcodec", "libavformat", "libavutil", "libswscale", "libcamera", "icu",
                        "libFoundation.so", "libFoundationInternationalization"]

    /// What `obscura arguments` ran with: every library the dynamic loader
    /// opened in its process (LD_DEBUG=files, through the engine's exec
    /// too, which keeps the process), the libraries of the programs it
    /// started (the doctor's engine, ffprobe), and the result.
    static func run(_ arguments: [String]) throws -> (libraries: [String], children: [String], result: ProcessResult) {
        let result = try runProgram(builtObscura, arguments, environment: ["LD_DEBUG": "files"])
        var first: Substring?
        var libraries: [String] = [], children: [String] = []
        for line in result.stderr.split(separator: "\n") {
            guard let start = line.range(of: "\tfile=") ?? line.range(of: " file=") else { continue }
            let pid = line.prefix { $0 != ":" }.drop { $0 == " " }
            first = first ?? pid
            let library = String(line[start.upperBound...].prefix { $0 != " " && $0 != ";" })
            if pid == first { libraries.append(library) } else { children.append(library) }
        }
        return (libraries, children, result)
    }

    static func heavyAmong(_ libraries: [String]) -> [String] {
        libraries.filter { library in heavy.contains { library.lowercased().contains($0.lowercased()) } }
    }

    @Test func theLightCommandsLoadNoFFmpegLibcameraOrICU() throws {
        let dir = try scratchForBuiltObscura("obscura-light")
        let service = try PatternService(in: dir.path)
        defer { if service.process.isRunning { service.process.terminate() } }
        try #require(waitUntilBlocking(within: .seconds(60), every: .milliseconds(20)) { (try? ControlClient.send("status", to: service.socket)) != nil },
                     "the service never answered at \(service.socket)")
        let socket = ["--socket", service.socket]
        let key = dir.path + "/desk.pub", keys = ["--file", dir.path + "/keys"]
        try (RetrievalTests.key + "\n").write(toFile: key, atomically: true, encoding: .utf8)
        for arguments in [["status"] + socket, ["status", "--json"] + socket, ["ctl"] + socket + ["flash", "on"],
                          ["keys", "add", key] + keys, ["keys", "list"] + keys, ["keys", "remove", "puller@desk"] + keys,
                          ["config", "--check", dir.path + "/obscura.toml"], ["config"],
                          ["--version"], ["--help"], ["help", "status"], ["status", "--help"]] {
            let (libraries, _, result) = try Self.run(arguments)
            #expect(result.status == 0, "obscura \(arguments.joined(separator: " ")): \(result.stderr.suffix(400))")
            #expect(!libraries.isEmpty, "LD_DEBUG=files named no library: \(result.stderr.prefix(400))")
            #expect(Self.heavyAmong(libraries).isEmpty, "obscura \(arguments.joined(separator: " ")) loaded \(Self.heavyAmong(libraries))")
        }
        // view-serve, as sshd starts it for a viewer: to the service's live
        // socket it passes the stream on until the viewer goes; to none it says so.
        let (viewLibraries, _, view) = try Self.run(["view-serve", "--socket", dir.path + "/absent.sock"])
        #expect(view.status == 1 && view.stderr.contains("live view is not reachable"), "\(view.stderr.suffix(400))")
        #expect(Self.heavyAmong(viewLibraries).isEmpty, "obscura view-serve loaded \(Self.heavyAmong(viewLibraries))")
        let status = try runProgram(builtObscura, ["status"] + socket)
        #expect(status.stdout.contains("state: ") && status.stdout.contains("flash: on"), "\(status.stdout)")
        // The doctor: its checks that need no camera in the front, the
        // camera's and the encoder's in the engine it starts, whose
        // libraries the same reading finds (so it can see them).
        let (doctorLibraries, doctorChildren, doctor) = try Self.run(["doctor", "--config", dir.path + "/obscura.toml"])
        for check in ["configuration:", "camera layer:", "encoder:", "storage recordings:", "clock:", "service:"] {
            #expect(doctor.stdout.contains(check), "obscura doctor said no \(check) \(doctor.stdout.suffix(600)) \(doctor.stderr.suffix(300))")
        }
        #expect(Self.heavyAmong(doctorLibraries).isEmpty, "obscura doctor loaded \(Self.heavyAmong(doctorLibraries))")
        #expect(doctorChildren.contains { $0.contains("libavcodec") }, "the engine's libraries were not seen: \(doctorChildren.prefix(20))")
        // And a command the engine runs, in the same process (exec).
        let (engineLibraries, _, engine) = try Self.run(["decode", "--help"])
        #expect(engine.status == 0, "\(engine.stderr.suffix(400))")
        #expect(engineLibraries.contains { $0.contains("libavcodec") }, "the engine's libraries were not seen: \(engineLibraries)")
    }

    @Test func theFrontsHelpListsWhatTheEnginesDoes() throws {
        let front = try runProgram(builtObscura, ["--help"])
        let engine = try runProgram(packageRoot + "/.build/debug/obscura-engine", ["--help"])
        #expect(front.status == 0 && engine.status == 0)
        #expect(front.stdout == engine.stdout, "the front's subcommands differ from the engine's (Sources/obscura/Front.swift)")
        let version = try runProgram(builtObscura, ["--version"])
        #expect(version.stdout == ObscuraProgram.version + "\n")
    }

    /// A service that is not there, a socket that is a file, a reply cut in
    /// half: each a clear error naming the socket, at once.
    @Test func aStatusWithoutAnAnswerSaysWhy() throws {
        let dir = try scratchForBuiltObscura("obscura-light-bad")
        let file = dir.path + "/plain.sock"
        _ = FileManager.default.createFile(atPath: file, contents: Data("not a socket".utf8))
        let gone = dir.path + "/gone.sock"
        do {
            let socket = try Syscalls.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), what: "AF_UNIX")
            try Syscalls.bind(socket.rawValue, unixPath: gone)  // bound, never listening: refused
        }
        for path in [file, gone, dir.path + "/absent.sock"] {
            let result = try runProgram(builtObscura, ["status", "--socket", path])
            #expect(result.status == 1 && result.stderr.contains("cannot reach the recorder at \(path)"), "\(result.stderr)")
        }
        let half = dir.path + "/half.sock"
        let listener = try Syscalls.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), what: "AF_UNIX")
        try Syscalls.bind(listener.rawValue, unixPath: half)
        try Syscalls.listen(listener.rawValue, what: half)
        let server = try JoinableThread(name: "half reply") {
            let connection = accept(listener.rawValue, nil, nil)
            guard connection >= 0 else { return }
            var byte: UInt8 = 0
            while read(connection, &byte, 1) == 1, byte != UInt8(ascii: "\n") {}
            try? Syscalls.sendAll(connection, Array(#"{"state":"recording","boa"#.utf8), flags: Int32(MSG_NOSIGNAL), what: half)
            close(connection)
        }
        let result = try runProgram(builtObscura, ["status", "--socket", half])
        server.join()
        #expect(result.status == 1 && result.stderr.contains("unexpected reply: {\"state\":\"recording\",\"boa"), "\(result.stderr)")
    }

    @Test func printfFormatsAsC() {
        #expect(String(printf: "%.1f s, %ld KiB, 0x%lx", 2.25, 1024, 255) == "2.2 s, 1024 KiB, 0xff")
        // Longer than the first buffer: formatted again into one that fits.
        #expect(String(printf: "%0600ld!", 5) == String(repeating: "0", count: 599) + "5!")
    }
}
