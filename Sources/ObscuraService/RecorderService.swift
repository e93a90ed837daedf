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

/// The kiosk recorder: the coordinator over its rooms. It owns the state and
/// the camera's session; the rooms do one job each:
/// `CameraSetup` (opening the camera, the recording settings),
/// `StorageTargets` (where recordings go, failover, cleanup, measurements),
/// `KioskGPIO` (buttons and LEDs), `PhotoFiles` (a photo's files),
/// `StageOutages` (stages down and what waits on them), `ControlCommand`
/// (the control socket's language), `ServiceStatus` and `Metrics`.
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
///
/// Blocking work never runs on the actor (Swift's pool): the camera's
/// configure, start and stop on the camera thread, files (hashing, photos,
/// scans, metrics) on the file thread, the USB drive's on its own.
public actor RecorderService {
    public enum State: String, Sendable { case starting, idle, recording, photo, error }

    /// The file being recorded, from its start to its `finished` event.
    struct RecordingInProgress: Sendable {
        let file: String
        let started: ContinuousClock.Instant
        let onDrive: Bool
        /// A try after an encoder failed: the state stays until the file
        /// has packets, and a failed try is not news.
        var retry: Bool
        var task: Task<Void, Never>?
        /// Whether its first frame's time was journaled.
        var firstFrameSaid = false
        /// Stopped because its drive went away: it goes on on the card.
        var driveRemoved = false
    }

    let configuration: ServiceConfiguration
    let profile: BoardProfile
    /// Leveled: journald files each line under its priority.
    let logger: Logger
    let notifier = SystemdNotifier()
    let storage: StorageTargets
    let camera: CameraSetup
    /// The file thread (hashing, photos, scans, metrics) and the camera's.
    private let fileWork: ThreadExecutor
    private let cameraWork: ThreadExecutor

    private var state = State.starting
    private var status = ServiceStatus()
    /// The camera while it is open.
    private var opened: CameraSetup.Opened?
    /// An opening in progress (on the camera thread).
    private var opening: Task<Void, Never>?
    private let preview = Mutex<PreviewOutput?>(nil)
    private var recording: RecordingInProgress?
    /// A start being prepared (its storage work off the actor).
    private var starting: Task<String?, Never>?
    private var outages = StageOutages()
    private var encoderRetry: Task<Void, Never>?
    private var flashMode = FlashMode.auto
    private var gpio = KioskGPIO()
    private var control: ControlServer?
    private var liveness = RecordingLiveness()
    private var storageWait = StorageWaitNotice()
    private var pace: RecordingPace?
    private var stopping = false
    private var cameraLayerLogged = false
    private var lastEncoderLine = ""
    /// What recordings finished since the start hold (the one in progress is in `status`).
    private var finishedTotals = (frames: 0, bytes: 0, dropped: 0, skipped: 0)
    private let metricsFile: MetricsFile?
    private var metricsWritten = ContinuousClock.now - .seconds(3600)
    /// Whether the system clock is known to be right: until then files get
    /// boot-relative names (`FileNames`).
    private var clockSynchronized = SystemClock.isSynchronized
    private var reportedRenameProblems: Set<String> = []
    /// How long a lost camera's session waits for it before the service
    /// drops the session and opens the camera afresh.
    private let cameraGiveUp: Duration = .seconds(20)

    /// Throws when a thread of its own cannot be made (never a silent
    /// fallback to Swift's pool).
    public init(configuration: ServiceConfiguration, profile: BoardProfile, logger: Logger) throws {
        self.configuration = configuration
        self.profile = profile
        self.logger = logger
        fileWork = try ThreadExecutor(name: "obscura-files")
        cameraWork = try ThreadExecutor(name: "obscura-camera")
        storage = StorageTargets(configuration: configuration, logger: logger, fileWork: fileWork,
                                 driveWork: try ThreadExecutor(name: "obscura-drive"))
        camera = CameraSetup(configuration: configuration, profile: profile, logger: logger, log: Self.infoLines(logger))
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

    private func onFileThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await Task.detached(executorPreference: fileWork) { try body() }.value
    }

    private func onCameraThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await Task.detached(executorPreference: cameraWork) { try body() }.value
    }

    // MARK: Start and stop

    /// Starts everything; returns once the service is up (READY sent).
    public func start() async throws {
        try makeFolders()
        if let health = try? await onFileThread({ HostHealth.read() }) { status.host = health }
        clockSynchronized = status.host.clockSynchronized == true
        await followDrive()
        await measureStorage()
        await storage.recoverInterrupted()
        if !clockSynchronized {
            logger.notice("the clock is not known to be synchronised (\(SystemClock.synchronization().source.rawValue)): files get boot-relative names (obscura-boot-\(SystemClock.bootID)-SECONDS) until it is")
        }
        gpio = KioskGPIO(profile: profile, logger: logger, actions: .init(
            record: { [weak self] in await self?.toggleRecording() },
            photo: { [weak self] in _ = await self?.takePhoto() },
            flash: { [weak self] in await self?.cycleFlash() }))
        for problem in gpio.problems { noteError(problem, reason: .gpio) }
        gpio.show(flash: flashMode)
        // A control client that hangs up before its reply must not stop the
        // recorder (replies are sent with MSG_NOSIGNAL too).
        signal(SIGPIPE, SIG_IGN)
        control = try ControlServer(path: configuration.controlSocket, group: "obscura") { [weak self] line in
            await self?.command(line) ?? ControlReply(false, "stopping").line
        }
        await openCamera()
        if state == .starting { enter(.idle) }
        await storage.trimCard()
        await measureStorage()
        notifier.notify("READY=1\nSTATUS=\(statusLine)")
        logger.notice("ready: \(profile.name), recordings in \(configuration.recordingsFolder), control socket \(configuration.controlSocket)")
        await writeMetrics()
        Task { [weak self] in await self?.housekeeping() }
    }

    private func makeFolders() throws {
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
        if let opened {
            _ = try? await onCameraThread { try opened.session.stopRunning() }
            opened.movie.disarmPreRecording()
        }
        gpio.close()
        control?.close()
        logger.notice("stopped")
    }

    // MARK: Camera

    /// Opens the camera (on the camera thread); one opening at a time.
    private func openCamera() async {
        if let opening { return await opening.value }
        let task = Task { await self.openCameraNow() }
        opening = task
        await task.value
        opening = nil
    }

    private func openCameraNow() async {
        guard opened == nil else { return }
        let camera = camera, flash = gpio.flash, preview = preview
        let made: CameraSetup.Opened
        do {
            made = try await onCameraThread { try camera.open(flash: flash, preview: preview) }
        } catch {
            return fail("camera: \(error)", reason: .camera)
        }
        opened = made
        pace = made.pace
        status.audio = made.audio
        status.cameraFrameRate = made.pace.rate
        status.configuredFrameRate = made.pace.nominal
        status.camera = made.device.uniqueID
        if let stream = made.session.activeConfiguration?.streams.first {
            logger.info("camera \(made.device.uniqueID): \(stream.pixelFormat) \(stream.size)")
            logCameraLayer()
        }
        Task { [weak self, events = made.session.events()] in
            for await event in events { await self?.sessionEvent(event) }
        }
        if outages.cameraDown { cameraRestarted() }
        if state == .error { enter(.idle) }
        resumeIfLost()
    }

    /// The session given up on (its camera gone too long): stopped on the
    /// camera thread, opened afresh by the housekeeping.
    private func dropCamera() async {
        guard let dropped = opened else { return }
        opened = nil
        _ = try? await onCameraThread { try dropped.session.stopRunning() }
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
            outages.cameraLost(at: .now)
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
        let gap = outages.cameraBack(at: .now).seconds
        status.stageRestarts["camera", default: 0] += 1
        status.stageGapSeconds["camera", default: 0] += gap
        logger.notice("camera back after \(String(format: "%.1f", gap)) s without frames")
    }

    /// The recording the camera's loss ended goes on, in a new file.
    private func resumeIfLost() {
        guard outages.resumeRecording, !stopping else { return }
        outages.resumeRecording = false
        Task {
            if let path = await startRecording() { logger.notice("recording goes on after the camera's loss: \(path)") }
        }
    }

    /// One housekeeping round of the pace: what the recording in progress
    /// recorded and dropped since the last round decides a step.
    private func followPace() {
        guard var follower = pace, let opened, state == .recording, recording != nil else {
            pace?.restartWindow()
            return
        }
        defer { pace = follower }
        let step: RecordingPace.Step?
        do {
            step = try follower.follow(frames: status.frames, dropped: status.droppedFrames, device: opened.device, movie: opened.movie)
        } catch {
            return logger.warning("camera \(opened.device.uniqueID): cannot set another frame rate: \(error)")
        }
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

    // MARK: Recording

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

    /// `retry`: a try after an encoder failed. A start asked for while one
    /// is being prepared gets that one's answer.
    private func startRecording(retry: Bool) async -> String? {
        if let starting { return await starting.value }
        let start = Task { await self.startRecordingNow(retry: retry) }
        starting = start
        let path = await start.value
        starting = nil
        return path
    }

    private func startRecordingNow(retry: Bool) async -> String? {
        guard state != .recording, !stopping, recording == nil else { return recording?.file }
        if opened == nil { await openCamera() }
        guard let session = opened?.session else {
            fail("cannot record: no camera", reason: .camera)
            return nil
        }
        if session.isInterrupted {
            outages.resumeRecording = true
            fail("cannot record now: the camera is gone; recording starts when it is back", reason: .camera)
            return nil
        }
        let target: StorageTargets.Target
        switch await storage.choose() {
        case .record(let t): target = t
        case .full(let message):
            noteStorageRestarts(await storage.restarts)
            fail(message, reason: .storage)
            return nil
        }
        noteStorageRestarts(await storage.restarts)
        // The actor ran other work meanwhile: look again.
        guard state != .recording, !stopping, recording == nil else { return recording?.file }
        guard let opened else {
            fail("cannot record: no camera", reason: .camera)
            return nil
        }
        return begin(on: target, opened, retry: retry)
    }

    private func begin(on target: StorageTargets.Target, _ opened: CameraSetup.Opened, retry: Bool) -> String? {
        let path = "\(target.folder)/\(FileNames.stem(clockSynchronized: clockSynchronized)).\(configuration.recordingExtension)"
        let movie = opened.movie
        movie.segmentDuration = configuration.segmentSeconds > 0 ? .seconds(configuration.segmentSeconds) : nil
        movie.minFreeDiskSpace = target.minFree
        movie.maxRecordedDuration = nil
        do {
            let settings = camera.movieSettings(opened.device, frameRate: opened.frameRate, partialDirectory: target.incoming)
            let events = try movie.startRecording(to: path, settings: settings)
            recording = RecordingInProgress(file: path, started: .now, onDrive: target.onDrive, retry: retry)
            // The status shows the recording in progress from its start.
            status.frames = 0
            status.bytes = 0
            status.droppedFrames = 0
            status.skippedFramesTotal = 0
            if !retry {
                enter(.recording)
                logger.notice("recording \(path)")
            }
            recording?.task = Task { await self.follow(events) }
            return path
        } catch {
            if !retry { fail("cannot record: \(error)", reason: .recording) }
            return nil
        }
    }

    private func noteStorageRestarts(_ count: Int) {
        if count > 0 { status.stageRestarts["storage"] = count }
    }

    private func follow(_ events: AsyncStream<RecordingEvent>) async {
        for await event in events {
            switch event {
            case .progress(let p):
                take(p)
            case .segmentFinished(let path):
                status.recordings += 1
                logger.info("segment finished: \(path)")
                await storage.trim(onDrive: recording?.onDrive == true)
            case .finished(_, .encoderFailed, let p) where recording?.retry == true && p.frames == 0:
                // A try while the encoder is down that made nothing: try again.
                recording = nil
                scheduleEncoderRetry()
            case .finished(let path, let reason, let p):
                let ended = recording
                recording = nil
                // A try that ended before its file opened (stopped meanwhile): nothing was recorded.
                if ended?.retry == true && p.frames == 0 { continue }
                finished(path, reason, p, ended)
            case .started(let path):
                started(path)
            }
        }
    }

    /// A recording's first packets in its file.
    private func started(_ path: String) {
        if recording?.firstFrameSaid == false, let zero = opened?.movie.progress.timeZeroNanoseconds {
            // The wall-clock time of the first frame (what its caption
            // shows, and every later frame's time follows from the file's).
            recording?.firstFrameSaid = true
            let format = ISO8601DateFormatter()
            format.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            let wall = SystemClock.wallClock(ofMonotonic: zero)
            logger.info("recording \(path): first frame taken at \(format.string(from: wall)) (\(String(format: "%.6f", wall.timeIntervalSince1970)) s)")
        }
        if let r = recording, r.retry {
            recording?.retry = false
            encoderRestarted()
            enter(.recording)
            let took = (ContinuousClock.now - r.started).seconds
            logger.notice("recording goes on after the encoder's failure: \(path) (its first packet \(String(format: "%.2f", took)) s after the file was opened)")
        }
        // One line: which encoder, how frames reach it, and why it was chosen.
        if let p = opened?.movie.progress, !p.encoder.isEmpty, p.encoder != lastEncoderLine {
            lastEncoderLine = p.encoder
            logger.info("encoder \(p.encoder); frames \(p.path) [\(p.encoderChoice)]")
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

    private func finished(_ path: String, _ reason: RecordingFinishReason, _ p: RecordingProgress, _ ended: RecordingInProgress?) {
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
        // A recording on the drive that failed (a write or sync error) or
        // was stopped because the drive went away: when the drive is gone,
        // it goes on on the card.
        var failed = ended?.driveRemoved == true
        switch reason {
        case .error, .diskFull, .storageFailed: failed = true
        default: break
        }
        if ended?.onDrive == true, failed, !stopping {
            status.recordingsFailed += 1
            Task { await self.failOverFromDrive(reason) }
            return
        }
        let storage = storage
        Task { await storage.trimCard() }
        recordingFinished(reason, frames: p.frames)
    }

    private func recordingFinished(_ reason: RecordingFinishReason, frames: Int) {
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
            outages.cameraLost(at: .now)
            outages.resumeRecording = true
            fail("camera lost: the recording was finalized; it goes on in a new file when the camera is back", reason: .camera)
        case .encoderFailed(let e) where frames > 0 && !stopping:
            // The file keeps what the encoder gave back; a new recording is
            // tried until an encoder (this one back, or the next in the
            // profile's order) takes frames.
            status.recordingsFailed += 1
            outages.encoderFailed(at: .now)
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
    /// recording goes on on the card at once; when it is still there, the
    /// failure is the recording's own.
    private func failOverFromDrive(_ reason: RecordingFinishReason) async {
        guard await storage.driveGoneAfterFailure() else {
            return fail("recording failed: \(reason)", reason: .recording)
        }
        noteStorageRestarts(await storage.restarts)
        if state == .recording { enter(.idle) }
        if let path = await startRecording() {
            logger.notice("recording goes on on the SD card after the drive went away: \(path)")
        }
    }

    /// The drive looked for: a recording on it when it went away is stopped
    /// (what can be finalized is) and goes on on the card.
    private func followDrive() async {
        switch await storage.followDrive(recordingOnIt: recording?.onDrive == true) {
        case .goneUnderRecording?:
            guard recording?.onDrive == true else { return }
            recording?.driveRemoved = true
            opened?.movie.stopRecording()
        case .unwritable(let message)?:
            noteError(message, reason: .drive)
        case nil: break
        }
    }

    private func scheduleEncoderRetry() {
        guard outages.encoderDown, !stopping else { return }
        encoderRetry = Task { [weak self] in
            try? await Task.sleep(for: .milliseconds(500))
            guard !Task.isCancelled else { return }
            await self?.retryEncoder()
        }
    }

    private func retryEncoder() async {
        guard outages.encoderDown, !stopping, recording == nil else { return }
        if opened?.session.isInterrupted == true { return scheduleEncoderRetry() }
        if await startRecording(retry: true) == nil { scheduleEncoderRetry() }
    }

    /// Packets flow again after an encoder failed: one restart of the
    /// encoder stage, and the time it left unrecorded.
    private func encoderRestarted() {
        let gap = outages.encoderBack(at: .now).seconds
        status.stageRestarts["encoder", default: 0] += 1
        status.stageGapSeconds["encoder", default: 0] += gap
        logger.notice("encoder back after \(String(format: "%.1f", gap)) s without packets")
    }

    /// A press or `ctl record stop` while a failed stage's recording waits
    /// to go on: it will not. Returns whether one was waiting.
    private func cancelPendingResume() -> Bool {
        let (cancelled, encoder) = outages.cancelWaiting()
        if encoder {
            encoderRetry?.cancel()
            encoderRetry = nil
            if recording?.retry == true { opened?.movie.stopRecording() }
        }
        return cancelled
    }

    public func stopRecording() async {
        guard let movie = opened?.movie, let task = recording?.task else { return }
        movie.stopRecording()
        await task.value
    }

    // MARK: Photos and flash

    /// Takes a photo from the running session (zero shutter lag; also while
    /// recording) into the photos folder. Returns its path.
    public func takePhoto() async -> Result<String, PhotoFailure> {
        guard let opened else {
            logger.error("cannot take a photo: no camera")
            return .failure(PhotoFailure(message: "cannot take a photo: no camera"))
        }
        let previous = state
        // What the photo costs a recording in progress: the frames its
        // recorder's queue drops meanwhile (at most what the queue holds, if
        // the photo never holds it up).
        let recorderDropsBefore = previous == .recording ? opened.movie.queue.drops : nil
        let photoStart = ContinuousClock.now
        if previous != .recording { enter(.photo) }
        defer { if previous != .recording && state == .photo { enter(previous == .starting ? .idle : previous) } }
        do {
            var settings = PhotoSettings(jpegQuality: 90, flashMode: flashMode, thumbnailSize: PixelSize(width: 160, height: 120))
            if configuration.overlayOnPhotos { settings.overlay = camera.captionSettings(opened.device) }
            if configuration.photoRaw {
                settings.rawPixelFormat = opened.photo.availableRawPhotoPixelFormats.first
                if settings.rawPixelFormat == nil { logger.warning("photo.raw is set but the camera has no raw stream: JPEG only") }
            }
            let photos = try await opened.photo.capturePhoto(with: settings)
            guard let photo = photos.first else { return .failure(PhotoFailure(message: "the capture gave no photo")) }
            let files = PhotoFiles(configuration: configuration), synchronized = clockSynchronized
            let saved: PhotoFiles.Saved
            do {
                saved = try await onFileThread { try files.save(photos, clockSynchronized: synchronized) }
            } catch {
                return .failure(error as? PhotoFailure ?? PhotoFailure(message: "\(error)"))
            }
            for problem in saved.problems {
                logger.warning("\(problem)")
                noteError(problem, reason: .storage)
            }
            status.photos += 1
            let lag = photo.resolvedSettings.shutterLag.map { String(format: "%.1f ms", Double($0.components.attoseconds) / 1e15 + Double($0.components.seconds) * 1000) } ?? "?"
            let took = (ContinuousClock.now - photoStart) / .milliseconds(1)
            let recorderDrops = recorderDropsBefore.map { ", the recording dropped \(opened.movie.queue.drops - $0) frames in the \(Int(took)) ms it took" } ?? ""
            logger.notice("photo \(saved.path): \(photo.pixelSize), shutter lag \(lag)\(photo.resolvedSettings.flashWillFire ? ", flash" : "")\(recorderDrops)")
            return .success(saved.path)
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
        gpio.show(flash: mode)
        logger.notice("flash \(mode.rawValue)")
    }

    // MARK: State and status

    private func enter(_ new: State) {
        state = new
        status.state = new.rawValue
        gpio.show(recording: new == .recording, error: new == .error)
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

    private func noteError(_ message: String, reason: ErrorReason) {
        status.noteError(message, reason: reason, at: Date())
    }

    private var statusLine: String {
        var line = state.rawValue
        if let file = recording?.file { line += " " + (file as NSString).lastPathComponent }
        if let e = status.lastError, state == .error { line += ": " + e }
        return line
    }

    public func currentStatus() -> ServiceStatus {
        status.snapshot(state: state.rawValue, file: recording?.file,
                        elapsedSeconds: recording.map { (ContinuousClock.now - $0.started).seconds } ?? 0,
                        finished: finishedTotals, preview: preview.withLock { $0.map { "\($0.status)" } })
    }

    // MARK: Housekeeping

    /// Every two seconds: retry what failed, keep storage in bounds, tell
    /// systemd's watchdog the service is alive — unless a recording has
    /// stopped advancing while its camera goes on delivering (RecordingLiveness).
    private func housekeeping() async {
        let interval = notifier.watchdogInterval.map { min($0, .seconds(2)) } ?? .seconds(2)
        while !stopping {
            try? await Task.sleep(for: interval)
            if stopping { break }
            await reviveCamera()
            await keepAlive()
            // sysfs reads can block (a sensor on I²C): off the pool.
            if let health = try? await onFileThread({ HostHealth.read() }) { status.host = health }
            followPace()
            await followDrive()
            await measureStorage()
            await followClock()
            await writeMetrics()
        }
    }

    /// A camera gone for `cameraGiveUp` is opened afresh; out of the error
    /// state once a camera is there and the card has room.
    private func reviveCamera() async {
        if let since = outages.cameraSince, opened?.session.isInterrupted == true, ContinuousClock.now - since > cameraGiveUp {
            logger.warning("the camera has been gone for \(cameraGiveUp): opening it afresh")
            await dropCamera()
            if state != .error { fail("camera lost", reason: .camera) }
        }
        guard state == .error, !outages.encoderDown else { return }
        if opened == nil { await openCamera() }
        // (A session waiting for its lost camera is not one to use yet.)
        guard state == .error, opened.map({ !$0.session.isInterrupted }) == true else { return }
        let cameraError = status.lastError?.hasPrefix("camera") == true
        let free = status.storages.first { $0.name == "recordings" }?.freeBytes ?? Int.max
        if cameraError || free >= configuration.minFreeSpaceBytes { enter(.idle) }
    }

    /// The watchdog's keep-alive, unless the recording is wedged. A recording
    /// held up by a drive that does not answer, or inside a call into its
    /// storage that has not returned (a drive going away, a card that
    /// stalls), is not a wedged recorder until `driveHangGrace`: systemd
    /// then restarts the service, which records to the card.
    private func keepAlive() async {
        let recording = state == .recording && opened?.session.isRunning == true
        let onHungDrive = recording && self.recording?.onDrive == true
        let waitingOnDrive = onHungDrive ? await storage.driveHangsWithinGrace : false
        let wait = recording ? opened?.movie.storageWait : nil
        if let (warning, line) = storageWait.look(wait) {
            if warning { logger.warning("\(line)") } else { logger.notice("\(line)") }
        }
        let waiting = waitingOnDrive || wait.map { $0 < StorageTargets.driveHangGrace } == true
        let wedge = liveness.look(written: recording && !waiting ? opened?.movie.progress.frames ?? 0 : nil,
                                  delivered: opened?.session.deliveredFrameCount ?? 0, now: .now)
        if let wedge {
            logger.error("the recording has not advanced for \(wedge.stalled) while the camera delivered \(wedge.delivered) frames; no watchdog keep-alive")
        } else {
            notifier.notify("WATCHDOG=1\nSTATUS=\(statusLine)")
        }
    }

    private func measureStorage() async {
        status.storages = await storage.measure()
    }

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
        let result = await storage.renameBootNamed()
        for (old, new) in result.renamed {
            logger.notice("renamed \(old) to \((new as NSString).lastPathComponent): the clock is now known")
            if status.lastRecording == old { status.lastRecording = new }
        }
        for problem in result.problems where !reportedRenameProblems.contains(problem) {
            reportedRenameProblems.insert(problem)
            logger.warning("\(problem)")
        }
    }

    /// The metrics file, every `metrics.interval_seconds`. A file that
    /// cannot be written is said once (naming the key), and recording goes on.
    private func writeMetrics() async {
        guard let metricsFile, ContinuousClock.now - metricsWritten >= .seconds(configuration.metricsInterval) else { return }
        metricsWritten = .now
        let text = currentStatus().metricsText
        do {
            try await onFileThread { try metricsFile.write(text) }
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
        switch ControlCommand.parse(line) {
        case .failure(let reply): return reply.line
        case .success(.status): return ControlReply.status(currentStatus())
        case .success(.recordStart):
            guard let path = await startRecording() else { return ControlReply(false, status.lastError ?? "cannot record").line }
            return ControlReply(true, "recording", file: path).line
        case .success(.recordStop):
            if (outages.resumeRecording && recording == nil) || outages.encoderDown {
                _ = cancelPendingResume()
                if state == .error { enter(.idle) }
                return ControlReply(true, "stopped: the recording will not go on when the stage is back").line
            }
            guard recording != nil else { return ControlReply(false, "not recording").line }
            await stopRecording()
            return ControlReply(true, "stopped", file: status.lastRecording).line
        case .success(.recordToggle):
            await toggleRecording()
            return ControlReply(true, state.rawValue, file: recording?.file ?? status.lastRecording).line
        case .success(.photo):
            switch await takePhoto() {
            case .success(let path): return ControlReply(true, "photo taken", file: path).line
            case .failure(let f): return ControlReply(false, f.message).line
            }
        case .success(.flash(let mode)):
            setFlash(mode)
            return ControlReply(true, "flash \(mode.rawValue)").line
        }
    }
}
