import ArgumentParser
import ObscuraCommandLine
import Dispatch
import Foundation
import ObscuraAge
import ObscuraAudio
import ObscuraCamera
import ObscuraCapture
import ObscuraEncoding
import ObscuraMedia
import ObscuraMuxing
import ObscuraOverlay
import ObscuraPreview
import ObscuraRecording
import ObscuraService
import ObscuraSystem
import struct Synchronization.Atomic

struct RecordCommand: AsyncParsableCommand {
    static let configuration = CommandDescriptions.record

    @Option(help: "Seconds to record (by the camera's timestamps).") var duration: Double
    @Option(help: "Output file (.mp4, .mov or .mkv; encrypted: .mp4.age, …).") var output: String
    @Option(help: "Encrypt the file as it is written to this age recipient (age1…, age-keygen's public key); repeatable. The output's name ends in .age.")
    var recipient: [String] = []
    @Option(help: "Encrypt to the age recipients in this file (one age1… per line, as `age -R` reads it).") var recipientsFile: String?
    @Flag(help: "Encrypted: end each fragment (MKV: cluster) on one of age's 64 KiB chunks, with filler between, so that `age -d` of a killed recording gives whole fragments (unless the kill cut the write of one). Costs filler (see BENCHMARKS.md).")
    var alignToAgeChunks = false
    @Option(help: "Write each frame's time (milliseconds from the first, in stored order) to this .txt file, in mkvmerge's timestamp format v2: what an elementary stream needs to be muxed later.")
    var timestamps: String?
    @Flag(help: "Burn a caption into the frames: the date and time of each frame (its sensor timestamp on the wall clock) and the camera's name.")
    var overlay = false
    @Option(help: "With --overlay: a text of one's own on the caption's second line.") var overlayText: String?
    @Option(help: "With --overlay: top-left (the default), top-right, bottom-left or bottom-right.") var overlayPosition: String?
    @Option(help: "With --overlay: the text's height in pixels; default a 24th of the frame's height.") var overlaySize: Int?
    @Option(help: "With --overlay: the text's colour, #rrggbb or white (the default), black, yellow, red, green, blue.") var overlayColour: String?
    @Option(help: "With --overlay: box (an opaque box behind the text, the default) or outline (a dark edge around each glyph).") var overlayBackground: String?
    @Option(help: "With --overlay: a TrueType font file (default \(OverlaySettings.defaultFont)).") var overlayFont: String?
    @Flag(help: "With --overlay and --preview: the preview shows the caption too.") var overlayOnPreview = false
    @Option(help: "Container: mp4, mov or mkv; default: from the output's extension.") var container: String?
    @Option(help: "Camera id (see `obscura devices`), or synthetic; default: the first camera.") var camera: String?
    @Option(help: "Frame size, e.g. 1280x720; default: the camera's for the preset.") var size: String?
    @Option(help: "Camera pixel format, by name or fourcc, e.g. NV12 or BGR888 (BG24); default: NV12 when offered.") var pixelFormat: String?
    @Option(help: "Codec: h264, hevc, prores422, mjpeg.") var codec: String = "h264"
    @Option(help: "Average bit rate in bits per second; default: the encoder's quality default.") var bitRate: Int?
    @Option(help: "Encoder preset (x264/x265).") var preset: String = "ultrafast"
    @Option(help: "Encoder threads; 0: the encoder decides.") var threads: Int = 0
    @Option(help: "Frame rate: the camera is set to it when it has a frame-rate control (refused outside the format's range), and the encoder plans for it. Default: the camera's own rate (30 when it does not say).")
    var frameRate: Double?
    @Option(help: "Most frames from one keyframe to the next; default: one second of frames.") var keyframeInterval: Int?
    @Option(help: "Seconds per fragment (MKV: per cluster), each synced to the storage when complete: shorter loses less at a power cut and writes the storage more often.")
    var fragment: Double = 0.5
    @Option(help: "Stop when the file reaches this many bytes.") var maxSize: Int?
    @Option(help: "Start a new file every this many seconds, at a keyframe (clip-0001.mp4, …).") var segment: Double?
    @Option(help: "Stop when the disk has less free space than this many bytes.") var minFreeSpace: Int = 32 << 20
    @Option(help: "Seconds of video before the trigger to keep (encoded, in memory).") var preRecord: Double?
    @Option(help: "With --pre-record: seconds from start to the trigger (default: the pre-record time); SIGUSR1 triggers earlier.") var triggerAfter: Double?
    @Option(help: "With --pre-record: memory for the buffer, in bytes.") var preRecordBytes: Int = 64 << 20
    @Flag(help: "Show the camera on a display through KMS while recording (headless when there is none).") var preview = false
    @Option(help: "Encoder: auto (a V4L2 hardware encoder, else libavcodec), v4l2m2m (hardware only) or software.") var encoder: String = "auto"
    @Option(help: "Save the first frame as PPM (to compare with what was recorded).") var saveFrame: String?
    @Option(help: "What records: movie-output, or asset-writer (a video data output's frames appended to an asset writer: the same encoders and files, no sound, segments or pre-record).")
    var through: String = "movie-output"
    @Option(help: "Audio: an ALSA capture device (see `obscura devices`), auto (the first) or none. Without a usable device the recording is video only.")
    var audio: String = "none"
    @Option(help: "Audio codec: aac (mp4, mov, mkv) or opus (mkv).") var audioCodec: String = "aac"
    @Option(help: "Audio sample rate in Hz.") var audioRate: Int = 48_000
    @Option(help: "Audio channels.") var audioChannels: Int = 1
    @Option(help: "Audio bit rate in bits per second.") var audioBitRate: Int = 96_000

    func run() async throws {
        Log.keepGoingWithoutReaders()
        try await Self.reporting { try await record() }
    }

    /// Every option's value, checked before anything starts.
    func validate() throws {
        try Options.check {
            try Limits.recordingSeconds.check(duration, "--duration")
            try Limits.bitRate.check(ifGiven: bitRate, "--bit-rate")
            try Limits.encoderThreads.check(threads, "--threads")
            try Limits.frameRate.check(ifGiven: frameRate, "--frame-rate")
            try Limits.keyframeInterval.check(ifGiven: keyframeInterval, "--keyframe-interval")
            try Limits.fragmentSeconds.check(fragment, "--fragment")
            try Limits.fileBytes.check(ifGiven: maxSize, "--max-size")
            try Limits.segmentSeconds.check(ifGiven: segment, "--segment")
            try Limits.freeSpaceBytes.check(minFreeSpace, "--min-free-space")
            try Limits.preRecordSeconds.check(ifGiven: preRecord, "--pre-record")
            try Limits.delaySeconds.check(ifGiven: triggerAfter, "--trigger-after")
            try Limits.bufferBytes.check(preRecordBytes, "--pre-record-bytes")
            try Limits.sampleRate.check(audioRate, "--audio-rate")
            try Limits.channels.check(audioChannels, "--audio-channels")
            try Limits.audioBitRate.check(audioBitRate, "--audio-bit-rate")
            if let size { _ = try Options.size(size, "--size") }
            if let pixelFormat { _ = try Options.fourcc(pixelFormat, "--pixel-format") }
            try Options.choice(codec, VideoCodec.allCases.map(\.rawValue), "--codec")
            try Options.choice(encoder, ["auto", "v4l2m2m", "hardware", "software", "libavcodec"], "--encoder")
            try Options.choice(through, ["movie-output", "asset-writer"], "--through")
            try Options.choice(audioCodec, AudioCodec.allCases.map(\.rawValue), "--audio-codec")
            if [VideoCodec.h264.rawValue, VideoCodec.hevc.rawValue].contains(codec) {
                try Options.choice(preset, ["ultrafast", "superfast", "veryfast", "faster", "fast", "medium", "slow", "slower", "veryslow", "placebo"], "--preset")
            }
            if let container { try Options.choice(container, MovieContainer.allCases.map(\.rawValue), "--container") }
            let recipients = try Options.recipients(recipient, file: recipientsFile)
            let plainOutput = try Options.encryptedName(output, "--output", encrypted: !recipients.isEmpty)
            if alignToAgeChunks, recipients.isEmpty {
                throw UserFacingError("--align-to-age-chunks: only an encrypted recording has age chunks; give --recipient or --recipients-file too")
            }
            let fileType = try container.flatMap(MovieContainer.init(rawValue:)) ?? {
                guard let fromName = MovieContainer(path: plainOutput) else {
                    throw UserFacingError("--output: cannot tell the container from \"\(output)\"; use a name ending in .mp4, .mov or .mkv (or .h264/.fwht for an elementary stream), or --container")
                }
                return fromName
            }()
            try Options.outputFile(plainOutput, "--output", extensions: fileType.pathExtensions)
            if let saveFrame { try Options.outputFile(saveFrame, "--save-frame", extensions: ["ppm"]) }
            _ = try overlaySettings(cameraName: nil)
            if overlayOnPreview, !overlay || !preview { throw UserFacingError("--overlay-on-preview needs --overlay and --preview") }
            if overlay, through == "asset-writer" { throw UserFacingError("--overlay captions the movie output's frames; not with --through asset-writer") }
            if let timestamps { try Options.outputFile(timestamps, "--timestamps", extensions: ["txt"]) }
            if triggerAfter != nil, preRecord == nil { throw UserFacingError("--trigger-after needs --pre-record") }
            if codec == VideoCodec.fwht.rawValue, fileType != .elementary {
                throw UserFacingError("--codec fwht has no container; write it as an elementary stream (a name ending in .fwht)")
            }
            if audio != "none", audioCodec == AudioCodec.opus.rawValue, fileType != .mkv {
                throw UserFacingError("--audio-codec opus goes only in mkv files; use aac for \(fileType.rawValue)")
            }
        }
    }

    private func record() async throws {
        let fileType = container.flatMap(MovieContainer.init(rawValue:)) ?? MovieContainer(path: output)!
        let recipients = try Options.recipients(recipient, file: recipientsFile)
        let videoCodec = VideoCodec(rawValue: codec)!
        let encoders: [EncoderKind] = switch encoder {
        case "v4l2m2m", "hardware": [.hardware]
        case "software", "libavcodec": [.software]
        default: [.hardware, .software]
        }
        let requestedSize = try size.map { try Options.size($0, "--size") }
        let device = try CameraChoice.device(camera)
        let chosen = try CameraChoice.applyFormat(device, format: try pixelFormat.map { try Options.fourcc($0, "--pixel-format") }, size: requestedSize)

        if let allowed = videoCodec.requiredInputs {
            let active = device.activeFormat?.pixelFormat
            guard let active, allowed.contains(active) else {
                throw EncoderError.codecNeedsFormat(videoCodec, given: active ?? device.formats.first?.pixelFormat ?? .nv12, allowed: allowed)
            }
        }
        switch through {
        case "movie-output": break
        default:  // asset-writer
            guard preRecord == nil, segment == nil, audio == "none", saveFrame == nil, !preview, maxSize == nil else {
                throw UserFacingError("--through asset-writer records video only: it takes no --pre-record, --segment, --audio, --save-frame, --preview or --max-size")
            }
            return try await recordThroughAssetWriter(device, chosen: chosen, fileType: fileType, codec: videoCodec, encoders: encoders)
        }
        let movie = MovieFileOutput()
        movie.maxRecordedDuration = .checkedSeconds(duration)
        movie.maxRecordedFileSize = maxSize
        if let segment { movie.segmentDuration = .checkedSeconds(segment) }
        movie.minFreeDiskSpace = minFreeSpace
        let (session, grab, previewOutput) = try makeSession(device, chosen: chosen, movie: movie)
        let settings = try movieSettings(device, fileType: fileType, recipients: recipients, codec: videoCodec, encoders: encoders)
        let signals = SignalStop { movie.stopRecording() }
        defer { signals.cancel() }
        if let preRecord {
            try await preRecordUntilTriggered(preRecord, movie, session, device, settings, signals)
        }
        try Self.checkLeftover(output + ".partial")
        let events = try movie.startRecording(to: output, settings: settings)
        if preRecord == nil {
            try session.startRunning()
            logStream(session, device)
        }

        let summary = try await follow(events, movie, grab, device, settings)
        movie.disarmPreRecording()
        if session.isRunning || session.isInterrupted { try session.stopRunning() }
        if let previewOutput {
            previewOutput.stop()
            PreviewCommand.summary(previewOutput)
        }
        guard let (reason, p) = summary else { throw UserFacingError("the recording ended without a result") }
        if let why = signals.reason { Log.note(why) }
        for note in p.fileNotes { Log.note(note) }
        if p.frames == 0, case .error(let why) = reason { throw UserFacingError("nothing recorded: \(why)") }
        if p.frames == 0, case .encoderFailed(let why) = reason { throw UserFacingError("nothing recorded: \(why)") }
        if p.frames == 0, reason == .diskFull { throw UserFacingError("nothing recorded: the disk is full; no file was kept") }
        guard p.frames > 0 else { throw UserFacingError("the camera delivered no frames; \(output) holds none (\(reason))") }
        report(p, reason, settings, session)
        switch reason {
        case .stopped, .maximumDurationReached, .maximumFileSizeReached: break
        default: throw ExitCode(3)
        }
    }

    /// The session: the camera, the movie output, a frame grabber for
    /// --save-frame, the preview, the microphone.
    private func makeSession(_ device: CaptureDevice, chosen: Bool, movie: MovieFileOutput) throws
        -> (CaptureSession, VideoDataOutput, PreviewOutput?) {
        let session = CaptureSession(log: { Log.note($0) })
        session.beginConfiguration()
        try session.addInput(CaptureDeviceInput(device: device))
        try session.addOutput(movie)
        let grab = VideoDataOutput(pixelFormat: .bgr888, convertsToRequestedFormat: true)
        if saveFrame != nil { try session.addOutput(grab) }
        var previewOutput: PreviewOutput?
        if preview {
            let output = try PreviewOutput(caption: overlayOnPreview ? try overlaySettings(cameraName: device.localizedName) : nil,
                                           log: { Log.note($0) })
            try session.addOutput(output)
            previewOutput = output
        }
        try session.setSessionPreset(chosen ? .inputPriority : .high)
        try session.commitConfiguration()
        if audio != "none" {
            do {
                let input = try AudioDeviceInput(device: audio, format: AudioFormat(sampleRate: audioRate, channels: audioChannels))
                try session.addInput(input)
                Log.note("audio from \(input.deviceName): \(input.format), \(input.periodFrames)-frame periods")
            } catch {
                Log.note("audio: \(error); recording video only")
            }
        }

        return (session, grab, previewOutput)
    }

    /// What the options ask of the recording.
    private func movieSettings(_ device: CaptureDevice, fileType: MovieContainer, recipients: [AgeRecipient],
                               codec videoCodec: VideoCodec, encoders: [EncoderKind]) throws -> MovieSettings {
        var settings = MovieSettings()
        settings.codec = videoCodec
        settings.averageBitRate = bitRate
        settings.preset = preset
        settings.threads = threads
        settings.nominalFrameRate = try Self.applyFrameRate(frameRate, to: device)
        settings.maxKeyFrameInterval = keyframeInterval
        settings.fragmentDuration = .checkedSeconds(fragment)
        settings.container = fileType
        settings.recipients = recipients
        settings.alignsFragmentsToAgeChunks = alignToAgeChunks
        settings.overlay = try overlaySettings(cameraName: device.localizedName)
        settings.timestampsFile = timestamps
        settings.encoders = encoders
        settings.audio = AudioEncoderSettings(codec: AudioCodec(rawValue: audioCodec)!, bitRate: audioBitRate)

        return settings
    }

    /// --pre-record: the buffer armed and the camera started; returns at
    /// the trigger (after --trigger-after, or SIGUSR1).
    private func preRecordUntilTriggered(_ preRecord: Double, _ movie: MovieFileOutput, _ session: CaptureSession,
                                         _ device: CaptureDevice, _ settings: MovieSettings, _ signals: SignalStop) async throws {
            try movie.armPreRecording(duration: .checkedSeconds(preRecord), byteLimit: preRecordBytes, settings: settings)
        try session.startRunning()
        logStream(session, device)
        let trigger = SignalTrigger(SIGUSR1)
        defer { trigger.cancel() }
        let wait = triggerAfter ?? preRecord
        Log.note(String(format: "pre-recording %.1f s; trigger in %.1f s or on SIGUSR1", preRecord, wait))
        let until = ContinuousClock.now + .checkedSeconds(wait)
        while ContinuousClock.now < until, !trigger.fired, signals.reason == nil {
            try await Task.sleep(for: .milliseconds(20))
        }
        if signals.reason != nil {
            if session.isRunning || session.isInterrupted { try session.stopRunning() }
            throw UserFacingError("stopped before the trigger; nothing recorded")
        }
        let held = movie.preRecordStatus
        Log.note(String(format: "triggered; the buffer holds %.2f s (%d frames, %d KiB)", held.held.seconds, held.frames, held.bytes / 1024))
    }

    /// The recording's events, to its end: progress on the terminal, the
    /// frame saved, the pace followed. Returns how it finished.
    private func follow(_ events: AsyncStream<RecordingEvent>, _ movie: MovieFileOutput, _ grab: VideoDataOutput,
                        _ device: CaptureDevice, _ settings: MovieSettings) async throws
        -> (reason: RecordingFinishReason, progress: RecordingProgress)? {
        var summary: (reason: RecordingFinishReason, progress: RecordingProgress)?
        // (A recorder that cannot keep up steps the rate down, as the service does.)
        var pace = RecordingPace(device: device, nominal: settings.nominalFrameRate)
        var durableSaid = false
        for await event in events {
            switch event {
            case .started:
                let p = movie.progress
                Log.note("encoder \(p.encoder); frames \(p.path) [\(p.encoderChoice)]")
                if let zero = p.timeZeroNanoseconds { Log.note("file opened: time zero \(zero) ns (CLOCK_MONOTONIC)") }
                if let saveFrame {
                    for await frame in grab.frames {
                        try FrameFile.writePPM(saveFrame, frame: frame)
                        Log.note("frame saved: \(saveFrame)")
                        break
                    }
                    grab.queue.setAccepting(false)
                }
            case .segmentFinished(let path):
                Log.note("segment finished: \(path)")
            case .encoderRetuned(let said):
                Log.note("encoder \(said)")
            case .progress(let p):
                if !durableSaid, let durable = p.firstFramesDurableNanoseconds {
                    durableSaid = true
                    Log.note("first frames on the storage: \(durable) ns (CLOCK_MONOTONIC)")
                }
                Log.status(String(format: "recording %.1f s, %d frames, %d KiB, %.1f fps, dropped %d, camera to file ≤ %.2f s (to the encoder %.2f s)",
                                  p.duration.seconds, p.frames, p.bytes / 1024, p.frameRate, p.droppedFrames,
                                  p.cameraToFile.seconds, p.cameraToEncoder.seconds))
                do {
                    switch try pace.follow(frames: p.frames, dropped: p.droppedFrames, device: device, movie: movie) {
                    case .down(let said)?, .up(let said)?: Log.note(said)
                    case nil: break
                    }
                } catch {
                    Log.note("camera \(device.uniqueID): cannot set another frame rate: \(error)")
                }
            case .finished(_, let reason, let p):
                Log.endStatus()
                summary = (reason, p)
            }
        }
        return summary
    }

    /// The result line on standard output; time zero and the caption's on standard error.
    private func report(_ p: RecordingProgress, _ reason: RecordingFinishReason, _ settings: MovieSettings, _ session: CaptureSession) {
        let length = p.duration.seconds + (p.frameRate > 0 ? 1 / p.frameRate : 0)
        Log.output("recorded \(output): \(p.frames) frames, \(p.size.map(\.description) ?? "?") \(p.encoder), "
              + String(format: "%.3f s, %.2f fps", length, p.frameRate)
              + ", \(p.bytes / 1024) KiB, camera skipped \(p.skippedFrames) frames, dropped \(p.droppedFrames)"
              + (p.thinnedFrames > 0 ? ", left out for the pace \(p.thinnedFrames)" : "")
              + ", CPU copies per frame \(String(format: "%.2f", p.copiesPerFrame))"
              + String(format: ", encoder CPU %.2f ms per frame", p.frames == 0 ? 0 : p.encoderCPU.seconds * 1000 / Double(p.frames))
              + (preRecord != nil ? String(format: ", pre-roll %.3f s", p.preRoll.seconds) : "")
              + (p.audio.isEmpty ? "" : ", audio \(p.audio) (\(p.audioPackets) packets, drift corrected by \(p.audioCompensatedSamples) samples, \(p.audioDrops) periods dropped, \(session.audioInput?.overruns ?? 0) overruns)")
              + ", finished: \(reason)")
        if let zero = p.timeZeroNanoseconds {
            Log.note("time zero: \(zero) ns (CLOCK_MONOTONIC)")
            if overlay {
                let format = ISO8601DateFormatter()
                format.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
                let wall = SystemClock.wallClock(ofMonotonic: zero)
                Log.note(String(format: "overlay: time zero is %.6f s on the wall clock (%@); drawn in place on %d frames, on copies of %d",
                                wall.timeIntervalSince1970, format.string(from: wall), p.overlayInPlace, p.overlayCopied)
                         + "; caption's camera name \"\(settings.overlay?.cameraName ?? "")\"")
            }
        }
    }

    /// The caption asked for (nil without --overlay); errors name the option.
    func overlaySettings(cameraName: String?) throws -> OverlaySettings? {
        var o = OverlaySettings()
        o.text = overlayText ?? ""
        o.cameraName = cameraName
        if let overlayPosition {
            guard let position = OverlaySettings.Position(rawValue: overlayPosition) else {
                throw UserFacingError("--overlay-position: \"\(overlayPosition)\" is not allowed; allowed: \(OverlaySettings.Position.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            o.position = position
        }
        if let overlaySize {
            guard OverlaySettings.sizes.contains(overlaySize) else {
                throw UserFacingError("--overlay-size: \(overlaySize) is outside \(OverlaySettings.sizes.lowerBound)…\(OverlaySettings.sizes.upperBound) pixels")
            }
            o.size = overlaySize
        }
        if let overlayColour {
            guard let colour = RGB(parsing: overlayColour) else {
                throw UserFacingError("--overlay-colour: \"\(overlayColour)\" is not a colour; write #rrggbb or one of \(RGB.named.keys.sorted().joined(separator: ", "))")
            }
            o.colour = colour
        }
        if let overlayBackground {
            guard let background = OverlaySettings.Background(rawValue: overlayBackground) else {
                throw UserFacingError("--overlay-background: \"\(overlayBackground)\" is not allowed; allowed: box, outline")
            }
            o.background = background
        }
        if let overlayFont {
            guard FileManager.default.isReadableFile(atPath: overlayFont) else {
                throw UserFacingError("--overlay-font: cannot read \(overlayFont) (a TrueType font; Debian's fonts-dejavu-core has \(OverlaySettings.defaultFont))")
            }
            o.font = overlayFont
        }
        guard overlay else {
            let given = [("--overlay-text", overlayText != nil), ("--overlay-position", overlayPosition != nil), ("--overlay-size", overlaySize != nil),
                         ("--overlay-colour", overlayColour != nil), ("--overlay-background", overlayBackground != nil), ("--overlay-font", overlayFont != nil)]
                .filter(\.1).map(\.0)
            if let first = given.first { throw UserFacingError("\(first) needs --overlay") }
            return nil
        }
        return o
    }

    /// A `.partial` left by a recording that was killed: one with no frame
    /// is removed (and said); one with frames is a recording that plays, and
    /// is not overwritten.
    static func checkLeftover(_ partial: String) throws {
        guard FileManager.default.fileExists(atPath: partial) else { return }
        guard let held = MovieReader.countPackets(partial), held.video > 0 else {
            try Syscalls.remove(partial)
            Log.note("removed \(partial): left by an interrupted recording, with no frame in it")
            return
        }
        throw UserFacingError("\(partial) holds \(held.video) frames of an interrupted recording (it plays as it is); move or remove it first")
    }

    /// Sets the camera to `rate` when asked and the camera has a frame-rate
    /// control, and returns the rate the encoder should plan for: the asked
    /// one, else the camera's set frame duration, else the fastest it
    /// allows, else 30.
    static func applyFrameRate(_ rate: Double?, to device: CaptureDevice) throws -> Double {
        if let rate {
            if device.isFrameDurationControlSupported {
                if let range = device.activeFrameRateRange, !(range.lowerBound * 0.999...range.upperBound * 1.001).contains(rate) {
                    throw UserFacingError(String(format: "--frame-rate %g is outside what the camera allows at this format: %.3g–%.3g fps",
                                                 rate, range.lowerBound, range.upperBound))
                }
                try device.withConfigurationLock { try $0.setActiveVideoFrameRate(rate) }
            } else {
                Log.note("the camera has no frame-rate control and runs at its own rate; \(rate) fps is what the encoder plans for")
            }
            return rate
        }
        if let set = device.activeVideoMinFrameDuration, set > .zero { return 1 / set.seconds }
        return device.activeFrameRateRange?.upperBound ?? 30
    }
}

private func logStream(_ session: CaptureSession, _ device: CaptureDevice) {
    if let stream = session.activeConfiguration?.streams.first {
        Log.note("camera \"\(device.uniqueID)\": \(stream.pixelFormat) \(stream.size), stride \(stream.stride), \(stream.bufferCount) buffers")
    }
}

/// Remembers that a signal came (SIGUSR1 triggers a pre-recorded recording).
final class SignalTrigger: Sendable {
    private final class Flag: Sendable {
        let value = Atomic<Bool>(false)
    }
    private let source: Mutex<(any DispatchSourceSignal)?>
    private let flag = Flag()

    init(_ signal: Int32) {
        Foundation.signal(signal, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: signal, queue: .global())
        let flag = self.flag
        source.setEventHandler { flag.value.store(true, ordering: .relaxed) }
        source.resume()
        self.source = Mutex(source)
    }

    var fired: Bool { flag.value.load(ordering: .relaxed) }
    func cancel() { source.withLock { $0?.cancel() } }
}

/// Runs `stop` on SIGINT or SIGTERM and remembers which came.
extension RecordCommand {
    /// The same recording through the AVFoundation-style pair: frames from a
    /// video data output (the camera's own buffers, in its format) appended
    /// to an asset writer, whose input uses the movie output's encoder and
    /// file stages.
    private func recordThroughAssetWriter(_ device: CaptureDevice, chosen: Bool, fileType: MovieContainer,
                                          codec: VideoCodec, encoders: [EncoderKind]) async throws {
        let session = CaptureSession(log: { Log.note($0) })
        let frames = VideoDataOutput(alwaysDiscardsLateVideoFrames: false, queueDepth: 3)
        session.beginConfiguration()
        try session.addInput(CaptureDeviceInput(device: device))
        try session.addOutput(frames)
        try session.setSessionPreset(chosen ? .inputPriority : .high)
        try session.commitConfiguration()
        let rate = try Self.applyFrameRate(frameRate, to: device)
        try session.startRunning()
        logStream(session, device)
        var settings = try frames.recommendedVideoSettings(for: codec, fileType: fileType)
        settings.frameRate = rate
        if let bitRate { settings.averageBitRate = bitRate }
        if let keyframeInterval { settings.maxKeyFrameInterval = keyframeInterval }
        settings.preset = preset
        settings.threads = threads
        try Self.checkLeftover(output + ".partial")
        let writer = try AssetWriter(path: output, fileType: fileType, recipients: try Options.recipients(recipient, file: recipientsFile))
        writer.fragmentDuration = .checkedSeconds(fragment)
        let input = AssetWriterInput(outputSettings: settings, encoders: encoders)
        input.expectsMediaDataInRealTime = true
        try writer.add(input)
        try writer.startWriting()
        let signals = SignalStop {}
        defer { signals.cancel() }
        var start: UInt64?
        var last: UInt64 = 0
        var saidEncoder = false
        for await frame in frames.frames {
            if start == nil {
                start = frame.timestampNanoseconds
                writer.startSession(atSourceTime: frame.timestampNanoseconds)
            }
            if Double(frame.timestampNanoseconds &- start!) >= duration * 1e9 || signals.reason != nil { break }
            if writer.status == .failed { break }
            if input.isReadyForMoreMediaData, input.append(frame) { last = frame.timestampNanoseconds }
            // The encoder stage opens on its own thread after the first
            // append: say which it is once it is known.
            if !saidEncoder, let name = input.encoderName {
                saidEncoder = true
                Log.note("encoder \(name) [\(input.encoderChoice)]")
            }
        }
        await writer.finishWriting()
        if !saidEncoder, let name = input.encoderName { Log.note("encoder \(name) [\(input.encoderChoice)]") }
        if session.isRunning || session.isInterrupted { try session.stopRunning() }
        if let why = signals.reason { Log.note(why) }
        guard writer.status == .completed else {
            throw UserFacingError("the asset writer did not finish \(output): \(writer.error ?? writer.status.rawValue)")
        }
        let copies = input.copies
        Log.output("recorded \(output) through an asset writer: \(input.appendedFrameCount) frames, \(input.encoderName ?? "?"), "
              + String(format: "%.3f s of camera time", Double(last &- (start ?? last)) / 1e9)
              + ", \(input.refusedFrameCount) refused (input not ready)"
              + ", CPU copies per frame \(String(format: "%.2f", copies.frames == 0 ? 0 : Double(copies.copies) / Double(copies.frames)))")
    }
}

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
