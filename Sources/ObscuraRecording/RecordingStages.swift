import Foundation
import ObscuraFFmpeg
import ObscuraAge
import ObscuraEncoding
import ObscuraMedia
import ObscuraMuxing
import ObscuraSystem

/// The sound stage of a recording: captured periods placed on the video's
/// timeline and encoded into the current file's audio track.
///
/// Each file has an encoder of its own whose time zero is the file's, so
/// every segment's track starts in sync with its picture; the last few
/// seconds of sound are kept, so that a file opening late (the video
/// encoder's first keyframe can take a while) or a segment beginning at a
/// boundary still has sound from its first frame.
///
/// Owned by one recording and used only from its executor (not Sendable).
final class AudioTrack {
    let settings: AudioEncoderSettings
    let format: AudioFormat
    /// The current file's encoder (nil until a file opens).
    private(set) var encoder: AudioEncoder?
    /// Recent sound on the encoder's timeline (ns), for a file's start.
    private var recent: [(buffer: AudioBuffer, t: Int64)] = []
    private(set) var packets = 0

    init(settings: AudioEncoderSettings, format: AudioFormat) {
        self.settings = settings
        self.format = format
    }

    /// "aac, 48000 Hz, mono", once a file has opened.
    var description: String? {
        encoder.map { "\($0.name), \($0.sampleRate) Hz, \(format.channelDescription)" }
    }

    /// Samples added or removed to follow the camera's clock (current file).
    var compensatedSamples: Int64 { encoder?.compensatedSamples ?? 0 }

    /// The part of `buffer` (at encoder time `t`) before `end`; nil when none.
    static func part(of buffer: AudioBuffer, at t: Int64, before end: Int64?) -> AudioBuffer? {
        guard let end else { return buffer }
        guard t < end else { return nil }
        let rate = Int64(buffer.format.sampleRate)
        let keep = Int((end - t) * rate / 1_000_000_000)
        guard keep < buffer.frames else { return buffer }
        guard keep > 0 else { return nil }
        return AudioBuffer(format: buffer.format, samples: Array(buffer.samples.prefix(keep * buffer.format.channels)),
                           timestampNanoseconds: buffer.timestampNanoseconds, sampleIndex: buffer.sampleIndex)
    }

    /// A file begins at `origin` (ns of encoder time): a fresh encoder.
    /// Returns its parameters for the file's audio stream.
    func begin(at origin: Int64) throws -> CodecParameters {
        videoEnd = nil
        waiting = []  // the new file replays what it needs from `recent`
        let fresh = try AudioEncoder(settings: settings, inputFormat: format, origin: origin)
        encoder = fresh
        return fresh.codecParameters
    }

    /// Starts the new file's track with the sound kept from its time zero on.
    func replay(into writer: MovieWriter) throws {
        guard let encoder else { return }
        for (buffer, t) in recent
        where t + Int64(buffer.frames) * 1_000_000_000 / Int64(buffer.format.sampleRate) > encoder.origin {
            guard let part = Self.part(of: buffer, at: t, before: videoEnd) else { continue }
            for packet in try encoder.encode(part, ptsNanoseconds: t) { try write(packet, to: writer) }
        }
    }

    /// Where the current file's picture ends (encoder time, ns), once known:
    /// sound from then on stays out of the file, so its track ends with the
    /// video (within the encoder's last frame) rather than a period or more
    /// after it. Set when a file is about to end; a new file clears it.
    var videoEnd: Int64?

    /// Sound placed but not yet encoded: it waits for the picture, whose
    /// packets come out of the video encoder later than the sound is
    /// captured, so that a file's track never runs ahead of its video and a
    /// file that ends (a segment boundary, the end) ends its sound with it.
    private var waiting: [(buffer: AudioBuffer, t: Int64)] = []

    /// Places periods on the timeline; encoded into `writer` (when a file is
    /// open) as far as the video written so far (`videoUpTo`, encoder time
    /// ns; nil: all of it), and kept for the start of a file.
    func take(_ buffers: [AudioBuffer], timeline: RecordingTimeline, writer: MovieWriter?, videoUpTo: Int64?) throws {
        for buffer in buffers {
            guard let t = timeline.audioTime(buffer.timestampNanoseconds) else { continue }
            if encoder != nil, writer != nil { waiting.append((buffer, t)) }
            recent.append((buffer, t))
        }
        if let encoder, let writer {
            var taken = 0
            for (buffer, t) in waiting {
                if let limit = videoUpTo, t >= limit { break }
                taken += 1
                guard let part = Self.part(of: buffer, at: t, before: videoEnd) else { continue }
                for packet in try encoder.encode(part, ptsNanoseconds: t) { try write(packet, to: writer) }
            }
            waiting.removeFirst(taken)
        }
        if let newest = recent.last?.t, let cut = recent.firstIndex(where: { newest - $0.t <= 5_000_000_000 }), cut > 0 {
            recent.removeFirst(cut)
        }
    }

    /// Ends the current file's track: what the encoder still holds goes in.
    func end(into writer: MovieWriter?) throws {
        guard let encoder else { return }
        for packet in try encoder.finish() {
            if let writer { try write(packet, to: writer) }
        }
    }

    private func write(_ packet: EncodedPacket, to writer: MovieWriter) throws {
        guard writer.hasAudio else { return }
        guard packet.pts >= 0 else { return } // before the file's time zero (the encoder's priming)
        try writer.writeAudio(packet)
        packets += 1
    }
}

/// The file stage of a recording: encoded video (and the sound stage's
/// packets) into crash-safe files, opened at the first keyframe, and — when
/// segmenting — a new file at the first keyframe at or after each boundary,
/// asked of the encoder through `needsKeyframe(at:)`. Each frame is in
/// exactly one file.
///
/// A note for a recording's text track, at a time of the camera's clock.
struct RecordingMark: Sendable, Equatable {
    let text: String
    let sensorTime: UInt64
}

/// Owned by one recording (or one asset writer, under its lock); not Sendable.
final class SegmentedFileSink {
    /// What a written packet did besides being written.
    enum Change: Equatable {
        case opened(path: String)
        case segmentFinished(path: String)
    }

    let path: String
    let container: MovieContainer
    /// Segment length in µs of encoder time; nil: one file.
    let segmentLength: Int64?
    /// Segments cut on a grid from this sensor time (CLOCK_MONOTONIC ns):
    /// at origin + k × segmentLength, so that the recordings of several
    /// cameras begun together cut at the same instants. nil: from the
    /// recording's first frame.
    var segmentOrigin: UInt64?
    let fragmentDuration: Duration
    let partialDirectory: String?
    /// Each file is encrypted to these (age); empty: not encrypted.
    let recipients: [AgeRecipient]
    /// Encrypted files' fragments end on age's chunks (`MovieWriter`).
    let alignedToChunks: Bool
    /// Each video frame's time, written as it is stored (mkvmerge's
    /// "timestamp format v2": milliseconds, one line per frame).
    var timestamps: FileHandle?
    /// Whether each file's first packet is its time zero (a movie output);
    /// else encoder time is file time (an asset writer's session start).
    let startsAtFirstPacket: Bool
    let audio: AudioTrack?
    /// Sound captured since last asked (drained on each call).
    private let sound: () -> [AudioBuffer]
    /// Whether each file has a text track of marks, and the marks made
    /// since last asked (drained after each video packet); those that come
    /// before a file is open wait for it.
    let marked: Bool
    private let markEncoder: String?
    private let marks: () -> [RecordingMark]
    private var waitingMarks: [RecordingMark] = []
    /// Told when a file opens and when a segment's file is finished (at once,
    /// even if the next one then fails to open).
    private let changed: (Change) -> Void
    /// The wall-clock time of a file's first frame (its time zero on the
    /// camera's clock), or nil when the clock cannot be believed.
    private let creationTime: (UInt64) -> Date?

    private var writer: MovieWriter?
    private(set) var index = 1
    /// Encoder time (µs) of the recording's first packet's dts.
    private(set) var fileBase: Int64 = 0
    private var segmentBase: Int64 = 0
    private var nextBoundary = Int64.max
    private var keyframeRequested = false
    private var bytesBefore = 0
    /// Video packets written (one per frame); after a close on an error,
    /// those the files hold.
    private(set) var frames = 0
    /// `frames` and sound packets in the files finished before the current one.
    private var framesBefore = 0
    private var audioPacketsBefore = 0
    /// Sound packets in the files.
    var audioPackets: Int { audioPacketsBefore + (writer?.audioPacketsWritten ?? 0) }
    /// What was done to a file closed on an error (cut back, removed, no
    /// checksum), and a file that could not carry its marks.
    private(set) var notes: [String] = []
    /// Each file's time zero on the camera's clock.
    private(set) var timeZeros: [UInt64] = []
    /// When the first file's first frames were on the storage (its
    /// writer's `firstFramesDurableAt`, kept once that file is finished).
    private var firstDurable: UInt64?
    var firstFramesDurableAt: UInt64? {
        if firstDurable == nil, index == 1 { firstDurable = writer?.firstFramesDurableAt }
        return firstDurable
    }

    init(path: String, container: MovieContainer, segmentLength: Int64? = nil, fragmentDuration: Duration,
         partialDirectory: String? = nil, recipients: [AgeRecipient] = [], alignedToChunks: Bool = false,
         startsAtFirstPacket: Bool = true, audio: AudioTrack? = nil, marked: Bool = false, markEncoder: String? = nil,
         sound: @escaping () -> [AudioBuffer] = { [] }, marks: @escaping () -> [RecordingMark] = { [] },
         changed: @escaping (Change) -> Void = { _ in },
         creationTime: @escaping (UInt64) -> Date? = { _ in nil }) {
        self.creationTime = creationTime
        self.path = path
        self.container = container
        self.segmentLength = segmentLength
        self.fragmentDuration = fragmentDuration
        self.partialDirectory = partialDirectory
        self.recipients = recipients
        self.alignedToChunks = alignedToChunks
        self.startsAtFirstPacket = startsAtFirstPacket
        self.audio = container == .elementary ? nil : audio
        self.sound = sound
        self.marked = marked && container != .elementary
        self.markEncoder = markEncoder
        self.marks = marks
        self.changed = changed
    }

    var isOpen: Bool { writer != nil }
    var partialPath: String? { writer?.partialPath }
    /// Bytes in all files so far.
    var bytes: Int { bytesBefore + (writer?.bytesWritten ?? 0) }

    /// The file of segment `index` (numbered only when segmenting).
    func file(_ index: Int) -> String {
        guard segmentLength != nil else { return path }
        let sealed = MovieContainer.isEncrypted(path: path)
        let plain = sealed ? String(path.dropLast(4)) : path
        let ext = (plain as NSString).pathExtension
        let base = (plain as NSString).deletingPathExtension
        return base + "-" + String(format: "%04d", index) + "." + ext + (sealed ? String(path.suffix(4)) : "")
    }

    /// Whether the frame at `pts` must be encoded as a keyframe: the first
    /// at or after a segment boundary (asked once per boundary).
    func needsKeyframe(at pts: Int64) -> Bool {
        guard writer != nil, pts >= nextBoundary, !keyframeRequested else { return false }
        keyframeRequested = true
        return true
    }

    /// The newest video frame's time written to the current file (encoder
    /// time, µs).
    /// The newest video frame written (microseconds, before any rebase).
    private(set) var newestVideoPTS: Int64?

    /// Encodes the sound captured so far onto `timeline`, as far as the
    /// video written (`all`: everything, the file is ending).
    func takeSound(_ timeline: RecordingTimeline, all: Bool = false) throws {
        let buffers = sound()
        try audio?.take(buffers, timeline: timeline, writer: writer,
                        videoUpTo: all ? nil : (newestVideoPTS.map { $0 * 1000 } ?? Int64.min))
    }

    /// The next file (`file(index)`) opened, its time zero kept, the sound
    /// gathered so far replayed into it.
    @discardableResult
    private func openFile(video: CodecParameters, sound: CodecParameters?, timeZero zero: UInt64?) throws -> MovieWriter {
        if let zero { timeZeros.append(zero) }
        let opened = try MovieWriter(path: file(index), container: container, video: video,
                                     fragmentDuration: fragmentDuration, partialDirectory: partialDirectory, audio: sound,
                                     creationTime: zero.flatMap(creationTime), recipients: recipients,
                                     alignedToChunks: alignedToChunks, marked: marked, markEncoder: markEncoder)
        writer = opened
        if let why = opened.marksMissing, !notes.contains(where: { $0.hasSuffix(why + ")") }) {
            notes.append("\(opened.path): recorded without its marks' track (\(why))")
        }
        try audio?.replay(into: opened)
        return opened
    }

    /// Whether `packet` ends the current file and begins the next.
    func cuts(_ packet: EncodedPacket) -> Bool {
        writer != nil && keyframeRequested && packet.isKeyframe && packet.pts >= nextBoundary
    }

    /// The first segment's end: `length` after the first packet, or the
    /// next instant of the origin's grid after it.
    private func firstBoundary(after pts: Int64, length: Int64, _ timeline: RecordingTimeline) -> Int64 {
        guard let origin = segmentOrigin, let sensor = timeline.timeZero(dts: pts), length > 0 else { return pts + length }
        let step = UInt64(length) * 1000
        let next = origin + ((sensor >= origin ? sensor - origin : 0) / step + 1) * step
        return pts + Int64((next - sensor) / 1000)
    }

    /// Writes one video packet; before the first keyframe nothing is written.
    func write(_ packet: EncodedPacket, video: CodecParameters, timeline: RecordingTimeline) throws {
        guard !closedOnError else { return }
        if writer == nil {
            guard packet.isKeyframe else { return }
            fileBase = packet.dts
            segmentBase = startsAtFirstPacket ? packet.dts : 0
            nextBoundary = segmentLength.map { firstBoundary(after: packet.pts, length: $0, timeline) } ?? .max
            let sound = try audio?.begin(at: packet.dts * 1000)
            let opened = try openFile(video: video, sound: sound, timeZero: timeline.timeZero(dts: packet.dts))
            changed(.opened(path: opened.path))
        } else if keyframeRequested, packet.isKeyframe, packet.pts >= nextBoundary, let ending = writer {
            // The boundary keyframe starts the next file. Sound captured so
            // far, up to the boundary, ends the current one; the next gets a
            // fresh encoder.
            audio?.videoEnd = packet.dts * 1000
            try takeSound(timeline, all: true)
            try audio?.end(into: ending)
            let sound = try audio?.begin(at: packet.dts * 1000)
            try ending.finish()
            if index == 1, firstDurable == nil { firstDurable = ending.firstFramesDurableAt }
            bytesBefore += ending.bytesWritten
            framesBefore = frames
            audioPacketsBefore += ending.audioPacketsWritten
            writer = nil
            changed(.segmentFinished(path: ending.path))
            index += 1
            segmentBase = packet.dts
            // The sound from the boundary on starts the new file (the
            // previous file's track may run a period past its video).
            try openFile(video: video, sound: sound, timeZero: timeline.timeZero(dts: packet.dts))
            nextBoundary += segmentLength ?? 0
            keyframeRequested = false
        }
        newestVideoPTS = max(newestVideoPTS ?? packet.pts, packet.pts)
        if let timestamps {
            // Milliseconds from the recording's time zero, in stored order
            // (a side file: one that cannot be written is not the recording's failure).
            try? Syscalls.writeAll(timestamps.fileDescriptor, Array(String(format: "%.3f\n", Double(packet.pts - fileBase) / 1000).utf8),
                                   path: "the timestamps file")
        }
        if segmentBase != 0 { packet.rebase(by: segmentBase) }
        try writer!.write(packet)
        frames += 1
        try writeMarks(timeline)
    }

    /// The current file's fragment ends now (an encoder is being replaced:
    /// what the old one gave goes to the file before the new one starts).
    func endFragment() throws {
        guard !closedOnError else { return }
        try writer?.endFragmentNow()
    }

    /// The marks made so far into the file's text track, each at its
    /// frame's time in the file (or the start of the file, for one made
    /// before it began; at a file's end, none after its last frame).
    private func writeMarks(_ timeline: RecordingTimeline, ending: Bool = false) throws {
        let made = marks()
        guard marked else { return }
        waitingMarks += made
        guard let writer, !waitingMarks.isEmpty else { return }
        defer { waitingMarks = [] }
        // The marks of one instant (conditions seen on one frame) are one cue.
        var instants: [(time: UInt64, texts: [String])] = []
        for mark in waitingMarks {
            if let last = instants.indices.last, instants[last].time == mark.sensorTime {
                instants[last].texts.append(mark.text)
            } else {
                instants.append((mark.sensorTime, [mark.text]))
            }
        }
        for (time, texts) in instants {
            var encoderTime = timeline.audioTime(time).map { $0 / 1000 } ?? (newestVideoPTS ?? 0)
            if ending, let newest = newestVideoPTS { encoderTime = min(encoderTime, newest) }
            try writer.writeMark(texts.joined(separator: " · "), atMicroseconds: max(0, encoderTime - segmentBase))
        }
    }

    /// Ends the recording: the last sound (up to the end of the last frame),
    /// the trailer, fsync, the final name.
    func finish(_ timeline: RecordingTimeline) throws {
        if timeline.lastPTS >= 0 {
            audio?.videoEnd = timeline.lastPTS * 1000 + Int64(timeline.lastInterval)
        }
        try takeSound(timeline, all: true)
        // Marks made since the last frame (a stop right after one).
        try writeMarks(timeline, ending: true)
        try audio?.end(into: writer)
        try writer?.finish()
    }

    /// After an error: the current file keeps its complete fragments (cut
    /// back to the last one, counted by reading it back) or, holding no
    /// frame, is removed. `frames`, `audioPackets` and `bytes` then say what
    /// the files hold.
    func closeKeepingFragments() {
        closedOnError = true
        guard let ending = writer, let kept = ending.closeKeepingFragments() else { return }
        writer = nil
        frames = framesBefore + kept.videoPackets
        audioPacketsBefore += kept.audioPackets
        bytesBefore += kept.bytes
        notes += kept.notes
        if let last = kept.lastVideoMicroseconds {
            keptDuration = .microseconds(last + (startsAtFirstPacket ? segmentBase - fileBase : -fileBase))
        } else if kept.videoPackets == 0 {
            keptDuration = .microseconds(max(0, segmentBase - fileBase))
        }
    }

    /// Closed after an error: nothing more is written.
    private var closedOnError = false

    /// After a close on an error: the media time the files hold, first
    /// frame at zero to the last frame (nil: as recorded).
    private(set) var keptDuration: Duration?
}
