import ArgumentParser
import ObscuraCommandLine
import Foundation
import ObscuraRecording
import ObscuraRetrieval
import ObscuraSystem
#if canImport(Glibc)
import Glibc
#endif

/// The viewer's end: SSH to the kiosk, the stream into a player.
struct ViewCommand: ParsableCommand {
    static let configuration = CommandDescriptions.view

    @Argument(help: "The kiosk: HOST or USER@HOST (default user: obscura-view).") var kiosk: String?
    @Option(help: "A live socket on this machine instead of SSH (on the kiosk itself).") var local: String?
    @Option(help: "The player: auto, ffplay or mpv.") var player = "auto"
    @Option(help: "One of the kiosk's cameras, by the name its [cameras.NAME] table gives (default: the first).") var camera: String?
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
            viewing.camera = camera
            if browser { viewing.browserPort = UInt16(browserPort ?? 0) }
            try viewing.run()
        } catch {
            Log.note("error: \(error)")
            throw ExitCode.failure
        }
    }
}
