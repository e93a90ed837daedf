import ArgumentParser
import ObscuraCommandLine
import Foundation
import ObscuraSystem
import ObscuraCamera
import ObscuraCapture
import ObscuraMedia
#if canImport(Glibc)
import Glibc
#endif

struct StreamCommand: AsyncParsableCommand {
    static let configuration = CommandDescriptions.stream

    @Option(help: "Camera id; default: the first camera.") var camera: String?
    @Option(help: "Frame size, e.g. 1280x720; default: the camera's for the preset.") var size: String?
    @Option(help: "Preset: high, photo, hd1920x1080, hd1280x720, vga640x480.") var preset: String = "high"
    @Option(help: "Stop after this many frames.") var frames: Int?
    @Option(help: "Stop after this many seconds.") var duration: Double?
    @Option(parsing: .upToNextOption, help: "Controls to set, NAME=VALUE (Brightness, Contrast, Saturation, ExposureValue, …).")
    var set: [String] = []
    @Flag(help: "Print every metadata entry of each frame.") var metadata = false
    @Flag(help: "Print nothing per frame (events and the summary only).") var quiet = false
    @Flag(help: "Print the mean sample value of each frame's first plane.") var stats = false
    @Option(help: "Write each frame's pixels (NV12 or YUV 4:2:0, rows packed) to FILE (.yuv, .nv12 or .raw), - for standard output (the lines then go to standard error): a pipe into another program, e.g. ffmpeg -f rawvideo -pix_fmt nv12.")
    var rawOutput: String?
    @Option(help: ArgumentHelp("Hold this many frames across two reconfigurations while running and check their pixels.", valueName: "frames"))
    var holdAcrossReconfiguration: Int?

    func validate() throws {
        try Options.check {
            try Limits.frameCount.check(ifGiven: frames, "--frames")
            try Limits.runSeconds.check(ifGiven: duration, "--duration")
            try Limits.frameCount.check(ifGiven: holdAcrossReconfiguration, "--hold-across-reconfiguration")
            if let size { _ = try Options.size(size, "--size") }
            try Options.choice(preset, ["high", "photo", "hd1920x1080", "hd1280x720", "vga640x480"], "--preset")
            for assignment in set {
                let parts = assignment.split(separator: "=", maxSplits: 1).map(String.init)
                guard parts.count == 2 else {
                    throw UserFacingError("--set: cannot read \"\(assignment)\"; write NAME=VALUE, e.g. Brightness=0.5")
                }
                try Options.choice(parts[0], ["Brightness", "Contrast", "Saturation", "ExposureValue", "LensPosition", "Zoom"], "--set")
                guard let value = Double(parts[1]), value.isFinite else {
                    throw UserFacingError("--set: \(parts[0])'s value \"\(parts[1])\" is not a finite number")
                }
            }
            if frames == nil && duration == nil { throw UserFacingError("give --frames or --duration") }
            if let rawOutput, rawOutput != "-" { try Options.outputFile(rawOutput, "--raw-output", extensions: ["yuv", "nv12", "raw"]) }
        }
    }

    func run() async throws {
        try await Self.reporting { try await stream() }
    }

    private func stream() async throws {
        guard frames != nil || duration != nil else { throw UserFacingError("give --frames or --duration") }
        let device = try CameraChoice.device(camera)
        let raw = try rawOutput.map { try RawFrameWriter(path: $0) }
        // The raw frames' writes block on the reader (a pipe): on a thread of their own, never Swift's pool.
        let rawThread = try raw.map { _ in try ThreadExecutor(name: "obscura-raw-out") }
        defer { rawThread?.shutDown() }
        let session = CaptureSession(log: { Log.note($0) })
        let output = VideoDataOutput(alwaysDiscardsLateVideoFrames: false, queueDepth: 2)
        session.beginConfiguration()
        try session.addInput(CaptureDeviceInput(device: device))
        try session.addOutput(output)
        if let size {
            guard let parsed = PixelSize(parsing: size) else { throw UserFacingError("cannot read size \"\(size)\"; write it as WIDTHxHEIGHT") }
            let offered = device.formats.filter { $0.dimensions == parsed && !$0.isRaw }
            let chosen = offered.first { $0.pixelFormat == .nv12 } ?? offered.first
            guard let chosen else {
                let sizes = Set(device.formats.map(\.dimensions)).sorted().map(\.description)
                throw UserFacingError("\(device) does not offer \(parsed); sizes: \(sizes.joined(separator: " "))")
            }
            try device.withConfigurationLock { try $0.setActiveFormat(chosen) }
            try session.setSessionPreset(.inputPriority)
        } else {
            guard let p = CaptureSession.Preset(rawValue: preset), p != .inputPriority else {
                throw UserFacingError("unknown preset \"\(preset)\"; allowed: high, photo, hd1920x1080, hd1280x720, vga640x480")
            }
            try session.setSessionPreset(p)
        }
        try session.commitConfiguration()
        try applyControls(device)

        let events = session.events()
        let eventTask = Task {
            for await event in events {
                Log.output("event \(event) uptime=\(String(format: "%.3f", Self.uptime()))")
            }
        }
        try session.startRunning()
        if let configuration = session.activeConfiguration, let stream = configuration.streams.first {
            Log.output("stream \(stream.pixelFormat) \(stream.size) buffers=\(stream.bufferCount)")
        }
        let limit = frames ?? Int.max
        let deadline = duration.map { ContinuousClock.now + .checkedSeconds($0) }
        let stopper = Task {
            if let deadline {
                try? await Task.sleep(until: deadline)
                output.queue.close()
            }
        }
        var count = 0
        let check = holdAcrossReconfiguration.map { HeldFrameCheck(holding: $0, session: session, preset: session.sessionPreset) }
        for await frame in output.frames {
            count += 1
            try check?.step(frame)
            if let raw, let rawThread {
                try await Task.detached(executorPreference: rawThread) { try raw.write(frame) }.value
            }
            if !quiet { Log.output(describe(frame)) }
            if count >= limit { break }
        }
        stopper.cancel()
        if session.state != .stopped { try session.stopRunning() }
        try await Task.sleep(for: .milliseconds(50))
        eventTask.cancel()
        if let check, !check.finished { Log.output("the reconfiguration check did not finish: give it more frames") }
        Log.output("delivered \(count) frames, dropped \(output.droppedFrameCount), still held \(device.outstandingFrames)")
        if let raw { Log.output("raw output: \(raw.copies.copies) frames, one CPU copy each (\(raw.copies.bytes) bytes)") }
    }

    /// Frames' pixels, rows packed, one frame after another (what ffmpeg's
    /// rawvideo reads): one CPU copy of each frame, counted.
    struct RawFrameWriter: Sendable {
        let fd: Int32
        let owner: OwnedFileDescriptor?
        let copies = CopyCounter()

        init(path: String) throws {
            if path == "-" {
                fd = STDOUT_FILENO
                owner = nil
                Log.outputToStandardError()
            } else {
                let file = try Syscalls.open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
                fd = file.rawValue
                owner = file
            }
        }

        func write(_ frame: VideoFrame) throws {
            guard frame.format == .nv12 || frame.format == .yuv420 else {
                throw UserFacingError("--raw-output writes NV12 or YUV 4:2:0 frames, not \(frame.format); give --size for a size the camera offers in NV12")
            }
            var bytes: [UInt8] = []
            bytes.reserveCapacity(frame.size.area * 3 / 2)
            frame.withCPUAccess { planes in
                for (index, plane) in planes.enumerated() {
                    let rowBytes = index == 0 || frame.format == .nv12 ? frame.size.width : frame.size.width / 2
                    let rows = index == 0 ? frame.size.height : frame.size.height / 2
                    for row in 0..<rows {
                        bytes.append(contentsOf: UnsafeRawBufferPointer(start: plane.base + row * plane.stride, count: rowBytes))
                    }
                }
            }
            copies.recordCopy(bytes: bytes.count)
            try Syscalls.writeAll(fd, bytes, path: fd == STDOUT_FILENO ? "standard output" : "--raw-output")
        }
    }

    /// The --set controls (NAME=VALUE) on the camera.
    private func applyControls(_ device: CaptureDevice) throws {
        try device.withConfigurationLock { d in
            for assignment in set {
                let parts = assignment.split(separator: "=", maxSplits: 1).map(String.init)
                guard parts.count == 2, let value = Double(parts[1]) else {
                    throw UserFacingError("cannot read control \"\(assignment)\"; write NAME=VALUE, e.g. Brightness=0.5")
                }
                switch parts[0] {
                case "Brightness": try d.setImageAdjustment(.brightness, value)
                case "Contrast": try d.setImageAdjustment(.contrast, value)
                case "Saturation": try d.setImageAdjustment(.saturation, value)
                case "ExposureValue": try d.setExposureTargetBias(value)
                case "LensPosition": try d.setLensPosition(value)
                case "Zoom": try d.setVideoZoomFactor(value)
                default:
                    throw UserFacingError("unknown control \"\(parts[0])\"; allowed: Brightness, Contrast, Saturation, ExposureValue, LensPosition, Zoom")
                }
            }
        }

    }

    /// One frame's line: sequence, timestamp, format, size, and the metadata
    /// and mean luma when asked for.
    private func describe(_ frame: VideoFrame) -> String {
        var line = "frame seq=\(frame.sequence) ts=\(frame.timestampNanoseconds) \(frame.format) \(frame.size)"
        if metadata {
            func show(_ values: [String: [Double]]) -> String {
                values.sorted { $0.key < $1.key }
                    .map { "\($0.key)=\($0.value.map { String($0) }.joined(separator: ","))" }.joined(separator: " ")
            }
            line += " " + show(frame.metadata.values)
            if !frame.metadata.requestControls.isEmpty { line += " requested: " + show(frame.metadata.requestControls) }
        }
        if stats { line += String(format: " mean=%.1f", Self.mean(frame)) }
        return line
    }

    /// Holds frames across an output added while running, then across a
    /// preset change, and reports whether their pixels stayed as they were.
    final class HeldFrameCheck {
        let holding: Int
        let session: CaptureSession
        let first: CaptureSession.Preset
        private var held: [(frame: VideoFrame, digest: UInt64)] = []
        private var previous: [(frame: VideoFrame, digest: UInt64)] = []
        private var phase = 0
        private var countdown = 0
        private(set) var finished = false

        init(holding: Int, session: CaptureSession, preset: CaptureSession.Preset) {
            self.holding = max(1, holding)
            self.session = session
            first = preset
        }

        private var other: CaptureSession.Preset { first == .hd1280x720 ? .vga640x480 : .hd1280x720 }

        private func report(_ frames: [(frame: VideoFrame, digest: UInt64)], _ what: String) {
            let intact = frames.filter { $0.frame.pixelDigest() == $0.digest }.count
            let sequences = frames.map { String($0.frame.sequence) }.joined(separator: ",")
            Log.output("held \(frames.count) frames (seq \(sequences)) across \(what): \(intact) intact")
        }

        func step(_ frame: VideoFrame) throws {
            switch phase {
            case 0:  // hold, then add an output
                held.append((frame, frame.pixelDigest()))
                if held.count == holding {
                    try session.addOutput(VideoDataOutput(alwaysDiscardsLateVideoFrames: true))
                    Log.output("added an output while running")
                    phase = 1
                    countdown = 10
                }
            case 1:  // frames flow again: check, then hold frames of the new configuration
                countdown -= 1
                if countdown > 0 { return }
                report(held, "an added output")
                previous = held
                held = []
                phase = 2
            case 2:
                held.append((frame, frame.pixelDigest()))
                if held.count == holding {
                    previous = []  // the first configuration's frames go back now
                    try session.setSessionPreset(other)
                    Log.output("preset \(first.rawValue) → \(other.rawValue) while running")
                    phase = 3
                    countdown = 10
                }
            case 3:
                countdown -= 1
                if countdown > 0 { return }
                report(held, "a preset change")
                held = []
                phase = 4
                finished = true
            default:
                return
            }
        }
    }

    /// Mean of every 61st sample of the first plane (under the CPU-access bracket).
    static func mean(_ frame: VideoFrame) -> Double { frame.meanOfFirstPlane(every: 61) }

    static func uptime() -> Double { Syscalls.bootSeconds() }
}
