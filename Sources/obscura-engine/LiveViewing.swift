import ObscuraCommandLine
import Foundation
import ObscuraRecording
import ObscuraSystem
#if canImport(Glibc)
import Glibc
#endif

/// `obscura view`'s work: the stream from the kiosk (SSH, or a local
/// socket), its packets into a player's standard input or a file.
struct LiveViewing {
    let kiosk: String?
    let local: String?
    let player: String
    let output: String?
    let ssh: SSH
    let seconds: Double?
    /// A file for each packet's times (`--timings`).
    var timings: String? = nil
    /// `--camera`: one of the kiosk's cameras.
    var camera: String? = nil
    /// `--browser`: the port of the page on 127.0.0.1 (0: any free one).
    var browserPort: UInt16? = nil

    /// How ssh reaches the kiosk.
    struct SSH {
        var identity: String?
        var port: Int?
        var knownHosts: String?

        var arguments: [String] {
            var arguments: [String] = ["-T", "-o", "BatchMode=yes"]
            if let identity { arguments += ["-i", identity, "-o", "IdentitiesOnly=yes"] }
            if let port { arguments += ["-p", String(port)] }
            if let knownHosts { arguments += ["-o", "UserKnownHostsFile=\(knownHosts)", "-o", "StrictHostKeyChecking=yes"] }
            return arguments
        }
    }

    /// One end of the stream: a descriptor, kept open by what owns it.
    struct End {
        let fd: Int32
        let owner: AnyObject?
        func close() {
            if let handle = owner as? FileHandle { try? handle.close() }
            (owner as? OwnedFileDescriptor)?.close()
        }
    }

    struct ViewError: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    /// The players tried, in order, with their low-latency settings for a
    /// raw stream of FORMAT on standard input and a window titled TITLE.
    static func playerArguments(_ name: String, format: String, title: String) -> [String] {
        switch name {
        case "mpv":
            return ["--no-cache", "--untimed", "--profile=low-latency", "--demuxer-lavf-format=\(format)", "--title=\(title)", "-"]
        default:
            // No -fflags nobuffer: with it, libavformat drops what it probed,
            // the first key frame with it, and a stream whose next key frame is
            // far away shows nothing until then.
            return ["-hide_banner", "-loglevel", "error", "-flags", "low_delay", "-framedrop",
                    "-probesize", "32768", "-analyzeduration", "0", "-window_title", title, "-f", format, "-i", "-"]
        }
    }

    func run() throws {
        let (source, ssh) = try openSource()
        defer { Self.stop(ssh, reading: source) }
        let reader = LiveStream.Reader(fd: source.fd)
        let codec = try Self.codec(of: reader, viaSSH: ssh != nil)
        if let browserPort { return try watchInBrowser(reader, codec: codec, port: browserPort) }
        let (sink, shown) = try openSink(format: codec)
        let into = shown?.executableURL?.lastPathComponent ?? output ?? ""
        Log.note("watching \(kiosk ?? local ?? ""), \(codec), into \(into)")
        let outcome = Result { try copy(reader, codec: codec, to: sink) }
        sink.close()
        shown?.waitUntilExit()
        try outcome.get()
    }

    /// Ends ssh: its output closed (a write to it fails), asked to end,
    /// and killed if it has not within two seconds; then waited for.
    private static func stop(_ ssh: Process?, reading source: End) {
        source.close()
        guard let ssh else { return }
        let pid = ssh.processIdentifier
        try? Syscalls.signal(pid, SIGTERM)  // (a viewer's ssh that is gone is what was wanted)
        let deadline = ContinuousClock.now + .seconds(2)
        while ssh.isRunning, ContinuousClock.now < deadline { usleep(20_000) }
        if ssh.isRunning { try? Syscalls.signal(pid, SIGKILL) }
        ssh.waitUntilExit()
    }

    /// The stream's codec, from the kiosk's first line; one a player can show.
    static func codec(of reader: LiveStream.Reader, viaSSH: Bool) throws -> String {
        let header: LiveStream.Header
        do {
            header = try reader.header()
        } catch let error as LiveStream.ReadError {
            guard case .ended = error else { throw error }
            if !viaSSH { throw ViewError("the recorder closed the live socket at once") }
            throw ViewError("the kiosk sent nothing: ssh ended (see its message above); is obscura installed there, and may this account reach its live view (the obscura group)?")
        }
        let codec = header.codec ?? "unknown"
        guard codec == "h264" || codec == "hevc" else {
            throw ViewError("the kiosk records \(codec), which a live view cannot show: its recording.codec must be h264 or hevc")
        }
        return codec
    }

    /// Packets into the sink until the stream ends, the player goes, or --seconds.
    private func copy(_ reader: LiveStream.Reader, codec: String, to sink: End) throws {
        let delimiter = AnnexB.accessUnitDelimiter(codec: codec)
        let end = seconds.map { ContinuousClock.now + .milliseconds(Int($0 * 1000)) }
        let times = try timings.map { try Syscalls.open($0, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644) }
        while let packet = try reader.next() {
            if let times {
                let line = "\(packet.timestamp) \(packet.published) \(Syscalls.monotonicNanoseconds()) \(packet.isKeyframe ? 1 : 0) \(packet.data.count)\n"
                try Syscalls.writeAll(times.rawValue, Array(line.utf8), path: timings!)
            }
            guard try Syscalls.writeAllUnlessGone(sink.fd, packet.data + delimiter, path: output ?? "the player") else { return }
            if let end, ContinuousClock.now >= end { return }
        }
    }

    /// The packets to a page on 127.0.0.1 (`BrowserView`) until the stream
    /// ends or --seconds.
    private func watchInBrowser(_ reader: LiveStream.Reader, codec: String, port: UInt16) throws {
        guard codec == "h264" else {
            throw ViewError("the page plays H.264, and the kiosk records \(codec): watch it in a player (without --browser)")
        }
        let page = try BrowserView(port: port, title: kiosk ?? local ?? "this kiosk") { Log.note($0) }
        defer { page.close() }
        Log.note("watching \(kiosk ?? local ?? ""): open http://127.0.0.1:\(page.port)/ in a browser on this computer")
        let end = seconds.map { ContinuousClock.now + .milliseconds(Int($0 * 1000)) }
        while let packet = try reader.next() {
            page.send(packet)
            if let end, ContinuousClock.now >= end { return }
        }
    }

    /// Who watches, for the kiosk's journal.
    static var viewerName: String {
        let user = Syscalls.userName(getuid()) ?? "uid \(getuid())"
        return "\(user)@\(ProcessInfo.processInfo.hostName)"
    }

    /// The stream's source: the local socket, or ssh's output.
    private func openSource() throws -> (End, Process?) {
        if let local {
            let socket = try Syscalls.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), what: "AF_UNIX")
            do {
                try Syscalls.connect(socket.rawValue, unixPath: local)
            } catch {
                throw ViewError("no live view at \(local) (\(error)); is the obscura service running, with live.socket set?")
            }
            try Syscalls.sendAll(socket.rawValue, Array("view \(Self.viewerName) (local)\n".utf8), flags: Int32(MSG_NOSIGNAL), what: local)
            return (End(fd: socket.rawValue, owner: socket), nil)
        }
        let destination = kiosk!.contains("@") ? kiosk! : "obscura-view@\(kiosk!)"
        guard let program = Self.onPath("ssh") else { throw ViewError("ssh is not installed (Debian's package openssh-client)") }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: program)
        var arguments = ssh.arguments
        arguments += [destination, "obscura", "view-serve", "--name", Self.viewerName] + (camera.map { ["--camera", $0] } ?? [])
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardInput = FileHandle.nullDevice
        try process.run()
        return (End(fd: pipe.fileHandleForReading.fileDescriptor, owner: pipe.fileHandleForReading), process)
    }

    /// Where the packets go: a file, standard output, or a player's input.
    private func openSink(format: String) throws -> (End, Process?) {
        if output == "-" { return (End(fd: STDOUT_FILENO, owner: nil), nil) }
        if let output {
            let file = try Syscalls.open(output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
            return (End(fd: file.rawValue, owner: file), nil)
        }
        let names = player == "auto" ? ["ffplay", "mpv"] : [player]
        guard let name = names.first(where: { Self.onPath($0) != nil }), let path = Self.onPath(name) else {
            throw ViewError(player == "auto"
                ? "no player is installed: install ffplay (Debian's package ffmpeg) or mpv, or pass --output FILE"
                : "\(player) is not installed (Debian's package \(player == "ffplay" ? "ffmpeg" : "mpv"))")
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = Self.playerArguments(name, format: format, title: "Obscura live: \(kiosk ?? "this kiosk")")
        let pipe = Pipe()
        process.standardInput = pipe
        try process.run()
        return (End(fd: pipe.fileHandleForWriting.fileDescriptor, owner: pipe.fileHandleForWriting), process)
    }

    /// A program's path on PATH, if it is there.
    static func onPath(_ program: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        return path.split(separator: ":").map { "\($0)/\(program)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }
}
