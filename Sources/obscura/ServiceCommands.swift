import ArgumentParser
import Dispatch
import Foundation
import Logging
import ObscuraService

struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run the kiosk recorder service (buttons, LEDs, loop recording, control socket).",
        discussion: """
        Reads /etc/obscura/obscura.toml (or --config; the defaults without a file) \
        and the board profile it names. Under systemd it reports READY, STATUS and \
        watchdog keep-alives. SIGTERM or SIGINT finalizes a recording in progress \
        and exits; SIGUSR1 starts or stops recording.
        """)

    @Option(help: "Configuration file (default /etc/obscura/obscura.toml when it exists).") var config: String?
    @Option(help: "Board profile name or path, overriding the configuration's.") var board: String?

    func run() async throws {
        Log.keepGoingWithoutReaders()
        try await Self.reporting {
            var configuration = try ServiceConfiguration.load(config)
            if let board { configuration.board = board }
            let profile = try BoardProfile.load(configuration.board, from: configuration.file)
            let logger = Logger(label: "obscura") { _ in JournalLogHandler() }
            let service = try RecorderService(configuration: configuration, profile: profile, logger: logger)
            try await service.start()
            let (signals, continuation) = AsyncStream<Int32>.makeStream()
            var sources: [any DispatchSourceSignal] = []
            for signal in [SIGTERM, SIGINT, SIGUSR1] {
                Foundation.signal(signal, SIG_IGN)
                let source = DispatchSource.makeSignalSource(signal: signal, queue: .global())
                source.setEventHandler { continuation.yield(signal) }
                source.resume()
                sources.append(source)
            }
            for await signal in signals {
                if signal == SIGUSR1 {
                    await service.toggleRecording()
                    continue
                }
                Log.note("signal \(signal): stopping")
                await service.shutdown()
                break
            }
            sources.forEach { $0.cancel() }
        }
    }
}

/// The control socket named by the configuration (or --socket).
struct SocketOptions: ParsableArguments {
    @Option(help: "Control socket (default: the configuration's, /run/obscura/control.sock).") var socket: String?
    @Option(help: "Configuration file naming the socket.") var config: String?

    func path() throws -> String {
        if let socket { return socket }
        return try ServiceConfiguration.load(config).controlSocket
    }

    func send(_ command: String) throws -> String {
        let path = try path()
        do {
            return try ControlServer.send(command, to: path)
        } catch let timeout as ControlReplyTimeout {
            throw UserFacingError("\(timeout)")
        } catch {
            throw UserFacingError("cannot reach the recorder at \(path): \(error) (is `obscura run` running, and are you in its group?)")
        }
    }
}

struct StatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "status", abstract: "Show what the recorder service is doing.")
    @OptionGroup var socket: SocketOptions
    @Flag(help: "Print the raw JSON.") var json = false

    func run() async throws {
        try await Self.reporting {
            let reply = try socket.send("status")
            if json {
                Log.output(reply)
                return
            }
            guard let status = try? JSONDecoder().decode(ServiceStatus.self, from: Data(reply.utf8)) else {
                throw UserFacingError("unexpected reply: \(reply)")
            }
            var lines = ["state: \(status.state)", "board: \(status.board)", "camera: \(status.camera ?? "none")"]
            if let file = status.file {
                lines.append("file: \(file)")
                lines.append(String(format: "elapsed: %.1f s, %d KiB, dropped frames %d", status.elapsedSeconds, status.bytes / 1024, status.droppedFrames))
                lines.append(String(format: "frames: %d at %.2f fps, encoder latency %.0f ms (%d frames inside)", status.frames,
                                    status.framesPerSecond, status.encoderLatencySeconds * 1000, status.framesInEncoder))
            }
            for s in status.storages {
                guard s.present else {
                    lines.append("storage \(s.name): \(s.path), absent")
                    continue
                }
                if let silent = s.silentSeconds {
                    lines.append(String(format: "storage %@: %@, not answering for %.0f s", s.name, s.path, silent) + (s.active ? " (recording here)" : ""))
                    continue
                }
                let free = s.freeBytes.map { "\($0 >> 20) MiB free" } ?? "not mounted"
                let quota = s.quotaBytes > 0 ? " of a \(s.quotaBytes >> 20) MiB quota" : ""
                lines.append("storage \(s.name): \(s.path), \(free), \(s.usedBytes >> 20) MiB used\(quota)" + (s.active ? " (recording here)" : ""))
            }
            if let rate = status.cameraFrameRate, let configured = status.configuredFrameRate, rate < configured || (status.rateStepsDown ?? 0) > 0 {
                lines.append(String(format: "camera rate: %g fps of %g configured (%@; stepped down %d, up %d times)", rate, configured,
                                    rate < configured ? "stepped down: the recorder could not keep up" : "back to the configured rate",
                                    status.rateStepsDown ?? 0, status.rateStepsUp ?? 0))
            }
            lines.append("flash: \(status.flash)")
            if let preview = status.preview { lines.append("preview: \(preview)") }
            if let audio = status.audio { lines.append("audio: \(audio)") }
            if let picture = Self.pictureLine(status) { lines.append(picture) }
            if let sound = Self.soundLine(status) { lines.append(sound) }
            lines.append("pressure: \(status.pressureLevel)" + (status.pressureReason.map { " (\($0))" } ?? "")
                         + " (steps up \(status.pressureSteps["up"] ?? 0), down \(status.pressureSteps["down"] ?? 0))")
            if status.preRecordSeconds > 0 { lines.append(String(format: "pre-record: %.1f s", status.preRecordSeconds)) }
            lines.append("recordings: \(status.recordings) (\(status.recordingsFailed) ended by a failure), photos: \(status.photos)")
            if !status.stageRestarts.isEmpty {
                lines.append("restarts: " + status.stageRestarts.keys.sorted().map {
                    String(format: "%@ %d (%.1f s without recording)", $0, status.stageRestarts[$0] ?? 0, status.stageGapSeconds[$0] ?? 0)
                }.joined(separator: ", "))
            }
            let temperatures = status.host.temperatures.keys.sorted().map { String(format: "%@ %.1f °C", $0, status.host.temperatures[$0] ?? 0) }
            if !temperatures.isEmpty { lines.append("temperature: " + temperatures.joined(separator: ", ")) }
            if let t = status.host.throttled {
                let now = HostHealth.throttledFlags.filter { t & (1 << $0.bit) != 0 }.map(\.name)
                lines.append(String(format: "throttled: 0x%x", t) + (now.isEmpty ? "" : " (" + now.joined(separator: ", ") + ")"))
            }
            let clock = status.host.clockSynchronized.map { $0 ? "synchronised" : "not synchronised" } ?? "unknown"
            lines.append("clock: \(clock) (\(status.host.clockSource))")
            if let metrics = status.metrics { lines.append("metrics: \(metrics)") }
            if let last = status.lastRecording { lines.append("last recording: \(last)") }
            if let error = status.lastError { lines.append("last error: \(error)") }
            lines.forEach(Log.output)
        }
    }

    /// "picture: dark, no_detail (watched for dark, no_detail, frozen; …)".
    static func pictureLine(_ status: ServiceStatus) -> String? {
        guard let watched = status.pictureWatched else { return "picture: not watched" }
        let now = status.pictureConditions ?? []
        var line = "picture: " + (now.isEmpty ? "fine" : now.joined(separator: ", "))
        line += " (watched for " + watched.joined(separator: ", ")
        if let mean = status.pictureMean, let detail = status.pictureDetail {
            line += String(format: "; mean luma %.1f, detail %.2f", mean, detail)
        }
        if let learned = status.sceneLearned {
            if !learned {
                line += "; the scene not learned yet (30 s of a steady view)"
            } else if let likeness = status.sceneLikeness, let sharpness = status.sceneSharpness {
                line += String(format: "; against the scene learned: likeness %.2f, sharpness %.2f", likeness, sharpness)
            }
        }
        let episodes = status.pictureEpisodes.keys.sorted().map { "\($0) \(status.pictureEpisodes[$0] ?? 0)" }
        if !episodes.isEmpty { line += "; episodes: " + episodes.joined(separator: ", ") }
        return line + ")"
    }
}

extension StatusCommand {
    /// "sound: silent (listened for clipping, silent; peak -inf dBFS; episodes: silent 1)";
    /// nil without a microphone.
    static func soundLine(_ status: ServiceStatus) -> String? {
        guard let watched = status.soundWatched else { return nil }
        let now = status.soundConditions ?? []
        var line = "sound: " + (now.isEmpty ? "fine" : now.joined(separator: ", "))
        line += " (listened for " + watched.joined(separator: ", ")
        line += status.soundPeak.map { String(format: "; peak %.1f dBFS", $0) } ?? "; peak -inf dBFS"
        let episodes = status.soundEpisodes.keys.sorted().map { "\($0) \(status.soundEpisodes[$0] ?? 0)" }
        if !episodes.isEmpty { line += "; episodes: " + episodes.joined(separator: ", ") }
        return line + ")"
    }
}

struct ControlCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ctl", abstract: "Control the recorder service: record start|stop|toggle, photo, flash auto|on|off.")
    @OptionGroup var socket: SocketOptions
    @Argument(help: "The command, e.g. `record start`.") var words: [String]

    func run() async throws {
        try await Self.reporting {
            let reply = try socket.send(words.joined(separator: " "))
            Log.output(reply)
            if reply.contains("\"ok\":false") { throw ExitCode(1) }
        }
    }
}
