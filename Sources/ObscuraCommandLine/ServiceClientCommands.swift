import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ObscuraControl
import ObscuraSystem

/// The control socket named by the configuration (or --socket).
public struct SocketOptions: ParsableArguments {
    @Option(help: "Control socket (default: the configuration's, /run/obscura/control.sock).") var socket: String?
    @Option(help: "Configuration file naming the socket.") var config: String?

    public init() {}

    public func path() throws -> String {
        if let socket { return socket }
        return try ControlSocketSetting.socket(configuration: config)
    }

    public func send(_ command: String) throws -> String {
        let path = try path()
        do {
            return try ControlClient.send(command, to: path)
        } catch let timeout as ControlReplyTimeout {
            throw UserFacingError("\(timeout)")
        } catch {
            throw UserFacingError("cannot reach the recorder at \(path): \(error) (is `obscura run` running, and are you in its group?)")
        }
    }
}

public struct StatusCommand: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(commandName: "status", abstract: "Show what the recorder service is doing.")
    @OptionGroup var socket: SocketOptions
    @Flag(help: "Print the raw JSON.") var json = false

    public init() {}

    public func run() async throws {
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
            if let cameras = status.cameras {
                lines += cameras.map(Self.cameraLine)
                if let skew = status.startSkewMilliseconds {
                    lines.append(String(printf: "cameras together: first frames %.1f ms apart", skew))
                }
            } else if let file = status.file {
                lines.append("file: \(file)")
                lines.append(String(printf: "elapsed: %.1f s, %ld KiB, dropped frames %ld", status.elapsedSeconds, status.bytes / 1024, status.droppedFrames))
                lines.append(String(printf: "frames: %ld at %.2f fps, encoder latency %.0f ms (%ld frames inside)", status.frames,
                                    status.framesPerSecond, status.encoderLatencySeconds * 1000, status.framesInEncoder))
            }
            for s in status.storages {
                guard s.present else {
                    lines.append("storage \(s.name): \(s.path), absent")
                    continue
                }
                if let silent = s.silentSeconds {
                    lines.append("storage \(s.name): \(s.path), " + String(printf: "not answering for %.0f s", silent) + (s.active ? " (recording here)" : ""))
                    continue
                }
                let free = s.freeBytes.map { "\($0 >> 20) MiB free" } ?? "not mounted"
                let quota = s.quotaBytes > 0 ? " of a \(s.quotaBytes >> 20) MiB quota" : ""
                lines.append("storage \(s.name): \(s.path), \(free), \(s.usedBytes >> 20) MiB used\(quota)" + (s.active ? " (recording here)" : ""))
            }
            if let rate = status.cameraFrameRate, let configured = status.configuredFrameRate, rate < configured || (status.rateStepsDown ?? 0) > 0 {
                lines.append(String(printf: "camera rate: %g fps of %g configured", rate, configured)
                             + " (" + (rate < configured ? "stepped down: the recorder could not keep up" : "back to the configured rate")
                             + "; stepped down \(status.rateStepsDown ?? 0), up \(status.rateStepsUp ?? 0) times)")
            }
            lines.append("flash: \(status.flash)")
            if let preview = status.preview { lines.append("preview: \(preview)") }
            if let audio = status.audio { lines.append("audio: \(audio)") }
            if let picture = Self.pictureLine(status) { lines.append(picture) }
            if let sound = Self.soundLine(status) { lines.append(sound) }
            lines.append("pressure: \(status.pressureLevel)" + (status.pressureReason.map { " (\($0))" } ?? "")
                         + " (steps up \(status.pressureSteps["up"] ?? 0), down \(status.pressureSteps["down"] ?? 0))")
            if status.preRecordSeconds > 0 { lines.append(String(printf: "pre-record: %.1f s", status.preRecordSeconds)) }
            lines.append("recordings: \(status.recordings) (\(status.recordingsFailed) ended by a failure), photos: \(status.photos)")
            if !status.stageRestarts.isEmpty {
                lines.append("restarts: " + status.stageRestarts.keys.sorted().map {
                    "\($0) \(status.stageRestarts[$0] ?? 0) (" + String(printf: "%.1f", status.stageGapSeconds[$0] ?? 0) + " s without recording)"
                }.joined(separator: ", "))
            }
            let temperatures = status.host.temperatures.keys.sorted().map { "\($0) " + String(printf: "%.1f", status.host.temperatures[$0] ?? 0) + " °C" }
            if !temperatures.isEmpty { lines.append("temperature: " + temperatures.joined(separator: ", ")) }
            if let t = status.host.throttled {
                let now = HostHealth.throttledFlags.filter { t & (1 << $0.bit) != 0 }.map(\.name)
                lines.append(String(printf: "throttled: 0x%lx", t) + (now.isEmpty ? "" : " (" + now.joined(separator: ", ") + ")"))
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
    /// One of a kiosk's cameras in a line: its state, its file, its frames.
    static func cameraLine(_ camera: CameraStatus) -> String {
        let s = camera.status
        var line = "camera \(camera.name) (\(s.camera ?? "none")): \(s.state)"
        if let file = s.file {
            line += ", \(file.split(separator: "/").last.map(String.init) ?? file)"
                + String(printf: ", %.1f s, %ld frames at %.2f fps, dropped %ld", s.elapsedSeconds, s.frames, s.framesPerSecond, s.droppedFrames)
        }
        if s.state == "error", let error = s.lastError { line += ": \(error)" }
        return line
    }

    static func pictureLine(_ status: ServiceStatus) -> String? {
        guard let watched = status.pictureWatched else { return "picture: not watched" }
        let now = status.pictureConditions ?? []
        var line = "picture: " + (now.isEmpty ? "fine" : now.joined(separator: ", "))
        line += " (watched for " + watched.joined(separator: ", ")
        if let mean = status.pictureMean, let detail = status.pictureDetail {
            line += String(printf: "; mean luma %.1f, detail %.2f", mean, detail)
        }
        if let learned = status.sceneLearned {
            if !learned {
                line += "; the scene not learned yet (30 s of a steady view)"
            } else if let likeness = status.sceneLikeness, let sharpness = status.sceneSharpness {
                line += String(printf: "; against the scene learned: likeness %.2f, sharpness %.2f", likeness, sharpness)
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
        line += status.soundPeak.map { String(printf: "; peak %.1f dBFS", $0) } ?? "; peak -inf dBFS"
        let episodes = status.soundEpisodes.keys.sorted().map { "\($0) \(status.soundEpisodes[$0] ?? 0)" }
        if !episodes.isEmpty { line += "; episodes: " + episodes.joined(separator: ", ") }
        return line + ")"
    }
}

public struct ControlCommand: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "ctl", abstract: "Control the recorder service: record start|stop|toggle, photo, flash auto|on|off.")
    @OptionGroup var socket: SocketOptions
    @Argument(help: "The command, e.g. `record start`.") var words: [String]
    @Option(help: "One of the kiosk's cameras, by the name its [cameras.NAME] table gives (default: all).") var camera: String?

    public init() {}

    public func run() async throws {
        try await Self.reporting {
            let reply = try socket.send((camera.map { ["camera", $0] } ?? []).joined(separator: " ")
                                        + (camera == nil ? "" : " ") + words.joined(separator: " "))
            Log.output(reply)
            if reply.contains("\"ok\":false") { throw ExitCode(1) }
        }
    }
}
