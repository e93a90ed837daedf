import Foundation
import ObscuraFFmpeg
import ObscuraAge
import ObscuraCapture
import ObscuraEncoding
import ObscuraConversion
import ObscuraMedia
import ObscuraMuxing
import ObscuraOverlay
import ObscuraSystem

/// How to encode a movie, like AVFoundation's output settings.
/// Whether a movie's header carries its first frame's wall-clock time.
public enum CreationTimePolicy: String, Sendable, Equatable {
    /// Only when the system clock is known to be synchronised (NTP): a board
    /// that booted without network time writes none rather than a wrong one.
    case whenClockSynchronized
    case always
    case never

    /// Sensor time (CLOCK_MONOTONIC, ns) to wall-clock time, or nil.
    var mapping: (UInt64) -> Date? {
        switch self {
        case .never: { _ in nil }
        case .always: { SystemClock.wallClock(ofMonotonic: $0) }
        case .whenClockSynchronized: { SystemClock.isSynchronized ? SystemClock.wallClock(ofMonotonic: $0) : nil }
        }
    }
}

public struct MovieSettings: Sendable, Equatable {
    public var codec: VideoCodec = .h264
    /// Average bit rate in bits per second; nil: the encoder's quality default.
    public var averageBitRate: Int?
    /// x264/x265 preset.
    public var preset: String = "ultrafast"
    /// The frame rate the encoder plans for (rate control, keyframe spacing);
    /// timestamps still come from the camera.
    public var nominalFrameRate: Double = 30
    /// Most frames from one keyframe to the next (AVVideoMaxKeyFrameIntervalKey);
    /// nil: one second of frames.
    public var maxKeyFrameInterval: Int?
    /// Fragment length. A killed process loses at most the fragment being
    /// built plus the encoder's few frames of latency: half a second keeps
    /// that under one second.
    public var fragmentDuration: Duration = .milliseconds(500)
    /// Most media time the software encoder may hold back (frame threads,
    /// lookahead, B-frames), at the nominal rate and never more than one
    /// frame (`VideoEncoderSettings.maxHeldFrames`): a power cut loses it on
    /// top of the fragment being built. nil: what the preset and threads
    /// make it (x264 on four cores holds seven frames, 0.7 s at 10 fps).
    public var maxEncoderDelay: Duration? = Self.defaultMaxEncoderDelay
    public static let defaultMaxEncoderDelay: Duration = .milliseconds(100)
    /// The container; nil: from the file name's extension.
    public var container: MovieContainer?
    /// A file that gets each frame's time as it is stored (mkvmerge's
    /// "timestamp format v2", milliseconds from the first frame): what an
    /// elementary stream, which has no timestamps, needs to be muxed later.
    public var timestampsFile: String?
    /// A caption (date and time from each frame's timestamp, the camera's
    /// name, a text) drawn into the frames before they are encoded; nil: none.
    public var overlay: OverlaySettings?
    /// Encrypts the file to these age X25519 recipients as it is written
    /// (its name ends in `.age`: `x.mp4.age`); empty: not encrypted.
    public var recipients: [AgeRecipient] = []
    /// Encrypted: each fragment ends where one of age's 64 KiB chunks ends,
    /// filler between them, so what `age -d` gives of a killed recording is
    /// whole fragments too (not only what `obscura decrypt` gives). Costs
    /// filler (BENCHMARKS.md: about … at 1, 4 and 8 Mbit/s), and fragments
    /// up to twice `fragmentDuration`.
    public var alignsFragmentsToAgeChunks = false
    /// A timed text track of marks (`MovieFileOutput.mark`): MP4, MOV and
    /// Matroska; an elementary stream has none.
    public var marked = false
    /// libavcodec's text encoder for the marks (nil: mov_text for MP4 and
    /// MOV, srt for Matroska). A file whose marks' track cannot be made is
    /// recorded without it, and its notes say why.
    public var markEncoder: String?
    /// Encoder threads; 0: the encoder decides (x264: 1.5 per core).
    public var threads = 0
    /// Encoders to try, in order: a V4L2 hardware encoder, then libavcodec.
    public var encoders: [EncoderKind] = [.software]
    /// Where files are while being written (`<name>.partial`, on the same
    /// filesystem as the destination); nil: beside the destination. A
    /// service keeps them out of the folder it shares, so nothing
    /// half-written is listed or fetched.
    public var partialDirectory: String?
    /// The audio track, when an audio input is connected to the output.
    public var audio = AudioEncoderSettings()
    /// False: video only even with an audio input connected.
    public var recordsAudio = true
    /// When the file's header gets the wall-clock time of its first frame
    /// (mapped from the camera's timestamp).
    public var creationTime = CreationTimePolicy.whenClockSynchronized
    /// An encoder that takes this many frames in a row and gives back no
    /// packet is stalled: the recording ends with `.encoderFailed` (the file
    /// finalized with what came out). Well above any encoder's own delay
    /// (x264's lookahead and frame threads hold up to about 50).
    public var encoderStallFrames = 90
    public init() {}

    func encoderSettings(size: PixelSize) -> VideoEncoderSettings {
        VideoEncoderSettings(codec: codec, size: size, frameRate: nominalFrameRate, averageBitRate: averageBitRate,
                             maxKeyFrameInterval: maxKeyFrameInterval, preset: preset, threads: threads,
                             maxDelay: maxEncoderDelay?.seconds)
    }
}

/// What the pre-record buffer holds.
public struct PreRecordStatus: Sendable, Equatable {
    public var frames = 0
    public var bytes = 0
    /// Camera time from the oldest buffered frame to the newest.
    public var held: Duration = .zero
    /// Groups of pictures dropped because the buffer reached its byte limit.
    public var groupsDroppedForBytes = 0
    /// The last encoder error while buffering, if any.
    public var lastError: String?
}

/// Why a recording ended.
public enum RecordingFinishReason: Sendable, Equatable, CustomStringConvertible {
    case stopped
    case maximumDurationReached
    case maximumFileSizeReached
    case diskFull
    /// The session stopped while recording.
    case sessionStopped
    /// The camera went away (unplugged, or silent until given up).
    case cameraLost
    /// The encoder failed (its device vanished, a call failed) or stalled
    /// (frames in, no packet out): what it gave back is in the file.
    case encoderFailed(String)
    /// The storage refused a write or a sync (an I/O error): what it holds
    /// up to the last complete fragment is kept.
    case storageFailed(String)
    case error(String)

    public var description: String {
        switch self {
        case .stopped: "stopped"
        case .maximumDurationReached: "maximum duration reached"
        case .maximumFileSizeReached: "maximum file size reached"
        case .diskFull: "disk full"
        case .sessionStopped: "the session stopped"
        case .cameraLost: "camera lost"
        case .encoderFailed(let e): "encoder failed: \(e)"
        case .storageFailed(let e): "storage failed: \(e)"
        case .error(let e): "error: \(e)"
        }
    }
}

/// Where a recording stands.
public struct RecordingProgress: Sendable, Equatable {
    public var frames = 0
    /// Media time recorded (by the camera's timestamps, first frame at zero).
    public var duration: Duration = .zero
    public var bytes = 0
    /// Frames the file lacks because the output's queue dropped them (the
    /// encoder fell behind); drops before its first frame or after its last
    /// are no hole in it and not counted.
    public var droppedFrames = 0
    /// Frames the file lacks because the camera never delivered them (gaps
    /// in its sequence numbers the queue did not make). A missing frame is
    /// counted here or in `droppedFrames`, never both.
    public var skippedFrames = 0
    /// Frames left out evenly to keep to `maxFrameRate` (a recorder that
    /// could not keep up with a camera that cannot be slowed): no hole.
    public var thinnedFrames = 0
    public var copiesPerFrame = 0.0
    /// Frames the overlay drew into in place (their buffer held by nobody
    /// else), and into copies (counted in `copiesPerFrame`).
    public var overlayInPlace = 0
    public var overlayCopied = 0
    public var size: PixelSize?
    public var encoder = ""
    /// How frames reach the encoder: wrapped without a copy, or converted (with the cost).
    public var path = ""
    /// Which encoder was chosen and why (hardware, or the fallback and what declined).
    public var encoderChoice = ""
    /// CPU time of the recording thread inside the encoder's calls (an encoder
    /// with threads of its own spends more, on them).
    public var encoderCPU: Duration = .zero
    /// Video at the start of the file that came from the pre-record buffer
    /// (recorded before the recording was started).
    public var preRoll: Duration = .zero
    /// The audio track ("aac, 48000 Hz, mono"), empty without one.
    public var audio = ""
    public var audioPackets = 0
    /// Samples the drift correction added (or removed, negative) to keep
    /// audio on the video's clock.
    public var audioCompensatedSamples: Int64 = 0
    /// Audio periods dropped because the recorder fell behind.
    public var audioDrops = 0
    /// The file's time zero on CLOCK_MONOTONIC (the camera's clock), ns.
    public var timeZeroNanoseconds: UInt64?
    /// When the recording's first frames were on the storage (its first
    /// whole fragment synced), CLOCK_MONOTONIC ns; nil until then.
    public var firstFramesDurableNanoseconds: UInt64?
    /// Each segment's time zero, the same way (pauses before it added).
    public var segmentTimeZeros: [UInt64] = []
    /// What was done to a file the recording could not finish cleanly (cut
    /// back to its last complete fragment, removed for holding no frame, no
    /// checksum and why); empty for a clean finish.
    public var fileNotes: [String] = []
    /// Mean time from a frame going into the video encoder to its packet
    /// coming out, over the last half second that had packets.
    public var encoderLatency: Duration = .zero
    /// The longest such time in this recording.
    public var encoderLatencyMax: Duration = .zero
    /// Frames inside the encoder with no packet out yet.
    public var framesInEncoder = 0
    /// The longest time, over the last report window, from a frame's sensor
    /// timestamp to its going into the encoder (capture, queue, conversion),
    /// and to its packet being handed to the file (zero: no frame). What a
    /// power cut can lose is the latter plus the storage's sync.
    public var cameraToEncoder: Duration = .zero
    public var cameraToFile: Duration = .zero
    /// The camera's rate over the last report window (about half a
    /// second), from the timestamps of the frames that reached the encoder.
    public var recentFrameRate = 0.0
    /// Frames per second measured from the timestamps.
    public var frameRate: Double {
        frames > 1 && duration > .zero ? Double(frames - 1) / duration.seconds : 0
    }
}

public enum RecordingEvent: Sendable, Equatable {
    case started(path: String)
    /// A segment was completed and has its final name.
    case segmentFinished(path: String)
    case progress(RecordingProgress)
    /// The software encoder's threads changed with the interval frames come
    /// at (`HeldFramesGovernor`), at a keyframe: in words, for the log.
    case encoderRetuned(String)
    case finished(path: String, reason: RecordingFinishReason, RecordingProgress)
}

/// Records the session's frames into a movie file, like AVFoundation's movie
/// file output: start to a path, stop, limits on duration, size and free disk
/// space, and events for start, progress and finish (with the reason).
///
/// The file is `<path>.partial` while being written (fragmented MP4/MOV: a
/// killed process leaves it playable, losing at most one fragment) and gets
/// its final name after a clean finish and fsync. Its queue is bounded, in
/// frames and in camera time (`maxBacklog`): an encoder that falls behind
/// drops frames (counted), never stalling the camera nor lagging it by more.
/// Between recordings it holds no frame.
///
/// The limits may be set at any time, from any thread; a recording in
/// progress reads them (under their lock) as it goes.
///
/// One owned state machine, run on the output's own executor (never Swift's
/// cooperative pool: encoders poll their device, files are written and
/// synced there):
///
/// ```
///  idle ──armPreRecording──▶ buffering ──startRecording──▶ recording
///   │                       (encoder + ring,                 │  stop, a limit,
///   │                        handed over)                    │  camera lost, error
///   └──────────startRecording──────────────────────▶ recording
///                                                            ▼
///  idle (buffering again if armed) ◀── finishing: encoder drained,
///                                      trailer, fsync, final name
/// ```
///
/// A recording is made of stages, shared with `AssetWriter`: the timeline
/// (`RecordingTimeline`), the encoder (`VideoEncoders.make`), the file
/// (`SegmentedFileSink`) and the sound (`AudioTrack`).
public final class MovieFileOutput: CaptureOutput, AudioReceiver, Sendable {
    public let queue = FrameQueue(policy: .bounded(4))
    public let preferredPixelFormat: PixelFormat?
    public let copies = CopyCounter()
    /// The recording's packets for live viewers (`LiveFeed`): a viewer gets
    /// what the recording in progress encodes, and a key frame when it joins.
    public let live: LiveFeed
    /// Where recording and pre-record buffering run: a thread of the output's
    /// own, since encoders poll their device and the file is written and
    /// synced there. A thread that could not be made is an error at the
    /// first recording or pre-recording (`RecordingError.noThread`), never a
    /// fallback to Swift's pool.
    private let made = Result { () throws(SystemError) in try ThreadExecutor(name: "obscura-record") }
    private func executor() throws(RecordingError) -> ThreadExecutor {
        switch made {
        case .success(let executor): return executor
        case .failure(let error): throw .noThread("\(error)")
        }
    }

    private struct Limits {
        var maxRecordedDuration: Duration?
        var segmentDuration: Duration?
        var segmentOrigin: UInt64?
        var maxRecordedFileSize: Int?
        var minFreeDiskSpace = 32 << 20
        /// Wraps each recording's encoder (tests: an encoder that stalls).
        var wrapEncoder: (@Sendable (any VideoEncoder) -> any VideoEncoder)?
    }
    private let limits = Mutex(Limits())

    /// Wraps each new encoder (a fault to recover from, in tests).
    var wrapEncoder: (@Sendable (any VideoEncoder) -> any VideoEncoder)? {
        get { limits.withLock { $0.wrapEncoder } }
        set { limits.withLock { $0.wrapEncoder = newValue } }
    }

    public var maxRecordedDuration: Duration? {
        get { limits.withLock { $0.maxRecordedDuration } }
        set { limits.withLock { $0.maxRecordedDuration = newValue } }
    }
    /// When set, a new file every `segmentDuration`, starting at a keyframe:
    /// `clip.mp4` becomes `clip-0001.mp4`, `clip-0002.mp4`, … Each frame is
    /// in exactly one segment.
    public var segmentDuration: Duration? {
        get { limits.withLock { $0.segmentDuration } }
        set { limits.withLock { $0.segmentDuration = newValue } }
    }
    /// Segments cut at this sensor time (CLOCK_MONOTONIC ns) plus whole
    /// `segmentDuration`s, rather than from the recording's first frame:
    /// several cameras' recordings given one origin cut at the same instants.
    public var segmentOrigin: UInt64? {
        get { limits.withLock { $0.segmentOrigin } }
        set { limits.withLock { $0.segmentOrigin = newValue } }
    }
    public var maxRecordedFileSize: Int? {
        get { limits.withLock { $0.maxRecordedFileSize } }
        set { limits.withLock { $0.maxRecordedFileSize = newValue } }
    }
    /// Recording stops (reason `.diskFull`) when the disk has less free space.
    public var minFreeDiskSpace: Int {
        get { limits.withLock { $0.minFreeDiskSpace } }
        set { limits.withLock { $0.minFreeDiskSpace = newValue } }
    }

    private struct State {
        var task: Task<Void, Never>?
        var stop = false
        var paused = false
        var cameraLost = false
        var progress = RecordingProgress()
        /// When the recording's call into its storage (a write, the
        /// trailer, a free-space question) began; nil outside one.
        var storageCallSince: ContinuousClock.Instant?
        /// Pre-recording: what it keeps, the task filling the buffer, and
        /// whether that task should hand its encoder and buffer over.
        var preRecord: PreRecordArm?
        var buffering: Task<Carry?, Never>?
        var handOver = false
        var bufferStatus = PreRecordStatus()
        var encoderChoice = ""
        /// Audio: the connected input's format, and periods waiting for the recording loop.
        var audioFormat: AudioFormat?
        var pendingAudio: [AudioBuffer] = []
        var audioDrops = 0
        /// While pre-recording: the last stretch of sound, for the next recording's pre-roll.
        var preAudio: [AudioBuffer] = []
        /// Where the newest period taken while recording ends (sensor clock, ns).
        var soundEnd: UInt64 = 0
        /// A finishing recording waiting for sound up to `until` (see `waitForSound`).
        var soundWait: (until: UInt64, token: Int, resume: CheckedContinuation<Void, Never>)?
        var soundWaitToken = 0
        /// Marks waiting for the recording loop (`mark`).
        var pendingMarks: [RecordingMark] = []
    }

    // MARK: Audio

    public func audioConnected(_ format: AudioFormat?) { state.withLock { $0.audioFormat = format } }

    /// Takes a captured period while recording (at most five seconds wait,
    /// plus the pre-roll; the oldest go first when the recorder falls
    /// behind). While pre-recording, the last stretch is kept like the
    /// video, so a triggered recording has sound from its first frame.
    public func receive(_ buffer: AudioBuffer) {
        let waiting = state.withLock { s -> CheckedContinuation<Void, Never>? in
            let periodsPerSecond = Double(buffer.format.sampleRate) / Double(max(1, buffer.frames))
            if s.task == nil {
                guard let arm = s.preRecord else { return nil }
                s.preAudio.append(buffer)
                // The video ring may start at the keyframe before T − N: keep a second more.
                let keep = UInt64((arm.duration.seconds + 1) * 1e9)
                if let newest = s.preAudio.last?.timestampNanoseconds,
                   let cut = s.preAudio.firstIndex(where: { newest &- $0.timestampNanoseconds <= keep }), cut > 0 {
                    s.preAudio.removeFirst(cut) // in time order: only the front is old
                }
                return nil
            }
            guard !s.paused else { return nil }
            s.pendingAudio.append(buffer)
            let limit = Int((5 + (s.preRecord?.duration.seconds ?? 0) + 1) * periodsPerSecond)
            if s.pendingAudio.count > limit {
                s.pendingAudio.removeFirst()
                s.audioDrops += 1
            }
            let length = UInt64(buffer.frames) * 1_000_000_000 / UInt64(max(1, buffer.format.sampleRate))
            s.soundEnd = max(s.soundEnd, buffer.timestampNanoseconds &+ length)
            guard let wait = s.soundWait, s.soundEnd >= wait.until else { return nil }
            s.soundWait = nil
            return wait.resume
        }
        waiting?.resume()
    }

    /// A recording that ends waits for the sound of its last frame: a
    /// period is handed over only once it is whole, a period or so after
    /// the picture of the same moment. Waits until a period reaching `end`
    /// (sensor clock, ns) is in, at most `limit` (a microphone that went
    /// quiet does not hold the file up). Suspends the recording task; no
    /// thread is held.
    func waitForSound(until end: UInt64, atMost limit: Duration) async {
        let token: Int? = state.withLock { s in
            guard s.audioFormat != nil, !s.paused, s.soundEnd < end else { return nil }
            s.soundWaitToken += 1
            return s.soundWaitToken
        }
        guard let token else { return }
        let timer = Task { [weak self] in
            try? await Task.sleep(for: limit)
            self?.endSoundWait(token)
        }
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { s in
                guard s.soundEnd < end, s.soundWaitToken == token else { return true }
                s.soundWait = (end, token, c)
                return false
            }
            if ready { c.resume() }
        }
        timer.cancel()
    }

    /// The wait `token` is over, whether or not its sound came.
    private func endSoundWait(_ token: Int) {
        let waiting = state.withLock { s -> CheckedContinuation<Void, Never>? in
            guard let wait = s.soundWait, wait.token == token else {
                if s.soundWaitToken == token { s.soundWaitToken += 1 } // not yet parked: it will not park
                return nil
            }
            s.soundWait = nil
            return wait.resume
        }
        waiting?.resume()
    }

    struct PreRecordArm {
        let duration: Duration
        let byteLimit: Int
        let settings: MovieSettings
    }

    /// What the pre-record buffer hands to a recording: the running encoder,
    /// its timeline, and the buffered packets. Ownership moves: the buffering
    /// task has ended before the recording task touches any of it.
    ///
    /// `@unchecked Sendable` (for the encoder, a class): no lock, since it is
    /// never shared — the buffering task's result hands it over once, and
    /// only the task awaiting that result uses it.
    struct Carry: @unchecked Sendable {
        let encoder: any VideoEncoder
        /// The buffer's timeline goes on in the recording.
        let timeline: RecordingTimeline
        let entries: [PreRecordBuffer.Entry]
        let trigger: UInt64
        let format: PixelFormat
        let size: PixelSize
    }
    private let state = Mutex(State())

    /// The most camera time waiting in front of the encoder: an encoder
    /// starved of CPU is handed frames at most this far behind the camera;
    /// older ones are dropped and counted (`droppedFrames`), so a power cut
    /// never also loses a backlog.
    public static let maxBacklog: Duration = .milliseconds(250)

    /// `live`: the feed its packets go to (a service keeps one across the
    /// camera's outputs, so that a viewer outlives a camera reopened).
    public init(preferredPixelFormat: PixelFormat? = .nv12, live: LiveFeed = LiveFeed()) {
        self.preferredPixelFormat = preferredPixelFormat
        self.live = live
        queue.maxBacklog = Self.maxBacklog
        queue.setAccepting(false)
    }

    /// The most frames a second the recording takes, by the camera's own
    /// timestamps, for a camera that cannot be asked for fewer: the rest are
    /// left out evenly (`RecordingProgress.thinnedFrames`). Nil: all.
    public var maxFrameRate: Double? {
        get { queue.maxFrameRate }
        set { queue.maxFrameRate = newValue }
    }

    public var isRecording: Bool { state.withLock { $0.task != nil } }
    public var isPreRecording: Bool { state.withLock { $0.preRecord != nil } }
    /// What the pre-record buffer holds now.
    public var preRecordStatus: PreRecordStatus { state.withLock { $0.bufferStatus } }

    /// Keeps the last `duration` of encoded video in memory (at most
    /// `byteLimit` bytes), so that a recording started at time T begins at
    /// the keyframe at or before T − duration. Encoding runs all the time
    /// while armed (the output holds the queue's frames as a recording
    /// would); keyframes come at least every `settings`' keyframe interval,
    /// one second by default, which bounds how much earlier than
    /// T − duration a recording can begin. Recordings started while armed
    /// use these settings.
    public func armPreRecording(duration: Duration, byteLimit: Int = 64 << 20, settings: MovieSettings = MovieSettings()) throws {
        guard duration > .zero, duration <= .seconds(600) else { throw RecordingError.preRecordDuration(duration) }
        let thread = try executor()
        guard byteLimit >= 1 << 20 else { throw RecordingError.preRecordBytes(byteLimit) }
        try state.withLock { s in
            guard s.preRecord == nil else { throw RecordingError.alreadyPreRecording }
            s.preRecord = PreRecordArm(duration: duration, byteLimit: byteLimit, settings: settings)
            if s.task == nil { startBuffering(&s, on: thread) }
        }
    }

    /// Stops pre-recording and frees its buffer; a recording in progress goes on.
    public func disarmPreRecording() {
        let task = state.withLock { s -> Task<Carry?, Never>? in
            s.preRecord = nil
            s.preAudio = []
            s.bufferStatus = PreRecordStatus()
            if s.task == nil { queue.setAccepting(false) }
            return s.buffering
        }
        queue.wake()
        _ = task
    }

    /// Called with the lock held; `thread` is the output's own (never
    /// Swift's pool: the encoder blocks).
    private func startBuffering(_ s: inout State, on thread: ThreadExecutor) {
        guard let arm = s.preRecord else { return }
        s.handOver = false
        queue.setAccepting(true)
        s.buffering = Task.detached(executorPreference: thread) { [self] in await self.buffer(arm) }
    }

    /// Fills the pre-record buffer until disarmed or asked to hand over.
    private func buffer(_ arm: PreRecordArm) async -> Carry? {
        var encoder: (any VideoEncoder)?
        var overlay: FrameOverlay?
        var timeline = RecordingTimeline()
        var format = PixelFormat.nv12
        var size = PixelSize(width: 0, height: 0)
        let ring = PreRecordBuffer(duration: arm.duration, byteLimit: arm.byteLimit)
        func reset() {
            encoder = nil
            timeline = RecordingTimeline()
            _ = ring.take(now: .max)
        }
        while true {
            let (handOver, armed) = state.withLock { ($0.handOver, $0.preRecord != nil) }
            if !armed { return nil }
            if handOver {
                guard let encoder, let last = timeline.lastTimestamp else { return nil }
                return Carry(encoder: encoder, timeline: timeline, entries: ring.take(now: last), trigger: last,
                             format: format, size: size)
            }
            guard var frame = await queue.next() else {
                if queue.isClosed {
                    // The session stopped: the timeline breaks, start afresh.
                    reset()
                    try? await Task.sleep(for: .milliseconds(50))
                }
                continue
            }
            do {
                if let wanted = arm.settings.overlay {
                    if overlay == nil { overlay = try FrameOverlay(settings: wanted, frameSize: frame.size, copies: copies) }
                    frame = try overlay!.apply(frame)
                }
                if encoder == nil {
                    let made = try VideoEncoders.make(settings: arm.settings.encoderSettings(size: frame.size), firstFrame: frame,
                                                      preference: arm.settings.encoders, copies: copies)
                    encoder = made.encoder
                    state.withLock { $0.encoderChoice = made.choice }
                    timeline = RecordingTimeline()  // the first frame is its epoch
                    format = frame.format
                    size = frame.size
                }
                guard let pts = timeline.pts(for: frame),
                      timeline.place(frame, at: pts, dropped: { queue.dropped(after: $0, before: $1) },
                                      thinned: { queue.thinned(after: $0, before: $1) }) else { continue }
                let packets = try encoder!.encode(frame, ptsMicroseconds: pts, keyframe: live.wantsKeyframe)
                live.publish(packets, encoder: encoder!, timeline: timeline)
                for packet in packets {
                    ring.append(packet, timestamp: timeline.sensorTime(pts: packet.pts) ?? frame.timestampNanoseconds)
                }
                let newest = frame.timestampNanoseconds
                let status = PreRecordStatus(frames: ring.count, bytes: ring.bytes,
                                             held: ring.oldestTimestamp.map { .nanoseconds(Int64(newest &- $0)) } ?? .zero,
                                             groupsDroppedForBytes: ring.droppedForBytes)
                state.withLock { $0.bufferStatus = status }
            } catch {
                // An encoder that cannot start or fails: say so through the
                // status and try again with the next frame.
                state.withLock { $0.bufferStatus.lastError = "\(error)" }
                reset()
            }
        }
    }

    /// Stops the buffering task and takes its encoder and buffer.
    private func takeOverBuffer() async -> Carry? {
        guard let task = state.withLock({ s -> Task<Carry?, Never>? in
            s.handOver = true
            return s.buffering
        }) else { return nil }
        queue.wake()
        let carry = await task.value
        state.withLock { s in
            s.buffering = nil
            s.bufferStatus = PreRecordStatus()
        }
        return carry
    }

    /// The camera went away: a recording in progress finishes with reason
    /// `.cameraLost` (the file is finalized and keeps what was recorded).
    public func cameraLost() {
        state.withLock { $0.cameraLost = true }
        queue.wake()
    }
    public var progress: RecordingProgress { state.withLock { $0.progress } }
    /// How long the recording has been inside one call into its storage
    /// (nil: not in one). A drive that hangs or a card that stalls holds the
    /// recording there: it is waiting, not wedged, and goes on when the call returns.
    public var storageWait: Duration? { state.withLock { s in s.storageCallSince.map { .now - $0 } } }

    /// A call into the recording's storage, marked for `storageWait`.
    func onStorage<T>(_ call: () throws -> T) rethrows -> T {
        let began = ContinuousClock.now
        state.withLock { $0.storageCallSince = began }
        defer { state.withLock { $0.storageCallSince = nil } }
        return try call()
    }

    /// Starts recording to `path` (.mp4, .mov or .mkv). Events arrive on the
    /// returned stream, which ends after `.finished`.
    /// While pre-recording is armed, the armed settings are used and the file
    /// begins with the buffered video.
    public func startRecording(to path: String, settings: MovieSettings = MovieSettings()) throws -> AsyncStream<RecordingEvent> {
        guard let container = settings.container ?? MovieContainer(path: path) else {
            throw RecordingError.unknownContainer(path)
        }
        guard settings.recipients.isEmpty == !MovieContainer.isEncrypted(path: path) else {
            throw RecordingError.encryptionName(path, encrypted: !settings.recipients.isEmpty)
        }
        let thread = try executor()
        let (events, continuation) = AsyncStream<RecordingEvent>.makeStream(bufferingPolicy: .bufferingNewest(256))
        try state.withLock { s in
            guard s.task == nil else { throw RecordingError.alreadyRecording }
            if settings.recordsAudio, s.audioFormat != nil, settings.audio.codec == .opus, container != .mkv {
                throw RecordingError.audioCodecNeedsContainer(settings.audio.codec.rawValue, container.rawValue)
            }
            // A pre-recording's sound goes first; it is trimmed to the file's start.
            s.pendingAudio = s.preRecord != nil ? s.preAudio : []
            s.soundEnd = 0
            s.pendingMarks = []
            s.preAudio = []
            s.audioDrops = 0
            s.stop = false
            s.cameraLost = false
            s.progress = RecordingProgress()
            queue.setAccepting(true)
            let armed = s.preRecord?.settings
            s.task = Task.detached(executorPreference: thread) { [self] in
                let carry = await self.takeOverBuffer()
                let reason = await RecordingRun(output: self, path: path, container: container, settings: armed ?? settings,
                                                carry: carry, events: continuation).run()
                let final = self.state.withLock { s -> RecordingProgress in
                    s.task = nil
                    if s.preRecord != nil {
                        self.startBuffering(&s, on: thread)
                    } else {
                        self.queue.setAccepting(false)
                    }
                    return s.progress
                }
                continuation.yield(.finished(path: path, reason: reason, final))
                continuation.finish()
            }
        }
        return events
    }

    /// Pauses: frames are dropped from the recording until `resumeRecording`,
    /// and the pause is removed from the timeline (no gap in the file).
    public func pauseRecording() { state.withLock { $0.paused = true } }
    public func resumeRecording() { state.withLock { $0.paused = false } }
    public var isRecordingPaused: Bool { state.withLock { $0.paused } }

    /// Stops the recording; it finishes (trailer, fsync, rename) in the background.
    public func stopRecording() {
        state.withLock { $0.stop = true }
        queue.wake()
    }

    var stopRequested: Bool { state.withLock { $0.stop } }

    // MARK: What a recording's run (`RecordingRun`) reads and tells

    var connectedAudioFormat: AudioFormat? { state.withLock { $0.audioFormat } }
    var isCameraLost: Bool { state.withLock { $0.cameraLost } }
    var audioDropsSoFar: Int { state.withLock { $0.audioDrops } }
    var encoderChoice: String { state.withLock { $0.encoderChoice } }
    func noteEncoderChoice(_ choice: String) { state.withLock { $0.encoderChoice = choice } }
    func publish(_ progress: RecordingProgress) { state.withLock { $0.progress = progress } }

    /// Marks the recording in progress (settings' `marked`): `text` in its
    /// text track at the frame of the camera's time `sensorTime` (ns), or
    /// at the newest frame written when that one is already in the file.
    /// Without a recording, nothing (at most 64 wait for the loop).
    public func mark(_ text: String, sensorTime: UInt64) {
        state.withLock { s in
            guard s.task != nil, s.pendingMarks.count < 64 else { return }
            s.pendingMarks.append(RecordingMark(text: text, sensorTime: sensorTime))
        }
    }

    /// The marks since the last call.
    func takePendingMarks() -> [RecordingMark] {
        state.withLock { s in
            defer { s.pendingMarks = [] }
            return s.pendingMarks
        }
    }

    /// The sound periods gathered by `receive` since the last call.
    func takePendingAudio() -> [AudioBuffer] {
        state.withLock { s in
            defer { s.pendingAudio = [] }
            return s.pendingAudio
        }
    }

    static func freeSpace(_ directory: String) -> Int? { try? Syscalls.freeBytes(directory) }

    /// Why a recording that met `error` ended: the disk full, the storage
    /// refusing a write or sync, or another error.
    static func failureReason(_ error: Error) -> RecordingFinishReason {
        if isDiskFull(error) { return .diskFull }
        if let e = error as? SystemError, ["fdatasync", "fsync", "pwrite", "write"].contains(e.call) { return .storageFailed("\(e)") }
        return .error("\(error)")
    }

    static func isDiskFull(_ error: Error) -> Bool {
        if let e = error as? FFmpegError { return e.code == -ENOSPC }
        if let e = error as? SystemError { return e.code == ENOSPC }
        return false
    }
}

public enum RecordingError: Error, CustomStringConvertible, Equatable {
    case unknownContainer(String)
    case alreadyRecording
    case alreadyPreRecording
    case preRecordDuration(Duration)
    case preRecordBytes(Int)
    case audioCodecNeedsContainer(String, String)
    case encryptionName(String, encrypted: Bool)
    case noThread(String)

    public var description: String {
        switch self {
        case .unknownContainer(let path):
            "cannot tell the container from \"\(path)\"; use a name ending in .mp4, .mov or .mkv"
        case .encryptionName(let path, let encrypted):
            encrypted ? "an encrypted recording's name ends in .age (\(path).age), not \"\(path)\""
                : "\"\(path)\" names an encrypted file (.age), but no recipient was given to encrypt to"
        case .noThread(let why): "the recording's thread could not be made: \(why)"
        case .alreadyRecording: "the output is already recording; stop it first"
        case .alreadyPreRecording: "pre-recording is already armed; disarm it first to change it"
        case .preRecordDuration(let d): "a pre-record duration must be above 0 and at most 600 seconds, not \(d)"
        case .preRecordBytes(let n): "a pre-record buffer needs at least 1 MiB, not \(n) bytes"
        case .audioCodecNeedsContainer(let codec, let container): "\(codec) audio goes only in mkv files, not \(container); use aac for mp4 and mov"
        }
    }
}
