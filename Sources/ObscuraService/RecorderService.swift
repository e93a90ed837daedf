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
    let configuration: ServiceConfiguration
    let profile: BoardProfile
    /// Leveled: journald files each line under its priority.
    let logger: Logger
    /// systemd's: silent for one of a kiosk's cameras (the kiosk speaks for all).
    let notifier: SystemdNotifier
    /// The kiosk this camera is one of (`Kiosk`), which owns the buttons,
    /// LEDs, control socket, metrics and systemd; nil: this service is the
    /// whole kiosk.
    let kiosk: KioskLink?
    /// Why the camera could not be opened, the last time it could not.
    var cameraProblem: String?
    /// The housekeeping rounds (`housekeeping`): ended at the shutdown, so
    /// that its wait does not keep the service alive after it.
    var rounds: Task<Void, Never>?
    /// Whether the last keep-alive round found the recording wedged.
    var wedged = false
    /// The file thread (hashing, photos, scans, metrics) and the camera's.
    let fileWork: ThreadExecutor
    let cameraWork: ThreadExecutor
    /// The picture and sound watches' thread (`ServicePicture`, `ServiceSound`).
    let healthWork: ThreadExecutor
    /// The time the coordinator's waits and measures are on (a test's own).
    let clock: any WaitingClock

    // The rooms, each a type with its own state.
    let storage: StorageTargets
    let setup: CameraSetup
    let preview = Mutex<PreviewOutput?>(nil)
    /// The live view (`ServiceLive`): the viewers' feed, kept across the
    /// camera's reopenings, and its socket.
    let liveFeed: LiveFeed
    var live: LiveServer?
    var gpio = KioskGPIO()
    var control: ControlServer?
    var pressure: PressureSteps
    var outages = StageOutages()
    var watchdog = WatchdogLooks()
    var metrics: MetricsSchedule?

    // What the service is doing, and what it has counted and said. The
    // state is set only through its door, `enter` or `change` (below).
    private(set) var state = ServiceState.starting
    var camera = CameraState.closed
    /// A start being prepared (its storage work off the actor): a start
    /// asked for meanwhile gets its answer.
    var starting: Task<String?, Never>?
    /// The counters `obscura status` shows (`currentStatus` adds the state's).
    var status = ServiceStatus()
    /// The picture's and the sound's conditions (`ServicePicture`, `ServiceSound`).
    var conditions = HealthConditions()
    var totals = RecordingTotals()
    var flashMode = FlashMode.auto
    /// Whether the system clock is known to be right: until then files get
    /// boot-relative names (`FileNames`).
    var clockSynchronized = SystemClock.isSynchronized
    var said = SaidOnce()
    /// The recordings' names: a second one begun within a second gets `-2`.
    var stems = RecordingStems()

    /// How long a lost camera's session waits for it before the service
    /// drops the session and opens the camera afresh.
    let cameraGiveUp: Duration = .seconds(20)
    /// How often a new recording is tried while the encoder is down.
    static let encoderRetryInterval: Duration = .milliseconds(500)

    /// After the time in a file's name: the camera's, when it is one of several.
    var cameraSuffix: String { configuration.cameraName.map { "-" + $0 } ?? "" }

    /// The camera while it is open.
    var opened: CameraSetup.Opened? { camera.opened }
    /// The recording in progress, whichever state carries it.
    var recording: RecordingInProgress? { state.recording }
    var stopping: Bool { state.isStopping }

    /// Throws when a thread of its own cannot be made (never a silent
    /// fallback to Swift's pool).
    public init(configuration: ServiceConfiguration, profile: BoardProfile, logger: Logger,
                clock: any WaitingClock = SystemWaitingClock()) throws {
        try self.init(configuration: configuration, profile: profile, logger: logger, clock: clock, kiosk: nil)
    }

    /// One camera of `kiosk`'s.
    init(configuration: ServiceConfiguration, profile: BoardProfile, logger: Logger,
         clock: any WaitingClock, kiosk: KioskLink?) throws {
        self.configuration = configuration
        self.kiosk = kiosk
        notifier = kiosk == nil ? SystemdNotifier() : SystemdNotifier(environment: [:])
        self.clock = clock
        self.profile = profile
        self.logger = logger
        fileWork = try ThreadExecutor(name: "obscura-files")
        cameraWork = try ThreadExecutor(name: "obscura-camera")
        healthWork = try ThreadExecutor(name: "obscura-health")
        var pressureSettings = profile.pressure
        pressureSettings.settle = configuration.pressure.settle
        pressure = PressureSteps(settings: pressureSettings, stepsDown: configuration.pressure.stepsDown)
        storage = StorageTargets(configuration: configuration, logger: logger, fileWork: fileWork,
                                 driveWork: try ThreadExecutor(name: "obscura-drive"), clock: clock)
        liveFeed = LiveFeed(limit: configuration.liveViewers)
        setup = CameraSetup(configuration: configuration, profile: profile, logger: logger, log: Self.infoLines(logger),
                             clock: clock, live: liveFeed)
        metrics = configuration.metricsFile.isEmpty ? nil
            : MetricsSchedule(file: MetricsFile(path: configuration.metricsFile), every: .seconds(configuration.metricsInterval))
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
        if kiosk == nil { try startControls() }
        startLive()
        await openCamera()
        if case .starting = state { enter(.idle) }
        if configuration.recordingStart == .powerOn { await recordFromStart() }
        await storage.trimCard()
        await measureStorage()
        notifier.notify("READY=1\nSTATUS=\(statusLine)")
        logger.notice("ready: \(profile.name), recordings in \(configuration.recordingsFolder), control socket \(configuration.controlSocket)")
        await writeMetrics()
        rounds = Task { [weak self] in await self?.housekeeping() }
    }

    /// The buttons, LEDs and control socket of a service that is the whole kiosk.
    func startControls() throws {
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
        enter(.stopping(recording))
        notifier.notify("STOPPING=1\nSTATUS=stopping")
        await stopRecording()
        if let opened {
            _ = try? await onCameraThread { try opened.session.stopRunning() }
            opened.sound?.sampler.end()
            opened.movie.disarmPreRecording()
        }
        rounds?.cancel()
        gpio.close()
        control?.close()
        live?.close()
        logger.notice("stopped")
    }

    // MARK: State and status

    /// The state's one door: a stopping service stays stopping, and the
    /// LEDs and systemd hear of every change.
    func enter(_ new: ServiceState) {
        if state.isStopping, !new.isStopping { return }
        if new.recording == nil, let kept = state.recording {
            state = new.carrying(kept)
        } else {
            state = new
        }
        showLEDs()
        notifier.notify("STATUS=\(statusLine)")
    }

    /// The state changed in place (the recording's flags, its file's end):
    /// through the same door, so the LEDs and systemd hear of it too.
    func change(_ body: (inout ServiceState) -> Void) {
        body(&state)
        showLEDs()
        notifier.notify("STATUS=\(statusLine)")
    }

    func showLEDs() {
        if let kiosk {
            return kiosk.changed(KioskLink.Summary(recording: state.isRecording, error: state.isError,
                                                   attention: conditions.attention, line: statusLine))
        }
        gpio.show(recording: state.isRecording, error: state.isError,
                  attention: conditions.attention)
    }

    /// Into the error state for `message`, keeping a recording still being
    /// finalized. A retry that fails the same way is not news.
    func fail(_ message: String, reason: ErrorReason) {
        let failure = ServiceFailure(message: message, reason: reason)
        if state.failure != failure || !state.isError {
            logger.error("\(message)")
            noteError(message, reason: reason)
        }
        enter(.error(failure, recording: nil))
    }

    func noteError(_ message: String, reason: ErrorReason) {
        status.noteError(message, reason: reason, at: Date())
    }

    var statusLine: String {
        var line = state.name
        if let file = recording?.file { line += " " + (file as NSString).lastPathComponent }
        if case .error(let f, _) = state { line += ": " + f.message }
        return line
    }

    /// What `obscura status` shows: the counters, with what the state, the
    /// camera, the live view and the settings say now.
    public func currentStatus() -> ServiceStatus {
        let open = camera.open
        var now = status.snapshot(state: state.name, file: recording?.file,
                                  elapsedSeconds: recording.map { (clock.now - $0.started).seconds } ?? 0,
                                  finished: totals, preview: preview.withLock { $0.map { "\($0.status)" } }.map {
                                      open?.previewPaused == true ? "paused under system pressure (\(pressure.level.name)): \($0)" : $0
                                  })
        now.board = profile.name
        now.preRecordSeconds = configuration.preRecordSeconds
        now.flash = flashMode.rawValue
        now.cameraDown = outages.cameraDown || open == nil
        if recording != nil, let zero = opened?.movie.progress.timeZeroNanoseconds { now.recordingTimeZero = Double(zero) / 1e9 }
        conditions.show(in: &now)
        if live != nil {
            let counts = liveFeed.counts
            (now.liveViewers, now.liveBytes, now.liveSkips) = (counts.viewers, counts.bytes, counts.skips)
        }
        return now
    }
}
