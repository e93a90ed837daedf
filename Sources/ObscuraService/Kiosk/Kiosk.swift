import Foundation
import Logging
import ObscuraFormats
import ObscuraGPIO
import ObscuraPhoto
import ObscuraSystem

/// A kiosk with several cameras (`[cameras.NAME]`): one `RecorderService`
/// per camera, each with its whole life (its session, state, recordings,
/// watches, live view and files), under one kiosk that owns what they
/// share: the buttons and LEDs, the control socket, the metrics file and
/// systemd. One libcamera camera manager serves them all (the capture
/// stack keeps one a process).
///
/// The record button and `obscura ctl record …` act on every camera at
/// once; a camera's own button (`record_button`) or `obscura ctl --camera
/// NAME …` on that one. A camera that fails, or is not there at the start,
/// is that camera's error: the others go on, and it joins when it is back.
public actor Kiosk {
    public struct Member: Sendable {
        public let name: String
        public let service: RecorderService
    }

    let configuration: ServiceConfiguration
    let profile: BoardProfile
    let logger: Logger
    let clock: any WaitingClock
    let notifier = SystemdNotifier()
    /// The metrics file's writes (never on Swift's pool).
    let fileWork: ThreadExecutor
    public nonisolated let members: [Member]
    let summaries: Mutex<[String: KioskLink.Summary]>
    let flash: Mutex<GPIOFlash?>
    let segmentOrigin: Mutex<UInt64?>
    /// A camera's state changed (`KioskLink`): the LEDs and systemd follow.
    let changes: AsyncStream<Void>
    var gpio = KioskGPIO()
    var control: ControlServer?
    var metrics: MetricsSchedule?
    var flashMode = FlashMode.auto
    var stopping = false
    /// The housekeeping rounds, ended at the shutdown (see RecorderService's).
    var rounds: Task<Void, Never>?
    /// The last press of a record button (or record command) that started
    /// the cameras, CLOCK_MONOTONIC ns.
    var pressed: UInt64?
    /// Where the metrics file is written, or why it is not.
    var metricsNote: String?

    public init(configuration: ServiceConfiguration, profile: BoardProfile, logger: Logger,
                clock: any WaitingClock = SystemWaitingClock()) throws {
        precondition(!configuration.cameras.isEmpty, "a kiosk of cameras needs [cameras.NAME] tables")
        self.configuration = configuration
        self.profile = profile
        self.logger = logger
        self.clock = clock
        fileWork = try ThreadExecutor(name: "obscura-kiosk")
        let summaries = Mutex<[String: KioskLink.Summary]>([:])
        let flash = Mutex<GPIOFlash?>(nil), origin = Mutex<UInt64?>(nil)
        let (changes, changed) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        var members: [Member] = []
        for (i, camera) in configuration.cameras.enumerated() {
            var own = configuration.member(camera)
            // The display shows the first camera.
            if i > 0 { own.previewEnabled = false }
            let link = KioskLink(name: camera.name, flash: flash, summaries: summaries, segmentOrigin: origin,
                                 shown: { changed.yield() })
            let service = try RecorderService(configuration: own, profile: profile.member(camera),
                                              logger: Self.logger(logger, camera: camera.name), clock: clock, kiosk: link)
            members.append(Member(name: camera.name, service: service))
        }
        self.members = members
        self.summaries = summaries
        self.flash = flash
        segmentOrigin = origin
        self.changes = changes
        metrics = configuration.metricsFile.isEmpty ? nil
            : MetricsSchedule(file: MetricsFile(path: configuration.metricsFile), every: .seconds(configuration.metricsInterval))
    }

    /// `logger`, each line saying which camera.
    static func logger(_ logger: Logger, camera: String) -> Logger {
        var own = logger
        own[metadataKey: "camera"] = "\(camera)"
        return own
    }

    /// Starts the controls, then every camera; returns once all are up (READY sent).
    public func start() async throws {
        startControls()
        // Recording from power-on: every camera's segments are cut from the start.
        if configuration.recordingStart == .powerOn {
            pressed = clock.nanoseconds
            segmentOrigin.withLock { $0 = pressed }
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for member in members { group.addTask { try await member.service.start() } }
            try await group.waitForAll()
        }
        signal(SIGPIPE, SIG_IGN)
        control = try ControlServer(path: configuration.controlSocket, group: "obscura") { [weak self] line in
            await self?.command(line) ?? "{\"message\":\"stopping\",\"ok\":false}"
        }
        if let note = control?.accessNote { logger.warning("control socket: \(note)") }
        Task { [weak self, changes] in
            for await _ in changes { await self?.show() }
        }
        linkFirstLiveView()
        show()
        notifier.notify("READY=1\nSTATUS=\(statusLine)")
        logger.notice("ready: \(profile.name), cameras \(members.map(\.name).joined(separator: ", ")), recordings in \(configuration.recordingsFolder), control socket \(configuration.controlSocket)")
        rounds = Task { [weak self] in await self?.housekeeping() }
    }

    /// The buttons, LEDs and flash, shared by the cameras.
    func startControls() {
        var actions = KioskGPIO.Actions(
            record: { [weak self] in await self?.toggleRecording() },
            photo: { [weak self] in _ = await self?.takePhotos() },
            flash: { [weak self] in await self?.cycleFlash() })
        for (camera, member) in zip(configuration.cameras, members) {
            guard let line = camera.recordButton else { continue }
            actions.cameraRecord.append((line, { [weak self, service = member.service] in
                await self?.pressedAlone()
                await service.toggleRecording()
            }))
        }
        gpio = KioskGPIO(profile: profile, logger: logger, actions: actions)
        for problem in gpio.problems { logger.warning("\(problem)") }
        flash.withLock { $0 = gpio.flash }
        gpio.show(flash: flashMode)
    }

    /// `obscura view KIOSK` without `--camera`: the first camera's live
    /// view, at the configured socket's own name (a link to its socket).
    func linkFirstLiveView() {
        guard !configuration.liveSocket.isEmpty, let first = configuration.cameras.first else { return }
        let target = (configuration.member(first).liveSocket as NSString).lastPathComponent
        do {
            try Syscalls.remove(configuration.liveSocket)
            try FileManager.default.createSymbolicLink(atPath: configuration.liveSocket, withDestinationPath: target)
        } catch {
            logger.warning("live.socket: cannot link \(configuration.liveSocket) to \(target): \(error); `obscura view --camera \(first.name)` still shows it")
        }
    }

    /// Finalizes every camera's recording in progress, then releases the controls.
    public func shutdown() async {
        stopping = true
        notifier.notify("STOPPING=1\nSTATUS=stopping")
        await withTaskGroup(of: Void.self) { group in
            for member in members { group.addTask { await member.service.shutdown() } }
        }
        rounds?.cancel()
        gpio.close()
        control?.close()
        logger.notice("stopped")
    }

    // MARK: Together

    /// The record button: every camera stops when any records, else all start.
    public func toggleRecording() async {
        var any = false
        for member in members where await member.service.state.isRecording { any = true }
        if any { await stopAll() } else { _ = await startAll() }
    }

    /// Starts every camera's recording at once: each file begins with its
    /// camera's first frame after this instant. Returns each camera's file
    /// (nil: that camera could not record, its status says why).
    func startAll() async -> [(String, String?)] {
        pressed = clock.nanoseconds
        segmentOrigin.withLock { $0 = pressed }
        return await withTaskGroup(of: (String, String?).self) { group in
            for member in members { group.addTask { (member.name, await member.service.startRecording()) } }
            var files: [String: String?] = [:]
            for await (name, file) in group { files[name] = file }
            return members.map { ($0.name, files[$0.name] ?? nil) }
        }
    }

    /// One camera started alone: its segments follow the others' grid
    /// while any records, else a grid from this press.
    func pressedAlone() async {
        for member in members where await member.service.state.isRecording { return }
        pressed = clock.nanoseconds
        segmentOrigin.withLock { $0 = pressed }
    }

    func stopAll() async {
        await withTaskGroup(of: Void.self) { group in
            for member in members { group.addTask { _ = await member.service.command("record stop") } }
        }
    }

    /// A photo from every camera, each the same moment as near as they allow.
    func takePhotos() async -> [(String, Result<String, PhotoFailure>)] {
        await withTaskGroup(of: (String, Result<String, PhotoFailure>).self) { group in
            for member in members { group.addTask { (member.name, await member.service.takePhoto()) } }
            var taken: [String: Result<String, PhotoFailure>] = [:]
            for await (name, result) in group { taken[name] = result }
            return members.compactMap { m in taken[m.name].map { (m.name, $0) } }
        }
    }

    public func cycleFlash() async { await setFlash(flashMode.next) }

    func setFlash(_ mode: FlashMode) async {
        flashMode = mode
        for member in members { await member.service.setFlash(mode) }
        gpio.show(flash: mode)
    }

    // MARK: What it shows

    /// The LEDs and systemd's status line for every camera's latest state:
    /// recording while any records, the error pattern while any has an error.
    func show() {
        let all = summaries.withLock { $0 }
        gpio.show(recording: all.values.contains { $0.recording }, error: all.values.contains { $0.error },
                  attention: all.values.contains { $0.attention })
        notifier.notify("STATUS=\(statusLine)")
    }

    var statusLine: String {
        let all = summaries.withLock { $0 }
        return members.map { "\($0.name): \(all[$0.name]?.line ?? "starting")" }.joined(separator: "; ")
    }

    /// Every two seconds (or as systemd's watchdog asks): the keep-alive,
    /// unless a camera's recording is wedged, and the metrics file.
    func housekeeping() async {
        let interval = notifier.watchdogInterval.map { min($0, .seconds(2)) } ?? .seconds(2)
        while !stopping {
            try? await clock.sleep(for: interval)
            if stopping { break }
            var wedged: [String] = []
            for member in members where await member.service.wedged { wedged.append(member.name) }
            if wedged.isEmpty { notifier.notify("WATCHDOG=1\nSTATUS=\(statusLine)") }
            await writeMetrics()
        }
    }
}
