import ArgumentParser
import ObscuraCommandLine
import Foundation
import ObscuraRecording
import ObscuraRetrieval
import ObscuraSystem
#if canImport(Glibc)
import Glibc
#endif

/// The kiosk's end of a live view: what the SSH server runs for a view key.
struct ViewServeCommand: ParsableCommand {
    static let configuration = CommandDescriptions.viewServe

    @Option(help: "Who watches, for the journal (a view key's comment).") var name = "(unnamed)"
    @Option(help: "The recorder's live socket (live.socket).") var socket = "/run/obscura-live/live.sock"
    @Flag(help: "Run as the live view account's forced command (sshd's ForceCommand): refuse anything but a view, and name the viewer by the SSH key's comment.")
    var sshForced = false

    func run() throws {
        signal(SIGPIPE, SIG_IGN)
        var name = name
        if sshForced {
            let environment = ProcessInfo.processInfo.environment
            if let refusal = ViewAccount.refusal(originalCommand: environment["SSH_ORIGINAL_COMMAND"]) {
                Log.note(refusal)
                throw ExitCode.failure
            }
            let authInfo = environment["SSH_USER_AUTH"].flatMap { try? String(contentsOfFile: $0, encoding: .utf8) }
            let keys = (try? AuthorizedKeys.load(AuthorizedKeys.Purpose.view.path, purpose: .view)) ?? AuthorizedKeys()
            name = ViewAccount.viewerName(authInfo: authInfo, keys: keys)
        }
        do {
            let connection = try Syscalls.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), what: "AF_UNIX")
            do {
                try Syscalls.connect(connection.rawValue, unixPath: socket)
            } catch {
                throw ValidationError("the recorder's live view is not reachable at \(socket) (\(error)); is the obscura service running, with live.socket set?")
            }
            var printable = String.UnicodeScalarView()
            for scalar in name.unicodeScalars.prefix(200) where scalar.value >= 32 && scalar.value != 127 { printable.append(scalar) }
            try Syscalls.sendAll(connection.rawValue, Array("view \(String(printable))\n".utf8), flags: Int32(MSG_NOSIGNAL), what: socket)
            try Self.copy(from: connection.rawValue, to: STDOUT_FILENO)
        } catch let error as ValidationError {
            Log.note("error: \(error.message)")
            throw ExitCode.failure
        } catch {
            Log.note("error: \(error)")
            throw ExitCode.failure
        }
    }

    /// Copies until the source ends or the destination goes (the viewer left: no error).
    static func copy(from source: Int32, to destination: Int32) throws {
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = try buffer.withUnsafeMutableBytes { b throws(SystemError) in try Syscalls.read(source, into: b, path: "the live socket") }
            if n == 0 { return }
            guard try LiveViewing.write(Array(buffer[0..<n]), to: destination, what: "standard output") else { return }
        }
    }
}

/// The viewer's end: SSH to the kiosk, the stream into a player.
struct ViewCommand: ParsableCommand {
    static let configuration = CommandDescriptions.view

    @Argument(help: "The kiosk: HOST or USER@HOST (default user: obscura-view).") var kiosk: String?
    @Option(help: "A live socket on this machine instead of SSH (on the kiosk itself).") var local: String?
    @Option(help: "The player: auto, ffplay or mpv.") var player = "auto"
    @Option(help: "Write the stream (Annex B) to FILE (- for standard output) instead of playing it.") var output: String?
    @Option(name: .customShort("i"), help: "The SSH identity (private key) file.") var identity: String?
    @Option(help: "The kiosk's SSH port.") var port: Int?
    @Option(help: "The known_hosts file the kiosk's host key is checked against (default: ssh's own).") var knownHosts: String?
    @Option(help: "Stop after this many seconds.") var seconds: Double?
    @Option(help: ArgumentHelp("Write each packet's times to FILE: its camera time, when the kiosk published it, when it came here (CLOCK_MONOTONIC nanoseconds; the first two are the kiosk's clock), key frame, bytes.", valueName: "file"))
    var timings: String?
    @Flag(help: "Show the picture in a web page on this computer (http://127.0.0.1:PORT/, printed), played by the browser's WebCodecs, instead of a player.")
    var browser = false
    @Option(help: "With --browser: the page's port on 127.0.0.1 (default: a free one).") var browserPort: Int?

    func validate() throws {
        guard (kiosk == nil) != (local == nil) else { throw ValidationError("name a kiosk (HOST or USER@HOST) or --local SOCKET, not both") }
        guard ["auto", "ffplay", "mpv"].contains(player) else { throw ValidationError("--player \(player): allowed are auto, ffplay, mpv") }
        if let seconds, !(seconds > 0) { throw ValidationError("--seconds must be above 0, not \(seconds)") }
        if let port, !(1...65535).contains(port) { throw ValidationError("--port must be 1 to 65535, not \(port)") }
        if let browserPort, !(1...65535).contains(browserPort) { throw ValidationError("--browser-port must be 1 to 65535, not \(browserPort)") }
        if browserPort != nil && !browser { throw ValidationError("--browser-port goes with --browser") }
        if browser && output != nil { throw ValidationError("--browser and --output: one or the other") }
    }

    func run() throws {
        signal(SIGPIPE, SIG_IGN)
        do {
            let ssh = LiveViewing.SSH(identity: identity, port: port, knownHosts: knownHosts)
            var viewing = LiveViewing(kiosk: kiosk, local: local, player: player, output: output, ssh: ssh, seconds: seconds)
            viewing.timings = timings
            if browser { viewing.browserPort = UInt16(browserPort ?? 0) }
            try viewing.run()
        } catch {
            Log.note("error: \(error)")
            throw ExitCode.failure
        }
    }
}
