import ArgumentParser
import Dispatch
import Foundation
import ObscuraCamera
import ObscuraCapture
import ObscuraEncoding
import ObscuraMedia
import ObscuraMuxing
import ObscuraRecording
import Synchronization

struct RecordCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "record",
        abstract: "Record a clip from the camera into a movie file.",
        discussion: """
        The file is written as <output>.partial (fragmented every second, so a \
        killed process leaves a playable file) and renamed when the recording \
        finishes. SIGINT or SIGTERM stops the recording and finalizes it. A \
        progress line goes to standard error every second; a one-line summary \
        to standard output at the end. --camera synthetic records a test pattern.
        """)

    @Option(help: "Seconds to record (by the camera's timestamps).") var duration: Double
    @Option(help: "Output file (.mp4, .mov or .mkv).") var output: String
    @Option(help: "Camera id (see `obscura devices`), or synthetic; default: the first camera.") var camera: String?
    @Option(help: "Frame size, e.g. 1280x720; default: the camera's for the preset.") var size: String?
    @Option(help: "Camera pixel format fourcc, e.g. NV12; default: NV12 when offered.") var pixelFormat: String?
    @Option(help: "Codec: h264, hevc, prores422, mjpeg.") var codec: String = "h264"
    @Option(help: "Average bit rate in bits per second; default: the encoder's quality default.") var bitRate: Int?
    @Option(help: "Encoder preset (x264/x265).") var preset: String = "ultrafast"
    @Option(help: "Nominal frame rate when the camera does not report one.") var frameRate: Double = 30
    @Option(help: "Stop when the file reaches this many bytes.") var maxSize: Int?
    @Option(help: "Start a new file every this many seconds, at a keyframe (clip-0001.mp4, …).") var segment: Double?
    @Option(help: "Stop when the disk has less free space than this many bytes.") var minFreeSpace: Int = 32 << 20

    func run() async throws {
        try await Self.reporting { try await record() }
    }

    private func record() async throws {
        guard duration > 0 else { throw UserFacingError("--duration must be positive, not \(duration)") }
        guard MovieContainer(pathExtension: (output as NSString).pathExtension) != nil else {
            throw UserFacingError("cannot tell the container from \"\(output)\"; use a name ending in .mp4, .mov or .mkv")
        }
        guard let videoCodec = VideoCodec(rawValue: codec) else {
            throw UserFacingError("unknown codec \"\(codec)\"; allowed: \(VideoCodec.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        let requestedSize: PixelSize? = try size.map {
            guard let parsed = PixelSize(parsing: $0) else { throw UserFacingError("cannot read size \"\($0)\"; write it as WIDTHxHEIGHT, e.g. 1280x720") }
            return parsed
        }
        let device = try CameraChoice.device(camera)
        let chosen = try CameraChoice.applyFormat(device, format: pixelFormat.map { PixelFormat($0) }, size: requestedSize)

        if let allowed = videoCodec.requiredInputs {
            let active = device.activeFormat?.pixelFormat
            guard let active, allowed.contains(active) else {
                throw EncoderError.codecNeedsFormat(videoCodec, given: active ?? device.formats.first?.pixelFormat ?? .nv12, allowed: allowed)
            }
        }
        let session = CaptureSession(log: { Log.note($0) })
        let movie = MovieFileOutput()
        movie.maxRecordedDuration = .milliseconds(Int(duration * 1000))
        movie.maxRecordedFileSize = maxSize
        if let segment {
            guard segment >= 0.5 else { throw UserFacingError("--segment must be at least 0.5 seconds, not \(segment)") }
            movie.segmentDuration = .milliseconds(Int(segment * 1000))
        }
        movie.minFreeDiskSpace = minFreeSpace
        session.beginConfiguration()
        try session.addInput(CaptureDeviceInput(device: device))
        try session.addOutput(movie)
        try session.setSessionPreset(chosen ? .inputPriority : .high)
        try session.commitConfiguration()

        var settings = MovieSettings()
        settings.codec = videoCodec
        settings.averageBitRate = bitRate
        settings.preset = preset
        settings.nominalFrameRate = device.cameraDescription.frameRateRange?.upperBound ?? frameRate

        let events = try movie.startRecording(to: output, settings: settings)
        try session.startRunning()
        if let stream = session.activeConfiguration?.streams.first {
            Log.note("camera \"\(device.uniqueID)\": \(stream.pixelFormat) \(stream.size), stride \(stream.stride), \(stream.bufferCount) buffers")
        }
        let signals = SignalStop { movie.stopRecording() }
        defer { signals.cancel() }

        var summary: (reason: RecordingFinishReason, progress: RecordingProgress)?
        for await event in events {
            switch event {
            case .started:
                let p = movie.progress
                Log.note("encoder \(p.encoder) (software, libavcodec); frames \(p.path)")
            case .segmentFinished(let path):
                Log.note("segment finished: \(path)")
            case .progress(let p):
                Log.note(String(format: "recording %.1f s, %d frames, %d KiB, %.1f fps, dropped %d",
                                p.duration.seconds, p.frames, p.bytes / 1024, p.frameRate, p.droppedFrames))
            case .finished(_, let reason, let p):
                summary = (reason, p)
            }
        }
        if session.isRunning || session.isInterrupted { try session.stopRunning() }
        guard let (reason, p) = summary else { throw UserFacingError("the recording ended without a result") }
        if let why = signals.reason { Log.note(why) }
        guard p.frames > 0 else { throw UserFacingError("the camera delivered no frames; \(output) holds none (\(reason))") }
        let length = p.duration.seconds + (p.frameRate > 0 ? 1 / p.frameRate : 0)
        print("recorded \(output): \(p.frames) frames, \(p.size.map(\.description) ?? "?") \(p.encoder), "
              + String(format: "%.3f s, %.2f fps", length, p.frameRate)
              + ", \(p.bytes / 1024) KiB, camera skipped \(p.skippedFrames) frames, dropped \(p.droppedFrames)"
              + ", CPU copies per frame \(String(format: "%.2f", p.copiesPerFrame)), finished: \(reason)")
        switch reason {
        case .stopped, .maximumDurationReached, .maximumFileSizeReached: break
        default: throw ExitCode(3)
        }
    }
}

/// Runs `stop` on SIGINT or SIGTERM and remembers which came.
final class SignalStop: Sendable {
    private final class Reason: Sendable {
        let text = Mutex<String?>(nil)
    }
    private let sources: Mutex<[any DispatchSourceSignal]>
    private let why = Reason()

    init(_ stop: @escaping @Sendable () -> Void) {
        var list: [any DispatchSourceSignal] = []
        let why = self.why
        for signal in [SIGINT, SIGTERM] {
            Foundation.signal(signal, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signal, queue: .global())
            source.setEventHandler {
                why.text.withLock { $0 = "stopped by signal \(signal); the recording was finalized" }
                stop()
            }
            source.resume()
            list.append(source)
        }
        sources = Mutex(list)
    }

    var reason: String? { why.text.withLock { $0 } }
    func cancel() { sources.withLock { $0.forEach { $0.cancel() } } }
}
