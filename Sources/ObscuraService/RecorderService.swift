import Foundation
import Logging
import ObscuraAge
import ObscuraAudio
import ObscuraCamera
import ObscuraCapture
import ObscuraEncoding
import ObscuraGPIO
import ObscuraMedia
import ObscuraMuxing
import ObscuraOverlay
import ObscuraPhoto
import ObscuraPreview
import ObscuraRecording
import ObscuraSystem

public struct PhotoFailure: Error, Sendable {
    public let message: String
}

/// What kind of error the service met: the metrics' `reason` label, a fixed
/// set (the error's text, which names the file or device, stays in the
/// journal and `obscura status`).
public enum ErrorReason: String, Sendable, CaseIterable {
    case camera, encoder, storage, drive, gpio, photo, recording
}

/// What `obscura status` shows.
public struct ServiceStatus: Sendable, Codable, Equatable {
    public var state = "starting"
    public var board = ""
    public var camera: String?
    public var file: String?
    public var elapsedSeconds = 0.0
    public var bytes = 0
    public var droppedFrames = 0
    public var freeBytes: Int?
    public var flash = FlashMode.auto.rawValue
    public var lastError: String?
    public var lastRecording: String?
    public var recordings = 0
    public var photos = 0
    public var preRecordSeconds = 0.0
    /// The preview's state ("showing on …", "headless: …"), when enabled.
    public var preview: String?
    /// The microphone recorded beside the video, or why there is none.
    public var audio: String?
    /// Frames in the recording in progress, and its measured frame rate.
    public var frames = 0
    public var framesPerSecond = 0.0
    /// Since the service started: frames and bytes written, frames missing.
    public var framesTotal = 0
    public var bytesTotal = 0
    public var droppedFramesTotal = 0
    public var skippedFramesTotal = 0
    /// Frame in to packet out of the video encoder (mean, seconds), and the
    /// frames inside it now.
    public var encoderLatencySeconds = 0.0
    /// The longest time, over the last half second, from a frame's sensor
    /// timestamp to its packet being handed to the file.
    public var cameraToFileSeconds = 0.0
    public var framesInEncoder = 0
    /// Recordings ended by a failure (finalized all the same).
    public var recordingsFailed = 0
    /// When `lastError` happened (Unix time), and which kind it was (one of
    /// `ErrorReason`'s: the metrics' label, bounded where the text is not).
    public var lastErrorTime: Double?
    public var lastErrorReason: String?
    /// Errors since the service started, by `ErrorReason`.
    public var errors: [String: Int] = [:]
    /// Stage restarts ("camera", "encoder", "storage") and the time each
    /// stage's restarts left unrecorded.
    public var stageRestarts: [String: Int] = [:]
    public var stageGapSeconds: [String: Double] = [:]
    public var storages: [StorageStatus] = []
    public var host = HostHealth()
    /// The frame rate asked of the camera, and the configured one: lower
    /// while the recorder could not keep up (`PaceGovernor`); the steps
    /// taken down and up since the service started (optional, so that a
    /// status from a service without them still decodes).
    public var cameraFrameRate: Double?
    public var configuredFrameRate: Double?
    public var rateStepsDown: Int?
    public var rateStepsUp: Int?
    /// Where the metrics file is written, or why it is not.
    public var metrics: String?
}

/// The kiosk recorder: buttons, LEDs, a camera session with a movie output,
/// loop recording, the control socket and systemd's notifications.
///
/// ```
///            record button / ctl record start
///   ┌──────┐ ───────────────────────────────▶ ┌───────────┐
///   │ idle │                                  │ recording │
///   └──────┘ ◀─────────────────────────────── └───────────┘
///     │  ▲     record button / ctl stop /          │
///     │  │     a limit reached                     │ disk full, camera lost,
///     │  │                                         │ encoder error
///     │  └──── camera back, space freed ───┐       ▼
///     │                                   ┌───────┐
///     └── no camera / no space ──────────▶│ error │ (LED: fast blink; retried
///                                         └───────┘  every two seconds)
/// photo button / ctl photo: a photo in any state with a camera (state
/// `photo` while it is taken, then back; during a recording it stays recording); flash button: auto → on → off.
/// ```
public actor RecorderService {
    public enum State: String, Sendable { case starting, idle, recording, photo, error }

    let configuration: ServiceConfiguration
    let profile: BoardProfile
    /// Leveled: journald files each line under its priority.
    let logger: Logger
    /// What the capture stack says (its own notes), at info.
    let log: @Sendable (String) -> Void
    let notifier = SystemdNotifier()
    let keeper: StorageKeeper

    private var state = State.starting
    private var status = ServiceStatus()
    private var session: CaptureSession?
    private var movie: MovieFileOutput?
    private var photoOutput: PhotoOutput?
    private var cameraLayerLogged = false
    private var previewOutput: PreviewOutput?
    private var lastEncoderLine = ""
    private var device: CaptureDevice?
    private var recordingTask: Task<Void, Never>?
    private var recordingStarted: ContinuousClock.Instant?
    private var currentFile: String?
    /// A start being prepared (its storage work off the actor).
    private var starting: Task<String?, Never>?
    /// Whether the current recording's first frame time was journaled.
    private var firstFrameSaid = false
    private var flashMode = FlashMode.auto
    private var buttons: [Button] = []
    private var recordLED: LED?
    private var statusLED: LED?
    private var flashLED: LED?
    private var flash: GPIOFlash?
    private var control: ControlServer?
    private var liveness = RecordingLiveness()
    private var stopping = false
    /// When the camera stopped delivering (interrupted or lost), until it is back.
    private var interruptedAt: ContinuousClock.Instant?
    /// When an encoder failed mid-recording, until a new file has packets:
    /// meanwhile a new recording is tried every half second, quietly.
    private var encoderDownSince: ContinuousClock.Instant?
    private var encoderRetry: Task<Void, Never>?
    /// The recording in progress is such a try (no file yet).
    private var retryingEncoder = false
    /// The configured drive (`[usb]`): where it was last seen, whether its
    /// folders could be made, whether the recording in progress is on it,
    /// and whether it went away under that recording.
    private var drivePresence: DriveConfiguration.Presence?
    private var driveUsable = false
    private var recordingOnDrive = false
    private var driveRemovedMidRecording = false
    /// What recordings finished since the start hold (the one in progress is in `status`).
    private var finishedTotals = (frames: 0, bytes: 0, dropped: 0, skipped: 0)
    private let metricsFile: MetricsFile?
    /// Whether the system clock is known to be right: until then files get
    /// boot-relative names (`FileNames`).
    private var clockSynchronized = SystemClock.isSynchronized
    private var metricsWritten = ContinuousClock.now - .seconds(3600)

    public init(configuration: ServiceConfiguration, profile: BoardProfile, logger: Logger) {
        self.configuration = configuration
        self.profile = profile
        self.logger = logger
        log = Self.infoLines(logger)
        keeper = StorageKeeper(folder: configuration.recordingsFolder, quotaBytes: configuration.quotaBytes,
                               minFreeBytes: configuration.minFreeSpaceBytes)
        status.board = profile.name
        status.preRecordSeconds = configuration.preRecordSeconds
        metricsFile = configuration.metricsFile.isEmpty ? nil : MetricsFile(path: configuration.metricsFile)
    }

    /// Each line an info line of `logger`. (Made outside the actor's
    /// initializer: Swift 6.0 takes a closure formed there for one isolated
    /// to the actor.)
    private static func infoLines(_ logger: Logger) -> @Sendable (String) -> Void {
        { logger.info("\($0)") }
    }

    // MARK: Start and stop

    /// Starts everything; returns once the service is up (READY sent).
    public func start() async throws {
        for (key, folder) in [("recording.folder", configuration.recordingsFolder), ("photo.folder", configuration.photosFolder),
                              ("recording.partial_folder", configuration.resolvedPartialFolder)] {
            do {
                try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            } catch {
                throw ConfigurationError(file: configuration.file, line: nil, key: key,
                                         message: "cannot create \(folder): \(error.localizedDescription)")
            }
        }
        // Finishing is a rename: the partial folder must be on the
        // recordings' filesystem. Photos fall back to their own folder.
        if Self.device(configuration.resolvedPartialFolder) != Self.device(configuration.recordingsFolder) {
            throw ConfigurationError(file: configuration.file, line: nil, key: "recording.partial_folder",
                                     message: "\(configuration.resolvedPartialFolder) is not on the filesystem of \(configuration.recordingsFolder); finished files are renamed across, so both must be on one filesystem")
        }
        if let health = try? await offPool({ HostHealth.read() }) { status.host = health }
        clockSynchronized = status.host.clockSynchronized == true
        await followDrive()
        await measureStorage()
        await recoverInterrupted()
        if !clockSynchronized {
            logger.notice("the clock is not known to be synchronised (\(SystemClock.synchronization().source.rawValue)): files get boot-relative names (obscura-boot-\(SystemClock.bootID)-SECONDS) until it is")
        }
        openGPIO()
        // A control client that hangs up before its reply must not stop the
        // recorder (replies are sent with MSG_NOSIGNAL too).
        signal(SIGPIPE, SIG_IGN)
        let service = self
        control = try ControlServer(path: configuration.controlSocket, group: "obscura") { line in
            await service.command(line)
        }
        openCamera()
        if state == .starting { enter(.idle) }
        let keeper = keeper
        _ = try? await offPool { keeper.enforce() }
        await measureStorage()
        notifier.notify("READY=1\nSTATUS=\(statusLine)")
        logger.notice("ready: \(profile.name), recordings in \(configuration.recordingsFolder), control socket \(configuration.controlSocket)")
        await writeMetrics()
        Task { await self.housekeeping() }
    }

    /// Blocking file work — hashing whole files, writing photos with fsync —
    /// runs on this thread, never on the actor's executor (Swift's pool).
    private let fileWork = try? ThreadExecutor(name: "obscura-files")
    /// The USB drive's storage work, apart from the SD card's: a drive that
    /// hangs holds up this thread only.
    private let driveWork = try? ThreadExecutor(name: "obscura-drive")

    private func offPool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await Task.detached(executorPreference: fileWork) { try body() }.value
    }

    private func recoverInterrupted() async {
        let recovery = InterruptedRecordings(logger: logger)
        let incoming = configuration.resolvedPartialFolder, recordings = configuration.recordingsFolder
        let folders = [configuration.recordingsFolder, configuration.photosFolder]
        _ = try? await offPool {
            recovery.recover(incoming: incoming, recordings: recordings)
            // A checksum for any finished file without one (a cut between the
            // rename and the checksum).
            recovery.addMissingChecksums(folders)
        }
    }

    static func device(_ path: String) -> UInt64? {
        var st = stat()
        return stat(path, &st) == 0 ? UInt64(st.st_dev) : nil
    }

    /// Finalizes a recording in progress and releases everything (SIGTERM).
    public func shutdown() async {
        stopping = true
        notifier.notify("STOPPING=1\nSTATUS=stopping")
        await stopRecording()
        try? session?.stopRunning()
        movie?.disarmPreRecording()
        for b in buttons { b.close() }
        for led in [recordLED, statusLED, flashLED] { led?.close() }
        flash = nil
        control?.close()
        logger.notice("stopped")
    }

    private func openGPIO() {
        guard let g = profile.gpio else {
            logger.notice("the board profile wires no GPIO: control through `obscura ctl`")
            return
        }
        func button(_ line: String?, _ action: @escaping @Sendable (RecorderService) async -> Void) {
            guard let name = g.line(line) else { return }
            do {
                let b = try Button(name, activeLow: g.activeLowButtons, bias: g.bias, debounce: g.debounce, longPress: g.longPress)
                buttons.append(b)
                logger.info("button \(name): debounced by \(b.isKernelDebounced ? "the kernel" : "software") (\(g.debounce))")
                Task { [events = b.events] in
                    for await event in events where event == .shortPress || event == .longPress {
                        await action(self)
                    }
                }
            } catch {
                logger.warning("button \(name) unavailable: \(error)")
                noteError("\(error)", reason: .gpio)
            }
        }
        button(g.recordButton) { await $0.toggleRecording() }
        button(g.photoButton) { _ = await $0.takePhoto() }
        button(g.flashButton) { await $0.cycleFlash() }
        func led(_ line: String?) -> LED? {
            guard let name = g.line(line) else { return nil }
            do { return try LED(name) } catch {
                logger.warning("LED \(name) unavailable: \(error)")
                return nil
            }
        }
        recordLED = led(g.recordLED)
        statusLED = led(g.statusLED)
        flashLED = led(g.flashLED)
        flashLED?.show(flashMode.ledPattern)
        if let name = g.line(g.flashOutput) {
            do { flash = try GPIOFlash(name) } catch { logger.warning("flash \(name) unavailable: \(error)") }
        }
    }

    // MARK: Camera

    private func openCamera() {
        do {
            let device: CaptureDevice
            if CaptureDevice.isTestPattern(profile.cameraID) {
                // The kiosk's buttons, LEDs, storage and retrieval can be
                // tried before a camera is fitted.
                device = CaptureDevice.testPattern(id: profile.cameraID)
            } else if profile.cameraID.isEmpty {
                guard let first = try CaptureDevice.devices().first else {
                    throw CameraError.noCameras(libcameraVersion: CameraManager.libcameraVersion)
                }
                device = first
            } else {
                guard let named = try CaptureDevice.devices().first(where: { $0.uniqueID == profile.cameraID }) else {
                    throw CameraError.unknownCamera(id: profile.cameraID, available: (try? CaptureDevice.devices().map(\.uniqueID)) ?? [])
                }
                device = named
            }
            let size = configuration.size ?? profile.size
            let offered = device.formats.filter { !$0.isRaw }
            let preferred = profile.pixelFormat ?? .nv12
            let pixelFormat = offered.contains { $0.pixelFormat == preferred } ? preferred : (offered.first?.pixelFormat ?? preferred)
            let session = CaptureSession(log: log)
            let movie = MovieFileOutput()
            let photo = PhotoOutput()
            photo.flash = flash
            photo.isRawCaptureEnabled = configuration.photoRaw
            session.beginConfiguration()
            try session.addInput(CaptureDeviceInput(device: device))
            try session.addOutput(movie)
            try session.addOutput(photo)
            if configuration.previewEnabled {
                if previewOutput == nil {
                    previewOutput = try PreviewOutput(device: configuration.previewDevice ?? (profile.previewDevice.isEmpty ? nil : profile.previewDevice),
                                                      connector: profile.previewConnector.isEmpty ? nil : profile.previewConnector,
                                                      overlay: profile.previewPlane != "primary",
                                                      gravity: PreviewGravity(rawValue: configuration.previewGravity) ?? .fit,
                                                      rotation: configuration.previewRotation,
                                                      caption: configuration.overlayOnPreview ? captionSettings(device) : nil, log: log)
                }
                try session.addOutput(previewOutput!)
            }
            if let format = device.format(pixelFormat: pixelFormat, size: size) {
                try device.withConfigurationLock { try $0.setActiveFormat(format) }
                try session.setSessionPreset(.inputPriority)
            } else {
                logger.warning("camera \(device.uniqueID) has no \(pixelFormat) \(size); using its default format")
                try session.setSessionPreset(.high)
            }
            try session.commitConfiguration()
            frameRate = setFrameRate(device)
            pace = RecordingPace(device: device, nominal: frameRate)
            status.cameraFrameRate = pace?.rate
            status.configuredFrameRate = pace?.nominal
            attachAudio(to: session)
            try session.startRunning()
            if configuration.preRecordSeconds > 0 {
                try movie.armPreRecording(duration: .milliseconds(Int(configuration.preRecordSeconds * 1000)), settings: movieSettings(device))
            }
            self.device = device
            self.session = session
            self.movie = movie
            self.photoOutput = photo
            status.camera = device.uniqueID
            if let stream = session.activeConfiguration?.streams.first {
                logger.info("camera \(device.uniqueID): \(stream.pixelFormat) \(stream.size)")
                logCameraLayer()
            }
            Task { [events = session.events()] in
                for await event in events { self.sessionEvent(event) }
            }
            if interruptedAt != nil { cameraRestarted() }
            if state == .error { enter(.idle) }
            resumeIfLost()
        } catch {
            fail("camera: \(error)", reason: .camera)
        }
    }

    /// Which libcamera and which shim drive the camera, once per process.
    private func logCameraLayer() {
        guard !cameraLayerLogged, let layer = CameraLibrary.loaded else { return }
        cameraLayerLogged = true
        logger.notice("camera layer: \(layer) (\(CameraManager.libcameraRuntimeVersion); shim built with \(CameraManager.libcameraVersion)'s headers)")
        if let warning = layer.warning { logger.warning("\(warning)") }
    }

    private func sessionEvent(_ event: CaptureSession.Event) {
        switch event {
        case .wasInterrupted(let why):
            logger.warning("camera interrupted: \(why.rawValue)")
            if interruptedAt == nil { interruptedAt = .now }
        case .interruptionEnded:
            cameraRestarted()
            if state == .error, status.lastError?.hasPrefix("camera") == true { enter(.idle) }
            resumeIfLost()
        case .runtimeError(let e): noteError(e, reason: .camera)
        default: break
        }
    }

    /// The camera delivers again after an interruption or a loss: one restart
    /// of the camera stage, and the time it had none.
    private func cameraRestarted() {
        let gap = interruptedAt.map { (ContinuousClock.now - $0).seconds } ?? 0
        interruptedAt = nil
        status.stageRestarts["camera", default: 0] += 1
        status.stageGapSeconds["camera", default: 0] += gap
        logger.notice("camera back after \(String(format: "%.1f", gap)) s without frames")
    }

    /// The recording the camera's loss ended goes on, in a new file.
    private func resumeIfLost() {
        guard resumeRecording, !stopping else { return }
        resumeRecording = false
        Task {
            if let path = await startRecording() { logger.notice("recording goes on after the camera's loss: \(path)") }
        }
    }

    private func noteError(_ message: String, reason: ErrorReason) {
        status.lastError = message
        status.lastErrorTime = Date().timeIntervalSince1970
        status.lastErrorReason = reason.rawValue
        status.errors[reason.rawValue, default: 0] += 1
    }

    /// The configuration's microphone, else the profile's. Without one the
    /// service records video only and says so once.
    private func attachAudio(to session: CaptureSession) {
        let name = configuration.audioDevice ?? profile.audioDevice
        guard name != "none" else {
            status.audio = "none (audio.device = \"none\")"
            return
        }
        do {
            let input = try AudioDeviceInput(device: name, format: AudioFormat(sampleRate: profile.audioRate, channels: profile.audioChannels))
            try session.addInput(input)
            status.audio = "\(input.deviceName): \(input.format)"
            logger.info("audio from \(input.deviceName): \(input.format), \(configuration.audioCodec.rawValue) at \(configuration.audioBitRate / 1000) kbit/s")
        } catch {
            status.audio = "none: \(error)"
            logger.warning("audio: \(error); recording video only")
        }
    }

    /// The rate the encoder plans for: the configured one, as the camera was
    /// set to it (or the nearest it allows).
    private var frameRate = 30.0
    /// Steps the rate down while the recorder cannot keep up (nil: no camera).
    private var pace: RecordingPace?

    /// One housekeeping round of the pace: what the recording in progress
    /// recorded and dropped since the last round decides a step.
    private func followPace() {
        guard var follower = pace, let device, let movie, state == .recording, currentFile != nil else {
            pace?.restartWindow()
            return
        }
        let step: RecordingPace.Step?
        do {
            step = try follower.follow(frames: status.frames, dropped: status.droppedFrames, device: device, movie: movie)
        } catch {
            pace = follower
            logger.warning("camera \(device.uniqueID): cannot set another frame rate: \(error)")
            return
        }
        pace = follower
        status.cameraFrameRate = follower.rate
        switch step {
        case .down(let said)?:
            status.rateStepsDown = (status.rateStepsDown ?? 0) + 1
            logger.warning("\(said)")
        case .up(let said)?:
            status.rateStepsUp = (status.rateStepsUp ?? 0) + 1
            logger.notice("\(said)")
        case nil: break
        }
    }

    /// Sets the camera to the configured frame rate when it has a frame-rate
    /// control; a rate outside what its format allows becomes the nearest
    /// allowed one, said in the journal. Returns the rate in effect.
    private func setFrameRate(_ device: CaptureDevice) -> Double {
        let wanted = configuration.frameRate ?? profile.frameRate
        guard device.isFrameDurationControlSupported else {
            logger.warning("camera \(device.uniqueID) has no frame-rate control; it runs at its own rate (encoding plans for \(wanted) fps)")
            return wanted
        }
        var rate = wanted
        if let range = device.activeFrameRateRange, !range.contains(rate) {
            rate = min(max(rate, range.lowerBound), range.upperBound)
            log(String(format: "frame_rate %g is outside what camera %@ allows at this format (%.3g–%.3g fps); recording at %.3g fps",
                       wanted, device.uniqueID, range.lowerBound, range.upperBound, rate))
        }
        do {
            try device.withConfigurationLock { try $0.setActiveVideoFrameRate(rate) }
        } catch {
            logger.warning("camera \(device.uniqueID): cannot set \(rate) fps: \(error); it runs at its own rate")
        }
        return rate
    }

    /// Where the next recording goes: the drive's folder while it is there
    /// and usable, else the SD card's.
    private struct Target {
        let folder: String
        let incoming: String
        let keeper: StorageKeeper
        let minFree: Int
        let onDrive: Bool
    }
    private var target: Target { driveTarget ?? sdTarget }
    private var sdTarget: Target {
        Target(folder: configuration.recordingsFolder, incoming: configuration.resolvedPartialFolder, keeper: keeper,
               minFree: configuration.minFreeSpaceBytes, onDrive: false)
    }
    private var driveTarget: Target? {
        guard let drive = configuration.drive, driveUsable, case .mounted(let mount, let folder)? = drivePresence else { return nil }
        return Target(folder: folder, incoming: Self.driveIncoming(mount),
                      keeper: StorageKeeper(folder: folder, quotaBytes: drive.quotaBytes, minFreeBytes: drive.minFreeSpaceBytes),
                      minFree: drive.minFreeSpaceBytes, onDrive: true)
    }
    /// Files being written on the drive (its filesystem: finishing is a rename).
    static func driveIncoming(_ mount: String) -> String { (mount == "/" ? "" : mount) + "/.obscura-incoming" }

    /// The configured caption, with the camera's name when asked.
    private func captionSettings(_ device: CaptureDevice) -> OverlaySettings? {
        guard var overlay = configuration.overlay else { return nil }
        if configuration.overlayCameraName { overlay.cameraName = device.localizedName }
        return overlay
    }

    private func movieSettings(_ device: CaptureDevice, partialDirectory: String? = nil) -> MovieSettings {
        var s = MovieSettings()
        s.codec = configuration.codec
        s.container = configuration.recordingContainer
        s.recipients = configuration.recipients
        s.alignsFragmentsToAgeChunks = configuration.alignsToAgeChunks
        s.overlay = captionSettings(device)
        s.averageBitRate = configuration.bitRate ?? profile.bitRate
        s.preset = profile.preset
        s.nominalFrameRate = frameRate
        s.fragmentDuration = .checkedSeconds(configuration.fragmentSeconds)
        // The profile's order (e.g. the Pi 4's hardware encoder, then libx264).
        var kinds: [EncoderKind] = []
        for name in profile.encoders { if let k = EncoderKind(name: name), !kinds.contains(k) { kinds.append(k) } }
        s.encoders = kinds.isEmpty ? [.software] : kinds
        s.partialDirectory = partialDirectory ?? configuration.resolvedPartialFolder
        s.audio = AudioEncoderSettings(codec: configuration.audioCodec, bitRate: configuration.audioBitRate)
        return s
    }

    /// Where the next recording goes, after loop recording's cleanup there:
    /// the folder scans, unlinks and statvfs run off the actor (a slow card
    /// must not hold up buttons, status or control), the drive's on a thread
    /// of its own with a deadline, so a drive that hangs rather than vanishes
    /// holds up neither the SD card's work nor the recording: it is given up
    /// on, and the recording goes to the SD card. Nil: nowhere (said).
    private func chooseStorage() async -> Target? {
        var target = self.target
        if target.onDrive {
            let keeper = target.keeper, folder = target.folder
            // (A drive known to hang is not asked again: its thread is held.)
            let free = driveSilenceReported ? nil : await StorageCall.within(Self.driveDeadline, on: driveWork) { () -> Int? in
                keeper.enforce()
                return StorageKeeper.freeBytes(folder)
            }
            switch free {
            case .none:
                logger.warning("usb.drive: \(folder) did not answer within \(Self.driveDeadline): recording to the SD card (\(configuration.recordingsFolder))")
                driveUsable = false
                driveHung = true
                status.stageRestarts["storage", default: 0] += 1
                target = sdTarget
            case .some(let free?) where free < target.minFree:
                // A drive too full even after its oldest files went: the SD card.
                logger.warning("usb.min_free_space_mb: \(free >> 20) MiB free on the drive (\(target.folder)), less than \(target.minFree >> 20) MiB: recording to the SD card (\(configuration.recordingsFolder))")
                target = sdTarget
            case .some:
                return target
            }
        }
        let sd = target
        let free = try? await offPool { () -> Int? in
            sd.keeper.enforce()
            return StorageKeeper.freeBytes(sd.folder)
        }
        if let free = free ?? nil, free < sd.minFree {
            fail("cannot record: \(free >> 20) MiB free in \(sd.folder), less than the minimum \(sd.minFree >> 20) MiB", reason: .storage)
            return nil
        }
        return sd
    }

    /// How long the drive may take to be cleaned up and measured before a
    /// recording starts; longer, and it is taken for hung.
    static let driveDeadline: Duration = .seconds(2)
    /// How long a recording may wait on a drive that hangs before the
    /// recorder is taken for wedged (RecordingLiveness, the watchdog).
    static let driveHangGrace: Duration = .seconds(60)

    // MARK: Actions

    public func toggleRecording() async {
        // A press while a lost stage's recording waits to go on cancels it.
        if cancelPendingResume() {
            logger.notice("the recording will not go on when the stage is back (stopped)")
            if state == .error { enter(.idle) }
            return
        }
        if state == .recording { await stopRecording() } else { await startRecording() }
    }

    @discardableResult
    public func startRecording() async -> String? { await startRecording(retry: false) }

    /// `retry`: a try after an encoder failed; the state stays until the new
    /// file has packets (`follow`), and a failed try is not news. A start
    /// asked for while one is being prepared gets that one's answer.
    private func startRecording(retry: Bool) async -> String? {
        if let starting { return await starting.value }
        let start = Task { await self.startRecordingNow(retry: retry) }
        starting = start
        let path = await start.value
        starting = nil
        return path
    }

    private func startRecordingNow(retry: Bool) async -> String? {
        guard state != .recording, !stopping, currentFile == nil else { return currentFile }
        if session == nil { openCamera() }
        guard movie != nil, device != nil else {
            fail("cannot record: no camera", reason: .camera)
            return nil
        }
        if let session, session.isInterrupted {
            resumeRecording = true
            fail("cannot record now: the camera is gone; recording starts when it is back", reason: .camera)
            return nil
        }
        guard let target = await chooseStorage() else { return nil }
        // The actor ran other work meanwhile: look again.
        guard state != .recording, !stopping, currentFile == nil else { return currentFile }
        guard let movie, let device else {
            fail("cannot record: no camera", reason: .camera)
            return nil
        }
        let path = "\(target.folder)/\(FileNames.stem(clockSynchronized: clockSynchronized)).\(configuration.recordingExtension)"
        movie.segmentDuration = configuration.segmentSeconds > 0 ? .seconds(configuration.segmentSeconds) : nil
        movie.minFreeDiskSpace = target.minFree
        movie.maxRecordedDuration = nil
        do {
            let events = try movie.startRecording(to: path, settings: movieSettings(device, partialDirectory: target.incoming))
            currentFile = path
            firstFrameSaid = false
            recordingOnDrive = target.onDrive
            recordingStarted = .now
            retryingEncoder = retry
            // The status shows the recording in progress from its start.
            status.frames = 0
            status.bytes = 0
            status.droppedFrames = 0
            status.skippedFramesTotal = 0
            if !retry {
                enter(.recording)
                logger.notice("recording \(path)")
            }
            recordingTask = Task { await self.follow(events) }
            return path
        } catch {
            if !retry { fail("cannot record: \(error)", reason: .recording) }
            return nil
        }
    }

    private func follow(_ events: AsyncStream<RecordingEvent>) async {
        for await event in events {
            switch event {
            case .progress(let p):
                take(p)
            case .segmentFinished(let path):
                status.recordings += 1
                logger.info("segment finished: \(path)")
                // Loop recording's oldest files go on the file thread (a
                // folder scan and unlinks, on a slow card), the drive's on
                // its own with a deadline (a drive that hangs holds up only it).
                let keeper = target.keeper
                if recordingOnDrive {
                    _ = await StorageCall.within(Self.driveDeadline, on: driveWork) { keeper.enforce(protecting: []) }
                } else {
                    _ = try? await offPool { keeper.enforce(protecting: []) }
                }
            case .finished(_, .encoderFailed, let p) where retryingEncoder && p.frames == 0:
                // A try while the encoder is down that made nothing: try again.
                currentFile = nil
                recordingStarted = nil
                recordingTask = nil
                retryingEncoder = false
                scheduleEncoderRetry()
            case .finished(let path, let reason, let p):
                if retryingEncoder {
                    // Ended before its file opened (stopped meanwhile): nothing was recorded.
                    retryingEncoder = false
                    currentFile = nil
                    recordingStarted = nil
                    recordingTask = nil
                    if p.frames == 0 { continue }
                }
                take(p)
                finishedTotals.frames += p.frames
                finishedTotals.bytes += p.bytes
                finishedTotals.dropped += p.droppedFrames
                finishedTotals.skipped += p.skippedFrames
                status.recordings += 1
                status.lastRecording = path
                let seconds = String(format: "%.1f", p.duration.seconds)
                let sound = p.audio.isEmpty ? "" : ", audio \(p.audio) (\(p.audioPackets) packets, drift corrected by \(p.audioCompensatedSamples) samples)"
                for note in p.fileNotes { logger.warning("\(note)") }
                let thinned = p.thinnedFrames > 0 ? ", left out for the pace \(p.thinnedFrames)" : ""
                logger.notice("recording finished: \(path), \(p.frames) frames, \(seconds) s, dropped \(p.droppedFrames), camera skipped \(p.skippedFrames)\(thinned)\(sound), \(reason)")
                recordingFinished(reason, frames: p.frames)
            case .started(let path):
                if !firstFrameSaid, let zero = movie?.progress.timeZeroNanoseconds {
                    // The wall-clock time of the first frame (what its caption
                    // shows, and every later frame's time follows from the file's).
                    firstFrameSaid = true
                    let format = ISO8601DateFormatter()
                    format.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
                    let wall = SystemClock.wallClock(ofMonotonic: zero)
                    logger.info("recording \(path): first frame taken at \(format.string(from: wall)) (\(String(format: "%.6f", wall.timeIntervalSince1970)) s)")
                }
                if retryingEncoder {
                    retryingEncoder = false
                    encoderRestarted()
                    enter(.recording)
                    let took = recordingStarted.map { (ContinuousClock.now - $0).seconds } ?? 0
                    logger.notice("recording goes on after the encoder's failure: \(path) (its first packet \(String(format: "%.2f", took)) s after the file was opened)")
                }
                // One line: which encoder, how frames reach it, and why it was chosen.
                if let p = movie?.progress, !p.encoder.isEmpty, p.encoder != lastEncoderLine {
                    lastEncoderLine = p.encoder
                    logger.info("encoder \(p.encoder); frames \(p.path) [\(p.encoderChoice)]")
                }
            }
        }
    }

    /// A recording's progress into the status.
    private func take(_ p: RecordingProgress) {
        status.bytes = p.bytes
        status.droppedFrames = p.droppedFrames
        status.frames = p.frames
        status.framesPerSecond = p.recentFrameRate
        status.encoderLatencySeconds = p.encoderLatency.seconds
        status.cameraToFileSeconds = p.cameraToFile.seconds
        status.framesInEncoder = p.framesInEncoder
        status.skippedFramesTotal = p.skippedFrames
    }

    private func recordingFinished(_ reason: RecordingFinishReason, frames: Int) {
        currentFile = nil
        recordingStarted = nil
        recordingTask = nil
        let onDrive = recordingOnDrive
        recordingOnDrive = false
        // A recording on the drive that failed (a write or sync error) or
        // was stopped because the drive went away: when the drive is gone,
        // it goes on on the SD card.
        var failed = driveRemovedMidRecording
        switch reason {
        case .error, .diskFull, .storageFailed: failed = true
        default: break
        }
        driveRemovedMidRecording = false
        if onDrive, failed, !stopping {
            status.recordingsFailed += 1
            Task { await self.failOverFromDrive(reason) }
            return
        }
        // Loop recording's cleanup on the file thread (a folder scan and unlinks).
        let keeper = keeper
        Task.detached(executorPreference: fileWork) { keeper.enforce() }
        switch reason {
        case .stopped, .maximumDurationReached, .maximumFileSizeReached, .sessionStopped:
            if state == .recording { enter(.idle) }
        case .diskFull:
            status.recordingsFailed += 1
            fail("disk full: the recording was finalized", reason: .storage)
        case .cameraLost:
            // The session reopens the camera when it is listed again, and
            // the recording goes on in a new file then (`sessionEvent`). One
            // that is not back within `cameraGiveUp` is dropped and opened
            // afresh by the housekeeping, which resumes the recording too.
            status.recordingsFailed += 1
            if interruptedAt == nil { interruptedAt = .now }
            resumeRecording = true
            fail("camera lost: the recording was finalized; it goes on in a new file when the camera is back", reason: .camera)
        case .encoderFailed(let e) where frames > 0 && !stopping:
            // The file keeps what the encoder gave back; a new recording is
            // tried until an encoder (this one back, or the next in the
            // profile's order) takes frames.
            status.recordingsFailed += 1
            if encoderDownSince == nil { encoderDownSince = .now }
            fail("encoder failed: \(e); the recording was finalized; it goes on in a new file when an encoder takes frames", reason: .encoder)
            scheduleEncoderRetry()
        case .storageFailed(let e):
            status.recordingsFailed += 1
            fail("storage failed: \(e); the recording was finalized up to its last complete fragment", reason: .storage)
        case .encoderFailed(let e), .error(let e):
            status.recordingsFailed += 1
            fail("recording failed: \(e)", reason: .recording)
        }
    }

    /// After a recording on the drive failed: when the drive is gone, the
    /// recording goes on on the SD card at once; when it is still there,
    /// the failure is the recording's own.
    private func failOverFromDrive(_ reason: RecordingFinishReason) async {
        guard let drive = configuration.drive else { return }
        let presence = (try? await offPool({ drive.locate() })) ?? .absent("cannot be looked for")
        if case .mounted = presence, driveUsable {
            fail("recording failed: \(reason)", reason: .recording)
            return
        }
        if case .absent(let why) = presence {
            logger.warning("usb.drive: \(why); recording to the SD card (\(configuration.recordingsFolder))")
        }
        drivePresence = presence
        driveUsable = false
        status.stageRestarts["storage", default: 0] += 1
        if state == .recording { enter(.idle) }
        if let path = await startRecording() {
            logger.notice("recording goes on on the SD card after the drive went away: \(path)")
        }
    }

    /// Where the configured drive is (every housekeeping round): said when
    /// that changes; its folders made and its interrupted files recovered
    /// when it appears. A recording on it when it goes away is stopped (what
    /// can be finalized is) and goes on on the SD card.
    private func followDrive() async {
        guard let drive = configuration.drive else { return }
        guard let presence = try? await offPool({ drive.locate() }), presence != drivePresence else { return }
        drivePresence = presence
        switch presence {
        case .mounted(let mount, let folder):
            let incoming = Self.driveIncoming(mount)
            // On the drive's own thread, with a deadline: a drive that hangs
            // holds up only that thread.
            let prepared = await StorageCall.within(Self.driveDeadline, on: driveWork) { () -> String? in
                do {
                    for f in [folder, incoming] { try FileManager.default.createDirectory(atPath: f, withIntermediateDirectories: true) }
                } catch {
                    return error.localizedDescription
                }
                guard access(folder, W_OK) == 0, access(incoming, W_OK) == 0 else { return String(cString: strerror(errno)) }
                return nil
            }
            switch prepared {
            case .none:
                // Asked again next round (the question in flight answers first).
                drivePresence = nil
                driveUsable = false
                if !driveHung {
                    driveHung = true
                    logger.warning("usb.drive: \(drive.identity) at \(mount) did not answer within \(Self.driveDeadline): recording to the SD card (\(configuration.recordingsFolder)) until it answers")
                }
            case .some(nil):
                driveHung = false
                driveUsable = true
                logger.notice("usb drive \(drive.identity) at \(mount): recordings go to \(folder)")
                let recovery = InterruptedRecordings(logger: logger)
                Task.detached(executorPreference: driveWork) { recovery.recover(incoming: incoming, recordings: folder) }
            case .some(let problem?):
                driveUsable = false
                let message = "usb.drive: \(drive.identity) at \(mount): cannot write \(folder) (\(problem)): "
                    + "it must be the obscura user's, and the mount under /media (the unit's ReadWritePaths); recording to the SD card (\(configuration.recordingsFolder))"
                logger.error("\(message)")
                noteError(message, reason: .drive)
            }
        case .absent(let why):
            let wasUsable = driveUsable
            driveUsable = false
            logger.warning("usb.drive: \(why); recording to the SD card (\(configuration.recordingsFolder))")
            if wasUsable, recordingOnDrive, currentFile != nil {
                driveRemovedMidRecording = true
                movie?.stopRecording()
            }
        }
    }

    private func scheduleEncoderRetry() {
        guard encoderDownSince != nil, !stopping else { return }
        encoderRetry = Task {
            try? await Task.sleep(for: .milliseconds(500))
            guard !Task.isCancelled else { return }
            await self.retryEncoder()
        }
    }

    private func retryEncoder() async {
        guard encoderDownSince != nil, !stopping, currentFile == nil else { return }
        if session?.isInterrupted == true { return scheduleEncoderRetry() }
        if await startRecording(retry: true) == nil { scheduleEncoderRetry() }
    }

    /// Packets flow again after an encoder failed: one restart of the
    /// encoder stage, and the time it left unrecorded.
    private func encoderRestarted() {
        let gap = encoderDownSince.map { (ContinuousClock.now - $0).seconds } ?? 0
        encoderDownSince = nil
        status.stageRestarts["encoder", default: 0] += 1
        status.stageGapSeconds["encoder", default: 0] += gap
        logger.notice("encoder back after \(String(format: "%.1f", gap)) s without packets")
    }

    /// A press or `ctl record stop` while a failed stage's recording waits
    /// to go on: it will not. Returns whether one was waiting.
    private func cancelPendingResume() -> Bool {
        var cancelled = false
        if resumeRecording {
            resumeRecording = false
            cancelled = true
        }
        if encoderDownSince != nil {
            encoderDownSince = nil
            encoderRetry?.cancel()
            encoderRetry = nil
            if retryingEncoder { movie?.stopRecording() }
            cancelled = true
        }
        return cancelled
    }

    public func stopRecording() async {
        guard let movie, let task = recordingTask else { return }
        movie.stopRecording()
        await task.value
    }

    /// Takes a photo from the running session (zero shutter lag; also while
    /// recording) into the photos folder. Returns its path.
    public func takePhoto() async -> Result<String, PhotoFailure> {
        guard let photoOutput, state != .error || session != nil else {
            logger.error("cannot take a photo: no camera")
            return .failure(PhotoFailure(message: "cannot take a photo: no camera"))
        }
        let previous = state
        // What the photo costs a recording in progress: the frames its
        // recorder's queue drops meanwhile (at most what the queue holds, if
        // the photo never holds it up).
        let recorderDropsBefore = previous == .recording ? movie?.queue.drops : nil
        let photoStart = ContinuousClock.now
        if previous != .recording { enter(.photo) }
        defer { if previous != .recording && state == .photo { enter(previous == .starting ? .idle : previous) } }
        do {
            var settings = PhotoSettings(jpegQuality: 90, flashMode: flashMode, thumbnailSize: PixelSize(width: 160, height: 120))
            if configuration.overlayOnPhotos, let device { settings.overlay = captionSettings(device) }
            if configuration.photoRaw {
                settings.rawPixelFormat = photoOutput.availableRawPhotoPixelFormats.first
                if settings.rawPixelFormat == nil { logger.warning("photo.raw is set but the camera has no raw stream: JPEG only") }
            }
            let photos = try await photoOutput.capturePhoto(with: settings)
            guard let photo = photos.first else { return .failure(PhotoFailure(message: "the capture gave no photo")) }
            // One stem for the JPEG and its DNG.
            let base = "\(configuration.photosFolder)/\(FileNames.stem(clockSynchronized: clockSynchronized))"
            var stem = base
            var n = 2
            let jpegExtension = configuration.photoExtension(raw: false), rawExtension = configuration.photoExtension(raw: true)
            while FileManager.default.fileExists(atPath: stem + jpegExtension) || FileManager.default.fileExists(atPath: stem + rawExtension) {
                stem = "\(base)-\(n)"
                n += 1
            }
            let path = stem + jpegExtension
            // Written in the partial folder when it shares the photos'
            // filesystem, so a half-written photo is never in a shared folder.
            let incoming = Self.device(configuration.resolvedPartialFolder) == Self.device(configuration.photosFolder)
                ? configuration.resolvedPartialFolder : configuration.photosFolder
            for each in photos {
                let file = stem + configuration.photoExtension(raw: each.isRawPhoto)
                let partial = incoming + "/" + (file as NSString).lastPathComponent + ".partial"
                let data = each.fileDataRepresentation()
                let recipients = configuration.recipients
                do {
                    try await offPool {
                        // Sealed in memory (on the file thread, not the
                        // actor): no plaintext of the photo reaches the storage.
                        let sealed = recipients.isEmpty ? data : Data(try AgeEncryptor.encrypt([UInt8](data), to: recipients))
                        try Syscalls.writeDurably(sealed, to: file, via: partial, mode: 0o640)
                    }
                } catch let error as AgeError {
                    return .failure(PhotoFailure(message: "cannot encrypt \(file): \(error)"))
                } catch {
                    return .failure(PhotoFailure(message: "cannot write \(file): \(error)"))
                }
                // The photo is kept; a checksum that cannot be written (a full disk) is said.
                do { try await offPool { try Checksum.write(for: file) } } catch {
                    logger.warning("\(file): no checksum: \(error)")
                    noteError("\(file): no checksum: \(error)", reason: .storage)
                }
            }
            status.photos += 1
            let lag = photo.resolvedSettings.shutterLag.map { String(format: "%.1f ms", Double($0.components.attoseconds) / 1e15 + Double($0.components.seconds) * 1000) } ?? "?"
            let took = (ContinuousClock.now - photoStart) / .milliseconds(1)
            let recorderDrops = recorderDropsBefore.flatMap { before in
                movie.map { ", the recording dropped \($0.queue.drops - before) frames in the \(Int(took)) ms it took" }
            } ?? ""
            logger.notice("photo \(path): \(photo.pixelSize), shutter lag \(lag)\(photo.resolvedSettings.flashWillFire ? ", flash" : "")\(recorderDrops)")
            return .success(path)
        } catch {
            logger.error("photo failed: \(error)")
            noteError("photo failed: \(error)", reason: .photo)
            return .failure(PhotoFailure(message: "photo failed: \(error)"))
        }
    }


    public func cycleFlash() { setFlash(flashMode.next) }

    public func setFlash(_ mode: FlashMode) {
        flashMode = mode
        status.flash = mode.rawValue
        flashLED?.show(mode.ledPattern)
        logger.notice("flash \(mode.rawValue)")
    }

    // MARK: State

    private func enter(_ new: State) {
        state = new
        status.state = new.rawValue
        recordLED?.show(new == .recording ? .recording : .off)
        statusLED?.show(new == .error ? .error : .on)
        notifier.notify("STATUS=\(statusLine)")
    }

    private func fail(_ message: String, reason: ErrorReason) {
        // A retry that fails the same way is not news.
        if status.lastError != message || state != .error {
            logger.error("\(message)")
            noteError(message, reason: reason)
        }
        enter(.error)
    }

    private var statusLine: String {
        var line = state.rawValue
        if let currentFile { line += " " + (currentFile as NSString).lastPathComponent }
        if let e = status.lastError, state == .error { line += ": " + e }
        return line
    }

    public func currentStatus() -> ServiceStatus {
        var s = status
        s.state = state.rawValue
        s.file = currentFile
        s.elapsedSeconds = recordingStarted.map { (ContinuousClock.now - $0).seconds } ?? 0
        if s.file == nil {
            s.bytes = 0
            s.droppedFrames = 0
            s.frames = 0
            s.framesPerSecond = 0
            s.framesInEncoder = 0
            s.skippedFramesTotal = 0
        }
        s.framesTotal = finishedTotals.frames + s.frames
        s.bytesTotal = finishedTotals.bytes + s.bytes
        s.droppedFramesTotal = finishedTotals.dropped + s.droppedFrames
        s.skippedFramesTotal += finishedTotals.skipped
        s.freeBytes = measuredFreeBytes

        s.preview = previewOutput.map { "\($0.status)" }
        return s
    }

    /// Every two seconds: retry what failed, keep storage in bounds, tell
    /// systemd's watchdog the service is alive — unless a recording has
    /// stopped advancing while its camera goes on delivering (RecordingLiveness).
    private func housekeeping() async {
        let interval = notifier.watchdogInterval.map { min($0, .seconds(2)) } ?? .seconds(2)
        while !stopping {
            try? await Task.sleep(for: interval)
            if stopping { break }
            if let session, session.isInterrupted, let since = interruptedAt, ContinuousClock.now - since > cameraGiveUp {
                logger.warning("the camera has been gone for \(cameraGiveUp): opening it afresh")
                try? session.stopRunning()
                self.session = nil
                movie = nil
                photoOutput = nil
                device = nil
                if state != .error { fail("camera lost", reason: .camera) }
            }
            if state == .error, encoderDownSince == nil {
                if session == nil { openCamera() }
                let free = measuredFreeBytes ?? Int.max
                // (A session waiting for its lost camera is not one to use yet.)
                let usable = session.map { !$0.isInterrupted } ?? false
                if usable && free >= configuration.minFreeSpaceBytes && status.lastError?.hasPrefix("camera") != true {
                    enter(.idle)
                } else if usable, status.lastError?.hasPrefix("camera") == true {
                    enter(.idle)
                }
            }
            let recording = state == .recording && session?.isRunning == true
            // A recording held up by a drive that does not answer is not a
            // wedged recorder: it goes on when the drive answers. Only a hang
            // longer than `driveHangGrace` is taken for one (systemd then
            // restarts the service, which records to the SD card).
            let waitingOnDrive = recording && recordingOnDrive && driveSilenceReported
                && driveProbe.map { ContinuousClock.now - $0.since < Self.driveHangGrace } == true
            // Nor is one whose writer is inside a call into its storage (a
            // write, a sync) that has not returned yet: a drive going away
            // or a card that stalls, while the free-space question may still
            // be answered from the kernel's cache.
            let storageWait = recording ? movie?.storageWait : nil
            let waitingOnStorage = storageWait.map { $0 < Self.driveHangGrace } == true
            reportStorageWait(storageWait)
            let waiting = waitingOnDrive || waitingOnStorage
            let wedge = liveness.look(written: recording && !waiting ? movie?.progress.frames ?? 0 : nil,
                                      delivered: session?.deliveredFrameCount ?? 0, now: .now)
            if let wedge {
                logger.error("the recording has not advanced for \(wedge.stalled) while the camera delivered \(wedge.delivered) frames; no watchdog keep-alive")
            } else {
                notifier.notify("WATCHDOG=1\nSTATUS=\(statusLine)")
            }
            // sysfs reads can block (a sensor on I²C): off the pool.
            if let health = try? await offPool({ HostHealth.read() }) { status.host = health }
            followPace()
            await followDrive()
            await measureStorage()
            await followClock()
            await writeMetrics()
        }
    }

    /// Says once when a recording has been held inside a call into its
    /// storage for more than `storageWaitReported`, and when it goes on.
    private func reportStorageWait(_ wait: Duration?) {
        if let wait, wait >= Self.storageWaitReported, !storageWaitReportedOnce {
            storageWaitReportedOnce = true
            logger.warning("the recording has waited \(String(format: "%.1f", wait.seconds)) s on its storage (a write or sync that has not returned); it goes on when the storage answers")
        } else if wait == nil, storageWaitReportedOnce {
            storageWaitReportedOnce = false
            logger.notice("the recording's storage answers again")
        }
    }
    private var storageWaitReportedOnce = false
    static let storageWaitReported: Duration = .seconds(5)

    /// Once the clock is known to be right: wall-clock names from now on, and
    /// this boot's files named before it renamed (also those finished later,
    /// e.g. the rest of a recording that began before).
    private func followClock() async {
        let synchronized = status.host.clockSynchronized == true
        if synchronized != clockSynchronized {
            clockSynchronized = synchronized
            logger.notice(synchronized ? "the clock is synchronised (\(status.host.clockSource)): files get wall-clock names"
                          : "the clock is no longer known to be synchronised: files get boot-relative names")
        }
        guard synchronized else { return }
        let local = [configuration.recordingsFolder, configuration.photosFolder]
        guard var result = try? await offPool({ FileNames.renameBootNamed(in: local) }) else { return }
        // The drive's on its own thread, and not while it hangs.
        if driveUsable, driveProbe == nil, case .mounted(_, let onDrive)? = drivePresence,
           let onTheDrive = await StorageCall.within(Self.driveDeadline, on: driveWork, { FileNames.renameBootNamed(in: [onDrive]) }) {
            result.renamed += onTheDrive.renamed
            result.problems += onTheDrive.problems
        }
        for (old, new) in result.renamed {
            logger.notice("renamed \(old) to \((new as NSString).lastPathComponent): the clock is now known")
            if status.lastRecording == old { status.lastRecording = new }
        }
        for problem in result.problems where !reportedRenameProblems.contains(problem) {
            reportedRenameProblems.insert(problem)
            logger.warning("\(problem)")
        }
    }
    private var reportedRenameProblems: Set<String> = []
    /// A recording the camera's loss ended: it goes on when the camera is back.
    private var resumeRecording = false
    /// How long a lost camera's session waits for it before the service
    /// drops the session and opens the camera afresh.
    private let cameraGiveUp: Duration = .seconds(20)

    /// Each storage's free and used space (a folder listing: off the pool).
    /// The drive is asked on its own thread with a deadline, so a drive that
    /// hangs holds up neither the SD card's work nor this round (the
    /// watchdog's keep-alive, status, buttons): it is reported as not
    /// answering, and asked again only once the question in flight returns.
    private func measureStorage() async {
        let keeper = keeper, folder = configuration.recordingsFolder, quota = configuration.quotaBytes
        let onSD = !target.onDrive
        guard let sd = try? await offPool({
            StorageStatus(name: "recordings", path: folder, freeBytes: StorageKeeper.freeBytes(folder),
                          usedBytes: keeper.usedBytes(), quotaBytes: quota, active: onSD)
        }) else { return }
        var list = [sd]
        if let drive = configuration.drive {
            if case .mounted(_, let onDrive)? = drivePresence {
                list.append(await measureDrive(drive, folder: onDrive))
            } else {
                driveProbe = nil
                list.append(StorageStatus(name: "usb", path: drive.identity.description, freeBytes: nil, usedBytes: 0,
                                          quotaBytes: drive.quotaBytes, present: false))
            }
        }
        status.storages = list
    }

    /// The drive's free-space question in flight, and when it was asked.
    private var driveProbe: (work: Task<(free: Int?, used: Int), Never>, folder: String, since: ContinuousClock.Instant)?
    private var driveSilenceReported = false
    /// The drive was given up on for not answering (not for going away):
    /// recordings go to it again once it answers.
    private var driveHung = false

    private func measureDrive(_ drive: DriveConfiguration, folder onDrive: String) async -> StorageStatus {
        if driveProbe?.folder != onDrive {
            let keeper = StorageKeeper(folder: onDrive, quotaBytes: drive.quotaBytes, minFreeBytes: drive.minFreeSpaceBytes)
            driveProbe = (Task.detached(executorPreference: driveWork) { (StorageKeeper.freeBytes(onDrive), keeper.usedBytes()) },
                          onDrive, .now)
        }
        guard let probe = driveProbe else { preconditionFailure("a drive probe was just made") }
        var entry = StorageStatus(name: "usb", path: onDrive, freeBytes: nil, usedBytes: 0, quotaBytes: drive.quotaBytes, active: target.onDrive)
        guard let answer = await StorageCall.value(of: probe.work, within: Self.driveDeadline) else {
            let silent = ContinuousClock.now - probe.since
            entry.silentSeconds = silent.seconds
            if !driveSilenceReported {
                driveSilenceReported = true
                logger.warning("usb.drive: \(onDrive) has not answered for \(String(format: "%.1f", silent.seconds)) s (its free space): the drive hangs; new recordings go to the SD card (\(configuration.recordingsFolder)) until it answers")
            }
            return entry
        }
        if driveProbe?.since == probe.since { driveProbe = nil }
        if driveSilenceReported || driveHung {
            let silence = driveSilenceReported ? String(format: " after %.1f s", (ContinuousClock.now - probe.since).seconds) : ""
            let again = driveHung ? ": recordings go to it again" : ""
            driveSilenceReported = false
            if driveHung {
                driveHung = false
                driveUsable = true
            }
            logger.notice("usb.drive: \(onDrive) answers again\(silence)\(again)")
        }
        entry.freeBytes = answer.free
        entry.usedBytes = answer.used
        return entry
    }

    /// The SD card's free space as last measured (never a statvfs on the
    /// actor: status and buttons must not wait on a storage).
    private var measuredFreeBytes: Int? {
        status.storages.first { $0.name == "recordings" }?.freeBytes
    }

    /// The metrics file, every `metrics.interval_seconds`. A file that
    /// cannot be written is said once (naming the key), and recording goes on.
    private func writeMetrics() async {
        guard let metricsFile, ContinuousClock.now - metricsWritten >= .seconds(configuration.metricsInterval) else { return }
        metricsWritten = .now
        let text = currentStatus().metricsText
        do {
            try await offPool { try metricsFile.write(text) }
            if status.metrics != metricsFile.path {
                logger.info("metrics every \(configuration.metricsInterval) s in \(metricsFile.path)")
                status.metrics = metricsFile.path
            }
        } catch {
            let problem = "metrics.file: cannot write \(metricsFile.path): \(error); no metrics, recording goes on"
            if status.metrics != problem {
                logger.error("\(problem)")
                status.metrics = problem
            }
        }
    }

    // MARK: Control socket

    /// One command from the control socket; the reply is one JSON line.
    public func command(_ line: String) async -> String {
        let words = line.split(separator: " ").map(String.init)
        func reply(_ ok: Bool, _ message: String, file: String? = nil) -> String {
            var object: [String: Any] = ["ok": ok, "message": message]
            if let file { object["file"] = file }
            let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
            return String(decoding: data, as: UTF8.self)
        }
        switch words {
        case ["status"]:
            let data = (try? JSONEncoder().encode(currentStatus())) ?? Data()
            return String(decoding: data, as: UTF8.self)
        case ["record", "start"]:
            guard let path = await startRecording() else { return reply(false, status.lastError ?? "cannot record") }
            return reply(true, "recording", file: path)
        case ["record", "stop"]:
            if (resumeRecording && currentFile == nil) || encoderDownSince != nil {
                _ = cancelPendingResume()
                if state == .error { enter(.idle) }
                return reply(true, "stopped: the recording will not go on when the stage is back")
            }
            let file = currentFile
            guard file != nil else { return reply(false, "not recording") }
            await stopRecording()
            return reply(true, "stopped", file: status.lastRecording)
        case ["record", "toggle"]:
            await toggleRecording()
            return reply(true, state.rawValue, file: currentFile ?? status.lastRecording)
        case ["photo"]:
            switch await takePhoto() {
            case .success(let path): return reply(true, "photo taken", file: path)
            case .failure(let f): return reply(false, f.message)
            }
        case let w where w.count == 2 && w[0] == "flash":
            guard let mode = FlashMode(rawValue: w[1]) else { return reply(false, "flash takes auto, on or off") }
            setFlash(mode)
            return reply(true, "flash \(mode.rawValue)")
        default:
            return reply(false, "unknown command \"\(line)\"; commands: status, record start|stop|toggle, photo, flash auto|on|off")
        }
    }
}
