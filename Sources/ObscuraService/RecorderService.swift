import Foundation
import ObscuraFormats
import Logging
import ObscuraAge
import ObscuraAudio
import ObscuraCamera
import ObscuraCapture
import ObscuraEncoding
import ObscuraGPIO
import ObscuraHealth
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
    let fileWork: ThreadExecutor
    let cameraWork: ThreadExecutor
    /// The picture and sound watches' thread (`ServicePicture`, `ServiceSound`).
    let healthWork: ThreadExecutor
    /// The time the coordinator's waits and measures are on (a test's own).
    let clock: any WaitingClock

    var state = State.starting
    var status = ServiceStatus()
    /// The camera while it is open.
    var opened: CameraSetup.Opened?
    /// An opening in progress (on the camera thread).
    var opening: Task<Void, Never>?
    let preview = Mutex<PreviewOutput?>(nil)
    var recording: RecordingInProgress?
    /// A start being prepared (its storage work off the actor).
    var starting: Task<String?, Never>?
    var outages = StageOutages()
    var encoderRetry: Task<Void, Never>?
    var flashMode = FlashMode.auto
    var gpio = KioskGPIO()
    var control: ControlServer?
    /// The live view (`ServiceLive`): the viewers' feed, kept across the
    /// camera's reopenings, and its socket.
    let liveFeed: LiveFeed
    var live: LiveServer?
    /// Whether the encoder runs for the viewers alone (no recording).
    var encodingForViewers = false
    var liveness = RecordingLiveness()
    var storageWait = StorageWaitNotice()
    var pace: RecordingPace?
    /// The system's pressure, followed each housekeeping round (`ServicePressure`).
    var pressure: SystemPressure
    /// Whether the pressure has paused the preview.
    var previewPaused = false
    var stopping = false
    var cameraLayerLogged = false
    var lastEncoderLine = ""
    /// What recordings finished since the start hold (the one in progress is in `status`).
    var finishedTotals = (frames: 0, bytes: 0, dropped: 0, skipped: 0)
    let metricsFile: MetricsFile?
    var metricsWritten: ContinuousClock.Instant?
    /// Whether the system clock is known to be right: until then files get
    /// boot-relative names (`FileNames`).
    var clockSynchronized = SystemClock.isSynchronized
    var reportedRenameProblems: Set<String> = []
    /// How long a lost camera's session waits for it before the service
    /// drops the session and opens the camera afresh.
    let cameraGiveUp: Duration = .seconds(20)
    /// How often a new recording is tried while the encoder is down.
    static let encoderRetryInterval: Duration = .milliseconds(500)

    /// Throws when a thread of its own cannot be made (never a silent
    /// fallback to Swift's pool).
    public init(configuration: ServiceConfiguration, profile: BoardProfile, logger: Logger,
                clock: any WaitingClock = SystemWaitingClock()) throws {
        self.configuration = configuration
        self.clock = clock
        self.profile = profile
        self.logger = logger
        fileWork = try ThreadExecutor(name: "obscura-files")
        cameraWork = try ThreadExecutor(name: "obscura-camera")
        healthWork = try ThreadExecutor(name: "obscura-health")
        var pressureSettings = profile.pressure
        pressureSettings.settle = configuration.pressure.settle
        pressure = SystemPressure(settings: pressureSettings)
        storage = StorageTargets(configuration: configuration, logger: logger, fileWork: fileWork,
                                 driveWork: try ThreadExecutor(name: "obscura-drive"), clock: clock)
        liveFeed = LiveFeed(limit: configuration.liveViewers)
        camera = CameraSetup(configuration: configuration, profile: profile, logger: logger, log: Self.infoLines(logger),
                             clock: clock, live: liveFeed)
        status.board = profile.name
        status.preRecordSeconds = configuration.preRecordSeconds
        metricsFile = configuration.metricsFile.isEmpty ? nil : MetricsFile(path: configuration.metricsFile)
    }

    /// Each line an info line of `logger`. (Made outside the actor's
    /// initializer: Swift 6.0 takes a closure formed there for one isolated
    /// to the actor.)
    static func infoLines(_ logger: Logger) -> @Sendable (String) -> Void {
        { logger.info("\($0)") }
    }

    func onFileThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await Task.detached(executorPreference: fileWork) { try body() }.value
    }

    func onCameraThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await Task.detached(executorPreference: cameraWork) { try body() }.value
    }

    // MARK: Start and stop

    /// Starts everything; returns once the service is up (READY sent).
    public func start() async throws {
        try makeFolders()
        await readHost()
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
        if let note = control?.accessNote { logger.warning("control socket: \(note)") }
        startLive()
        await openCamera()
        if state == .starting { enter(.idle) }
        await storage.trimCard()
        await measureStorage()
        notifier.notify("READY=1\nSTATUS=\(statusLine)")
        logger.notice("ready: \(profile.name), recordings in \(configuration.recordingsFolder), control socket \(configuration.controlSocket)")
        await writeMetrics()
        Task { [weak self] in await self?.housekeeping() }
    }

    func makeFolders() throws {
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
        (try? Syscalls.status(path)).map { UInt64($0.st_dev) }
    }

    /// Finalizes a recording in progress and releases everything (SIGTERM).
    public func shutdown() async {
        stopping = true
        notifier.notify("STOPPING=1\nSTATUS=stopping")
        await stopRecording()
        if let opened {
            _ = try? await onCameraThread { try opened.session.stopRunning() }
            opened.sound?.sampler.end()
            opened.movie.disarmPreRecording()
        }
        gpio.close()
        control?.close()
        live?.close()
        logger.notice("stopped")
    }

    // MARK: State and status

    func enter(_ new: State) {
        state = new
        status.state = new.rawValue
        showLEDs()
        notifier.notify("STATUS=\(statusLine)")
    }

    func showLEDs() {
        gpio.show(recording: state == .recording, error: state == .error,
                  attention: !(status.pictureConditions ?? []).isEmpty || !(status.soundConditions ?? []).isEmpty)
    }

    func fail(_ message: String, reason: ErrorReason) {
        // A retry that fails the same way is not news.
        if status.lastError != message || state != .error {
            logger.error("\(message)")
            noteError(message, reason: reason)
        }
        enter(.error)
    }

    func noteError(_ message: String, reason: ErrorReason) {
        status.noteError(message, reason: reason, at: Date())
    }

    var statusLine: String {
        var line = state.rawValue
        if let file = recording?.file { line += " " + (file as NSString).lastPathComponent }
        if let e = status.lastError, state == .error { line += ": " + e }
        return line
    }

    public func currentStatus() -> ServiceStatus {
        var now = status.snapshot(state: state.rawValue, file: recording?.file,
                                  elapsedSeconds: recording.map { (clock.now - $0.started).seconds } ?? 0,
                                  finished: finishedTotals, preview: preview.withLock { $0.map { "\($0.status)" } }.map {
                                      previewPaused ? "paused under system pressure (\(pressure.level.name)): \($0)" : $0
                                  })
        now.cameraDown = outages.cameraDown || opened == nil
        if live != nil {
            let counts = liveFeed.counts
            (now.liveViewers, now.liveBytes, now.liveSkips) = (counts.viewers, counts.bytes, counts.skips)
        }
        return now
    }

}
