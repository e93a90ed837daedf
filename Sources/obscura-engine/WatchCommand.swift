import ArgumentParser
import ObscuraCommandLine
import Foundation
import ObscuraCamera
import ObscuraCapture
import ObscuraHealth
import ObscuraMedia
import ObscuraSystem

struct WatchCommand: AsyncParsableCommand {
    static let configuration = CommandDescriptions.watch

    @Option(help: "Camera id (see `obscura devices`), synthetic, or file:PATH (raw frames, with --size and --pixel-format).")
    var camera: String?
    @Option(help: "Frame size, e.g. 1920x1080.") var size: String?
    @Option(help: "Camera pixel format, by name or fourcc, e.g. NV12 or BGR888 (BG24).") var pixelFormat: String?
    @Option(help: "How long to watch, in seconds.") var seconds: Double = 30
    @Option(help: "Dark: mean luma at or below this (0–255; black is 16).") var darkLuma: Double = PictureHealthSettings().darkLuma
    @Option(help: "No detail: neighbouring points differ by at most this on average.") var flatDetail: Double = PictureHealthSettings().flatDetail
    @Option(help: "Seconds a condition holds before it is declared.") var hold: Double = 10
    @Option(help: "Seconds a condition is gone before it clears.") var clearAfter: Double = 2
    @Option(help: "Frames a second looked at.") var rate: Double = PictureHealthSettings().framesPerSecond
    @Option(help: "Conditions watched, comma-separated: dark, no_detail, frozen; tampering, judged against the scene as first seen: covered, partly_covered, defocused, redirected.")
    var conditions: String = "dark,no_detail,frozen"
    @Flag(help: "Print the grid's measures once a second.") var measures = false
    @Flag(help: "A file camera: start the file again at its end, until --seconds of its time.") var loop = false

    func validate() throws {
        try Options.check {
            _ = try settings()
            try Limits.runSeconds.check(seconds, "--seconds")
            if let size { _ = try Options.size(size, "--size") }
            if let pixelFormat { _ = try Options.fourcc(pixelFormat, "--pixel-format") }
            if loop && fileCamera == nil { throw UserFacingError("--loop goes with a file camera (--camera file:PATH)") }
        }
    }

    /// The file a file camera reads, if it is one.
    var fileCamera: String? {
        guard let camera else { return nil }
        for prefix in ["file:", "dmabuf-file:"] where camera.hasPrefix(prefix) { return String(camera.dropFirst(prefix.count)) }
        return nil
    }

    /// The options as the picture check takes them, each checked against its range.
    func settings() throws -> PictureHealthSettings {
        var s = PictureHealthSettings()
        s.darkLuma = try Limits.darkLuma.check(darkLuma, "--dark-luma")
        s.flatDetail = try Limits.flatDetail.check(flatDetail, "--flat-detail")
        s.hold = .checkedSeconds(try Limits.conditionSeconds.check(hold, "--hold"))
        s.clearAfter = .checkedSeconds(try Limits.conditionSeconds.check(clearAfter, "--clear-after"))
        s.framesPerSecond = try Limits.healthFramesPerSecond.check(rate, "--rate")
        s.watched = try watched()
        s.tampering = try tampering()
        return s
    }

    func watched() throws -> Set<PictureCondition> {
        Set(try names().compactMap { PictureCondition(rawValue: $0) })
    }

    func tampering() throws -> Set<TamperCondition> {
        Set(try names().compactMap { TamperCondition(rawValue: $0) })
    }

    private func names() throws -> [String] {
        let names = conditions.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        let known = PictureCondition.allCases.map(\.rawValue) + TamperCondition.allCases.map(\.rawValue)
        for name in names where !known.contains(name) {
            throw UserFacingError("--conditions: \"\(name)\" is not one; allowed: \(known.joined(separator: ", "))")
        }
        return names
    }

    func run() async throws {
        try await Self.reporting { try await watch() }
    }

    private func watch() async throws {
        let settings = try settings()
        let device = try CameraChoice.device(camera)
        let chosen = try CameraChoice.applyFormat(device, format: try pixelFormat.map { try Options.fourcc($0, "--pixel-format") },
                                                  size: try size.map { try Options.size($0, "--size") })
        // A camera's late frames are let go, as the service does; a file's
        // frames all come, in order (the file waits for the watch).
        let output = VideoDataOutput(alwaysDiscardsLateVideoFrames: fileCamera == nil, queueDepth: fileCamera == nil ? 1 : 2)
        let session = CaptureSession(log: { Log.note($0) })
        session.beginConfiguration()
        try session.addInput(CaptureDeviceInput(device: device))
        try session.addOutput(output)
        try session.setSessionPreset(chosen ? .inputPriority : .high)
        try session.commitConfiguration()
        if let format = session.activeConfiguration?.streams.first?.pixelFormat, !LumaGrid.canRead(format) {
            throw UserFacingError("the camera delivers \(format), whose luma the picture check cannot read; give --pixel-format NV12 (or another YUV or RGB format)")
        }
        try session.startRunning()
        // A file ends by its own frames and time (`follow`); a camera after --seconds.
        let stopper = Task { [fileCamera] in
            guard fileCamera == nil else { return }
            try? await Task.sleep(for: .checkedSeconds(seconds))
            output.queue.close()
        }
        let end = try fileCamera.map { path in
            try FileEnd(path: path, stream: session.activeConfiguration?.streams.first, loop: loop, seconds: seconds)
        }
        let summary = await follow(output.frames, settings: settings, end: end)
        stopper.cancel()
        if session.state != .stopped { try session.stopRunning() }
        Log.output(summary)
    }

    /// Looks at the frames until they end; the summary line.
    /// Where a file camera's watch ends: after the file's last frame, or
    /// with --loop after --seconds of the file's time.
    struct FileEnd {
        let frames: Int
        let loop: Bool
        let nanoseconds: UInt64

        init(path: String, stream: StreamConfiguration?, loop: Bool, seconds: Double) throws {
            guard let stream, let info = stream.pixelFormat.info else { throw UserFacingError("the file camera has no stream") }
            // (The file's own size: a symbolic link is followed, as the camera follows it.)
            let file = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
            let size = (try? FileManager.default.attributesOfItem(atPath: file)[.size] as? Int) ?? 0
            frames = size / info.bytesPerFrame(width: stream.size.width, height: stream.size.height)
            self.loop = loop
            nanoseconds = UInt64(seconds * 1e9)
        }

        func reached(sequence: UInt32, since first: UInt64) -> Bool {
            loop ? first >= nanoseconds : Int(sequence) >= frames
        }
    }

    private func follow(_ frames: VideoDataFrames, settings: PictureHealthSettings, end: FileEnd? = nil) async -> String {
        var health = PictureHealth(settings: settings)
        var tamper = TamperWatch(settings: settings.tamper, columns: settings.grid.columns, rows: settings.grid.rows)
        var delivered = 0, cpu: UInt64 = 0
        var first: UInt64?, lastMeasure: UInt64 = 0
        for await frame in frames {
            delivered += 1
            let start = first ?? frame.timestampNanoseconds
            first = start
            let before = Syscalls.threadCPUNanoseconds()
            let lookedBefore = health.looked
            let changes = health.look(at: frame)
            var tamperChanges: [TamperWatch.Change] = []
            if !settings.tampering.isEmpty, health.looked > lookedBefore, let points = health.lastPoints,
               let fine = settings.grid.sampleFine(frame) {
                let dark = (health.last?.mean ?? 255) <= settings.darkLuma
                tamperChanges = tamper.look(points: points, fine: fine, at: frame.timestampNanoseconds, dark: dark)
            }
            cpu += Syscalls.threadCPUNanoseconds() - before
            let at = Double(frame.timestampNanoseconds &- start) / 1e9
            for change in changes { Log.output(Self.describe(change, at: at)) }
            for change in tamperChanges { Log.output(Self.describe(change, at: at)) }
            if measures, let m = health.last, frame.timestampNanoseconds >= lastMeasure + 1_000_000_000 {
                lastMeasure = frame.timestampNanoseconds
                var line = String(format: "%.1f s: mean %.1f spread %.1f detail %.2f", at, m.mean, m.spread, m.detail)
                if let c = tamper.last { line += " " + Self.describe(c) }
                Log.output(line)
            }
            if let end, end.reached(sequence: frame.sequence, since: frame.timestampNanoseconds &- start) { break }
        }
        let perFrame = health.looked == 0 ? 0 : Double(cpu) / Double(health.looked) / 1000
        let now = (health.declared.map(\.rawValue) + tamper.declared.map(\.rawValue)).sorted().joined(separator: ", ")
        return String(format: "looked at %d of %d frames, %.1f µs CPU per frame looked at; declared now: %@",
                      health.looked, delivered, perFrame, now.isEmpty ? "none" : now)
    }

    static func describe(_ c: SceneComparison) -> String {
        String(format: "layout %.2f contrast %.2f lost %.2f sharpness %.2f", c.layout, c.contrast, c.lostShare, c.sharpness)
    }

    static func describe(_ change: TamperWatch.Change, at: Double) -> String {
        change.declared
            ? String(format: "%.1f s: %@ declared (%@)", at, change.condition.rawValue, describe(change.comparison))
            : String(format: "%.1f s: %@ cleared after %.1f s (%@)", at, change.condition.rawValue, Double(change.since) / 1e9, describe(change.comparison))
    }

    static func describe(_ change: PictureHealth.Change, at: Double) -> String {
        let m = change.measure
        let seen = String(format: "mean %.1f, spread %.1f, detail %.2f", m.mean, m.spread, m.detail)
        return change.declared
            ? String(format: "%.1f s: %@ declared (%@)", at, change.condition.rawValue, seen)
            : String(format: "%.1f s: %@ cleared after %.1f s (%@)", at, change.condition.rawValue, Double(change.since) / 1e9, seen)
    }
}
