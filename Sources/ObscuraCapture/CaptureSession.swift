import Dispatch
import ObscuraAudio
import ObscuraCamera
import ObscuraMedia
import ObscuraSystem
import struct Synchronization.Atomic

/// A capture session: one input, any number of outputs, one camera stream
/// fanned out to every output's queue.
///
/// ```
///                    startRunning                 stopRunning
///        ┌─────────┐ ───────────► ┌─────────┐ ─────────────────► ┌─────────┐
///        │ stopped │              │ running │                    │ stopped │
///        └─────────┘ ◄─────────── └─────────┘                    └─────────┘
///             ▲      stopRunning    │     ▲
///             │                     │     │ the camera is back:
///             │         camera gone │     │ restarted automatically
///             │      or failing     ▼     │ (interruptionEnded)
///             │ stopRunning   ┌─────────────┐
///             └────────────── │ interrupted │
///                             └─────────────┘
/// ```
/// `beginConfiguration`/`commitConfiguration` may nest in any state; the
/// outermost commit applies every change in one libcamera configure (stopping
/// and restarting the camera when running). `startRunning` when running, and
/// `stopRunning` or a commit without a matching begin, throw.
///
/// Thread-safety: calls are serialised on the session; frames are pushed into
/// output queues on the camera's thread; events arrive on `events()` streams.
///
/// `@unchecked Sendable`: `lock` guards every stored `var` but `watchdog` and
/// `toldStillThere`, which are touched only on the `work` queue; `audio` is a mutex of its own;
/// the counters are atomics; the `let`s are immutable.
public final class CaptureSession: @unchecked Sendable {
    public enum Preset: String, Sendable, CaseIterable {
        /// The largest video format up to 1920x1080.
        case high
        /// The largest still format, still-capture role.
        case photo
        case hd1920x1080, hd1280x720, vga640x480
        /// Leave the device's activeFormat as it is (needed for ProRes, TN3104).
        case inputPriority
    }

    public enum State: String, Sendable { case stopped, running, interrupted }

    public enum InterruptionReason: String, Sendable {
        /// The camera went away (hot-unplug, driver unbound).
        case deviceUnavailable
        /// Its requests complete with errors.
        case requestsFailing
        /// It stopped delivering frames.
        case noFrames
    }

    public enum Event: Sendable, Equatable {
        case didStartRunning
        case didStopRunning
        case runtimeError(String)
        case wasInterrupted(InterruptionReason)
        case interruptionEnded
    }

    private let lock = Mutex<Void>(())
    private let work = DispatchQueue(label: "obscura.capture-session")
    private var _state: State = .stopped
    private var depth = 0
    private var dirty = false
    private var _preset: Preset = .high
    private var _input: CaptureDeviceInput?
    private var _connections: [CaptureConnection] = []
    private var _configuration: CameraConfiguration?
    private var requests: [StreamRequest] = []
    private var availabilityToken: Int?
    private var subscribers: [Int: AsyncStream<Event>.Continuation] = [:]
    private var nextSubscriber = 0
    private let delivered = Atomic<Int>(0)
    private let failures = Atomic<Int>(0)
    /// Bumped on every start so a stale failure report is ignored.
    private let generation = Atomic<Int>(0)
    /// Monotonic nanoseconds of the last frame, for the watchdog.
    private let lastFrame = Atomic<UInt64>(0)
    /// Frames the watchdog took back from outputs that stopped taking them
    /// (`freeBuffersHeldByOutputs`).
    private let queuedFramesFreed = Atomic<Int>(0)
    /// How many queued frames were dropped so far because their output had
    /// stopped taking frames and the camera was left without buffers.
    public var framesFreedFromStalledOutputs: Int { queuedFramesFreed.load(ordering: .relaxed) }
    private let watchdogRounds = Atomic<Int>(0)
    /// How many times the watchdog has judged the silence since the last
    /// frame (every 100 ms while running): what a test that moves the
    /// session's clock by hand waits for before it looks at the outcome.
    var stallChecks: Int { watchdogRounds.load(ordering: .relaxed) }
    /// Frames still to come before a start counts as settled: until then the
    /// watchdog waits `firstFrameTimeout` instead of `stallTimeout` (a
    /// pipeline restarted at a new configuration can stutter over its first
    /// frames, the more on a busy board).
    private let settlingFrames = Atomic<Int>(0)
    static let framesToSettle = 8
    /// The longest recent gap between two frames, in nanoseconds, decaying by
    /// a 64th with every frame. A board whose camera has been arriving in
    /// bursts (a starved emulator, a CPU held by something else) is given a
    /// stall limit of three such gaps, so jitter it has shown is not taken
    /// for silence; a camera that keeps time leaves the limit as configured.
    /// Written by the camera's thread only.
    private let recentLongestGap = Atomic<UInt64>(0)
    /// The stall limit grows with measured gaps only up to this.
    public static let longestStallLimit: Duration = .seconds(5)
    /// How long a started camera may take for its first frame before that
    /// counts as an interruption. Starting takes longer than running: the
    /// pipeline configures its links, a sensor drops its first frames while
    /// exposure settles, and a busy board starts slower still.
    public static let firstFrameTimeout: Duration = .seconds(5)
    private var watchdog: (any DispatchSourceTimer)?
    /// Said once per interruption that a silent camera's device is still there (work queue only).
    private var toldStillThere = false
    /// True while the camera is closed after announcing it went away.
    private var availabilityClosed = false
    /// How long without a frame counts as an interruption.
    public var stallTimeout: Duration {
        get { lock.withLock { _ in _stallTimeout } }
        set { lock.withLock { _ in _stallTimeout = newValue } }
    }
    private var _stallTimeout: Duration = .milliseconds(500)
    /// Log lines (adjustments, queue capacities) for whoever wants them.
    public let log: @Sendable (String) -> Void

    /// `clock`: the time the stall watchdog judges the silence since the
    /// last frame by (a test's own, moved on by hand).
    public init(log: @escaping @Sendable (String) -> Void = { _ in }, clock: any WaitingClock = SystemWaitingClock()) {
        self.log = log
        self.clock = clock
    }

    private let clock: any WaitingClock

    /// The session's event streams end with it (and the loops that follow
    /// them), its watchdog and its watch on the camera's availability too.
    /// (The last reference is gone: nothing else reads these now.)
    deinit {
        watchdog?.cancel()
        if let token = availabilityToken, let device = _input?.device { device.source.stopObservingAvailability(token) }
        for continuation in subscribers.values { continuation.finish() }
    }

    // MARK: Events

    /// A new stream of the session's events (each call gets its own).
    public func events() -> AsyncStream<Event> {
        let (stream, continuation) = AsyncStream<Event>.makeStream(bufferingPolicy: .bufferingNewest(64))
        lock.withLock { _ in
            nextSubscriber += 1
            let token = nextSubscriber
            subscribers[token] = continuation
            continuation.onTermination = { [weak self] _ in
                self?.lock.withLock { _ in _ = self?.subscribers.removeValue(forKey: token) }
            }
        }
        return stream
    }

    private func emit(_ event: Event) {
        let targets = lock.withLock { _ in Array(subscribers.values) }
        for t in targets { t.yield(event) }
    }

    // MARK: Inputs, outputs, connections

    public var state: State { lock.withLock { _ in _state } }
    public var isRunning: Bool { state == .running }
    public var isInterrupted: Bool { state == .interrupted }
    public var inputs: [CaptureDeviceInput] { lock.withLock { _ in _input.map { [$0] } ?? [] } }
    public var outputs: [any CaptureOutput] { lock.withLock { _ in _connections.map(\.output) } }
    public var connections: [CaptureConnection] { lock.withLock { _ in _connections } }
    /// The configuration the camera accepted at the last commit or start.
    public var activeConfiguration: CameraConfiguration? { lock.withLock { _ in _configuration } }
    /// Frames the camera delivered since the session was created.
    public var deliveredFrameCount: Int { delivered.load(ordering: .relaxed) }

    public var sessionPreset: Preset { lock.withLock { _ in _preset } }

    public func canSetSessionPreset(_ preset: Preset) -> Bool {
        guard let device = inputs.first?.device else { return true }
        return Self.format(for: preset, device: device) != nil
    }

    public func setSessionPreset(_ preset: Preset) throws {
        guard canSetSessionPreset(preset) else {
            throw CaptureError.configurationInvalid("preset \(preset.rawValue) has no matching format on \(inputs.first!.device)")
        }
        try change { _preset = preset }
    }

    public func canAddInput(_ input: CaptureDeviceInput) -> Bool { lock.withLock { _ in _input == nil } }

    public func addInput(_ input: CaptureDeviceInput) throws {
        guard canAddInput(input) else {
            throw CaptureError.cannotAddInput("the session already has an input (\(inputs.first!.device)); one camera per session")
        }
        try change { _input = input }
        for c in connections { c.output.connected(to: input.device) }
    }

    public func removeInput(_ input: CaptureDeviceInput) throws {
        try change { if _input === input { _input = nil } }
        for c in connections { c.output.connected(to: nil) }
    }

    // MARK: Audio

    /// The microphone: its periods go to every output that takes audio (a
    /// movie file output records them as a second track) and to audio
    /// outputs added with `addAudioOutput`. It runs while the session runs.
    public var audioInput: AudioDeviceInput? { audio.withLock { $0.input } }
    private let audio = Mutex(AudioLink())
    private struct AudioLink {
        var input: AudioDeviceInput?
        var extra: [any AudioReceiver] = []
    }

    public func addInput(_ input: AudioDeviceInput) throws {
        try audio.withLock { a in
            guard a.input == nil else {
                throw CaptureError.cannotAddInput("the session already has an audio input (\(a.input!.deviceName)); one microphone per session")
            }
            a.input = input
        }
        for receiver in audioReceivers() {
            input.addReceiver(receiver)
            receiver.audioConnected(input.format)
        }
        if isRunning { try input.start() }
    }

    public func removeInput(_ input: AudioDeviceInput) {
        let removed = audio.withLock { a -> Bool in
            guard a.input === input else { return false }
            a.input = nil
            return true
        }
        guard removed else { return }
        input.stop()
        for receiver in audioReceivers() {
            input.removeReceiver(receiver)
            receiver.audioConnected(nil)
        }
    }

    /// An audio data output (or any receiver) fed by the audio input.
    public func addAudioOutput(_ receiver: any AudioReceiver) {
        let input = audio.withLock { a -> AudioDeviceInput? in
            a.extra.append(receiver)
            return a.input
        }
        if let input {
            input.addReceiver(receiver)
            receiver.audioConnected(input.format)
        }
    }

    private func audioReceivers() -> [any AudioReceiver] {
        connections.compactMap { $0.output as? any AudioReceiver } + audio.withLock { $0.extra }
    }

    public func canAddOutput(_ output: any CaptureOutput) -> Bool {
        lock.withLock { _ in !_connections.contains { $0.output === output } }
    }

    /// Adds an output and returns its connection.
    @discardableResult
    public func addOutput(_ output: any CaptureOutput) throws -> CaptureConnection {
        guard canAddOutput(output) else { throw CaptureError.cannotAddOutput("the output is already in the session") }
        let connection = CaptureConnection(output: output)
        try change { _connections.append(connection) }
        output.connected(to: inputs.first?.device)
        if let receiver = output as? any AudioReceiver, let input = audioInput {
            input.addReceiver(receiver)
            receiver.audioConnected(input.format)
        }
        if isRunning { output.queue.reopen() }
        return connection
    }

    public func removeOutput(_ output: any CaptureOutput) throws {
        try change { _connections.removeAll { $0.output === output } }
        output.queue.close()
    }

    // MARK: Configuration transaction

    public func beginConfiguration() { lock.withLock { _ in depth += 1 } }

    /// Applies every change since the outermost `beginConfiguration` in one
    /// libcamera configure.
    public func commitConfiguration() throws {
        let apply = try lock.withLock { _ -> Bool in
            guard depth > 0 else {
                throw CaptureError.wrongState(call: "commitConfiguration", state: "not configuring", allowed: "after beginConfiguration")
            }
            depth -= 1
            return depth == 0 && dirty
        }
        if apply { try reconfigure() }
    }

    /// A change outside a transaction applies at once.
    private func change(_ body: () throws -> Void) throws {
        let apply = try lock.withLock { _ -> Bool in
            try body()
            dirty = true
            return depth == 0
        }
        if apply { try reconfigure() }
    }

    private func reconfigure() throws {
        let running = lock.withLock { _ in
            dirty = false
            return _state == .running
        }
        guard running else { return } // applied at start
        try work.sync {
            let device = try requireInput()
            try? device.source.stop()
            try configureAndStart(device)
        }
    }

    private func requireInput() throws -> CaptureDevice {
        guard let device = lock.withLock({ _ in _input?.device }) else { throw CaptureError.noInput }
        return device
    }

    // MARK: Running

    public func startRunning() throws {
        try work.sync {
            let device = try requireInput()
            try lock.withLock { _ in
                guard _state == .stopped else {
                    throw CaptureError.wrongState(call: "startRunning", state: _state.rawValue, allowed: "stopped")
                }
            }
            try device.source.open()
            do {
                try configureAndStart(device)
            } catch {
                device.source.close()
                throw error
            }
            let token = device.source.observeAvailability { [weak self] available in
                guard let session = self else { return }
                session.work.async { session.availabilityChanged(available) }
            }
            lock.withLock { _ in
                availabilityToken = token
                _state = .running
            }
            startWatchdog()
        }
        if let input = audioInput {
            // A microphone that fails does not stop the camera: recordings go on without sound.
            do { try input.start() } catch { log("audio: \(error); recording without sound") }
        }
        emit(.didStartRunning)
    }

    public func stopRunning() throws {
        try work.sync {
            let (device, token, silent) = try lock.withLock { _ -> (CaptureDevice?, Int?, Bool) in
                guard _state != .stopped else {
                    throw CaptureError.wrongState(call: "stopRunning", state: _state.rawValue, allowed: "running or interrupted")
                }
                let silent = _state == .interrupted && !availabilityClosed
                _state = .stopped
                availabilityClosed = false
                defer { availabilityToken = nil }
                return (_input?.device, availabilityToken, silent)
            }
            watchdog?.cancel()
            watchdog = nil
            if let device {
                if let token { device.source.stopObservingAvailability(token) }
                if silent {
                    // A camera that went silent is left alone: stopping one whose
                    // device vanished trips libcamera's assertions.
                    log("the camera stopped responding; it is left as it is until the process ends")
                } else {
                    try? device.source.stop()
                    device.source.close()
                }
                device.stopped()
            }
            for c in connections { c.output.queue.close() }
        }
        audioInput?.stop()
        emit(.didStopRunning)
    }

    /// Derives the stream from the preset, the device and the outputs; configures
    /// the camera once; sizes the queues from its buffers; starts it.
    private func configureAndStart(_ device: CaptureDevice) throws {
        let (preset, connections) = lock.withLock { _ in (_preset, _connections) }
        guard let format = Self.format(for: preset, device: device, preferring: connections.compactMap(\.output.preferredPixelFormat)) else {
            throw CaptureError.configurationInvalid("no format of \(device) fits preset \(preset.rawValue)")
        }
        let role: StreamRole = preset == .photo ? .stillCapture : .videoRecording
        let held = connections.reduce(0) { $0 + $1.output.queue.policy.held + $1.output.extraHeldFrames }
        let request = StreamRequest(role: role, pixelFormat: format.pixelFormat, size: format.dimensions,
                                    bufferCount: max(4, held + 2))
        let first = connections.first
        // The raw stream rides along when an output wants it and the camera
        // has one; a camera that refuses the pair runs without it.
        var streamRequests = [request]
        if connections.contains(where: { $0.output.wantsRawStream }) {
            if let raw = Self.rawFormat(device) {
                streamRequests.append(StreamRequest(role: .raw, pixelFormat: raw, bufferCount: request.bufferCount))
            } else {
                log("the camera offers no raw stream: RAW photos are unavailable (\(device.uniqueID))")
            }
        }
        var configuration = try device.source.configure(streamRequests, rotation: first?.videoRotationAngle ?? 0,
                                                        mirrored: first?.isVideoMirrored ?? false)
        if streamRequests.count > 1, configuration.status == .invalid || configuration.streams.count < 2 {
            log("the camera cannot run its raw stream beside \(request.pixelFormat.map(\.description) ?? "") \(request.size.map(\.description) ?? ""): RAW photos are unavailable (\(configuration.adjustments.joined(separator: "; ")))")
            streamRequests = [request]
            configuration = try device.source.configure(streamRequests, rotation: first?.videoRotationAngle ?? 0,
                                                        mirrored: first?.isVideoMirrored ?? false)
        }
        guard configuration.status != .invalid, let stream = configuration.streams.first else {
            throw CaptureError.configurationInvalid(configuration.adjustments.joined(separator: "; "))
        }
        if configuration.streams.count > 1 {
            let raw = configuration.streams[1]
            log("raw stream: \(raw.pixelFormat) \(raw.size), \(raw.bufferCount) buffers")
        }
        for adjustment in configuration.adjustments { log("the camera adjusted the configuration: \(adjustment)") }
        if preset != .inputPriority || device.activeFormat == nil {
            let resolved = device.formats.first { $0.pixelFormat == stream.pixelFormat && $0.dimensions == stream.size }
                ?? CaptureDevice.Format(pixelFormat: stream.pixelFormat, dimensions: stream.size,
                                        frameDurationRange: format.frameDurationRange, roles: [role])
            device.noteActiveFormat(resolved)
        }
        // Queues share the buffers: one stays with the camera, latest-only and
        // one-shot queues hold one each, passing ones none, bounded queues
        // split the rest.
        let bounded = connections.filter { if case .bounded = $0.output.queue.policy { true } else { false } }
        let fixed = connections.reduce(0) { sum, c in
            if case .bounded = c.output.queue.policy { return sum + c.output.extraHeldFrames }
            return sum + c.output.queue.policy.held + c.output.extraHeldFrames
        }
        let spare = max(bounded.count, stream.bufferCount - 1 - fixed)
        for c in bounded {
            guard case .bounded(let wanted) = c.output.queue.policy else { continue }
            let capacity = min(wanted, max(1, spare / bounded.count))
            c.output.queue.setCapacity(capacity)
            if capacity < wanted { log("an output queue holds \(capacity) frames, not \(wanted): the camera has \(stream.bufferCount) buffers") }
        }
        lock.withLock { _ in
            _configuration = configuration
            requests = streamRequests
        }
        for (name, values) in device.controlsForStart().sorted(by: { $0.key < $1.key }) {
            try device.source.setControl(name, values)
        }
        for c in connections { c.output.queue.reopen() }
        let run = generation.add(1, ordering: .relaxed).newValue
        failures.store(0, ordering: .relaxed)
        lastFrame.store(clock.nanoseconds, ordering: .relaxed)
        settlingFrames.store(Self.framesToSettle, ordering: .relaxed)
        recentLongestGap.store(0, ordering: .relaxed)
        try device.source.start(handler: { [weak self] frame in
            self?.deliver(frame)
        }, failed: { [weak self] _ in
            self?.requestFailed(generation: run)
        })
    }

    /// Fan-out, on the camera's thread: never blocks.
    private func deliver(_ item: CameraFrame) {
        guard item.stream == 0 else { return }
        delivered.add(1, ordering: .relaxed)
        failures.store(0, ordering: .relaxed)
        let now = clock.nanoseconds
        let gap = now &- lastFrame.exchange(now, ordering: .relaxed)
        let (targets, interrupted) = lock.withLock { _ in (_connections.filter(\.isEnabled), _state == .interrupted) }
        if settlingFrames.load(ordering: .relaxed) > 0 {
            // A start's first frames are not the running rhythm.
            settlingFrames.subtract(1, ordering: .relaxed)
        } else {
            // The gap that ends a stall counts too: a camera that was only
            // slower than the limit (bursts at a low rate, a starved board)
            // gets a limit that covers the gap it has shown, instead of an
            // interruption at every slow frame. A camera that went away is
            // restarted, and a restart measures afresh.
            let longest = recentLongestGap.load(ordering: .relaxed)
            recentLongestGap.store(max(gap, longest - longest / 64), ordering: .relaxed)
        }
        if interrupted { work.async { [weak self] in self?.stallEnded() } }
        // Passing outputs look first and are done before any other has the
        // frame; each other output learns whether it is the frame's only one
        // (the overlay draws into a frame no other output reads).
        let passing = targets.filter { $0.output.queue.policy == .passing }
        item.frame.setConsumers(targets.count - passing.count)
        for c in passing { c.output.queue.push(item.frame) }
        for c in targets where c.output.queue.policy != .passing { c.output.queue.push(item.frame) }
    }

    private func requestFailed(generation run: Int) {
        let count = failures.add(1, ordering: .relaxed).newValue
        guard count == 3, run == generation.load(ordering: .relaxed) else { return }
        work.async { [weak self] in self?.interrupt(.requestsFailing) }
    }

    // MARK: Interruptions

    /// The time without a frame that counts as an interruption now:
    /// `stallTimeout`, four of the slowest frame durations, or three of the
    /// longest gap measured lately (at most `longestStallLimit`), whichever
    /// is longest; until a start's first `framesToSettle` frames,
    /// `firstFrameTimeout`.
    public var currentStallLimit: Duration {
        var limit = UInt64(stallTimeout.seconds * 1e9)
        if let slowest = inputs.first?.device.activeVideoMaxFrameDuration {
            limit = max(limit, UInt64(slowest.seconds * 4e9))
        }
        let measured = min(recentLongestGap.load(ordering: .relaxed).multipliedReportingOverflow(by: 3).partialValue,
                           UInt64(Self.longestStallLimit.seconds * 1e9))
        limit = max(limit, measured)
        if settlingFrames.load(ordering: .relaxed) > 0 {
            limit = max(limit, UInt64(Self.firstFrameTimeout.seconds * 1e9))
        }
        return .nanoseconds(Int64(clamping: limit))
    }

    /// On the work queue: checks every 100 ms that frames still arrive
    /// within `currentStallLimit`.
    private func startWatchdog() {
        watchdog?.cancel()
        let timer = DispatchSource.makeTimerSource(queue: work)
        timer.schedule(deadline: .now() + .milliseconds(100), repeating: .milliseconds(100))
        timer.setEventHandler { [weak self] in
            guard let self else { return }
            defer { self.watchdogRounds.add(1, ordering: .relaxed) }
            guard self.state == .running else { return }
            let limit = self.currentStallLimit
            let silent = clock.nanoseconds &- self.lastFrame.load(ordering: .relaxed)
            guard silent > UInt64(limit.seconds * 1e9) else { return }
            if self.freeBuffersHeldByOutputs() { return }
            self.interrupt(.noFrames, silentFor: limit)
        }
        watchdog = timer
        timer.resume()
    }

    /// `body` on the work queue once `delay` has passed on the session's
    /// clock, if the session is still there.
    private func after(_ delay: Duration, _ body: @escaping @Sendable (CaptureSession) -> Void) {
        Task { [weak self, clock] in
            try? await clock.sleep(for: delay)
            self?.work.async { [weak self] in if let self { body(self) } }
        }
    }

    /// On the work queue, when the camera has been silent for the stall
    /// limit: an output that stopped taking its frames (its consumer blocked,
    /// e.g. on a storage that hangs) may be holding the buffers the camera
    /// needs, and then the silence is the session's own, not the camera's.
    /// Its queued frames are dropped (counted) so that they go back to the
    /// camera, which gets another stall limit to deliver. True when that
    /// was done.
    private func freeBuffersHeldByOutputs() -> Bool {
        var freed = 0
        for c in connections { freed += c.output.queue.dropQueued() }
        guard freed > 0 else { return false }
        lastFrame.store(clock.nanoseconds, ordering: .relaxed)
        queuedFramesFreed.add(freed, ordering: .relaxed)
        return true
    }

    private func availabilityChanged(_ available: Bool) {
        if available {
            resume()
        } else {
            interrupt(.deviceUnavailable)
            lock.withLock { _ in availabilityClosed = true }
        }
    }

    /// On the work queue.
    ///
    /// A camera that says it went away is stopped and closed, and reopened
    /// when it says it is back. A camera that merely stops delivering (or
    /// fails its requests) is not stopped — stopping a camera whose device
    /// vanished trips libcamera's own assertions. If its frames flow again the
    /// interruption ends; if it stays silent for another second it is
    /// abandoned, its backend starts afresh, and the session resumes as soon
    /// as the camera is listed again.
    private func interrupt(_ reason: InterruptionReason, silentFor limit: Duration? = nil) {
        guard let device = lock.withLock({ _ -> CaptureDevice? in
            guard _state == .running else { return nil }
            _state = .interrupted
            return _input?.device
        }) else { return }
        let what = switch reason {
        case .deviceUnavailable: "the camera \(device.uniqueID) went away"
        case .requestsFailing: "the camera's requests are failing"
        case .noFrames: "the camera delivered no frame for \(limit ?? stallTimeout)"
        }
        if reason == .deviceUnavailable {
            try? device.source.stop()
            device.source.close()
            device.stopped()
            for c in connections { c.output.cameraLost() }
        }
        emit(.runtimeError(what))
        emit(.wasInterrupted(reason))
        if reason != .deviceUnavailable {
            after(.seconds(1)) { $0.abandonIfStillSilent() }
        }
    }

    /// On the work queue. A camera whose device is still there is only slow
    /// (a starved board, a pipeline catching up): it is waited for, checked
    /// again every second, and the interruption ends with its next frame.
    /// One whose device is gone is given up.
    private func abandonIfStillSilent() {
        guard let device = lock.withLock({ _ -> CaptureDevice? in
            _state == .interrupted && !availabilityClosed ? _input?.device : nil
        }) else { return }
        guard device.source.deviceVanished else {
            if !toldStillThere {
                toldStillThere = true
                log("the camera is silent but its device is still there: waiting for its frames")
            }
            after(.seconds(1)) { $0.abandonIfStillSilent() }
            return
        }
        toldStillThere = false
        log("the camera stayed silent and its device is gone: it is given up and its backend started afresh")
        let listed = device.source.abandonAndRecover()
        device.stopped()
        for c in connections { c.output.cameraLost() }
        lock.withLock { _ in availabilityClosed = true }
        if listed { resume() } else { after(.milliseconds(500)) { $0.lookForReturn() } }
    }

    /// On the work queue, every half second while an abandoned camera is
    /// not listed: its backend starts afresh and lists what is there now.
    /// Hotplug events alone are not enough: a process in a network namespace
    /// of its own (a service with PrivateNetwork=yes) gets no udev events.
    private func lookForReturn() {
        guard let device = lock.withLock({ _ -> CaptureDevice? in
            _state == .interrupted && availabilityClosed ? _input?.device : nil
        }) else { return }
        let started = clock.now
        if device.source.abandonAndRecover() {
            log(String(format: "the camera is listed again (its backend started afresh in %.2f s)", (clock.now - started).seconds))
            resume()
        } else {
            after(.milliseconds(500)) { $0.lookForReturn() }
        }
    }

    /// A frame arrived while interrupted by a stall: the camera is back.
    private func stallEnded() {
        let ended = lock.withLock { _ -> Bool in
            guard _state == .interrupted, availabilityClosed == false else { return false }
            _state = .running
            return true
        }
        if ended {
            toldStillThere = false
            emit(.interruptionEnded)
        }
    }

    /// On the work queue: the camera is back; restart as configured.
    private func resume() {
        guard let device = lock.withLock({ _ -> CaptureDevice? in
            _state == .interrupted && availabilityClosed ? _input?.device : nil
        }) else { return }
        do {
            try device.source.open()
            try configureAndStart(device)
            lock.withLock { _ in
                _state = .running
                availabilityClosed = false
            }
            emit(.interruptionEnded)
        } catch {
            device.source.close()
            log("the camera came back but could not restart: \(error)")
        }
    }

    // MARK: Presets

    /// The raw format for a raw stream: the camera's first (its default;
    /// CSI-2 packed on a Raspberry Pi, unpacked for the DNG). Its size is
    /// left to the camera, which picks the sensor mode that fits the
    /// processed stream — asking for the largest would force the full-sensor
    /// mode and its lower frame rate on the recording.
    static func rawFormat(_ device: CaptureDevice) -> PixelFormat? {
        device.formats.first { $0.roles.contains(.raw) && $0.pixelFormat.info?.family == .bayer }?.pixelFormat
    }

    static func format(for preset: Preset, device: CaptureDevice, preferring wanted: [PixelFormat] = []) -> CaptureDevice.Format? {
        if preset == .inputPriority, let active = device.activeFormat { return active }
        let role: StreamRole = preset == .photo ? .stillCapture : .videoRecording
        let candidates = device.formats.filter { $0.roles.contains(role) && !$0.isRaw }
        guard !candidates.isEmpty else { return nil }
        // Pixel format: what an output asks for if offered, else NV12, else the camera's first.
        let offered = Set(candidates.map(\.pixelFormat))
        let pixelFormat = wanted.first { offered.contains($0) }
            ?? (offered.contains(.nv12) ? .nv12 : candidates[0].pixelFormat)
        let sizes = candidates.filter { $0.pixelFormat == pixelFormat }
        func exactly(_ w: Int, _ h: Int) -> CaptureDevice.Format? {
            sizes.first { $0.dimensions == PixelSize(width: w, height: h) }
        }
        switch preset {
        case .hd1920x1080: return exactly(1920, 1080)
        case .hd1280x720: return exactly(1280, 720)
        case .vga640x480: return exactly(640, 480)
        case .photo: return sizes.max { $0.dimensions < $1.dimensions }
        case .high, .inputPriority:
            let limit = PixelSize(width: 1920, height: 1080)
            return sizes.filter { $0.dimensions.width <= limit.width && $0.dimensions.height <= limit.height }
                .max { $0.dimensions < $1.dimensions } ?? sizes.min { $0.dimensions < $1.dimensions }
        }
    }
}
