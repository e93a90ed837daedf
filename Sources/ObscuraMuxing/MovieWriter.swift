import CFFmpeg
import ObscuraFFmpeg
import Dispatch
import Foundation
import ObscuraAge
import ObscuraSystem
@_exported import ObscuraSettings
#if canImport(Glibc)
import Glibc
import ObscuraFiles
#endif

extension MovieContainer {
    /// libavformat's name for the container.
    var formatName: String {
        switch self {
        case .mp4: "mp4"
        case .mov: "mov"
        case .mkv: "matroska"
        case .elementary: "data"
        }
    }
}

/// Writes encoded packets into a movie file with libavformat.
///
/// The file is written as `<path>.partial` and renamed to `<path>` only after a
/// clean finish and fsync, so nothing ever takes a half-written file for a
/// finished one. MP4/MOV are fragmented (a new fragment at every keyframe and
/// at least every `fragmentDuration`), and every completed fragment is handed
/// to the kernel at once, so that a killed process leaves a playable
/// `.partial` file missing at most the fragment being built.
public final class MovieWriter {
    public let path: String
    /// Where the file is while it is being written.
    public let partialPath: String
    private var context: UnsafeMutablePointer<AVFormatContext>?
    private let stream: UnsafeMutablePointer<AVStream>
    private let codecTimeBase: AVRational
    private var finished = false
    private var syncer: DataSyncer?
    private var output: FileOutput?
    public private(set) var packetsWritten = 0
    private var audioStream: UnsafeMutablePointer<AVStream>?
    private var audioTimeBase = AVRational(num: 1, den: 48_000)
    public private(set) var audioPacketsWritten = 0
    /// The marks' text track (`MarkTrack`) and its stream, when asked for.
    private var marks: (track: MarkTrack, stream: UnsafeMutablePointer<AVStream>)?
    /// Why a file asked to carry marks has no marks' track (the call that failed).
    public private(set) var marksMissing: String?
    public private(set) var marksWritten = 0
    /// The file's bytes: those written so far (what the muxer still buffers
    /// is not yet in it), and once finished the file's whole size, header,
    /// index and trailer included (as encrypted: the age file's).
    public var bytesWritten: Int { Int(finishedSize ?? output?.bytesInFile ?? 0) }
    private var finishedSize: Int64?
    let container: MovieContainer
    /// The file's size at the end of the last complete fragment or cluster
    /// (or the header): after every call into the muxer that succeeded, the
    /// muxer has handed the file only whole fragments (AVFMT_FLAG_FLUSH_PACKETS
    /// empties its buffer each time; MP4/MOV build a fragment and Matroska a
    /// cluster in memory and write it whole). A write that fails part-way
    /// leaves a torn tail after it, which `closeKeepingFragments` cuts off.
    private var completeSize: Int64 = 0
    /// Video packets in the file up to `completeSize` (elementary streams
    /// only: a container's muxer holds packets back, so its file is read).
    private var completePackets = 0
    /// What a close after an error kept (set once).
    public private(set) var kept: KeptFile?
    /// The error a finish failed with: every later write or finish throws it.
    private var failure: (any Error)?
    /// Whether the file is encrypted (an age file).
    public let encrypted: Bool
    /// The file's size after its header: a file no longer than that holds no frame.
    private var headerSize: Int64 = 0
    /// The fragment length in the video's time base, and the decode time of
    /// the first video packet since the last flush (nil: none since).
    private var fragmentLength: Int64?
    private var fragmentStart: Int64?

    /// `partialDirectory`: where the file is while being written (on the same
    /// filesystem, so the finishing rename is atomic); nil: beside `path`.
    /// A service keeps it out of the folder that is shared, so nothing
    /// half-written can be listed or fetched. `audio`: a second track.
    /// `creationTime`: the wall-clock time of the first frame, written into
    /// the header (MP4/MOV `mvhd`, Matroska `DateUTC`); nil writes none.
    /// `recipients`: the file is encrypted to them as it is written (an age
    /// file: `age -d` with a matching identity gives the movie back); no
    /// plaintext of it ever reaches the storage. Needs fragments (MP4/MOV)
    /// or clusters (Matroska), since what is sealed is never rewritten.
    /// `alignedToChunks` (encrypted only): every fragment ends where one of
    /// age's 64 KiB chunks ends (see `FragmentAlignment`), so what `age -d`
    /// gives of a file cut off is whole fragments; it costs filler.
    /// `marked`: a timed text track for `writeMark` (MP4, MOV, Matroska),
    /// made by libavcodec's `markEncoder` (nil: mov_text for MP4 and MOV,
    /// srt for Matroska). A file whose track cannot be made is written
    /// without it, and `marksMissing` says why.
    public init(path: String, container: MovieContainer, video: CodecParameters,
                fragmentDuration: Duration? = .seconds(1), partialDirectory: String? = nil,
                audio: CodecParameters? = nil, creationTime: Date? = nil,
                recipients: [AgeRecipient] = [], alignedToChunks: Bool = false, marked: Bool = false,
                markEncoder: String? = nil) throws {
        self.path = path
        self.container = container
        // An encrypted file's first fragment is always aligned (so a kill
        // right after it leaves something decryptable); the rest when asked.
        let filler = !recipients.isEmpty && fragmentDuration != nil ? ChunkFiller.of(container) : nil
        alignment = alignedToChunks ? filler.map { _ in FragmentAlignment() } : nil
        if !recipients.isEmpty, fragmentDuration == nil, container == .mp4 || container == .mov {
            throw AgeError("\(path): an encrypted \(container.rawValue.uppercased()) file must be fragmented (its header cannot be rewritten once sealed)")
        }
        let encryptor = recipients.isEmpty ? nil : try AgeEncryptor(recipients: recipients)
        self.encrypted = encryptor != nil
        let partialPath = partialDirectory.map { $0 + "/" + (path as NSString).lastPathComponent + ".partial" } ?? path + ".partial"
        self.partialPath = partialPath
        var ctx: UnsafeMutablePointer<AVFormatContext>?
        try check(avformat_alloc_output_context2(&ctx, nil, container.formatName, partialPath),
                  "avformat_alloc_output_context2", container.formatName)
        guard let ctx, let stream = avformat_new_stream(ctx, nil) else {
            throw FFmpegError(call: "avformat_new_stream", code: obscura_averror(ENOMEM))
        }
        context = ctx
        self.stream = stream
        codecTimeBase = video.timeBase
        nominalInterval = video.frameInterval
        do {
            try check(avcodec_parameters_copy(stream.pointee.codecpar, video.parameters), "avcodec_parameters_copy")
            stream.pointee.time_base = video.timeBase
            try addTracks(ctx, audio: audio, marks: marked ? .some(markEncoder) : nil, video: video)
            let file = try FileOutput(path: partialPath, encryptor: encryptor, filler: filler)
            output = file
            ctx.pointee.pb = file.context
            ctx.pointee.flags |= 0x0080 // AVFMT_FLAG_CUSTOM_IO
            if let creationTime {
                let format = ISO8601DateFormatter()
                format.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
                av_dict_set(&ctx.pointee.metadata, "creation_time", format.string(from: creationTime), 0)
            }
            var options: OpaquePointer?
            defer { av_dict_free(&options) }
            if let fragmentDuration, container != .elementary {
                let micros = fragmentDuration.components.seconds * 1_000_000 + fragmentDuration.components.attoseconds / 1_000_000_000_000
                let length = av_rescale_q(micros, AVRational(num: 1, den: 1_000_000), video.timeBase)
                fragmentLength = length
                if encryptor != nil, alignment == nil { heldChunk = HeldChunk(length: length) }
                for (key, value) in Self.fragmentOptions(container, microseconds: micros, aligned: alignment != nil) {
                    av_dict_set(&options, key, value, 0)
                }
            }
            if fragmentDuration != nil { syncer = try DataSyncer(path: partialPath) }
            // Hand every completed fragment to the kernel at once, so a killed
            // process loses at most the fragment being built.
            ctx.pointee.flags |= 0x0200 // AVFMT_FLAG_FLUSH_PACKETS
            try check(avformat_write_header(ctx, &options), "avformat_write_header", partialPath)
            avio_flush(ctx.pointee.pb)
            file.commit()
            if let error = file.error { throw error }
            completeSize = file.size
            headerSize = file.size
        } catch {
            ctx.pointee.pb = nil
            output = nil
            avformat_free_context(ctx)
            context = nil
            try? Syscalls.remove(partialPath)  // (the start's own error is the one said)
            throw error
        }
    }

    /// The sound's track and the marks', when asked for.
    private func addTracks(_ ctx: UnsafeMutablePointer<AVFormatContext>, audio: CodecParameters?, marks encoder: String??,
                           video: CodecParameters) throws {
        if let audio {
            guard let a = avformat_new_stream(ctx, nil) else {
                throw FFmpegError(call: "avformat_new_stream (audio)", code: obscura_averror(ENOMEM))
            }
            try check(avcodec_parameters_copy(a.pointee.codecpar, audio.parameters), "avcodec_parameters_copy (audio)")
            a.pointee.time_base = audio.timeBase
            audioStream = a
            audioTimeBase = audio.timeBase
            // The muxer waits for both tracks before writing; never long,
            // so a killed process still loses at most about a fragment.
            ctx.pointee.max_interleave_delta = 500_000
        }
        guard let encoder else { return }
        let made: MarkTrack?
        do {
            made = try MarkTrack(container: container, named: encoder)
        } catch {
            // An FFmpeg built without the text encoder: the file is
            // recorded without its marks, and says so.
            marksMissing = "\(error)"
            return
        }
        if let track = made {
            guard let m = avformat_new_stream(ctx, nil) else {
                throw FFmpegError(call: "avformat_new_stream (marks)", code: obscura_averror(ENOMEM))
            }
            // On the video's clock: libavformat 5.1's MP4 muxer compares a
            // text track's end with other tracks' times as they are, without
            // converting them. Packets go to the muxer as they come (`mux`).
            try track.describe(m, timeBase: video.timeBase)
            marks = (track, m)
        }
    }

    /// The muxer's options for fragments of `microseconds`.
    private static func fragmentOptions(_ container: MovieContainer, microseconds: Int64, aligned: Bool) -> [(String, String)] {
        guard container == .mkv else {
            // Fragments end where this writer says (before a keyframe, or
            // once they hold their length): see `emit`.
            return [("movflags", "+frag_custom+empty_moov+default_base_moof")]
        }
        // Matroska is written cluster by cluster: short clusters bound what
        // a killed process loses the same way. Aligned to age's chunks, this
        // writer ends them (see `emit`), and the muxer's own limits only
        // bound them.
        let milliseconds = max(1, microseconds / 1000)
        return aligned ? [("cluster_time_limit", String(4 * milliseconds)), ("cluster_size_limit", String(Int32.max))]
            : [("cluster_time_limit", String(milliseconds))]
    }

    /// A packet goes to the muxer as soon as it comes. Holding it back until
    /// the next one gives its real duration would cost a whole frame interval
    /// at a power cut: a second on a starved board. Its duration is only
    /// needed when it ends a fragment, and is then guessed short: half the
    /// shorter of the nominal interval and the last distance between frames.
    /// The next fragment's start is its first frame's own time
    /// (`frag_discont`), so a guess leaves a short gap after one frame and
    /// never shifts the frames that follow. (A frame that comes sooner than
    /// the guess, faster than twice the nominal rate, is moved to the end of
    /// the guess: libavformat takes no fragment that starts before the last
    /// one ended.)
    private let nominalInterval: Int64
    private var lastDuration: Int64 = 0
    private var previousDTS: Int64?
    /// Whether the fragment being built holds a video packet.
    private var fragmentOpen = false
    /// Fragments aligned to age's chunks: where to end them.
    private var alignment: FragmentAlignment?
    /// Encrypted, fragments not aligned: the chunk not yet sealed, in time.
    private var heldChunk: HeldChunk?

    private var guessedDuration: Int64 {
        let interval = nominalInterval > 0 && lastDuration > 0 ? min(nominalInterval, lastDuration)
            : max(nominalInterval, lastDuration)
        return max(1, interval / 2)
    }

    /// Writes one packet (taking its data).
    public func write(_ packet: EncodedPacket) throws {
        try storageTookWhatWasSynced()
        guard context != nil, !finished else { return }
        let dts = packet.rawPacket.pointee.dts
        if let previousDTS {
            // A packet libavformat has taken or refused carries no timestamps
            // (AV_NOPTS_VALUE): never let that turn into an overflow.
            let (delta, overflow) = dts.subtractingReportingOverflow(previousDTS)
            if !overflow, delta > 0 { lastDuration = delta }
        }
        previousDTS = dts
        try fillMarks(before: dts)
        try emit(packet)
    }

    private func emit(_ packet: EncodedPacket) throws {
        guard let context else { return }
        let raw = packet.rawPacket
        raw.pointee.duration = guessedDuration
        raw.pointee.stream_index = stream.pointee.index
        // Where the next frame is expected: the fragment is written now if it
        // will hold its length by then, rather than kept waiting for it.
        let (dts, end) = (raw.pointee.dts, raw.pointee.dts &+ max(lastDuration, raw.pointee.duration))
        // A keyframe starts a fragment (a player can begin there), unless
        // fragments end on age's chunks (the muxer's index still marks it).
        if packet.isKeyframe, fragmentOpen, alignment == nil { try endFragment() }
        av_packet_rescale_ts(raw, codecTimeBase, stream.pointee.time_base)
        let size = Int(raw.pointee.size)
        let sizeBefore = output?.size ?? 0
        try toFile(mux(context, raw), muxCall)
        heldChunk?.handed(dts: dts, size: size, muxerWroteBefore: (output?.size ?? 0) > sizeBefore)
        if alignment != nil, let output, output.size > completeSize {
            // The muxer ended a fragment itself (Matroska, before a keyframe):
            // it is aligned now, and the next one starts with this packet.
            fragmentStart = dts
            wholeSoFar()
        }
        alignment?.took(bytes: size, video: true, keyframe: packet.isKeyframe)
        packetsWritten += 1
        fragmentOpen = true
        if packetsWritten == 1, container != .elementary {
            // The first frame goes to the file at once, as a fragment (or
            // cluster) of its own, rather than with the first second: a kill
            // or power cut right after the start still leaves a playable file.
            try endFragment()
        } else if let fragmentLength {
            // A fragment goes to the file as soon as it holds its length, not
            // when the next packet comes (the muxer's own rule): on a starved
            // board frames come a second apart, and that second would be lost
            // to a power cut too.
            let start = fragmentStart ?? dts
            fragmentStart = start
            if fragmentEndsHere(held: end &- start, length: fragmentLength) { try endFragment() }
        }
        wholeSoFar()
        syncWhatWasWritten()
    }

    /// A fragment that holds its length ends now. Aligned to age's chunks,
    /// one that holds half its length ends when little filler is needed,
    /// and one that holds twice its length ends anyway.
    private func fragmentEndsHere(held: Int64, length: Int64) -> Bool {
        guard let alignment, let output else { return held >= length }
        guard held >= length / 2 else { return false }
        let overdue = Double(held - length / 2) / Double(2 * length - length / 2)
        return held >= 2 * length || alignment.endsWell(at: output.size, overdue: overdue)
    }

    /// Hands the fragment (or cluster) being built to the file. The next
    /// one's start is then taken from its first packet, not from the guessed
    /// duration of this one's last (MP4/MOV `frag_discont`).
    private func endFragment() throws {
        guard let context, container != .elementary else { return }
        try toFile(av_write_frame(context, nil), "av_write_frame (flush)")
        heldChunk?.fragmentWritten()
        fragmentStart = nil
        fragmentOpen = false
        if container == .mp4 || container == .mov {
            try check(av_opt_set(context.pointee.priv_data, "movflags", "+frag_discont", 0), "av_opt_set (movflags +frag_discont)", partialPath)
        }
    }

    /// A call into the muxer succeeded: the file ends at a whole fragment.
    private func wholeSoFar() {
        guard let output, output.error == nil else { return }
        output.atOnce {
            output.commit()
            guard encrypted, packetsWritten > 0, output.size > completeSize else { return }
            if alignment != nil || completeSize == headerSize {
                // Whole fragments came (where this writer ended one, or the
                // muxer did; or the first, always): filled up to age's chunk,
                // which is sealed.
                output.alignToChunk()
                alignment?.aligned()
                heldChunk?.sealed()
            } else if heldChunk?.committed(before: completeSize, after: output.size, held: output.heldPlaintext,
                                           newest: previousDTS) == true {
                // The chunk not yet sealed has waited a fragment's length (a
                // still picture's frames of a kilobyte: 64 KiB of them last
                // seconds): filled and sealed now (`HeldChunk`).
                output.alignToChunk()
                heldChunk?.sealed()
            }
        }
        guard output.error == nil else { return }
        completeSize = output.size
        completePackets = packetsWritten
    }

    /// A muxer call that writes to the file: when it fails because the file's
    /// own write failed, that write's error is thrown (the storage's, which
    /// names the call and errno), else the muxer's.
    private func toFile(_ result: Int32, _ call: String) throws {
        do {
            try check(result, call, partialPath)
        } catch {
            throw output?.error ?? error
        }
    }

    /// Throws the writer's failure, or a sync of the file that failed (the
    /// storage did not take what was written: the recording ends on it, as
    /// on a failed write, keeping its complete fragments).
    private func storageTookWhatWasSynced() throws {
        if failure == nil, let failed = syncer?.failure { failure = failed }
        if let failure { throw failure }
    }

    /// The muxer hands a fragment (or cluster) to the file when it is
    /// complete: get it onto the storage at once, so a power cut loses
    /// little more than the fragment being built.
    private var sizeSynced: Int64 = 0
    private func syncWhatWasWritten() {
        guard let output, output.size > sizeSynced else { return }
        sizeSynced = output.size
        syncer?.request(holdingFrames: completePackets > 0)
    }

    /// When the file's first frames were on the storage (CLOCK_MONOTONIC,
    /// ns): the sync of its first whole fragment done. Nil before, and for
    /// a file written without fragments.
    public var firstFramesDurableAt: UInt64? { syncer?.firstFramesDurableAt ?? firstFramesSynced }
    private var firstFramesSynced: UInt64?

    /// Ends the fragment being built now, rather than at the next keyframe
    /// or at its length: its frames go to the file (and, encrypted, into
    /// age's chunks) at once. For a change of encoder, whose first packet
    /// (a keyframe) comes only once the new one has taken the frames it
    /// holds: the old one's frames would wait for it.
    public func endFragmentNow() throws {
        try storageTookWhatWasSynced()
        guard context != nil, !finished, fragmentOpen else { return }
        try endFragment()
        wholeSoFar()
        syncWhatWasWritten()
    }

    /// Writes one audio packet (its time base the audio encoder's).
    public func writeAudio(_ packet: EncodedPacket) throws {
        try storageTookWhatWasSynced()
        guard let context, let audioStream, !finished else { return }
        let raw = packet.rawPacket
        raw.pointee.stream_index = audioStream.pointee.index
        av_packet_rescale_ts(raw, audioTimeBase, audioStream.pointee.time_base)
        let size = Int(raw.pointee.size)
        try toFile(mux(context, raw), muxCall + " (audio)")
        if alignment != nil, let output, output.size > completeSize { wholeSoFar() }
        alignment?.took(bytes: size, video: false)
        audioPacketsWritten += 1
        wholeSoFar()
        syncWhatWasWritten()
    }

    public var hasAudio: Bool { audioStream != nil }
    public var hasMarks: Bool { marks != nil }

    /// Writes a mark: `text` shown from `microseconds` of the file's time
    /// (or just after the last mark) in its text track; nothing without one.
    public func writeMark(_ text: String, atMicroseconds microseconds: Int64) throws {
        try storageTookWhatWasSynced()
        guard let marks, context != nil, !finished else { return }
        for cue in try marks.track.cue(text, at: max(0, microseconds) / 1000, streamIndex: marks.stream.pointee.index) {
            try writeCue(cue)
        }
    }

    /// Hands `packet` to the muxer. With a marks' track, as it comes
    /// (`av_write_frame`): libavformat's interleaving holds every packet
    /// until each track has one queued, and the marks' track, however far
    /// ahead it is filled, is empty in between, which held the video back
    /// up to the interleaving's limit (half a second, measured: 20 frames
    /// recorded and not in the file where a fragment is 15). A fragmented
    /// MP4 keeps each track's samples apart, and Matroska takes a block a
    /// little before its cluster's time, so neither needs the packets in
    /// order across tracks. Without one, interleaved as before.
    private func mux(_ context: UnsafeMutablePointer<AVFormatContext>, _ packet: UnsafeMutablePointer<AVPacket>) -> Int32 {
        marks == nil ? av_interleaved_write_frame(context, packet) : av_write_frame(context, packet)
    }

    private var muxCall: String { marks == nil ? "av_interleaved_write_frame" : "av_write_frame" }

    /// The marks' track covers the video packet at `dts` (and the next
    /// two frames) before the packet reaches the muxer: libavformat's MP4
    /// muxer otherwise puts in text samples of its own, which end a
    /// fragment with a wrong duration and move later cues (`MarkTrack`).
    /// Filled a quarter of a second ahead at a time (about four empty
    /// samples a second), so a mark lands at most that much, and two
    /// frames, after its frame (or after the cue before it).
    private func fillMarks(before dts: Int64) throws {
        guard let marks else { return }
        let ahead = max(nominalInterval, lastDuration) * 2
        let needed = av_rescale_q(dts &+ ahead, codecTimeBase, MarkTrack.timeBase) + 1
        guard needed > marks.track.filledTo else { return }
        try writeCue(marks.track.fill(upTo: needed + MarkTrack.fillAhead, streamIndex: marks.stream.pointee.index))
    }

    private func writeCue(_ cue: UnsafeMutablePointer<AVPacket>?) throws {
        guard let cue, let context, let marks else { return }
        defer {
            var p: UnsafeMutablePointer<AVPacket>? = cue
            av_packet_free(&p)
        }
        av_packet_rescale_ts(cue, MarkTrack.timeBase, marks.stream.pointee.time_base)
        try toFile(mux(context, cue), muxCall + " (mark)")
        marksWritten += 1
        wholeSoFar()
        syncWhatWasWritten()
    }

    /// Writes the trailer, flushes to disk, and renames `.partial` to the final name.
    /// When that fails (a full disk), the file is closed as
    /// `closeKeepingFragments` does (see `kept`) and the error thrown.
    public func finish() throws {
        try storageTookWhatWasSynced()
        guard let context, !finished else { return }
        let digest: String?
        do {
            try toFile(av_write_trailer(context), "av_write_trailer")
            guard let file = output else { throw SystemError(call: "finish", code: EBADF, detail: partialPath) }
            digest = try file.finish()
            finishedSize = file.bytesInFile
        } catch {
            failure = error
            closeKeepingFragments()
            throw error
        }
        releaseContext(context)
        output = nil
        checksumHashedWhileWriting = digest != nil
        // The final name made durable (a folder that cannot be synced leaves
        // the rename not known to be on the storage: a storage failure, said
        // as one).
        try Syscalls.publish(partialPath, as: path)
        // The recording is final; a checksum that cannot be written (a full
        // disk) is said, not turned into a failed recording.
        do { try Checksum.write(for: path, digest: digest) } catch { checksumError = "\(error)" }
    }

    /// The muxer's context freed (its I/O context is ours, closed apart) and
    /// the syncer ended: the writer is finished.
    private func releaseContext(_ context: UnsafeMutablePointer<AVFormatContext>) {
        finished = true
        syncer?.close()
        firstFramesSynced = firstFramesSynced ?? syncer?.firstFramesDurableAt
        syncer = nil
        context.pointee.pb = nil
        avformat_free_context(context)
        self.context = nil
    }

    /// Whether the checksum came from hashing the bytes as they were written
    /// (the file only grew), rather than from reading the finished file.
    public private(set) var checksumHashedWhileWriting = false

    /// Why the checksum file could not be written, if it could not.
    public private(set) var checksumError: String?

    /// Ends a recording that cannot finish cleanly (a full disk, a failed
    /// write): what the muxer still holds is dropped, the file is cut back to
    /// the end of its last complete fragment or cluster (so no decoder meets
    /// a torn tail), synced, and what it holds is counted by reading it
    /// (libavformat's demuxer). A file with frames gets its final name and
    /// its checksum (or says why it has none); one with no frame is removed,
    /// since it would only claim to be a recording. Returns what was kept
    /// (also in `kept`); nil when the writer had already finished.
    @discardableResult
    public func closeKeepingFragments() -> KeptFile? {
        if let kept { return kept }
        guard let context, !finished else { return nil }
        releaseContext(context)
        guard let output else { return nil }
        self.output = nil
        var result = KeptFile(path: path)
        let torn = output.size - completeSize
        var digest: String?
        do {
            digest = try output.abandon(keeping: completeSize)
            if torn > 0 {
                let unit = container == .mkv ? "cluster" : "fragment"
                result.notes.append("\(path): cut back to its last complete \(unit) (\(completeSize) bytes; \(torn) bytes of an unfinished one removed)")
            }
        } catch {
            result.notes.append("\(path): \(error)")
        }
        if container == .elementary || encrypted {
            // An encrypted file is not read back here (no key on the
            // device): counted as handed to the muxer, which may have held
            // the last fragment's packets (those are not in the file).
            result.videoPackets = completeSize <= headerSize && encrypted ? 0 : completePackets
        } else if completeSize <= headerSize {
            result.videoPackets = 0
        } else if let counted = MovieReader.countPackets(partialPath) {
            result.videoPackets = counted.video
            result.audioPackets = counted.audio
            result.lastVideoMicroseconds = counted.lastVideoMicroseconds
        } else {
            result.notes.append("\(path): its packets could not be read back to count them")
        }
        result.bytes = Int(completeSize)
        if result.videoPackets == 0 {
            try? Syscalls.remove(partialPath)  // (an empty file left is only a header)
            result.path = nil
            result.notes.append("\(path): no frame reached the file, so it was removed")
            kept = result
            return result
        }
        do throws(SystemError) {
            try Syscalls.rename(partialPath, path)
        } catch {
            result.path = partialPath
            result.notes.append("\(path): \(error)")
        }
        if result.path == path {
            do { try Syscalls.syncFolder(Syscalls.folder(of: path)) } catch {
                result.notes.append("\(path): its folder could not be synced, so its name may not survive a power cut: \(error)")
            }
            do { try Checksum.write(for: path, digest: digest) } catch {
                checksumError = "\(error)"
                result.notes.append("\(path): no checksum: \(error)")
            }
        }
        kept = result
        return result
    }

    deinit {
        syncer?.close()
        if let context {
            // Not finished: leave the playable .partial file as it is.
            context.pointee.pb = nil
            avformat_free_context(context)
        }
    }
}

/// What a movie file holds after it was closed on an error.
public struct KeptFile: Sendable, Equatable {
    /// Where it is (nil: removed, since no frame reached it).
    public var path: String?
    public var bytes = 0
    public var videoPackets = 0
    public var audioPackets = 0
    /// Its last frame's time in the file, µs (containers only).
    public var lastVideoMicroseconds: Int64?
    /// What was done to it, or could not be (for the journal and the summary).
    public var notes: [String] = []
}

/// The packets a movie file holds.
public struct PacketCount: Sendable, Equatable {
    public var video = 0
    public var audio = 0
    /// The last video frame's time in the file (its largest pts), µs.
    public var lastVideoMicroseconds: Int64?
}

/// Reads movie files back with libavformat's demuxer.
public enum MovieReader {
    /// The video and audio packets in a file (each read; nothing decoded).
    /// Nil when the file cannot be opened as a movie.
    public static func countPackets(_ path: String) -> PacketCount? {
        var context: UnsafeMutablePointer<AVFormatContext>?
        guard avformat_open_input(&context, path, nil, nil) == 0, let opened = context else { return nil }
        defer { avformat_close_input(&context) }
        guard let packet = av_packet_alloc() else { return nil }
        defer {
            var p: UnsafeMutablePointer<AVPacket>? = packet
            av_packet_free(&p)
        }
        var count = PacketCount()
        while av_read_frame(opened, packet) >= 0 {
            let index = Int(packet.pointee.stream_index)
            if index < Int(opened.pointee.nb_streams), let stream = opened.pointee.streams[index] {
                switch stream.pointee.codecpar.pointee.codec_type {
                case AVMEDIA_TYPE_VIDEO:
                    count.video += 1
                    let pts = packet.pointee.pts
                    if pts != Int64.min { // AV_NOPTS_VALUE
                        let base = stream.pointee.time_base
                        let micros = pts * 1_000_000 * Int64(base.num) / Int64(max(1, base.den))
                        count.lastVideoMicroseconds = max(count.lastVideoMicroseconds ?? micros, micros)
                    }
                case AVMEDIA_TYPE_AUDIO: count.audio += 1
                default: break
                }
            }
            av_packet_unref(packet)
        }
        return count
    }
}
