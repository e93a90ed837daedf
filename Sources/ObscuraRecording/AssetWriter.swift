import Dispatch
import Foundation
import ObscuraFFmpeg
import ObscuraAge
import ObscuraCapture
import ObscuraEncoding
import ObscuraMedia
import ObscuraMuxing
import ObscuraSystem

/// Writes frames the application appends into a movie file, like
/// AVFoundation's asset writer: add an input, start writing, start the
/// session at a source time, append frames, finish.
///
/// The file is crash-safe like a movie file output's: `<path>.partial`,
/// fragmented, renamed to `path` only after `finishWriting` has written the
/// trailer and fsynced. Frames are encoded off the caller's thread; an input
/// holds at most a few frames (camera buffers) at a time, which is what
/// `isReadyForMoreMediaData` tells.
///
/// ```
/// unknown ──startWriting──▶ writing ──finishWriting──▶ completed
///                              │  └──error──▶ failed
///                              └──cancelWriting──▶ cancelled (file removed)
/// ```
public final class AssetWriter: Sendable {
    public enum Status: String, Sendable { case unknown, writing, completed, failed, cancelled }

    public let path: String
    public let fileType: MovieContainer
    /// Fragment length (MP4/MOV): what a killed process can lose at most.
    public var fragmentDuration: Duration {
        get { state.withLock { $0.fragmentDuration } }
        set { state.withLock { $0.fragmentDuration = newValue } }
    }

    private struct State {
        var fragmentDuration: Duration = .milliseconds(500)
        var status = Status.unknown
        var error: String?
        var inputs: [AssetWriterInput] = []
        var sessionStart: UInt64?
        /// The movie output's file stage (one file, no sound), made at the first packets.
        var sink: SegmentedFileSink?
    }
    private let state = Mutex(State())
    private let finishing = DispatchQueue(label: "obscura.asset-writer")

    /// `fileType` nil: from the path's extension.
    /// `recipients`: the file is encrypted to them as it is written (age;
    /// its name ends in `.age`).
    public init(path: String, fileType: MovieContainer? = nil, recipients: [AgeRecipient] = []) throws {
        guard let type = fileType ?? MovieContainer(path: path) else {
            throw RecordingError.unknownContainer(path)
        }
        guard recipients.isEmpty == !MovieContainer.isEncrypted(path: path) else {
            throw RecordingError.encryptionName(path, encrypted: !recipients.isEmpty)
        }
        self.path = path
        self.fileType = type
        self.recipients = recipients
    }

    /// The age recipients the file is encrypted to.
    public let recipients: [AgeRecipient]

    public var status: Status { state.withLock { $0.status } }
    /// Why the writer failed.
    public var error: String? { state.withLock { $0.error } }
    public var inputs: [AssetWriterInput] { state.withLock { $0.inputs } }

    /// One video input per file, added before writing starts, whose codec the
    /// container can hold.
    public func canAdd(_ input: AssetWriterInput) -> Bool { (try? check(input)) != nil }

    public func add(_ input: AssetWriterInput) throws {
        try check(input)
        state.withLock { $0.inputs.append(input) }
        input.attach(to: self)
    }

    private func check(_ input: AssetWriterInput) throws {
        try state.withLock { s in
            guard s.status == .unknown else { throw AssetWriterError.wrongStatus("add an input", s.status) }
            guard s.inputs.isEmpty else { throw AssetWriterError.oneVideoInput }
        }
        try AssetWriterInput.check(input.outputSettings.codec, in: fileType)
    }

    /// Begins writing: inputs accept frames from now on (after `startSession`).
    public func startWriting() throws {
        try state.withLock { s in
            guard s.status == .unknown else { throw AssetWriterError.wrongStatus("start writing", s.status) }
            guard !s.inputs.isEmpty else { throw AssetWriterError.noInput }
            s.status = .writing
        }
    }

    /// Sets the source time (camera nanoseconds) that becomes zero in the
    /// file; frames before it are not written.
    public func startSession(atSourceTime nanoseconds: UInt64) {
        state.withLock { s in if s.sessionStart == nil { s.sessionStart = nanoseconds } }
    }

    var sessionStart: UInt64? { state.withLock { $0.sessionStart } }

    /// Marks every input finished, drains the encoders, writes the trailer,
    /// fsyncs and gives the file its name. Status: completed, or failed with
    /// the reason.
    public func finishWriting() async {
        guard state.withLock({ $0.status == .writing }) else { return }
        for input in inputs {
            input.markAsFinished()
            await input.drain()
        }
        // The trailer and fsync block: on a queue of the writer's, not Swift's pool.
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            finishing.async { [self] in
                state.withLock { s in
                    guard s.status == .writing else { return }
                    guard let sink = s.sink, sink.isOpen else {
                        s.status = .failed
                        s.error = "nothing was appended: no frame at or after the session's start time"
                        return
                    }
                    do {
                        try sink.finish(RecordingTimeline())
                        s.status = .completed
                    } catch {
                        sink.closeKeepingFragments()
                        s.status = .failed
                        s.error = (["\(error)"] + sink.notes + [Self.keptFrames(sink)]).joined(separator: "; ")
                    }
                }
                done.resume()
            }
        }
    }

    /// Stops writing and removes the file.
    public func cancelWriting() async {
        guard state.withLock({ $0.status == .writing }) else { return }
        for input in inputs {
            input.markAsFinished()
            await input.drain()
        }
        state.withLock { s in
            s.status = .cancelled
            if let partial = s.sink?.partialPath { try? Syscalls.remove(partial) }  // (an unstarted file: nothing in it)
            s.sink = nil
        }
    }

    /// From an input's encoding queue: packets for the file.
    func write(_ packets: [EncodedPacket], parameters: CodecParameters) -> Bool {
        state.withLock { s in
            guard s.status == .writing else { return false }
            do {
                // The file opens at the first keyframe; the session's start is its time zero.
                if s.sink == nil {
                    s.sink = SegmentedFileSink(path: path, container: fileType, fragmentDuration: s.fragmentDuration,
                                               recipients: recipients, startsAtFirstPacket: false)
                }
                for packet in packets { try s.sink!.write(packet, video: parameters, timeline: RecordingTimeline()) }
                return true
            } catch {
                fail(&s, error)
                return false
            }
        }
    }

    func fail(_ error: Error) { state.withLock { fail(&$0, error) } }

    private func fail(_ s: inout State, _ error: Error) {
        guard s.status == .writing else { return }
        s.status = .failed
        s.sink?.closeKeepingFragments()
        s.error = (["\(error)"] + (s.sink.map { $0.notes + [Self.keptFrames($0)] } ?? [])).joined(separator: "; ")
        s.sink = nil
    }

    var isWriting: Bool { status == .writing }

    /// "N frames kept in PATH" (or that none were), for a failure's message.
    private static func keptFrames(_ sink: SegmentedFileSink) -> String {
        sink.frames == 0 ? "no frame was kept" : "\(sink.frames) frames kept in \(sink.path)"
    }
}

/// A video track of an asset writer, with its encoder: the movie output's
/// encoder stage, so a V4L2 hardware encoder (importing camera dmabufs) when
/// `encoders` prefers one, else libavcodec.
public final class AssetWriterInput: Sendable {
    public let outputSettings: VideoEncoderSettings
    /// Encoders to try, in order (as a movie output's `MovieSettings.encoders`).
    public let encoders: [EncoderKind]
    /// Real-time sources (a camera) get a short queue: a frame offered when
    /// the input is not ready should be dropped, not waited on.
    public var expectsMediaDataInRealTime: Bool {
        get { state.withLock { $0.realTime } }
        set { state.withLock { $0.realTime = newValue } }
    }
    public let copies = CopyCounter()

    private struct State {
        var realTime = true
        var depth: Int { realTime ? 2 : 6 }
        weak var writer: AssetWriter?
        var pending = 0
        var finished = false
        var timeline = RecordingTimeline()
        /// Which encoder was chosen, and why.
        var encoderName: String?
        var encoderChoice = ""
        var appended = 0
        var refused = 0
        var readyRequest: (DispatchQueue, @Sendable () -> Void)?
        var requestScheduled = false
    }
    private let state = Mutex(State())
    /// The encoder, made for the first frame and kept until drained by
    /// `finishWriting` (then released with the frames it held). Its own lock:
    /// only the serial queue `work` takes it, for a whole encode, so the
    /// encoder never leaves it and a reader of `state` never waits on an encode.
    private let encoderSlot = Mutex<(any VideoEncoder)?>(nil)
    private let work = DispatchQueue(label: "obscura.asset-writer-input")
    private var writer: AssetWriter? { state.withLock { $0.writer } }

    public init(outputSettings: VideoEncoderSettings, encoders: [EncoderKind] = [.software]) {
        self.outputSettings = outputSettings
        self.encoders = encoders
    }

    /// The encoder in use ("libx264", "vicodec fwht (V4L2 memory-to-memory, /dev/video3)"), once the first frame came.
    public var encoderName: String? { state.withLock { $0.encoderName } }
    /// Why that encoder was chosen (the ones declined, and their reasons).
    public var encoderChoice: String { state.withLock { $0.encoderChoice } }

    func attach(to writer: AssetWriter) { state.withLock { $0.writer = writer } }

    /// Frames that can be in the input at once.
    var depth: Int { state.withLock { $0.depth } }

    public var isReadyForMoreMediaData: Bool {
        guard writer?.isWriting == true else { return false }
        return state.withLock { !$0.finished && $0.pending < $0.depth }
    }

    /// Frames appended and frames refused (not ready, too early, or out of order).
    public var appendedFrameCount: Int { state.withLock { $0.appended } }
    public var refusedFrameCount: Int { state.withLock { $0.refused } }

    /// Appends a frame, timed by its camera timestamp relative to the
    /// session's start. Returns false when the frame was not taken: the input
    /// is not ready, finished, or the writer is not writing.
    @discardableResult
    public func append(_ frame: VideoFrame) -> Bool {
        guard let writer, writer.isWriting, let start = writer.sessionStart else { return refuse() }
        let placed = state.withLock { s -> Int64? in
            // The movie output's timeline stage, its epoch the session's start.
            if s.timeline.epoch == nil { s.timeline = RecordingTimeline(epoch: start) }
            guard !s.finished, s.pending < s.depth, let pts = s.timeline.pts(for: frame),
                  s.timeline.place(frame, at: pts) else { return nil }
            s.pending += 1
            return pts
        }
        guard let pts = placed else { return refuse() }
        work.async { [self] in
            encode(frame, pts: pts, writer: writer)
            state.withLock { s in
                s.pending -= 1
                s.appended += 1
            }
            scheduleReadyRequest()
        }
        return true
    }

    private func refuse() -> Bool {
        state.withLock { $0.refused += 1 }
        return false
    }

    private func encode(_ frame: VideoFrame, pts: Int64, writer: AssetWriter) {
        do {
            try encoderSlot.withLock { (slot: inout (any VideoEncoder)?) throws in
                if slot == nil {
                    var settings = outputSettings
                    settings.size = frame.size
                    let made = try VideoEncoders.make(settings: settings, firstFrame: frame, preference: encoders, copies: copies)
                    let name = made.encoder.name, choice = made.choice
                    state.withLock { s in
                        s.encoderName = name
                        s.encoderChoice = choice
                    }
                    slot = made.encoder
                }
                guard let encoder = slot else { return }
                let packets = try encoder.encode(frame, ptsMicroseconds: pts, keyframe: false)
                if !writer.write(packets, parameters: encoder.codecParameters) { state.withLock { $0.finished = true } }
            }
        } catch {
            writer.fail(error)
            state.withLock { $0.finished = true }
        }
    }

    /// No more frames: the encoder is drained by `finishWriting`. The block
    /// given to `requestMediaDataWhenReady` is released (it usually holds
    /// the input).
    public func markAsFinished() {
        state.withLock { s in
            s.finished = true
            s.readyRequest = nil
        }
    }

    /// Waits for the frames in flight, then drains the encoder into the file.
    func drain() async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            work.async { [self] in
                // The encoder is taken out: drained, it goes with this scope
                // (and with it x264's memory and the frames it still held).
                let writer = self.writer
                encoderSlot.withLock { slot in
                    guard let encoder = slot else { return }
                    slot = nil
                    guard let writer else { return }
                    do {
                        _ = writer.write(try encoder.finish(), parameters: encoder.codecParameters)
                    } catch {
                        writer.fail(error)
                    }
                }
                done.resume()
            }
        }
    }

    /// Calls `block` on `queue` whenever the input is ready for more; the
    /// block appends while `isReadyForMoreMediaData` and returns. Ends when
    /// the input is finished.
    public func requestMediaDataWhenReady(on queue: DispatchQueue, using block: @escaping @Sendable () -> Void) {
        state.withLock { $0.readyRequest = (queue, block) }
        scheduleReadyRequest()
    }

    private func scheduleReadyRequest() {
        guard isReadyForMoreMediaData else { return }
        guard let (queue, block) = state.withLock({ s -> (DispatchQueue, @Sendable () -> Void)? in
            guard !s.finished, !s.requestScheduled, let r = s.readyRequest else { return nil }
            s.requestScheduled = true
            return r
        }) else { return }
        queue.async { [self] in
            block()
            state.withLock { $0.requestScheduled = false }
            scheduleReadyRequest()
        }
    }

    /// Whether the container can hold the codec.
    static func check(_ codec: VideoCodec, in container: MovieContainer) throws {
        if codec == .prores422 && container == .mp4 {
            throw AssetWriterError.codecNotInContainer(codec, container, allowed: [.mov, .mkv])
        }
    }
}

public enum AssetWriterError: Error, CustomStringConvertible, Equatable {
    case wrongStatus(String, AssetWriter.Status)
    case oneVideoInput
    case noInput
    case codecNotInContainer(VideoCodec, MovieContainer, allowed: [MovieContainer])
    case noActiveFormat

    public var description: String {
        switch self {
        case .wrongStatus(let what, let status): "cannot \(what) while the writer is \(status.rawValue)"
        case .oneVideoInput: "an asset writer takes one video input"
        case .noInput: "add an input before starting to write"
        case .codecNotInContainer(let codec, let container, let allowed):
            "\(container.rawValue.uppercased()) cannot hold \(codec); use \(allowed.map(\.rawValue).joined(separator: " or "))"
        case .noActiveFormat:
            "the output's camera has no active format yet: start the session (or set the device's active format) first"
        }
    }
}

extension VideoDataOutput {
    /// Encoder settings for writing this output's frames with `codec` into a
    /// `fileType` file, from the camera's active format: its size, its
    /// fastest frame rate, a bit rate for the codec (about 0.1 bit per pixel
    /// for H.264, 0.06 for HEVC; ProRes and MJPEG by quality), a keyframe
    /// every second (fragments and segments need one), and the codec's
    /// usual profile. Errors name what does not fit (ProRes needs a 10-bit
    /// 4:2:2 format and a MOV or MKV file).
    public func recommendedVideoSettings(for codec: VideoCodec, fileType: MovieContainer) throws -> VideoEncoderSettings {
        guard let format = device?.activeFormat else { throw AssetWriterError.noActiveFormat }
        try AssetWriterInput.check(codec, in: fileType)
        let camera = convertsToRequestedFormat ? (preferredPixelFormat ?? format.pixelFormat) : format.pixelFormat
        guard codec.accepts(camera) else {
            throw EncoderError.codecNeedsFormat(codec, given: camera, allowed: codec.requiredInputs ?? [])
        }
        // The frame rate set on the device, else 30 within what the format allows.
        var rate = 30.0
        if let range = format.frameDurationRange {
            rate = min(max(rate, 1 / range.upperBound.seconds), 1 / range.lowerBound.seconds)
        }
        if let set = device?.activeVideoMinFrameDuration, set > .zero { rate = 1 / set.seconds }
        let pixelsPerSecond = Double(format.dimensions.area) * rate
        let bitRate: Int? = switch codec {
        case .h264: Int(pixelsPerSecond * 0.1)
        case .hevc: Int(pixelsPerSecond * 0.06)
        case .prores422, .mjpeg, .fwht: nil
        }
        let profile: String? = switch codec {
        case .h264: "high"
        case .hevc: "main"
        case .prores422: "2"
        case .mjpeg, .fwht: nil
        }
        return VideoEncoderSettings(codec: codec, size: format.dimensions, frameRate: rate, averageBitRate: bitRate,
                                    maxKeyFrameInterval: max(1, Int(rate.rounded())), profile: profile,
                                    maxDelay: MovieSettings.defaultMaxEncoderDelay.seconds)
    }
}
