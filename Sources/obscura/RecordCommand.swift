import ArgumentParser
import Dispatch
import Foundation
import ObscuraCamera
import ObscuraEncoding
import ObscuraMedia
import ObscuraMuxing
import Synchronization

struct RecordCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "record",
        abstract: "Record a clip from the camera into a movie file.",
        discussion: """
        The file is written as <output>.partial and renamed when the recording \
        finishes cleanly. SIGINT or SIGTERM stops the recording and finalizes it.
        """)

    @Option(help: "Seconds to record (by the camera's timestamps).") var duration: Double
    @Option(help: "Output file (.mp4, .mov or .mkv).") var output: String
    @Option(help: "Camera id (see `obscura devices`); default: the first camera.") var camera: String?
    @Option(help: "Frame size, e.g. 1280x720; default: the camera's default.") var size: String?
    @Option(help: "Camera pixel format fourcc, e.g. NV12; default: the camera's default.") var pixelFormat: String?
    @Option(help: "Codec: h264, hevc, prores422, mjpeg.") var codec: String = "h264"
    @Option(help: "Average bit rate in bits per second; default: the encoder's quality default.") var bitRate: Int?
    @Option(help: "Encoder preset (x264/x265).") var preset: String = "ultrafast"
    @Option(help: "Nominal frame rate when the camera does not report one.") var frameRate: Double = 30

    func run() async throws {
        try await Self.reporting { try await record() }
    }

    private func record() async throws {
        guard duration > 0 else { throw UserFacingError("--duration must be positive, not \(duration)") }
        guard let container = MovieContainer(pathExtension: (output as NSString).pathExtension) else {
            throw UserFacingError("cannot tell the container from \"\(output)\"; use a name ending in .mp4, .mov or .mkv")
        }
        guard let videoCodec = VideoCodec(rawValue: codec) else {
            throw UserFacingError("unknown codec \"\(codec)\"; allowed: \(VideoCodec.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        let requestedSize: PixelSize? = try size.map {
            guard let parsed = PixelSize(parsing: $0) else { throw UserFacingError("cannot read size \"\($0)\"; write it as WIDTHxHEIGHT, e.g. 1280x720") }
            return parsed
        }
        let requestedFormat = pixelFormat.map { PixelFormat($0) }

        let manager = try CameraManager.start()
        let cameras = manager.cameras
        guard let description = camera.map({ id in cameras.first { $0.id == id } }) ?? cameras.first else {
            if cameras.isEmpty { throw CameraError.noCameras(libcameraVersion: CameraManager.libcameraVersion) }
            throw CameraError.unknownCamera(id: camera ?? "", available: cameras.map(\.id))
        }
        try Self.check(description, format: requestedFormat, size: requestedSize)

        let device = try manager.acquire(id: description.id)
        defer { device.release() }
        let configuration = try device.configure([StreamRequest(role: .videoRecording, pixelFormat: requestedFormat,
                                                                size: requestedSize, bufferCount: 6)])
        guard configuration.status != .invalid, let stream = configuration.streams.first else {
            throw CameraError.invalidConfiguration(configuration.adjustments.joined(separator: "; "))
        }
        for adjustment in configuration.adjustments {
            Log.note("the camera adjusted the configuration: \(adjustment)")
        }
        Log.note("camera \"\(description.id)\": \(stream.pixelFormat) \(stream.size), stride \(stream.stride), \(stream.bufferCount) buffers")

        let nominalRate = description.frameRateRange?.upperBound ?? frameRate
        let copies = CopyCounter()
        let encoder = try LibavVideoEncoder(
            settings: VideoEncoderSettings(codec: videoCodec, size: stream.size, frameRate: nominalRate,
                                           averageBitRate: bitRate, preset: preset),
            input: stream.pixelFormat, copies: copies)
        var conversion = "frames converted from \(stream.pixelFormat) (one CPU copy per frame)"
        if let from = stream.pixelFormat.info, let to = PixelFormat.yuv420.info, !encoder.isZeroCopy {
            conversion += ", " + from.memoryCost(to: to, width: stream.size.width, height: stream.size.height)
        }
        Log.note("encoder \(encoder.name) (software, libavcodec) in \(encoder.encoderPixelFormat); "
                 + (encoder.isZeroCopy ? "frames wrapped without copying" : conversion))
        let writer = try MovieWriter(path: output, container: container, video: encoder.codecParameters)

        let frames = try device.start()
        let stopper = Stopper(camera: device)
        stopper.install()
        defer { stopper.uninstall() }

        let limit = Int64(duration * 1_000_000)
        var first: UInt64?
        var lastPTS: Int64 = -1
        var count = 0
        var lastSequence: UInt32?
        var skipped = 0
        var failure: Error?
        for await item in frames where item.stream == 0 {
            let frame = item.frame
            stopper.sawFrame()
            let start = first ?? frame.timestampNanoseconds
            first = start
            let pts = Int64(frame.timestampNanoseconds &- start) / 1000
            if pts >= limit { break }
            guard pts > lastPTS else { continue } // never a non-monotonic timestamp
            if let last = lastSequence, frame.sequence > last &+ 1 { skipped += Int(frame.sequence &- last &- 1) }
            lastSequence = frame.sequence
            lastPTS = pts
            do {
                for packet in try encoder.encode(frame, ptsMicroseconds: pts) { try writer.write(packet) }
            } catch {
                failure = error
                break
            }
            count += 1
        }
        try? device.stop()
        // Finalize whatever was recorded, even after a failure, so nothing is lost.
        for packet in (try? encoder.finish()) ?? [] { try? writer.write(packet) }
        try writer.finish()
        if let failure { throw failure }
        if let reason = stopper.reason { Log.note(reason) }
        guard count > 0 else { throw UserFacingError("the camera delivered no frames; \(output) holds none") }

        let seconds = Double(lastPTS) / 1e6
        let rate = count > 1 ? Double(count - 1) / seconds : 0
        print("recorded \(output): \(count) frames, \(stream.size) \(encoder.name), "
              + String(format: "%.3f s, %.2f fps", seconds + (rate > 0 ? 1 / rate : 0), rate)
              + ", camera skipped \(skipped) frames, CPU copies per frame \(String(format: "%.2f", copies.copiesPerFrame))")
    }

    /// Refuses a pixel format or size the camera does not offer, listing what it does.
    static func check(_ camera: CameraDescription, format: PixelFormat?, size: PixelSize?) throws {
        let formats = camera.formats[.videoRecording] ?? []
        var candidates = formats
        if let format {
            candidates = formats.filter { $0.pixelFormat == format }
            if candidates.isEmpty { throw CameraError.unsupportedPixelFormat(format, available: formats.map(\.pixelFormat)) }
        }
        if let size, !candidates.contains(where: { $0.contains(size) }) {
            let available = candidates.map { "\($0.pixelFormat) \($0.rangeDescription)" }.joined(separator: "; ")
            throw CameraError.unsupportedSize(size, format: format ?? candidates.first?.pixelFormat ?? .nv12, available: available)
        }
    }
}

/// Stops the camera on SIGINT/SIGTERM or when frames stop arriving, so the
/// recording loop ends and the file is finalized.
final class Stopper: Sendable {
    let camera: Camera
    private let state = Mutex<(reason: String?, lastFrame: ContinuousClock.Instant, sources: [any DispatchSourceSignal])>(
        (nil, .now, []))
    private let watchdog = Mutex<Task<Void, Never>?>(nil)

    init(camera: Camera) { self.camera = camera }

    var reason: String? { state.withLock { $0.reason } }
    func sawFrame() { state.withLock { $0.lastFrame = .now } }

    func stop(_ reason: String) {
        state.withLock { if $0.reason == nil { $0.reason = reason } }
        try? camera.stop()
    }

    func install() {
        var sources: [any DispatchSourceSignal] = []
        for signal in [SIGINT, SIGTERM] {
            Foundation.signal(signal, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signal, queue: .global())
            source.setEventHandler { [self] in self.stop("stopped by signal \(signal); the recording was finalized") }
            source.resume()
            sources.append(source)
        }
        state.withLock { $0.sources = sources }
        let task = Task { [self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(1))
                let quiet = state.withLock { ContinuousClock.now - $0.lastFrame }
                if quiet > .seconds(10) {
                    stop("the camera delivered no frame for 10 s; stopped and finalized the recording")
                    return
                }
            }
        }
        watchdog.withLock { $0 = task }
    }

    func uninstall() {
        watchdog.withLock { $0?.cancel() }
        state.withLock { s in s.sources.forEach { $0.cancel() } }
    }
}
