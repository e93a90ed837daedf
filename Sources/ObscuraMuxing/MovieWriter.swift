import CFFmpeg
import Dispatch
import Foundation
import ObscuraEncoding
import ObscuraSystem
#if canImport(Glibc)
import Glibc
#endif

/// Movie containers.
public enum MovieContainer: String, Sendable, CaseIterable {
    case mp4, mov, mkv
    /// No container: the encoder's packets one after another (an H.264
    /// Annex B stream, or a codec no container knows, such as FWHT).
    case elementary

    var formatName: String {
        switch self {
        case .mp4: "mp4"
        case .mov: "mov"
        case .mkv: "matroska"
        case .elementary: "data"
        }
    }

    /// The container for a file name's extension.
    public init?(pathExtension: String) {
        switch pathExtension.lowercased() {
        case "mp4", "m4v": self = .mp4
        case "mov": self = .mov
        case "mkv": self = .mkv
        case "fwht", "h264", "264", "hevc", "265", "es": self = .elementary
        default: return nil
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
    public private(set) var packetsWritten = 0
    private var audioStream: UnsafeMutablePointer<AVStream>?
    private var audioTimeBase = AVRational(num: 1, den: 48_000)
    public private(set) var audioPacketsWritten = 0
    public private(set) var bytesWritten = 0

    /// `partialDirectory`: where the file is while being written (on the same
    /// filesystem, so the finishing rename is atomic); nil: beside `path`.
    /// A service keeps it out of the folder that is shared, so nothing
    /// half-written can be listed or fetched. `audio`: a second track.
    public init(path: String, container: MovieContainer, video: CodecParameters,
                fragmentDuration: Duration? = .seconds(1), partialDirectory: String? = nil,
                audio: CodecParameters? = nil) throws {
        self.path = path
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
        do {
            try check(avcodec_parameters_copy(stream.pointee.codecpar, video.parameters), "avcodec_parameters_copy")
            stream.pointee.time_base = video.timeBase
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
            try check(avio_open(&ctx.pointee.pb, partialPath, AVIO_FLAG_WRITE), "avio_open", partialPath)
            var options: OpaquePointer?
            defer { av_dict_free(&options) }
            if let fragmentDuration, container != .elementary {
                let micros = fragmentDuration.components.seconds * 1_000_000 + fragmentDuration.components.attoseconds / 1_000_000_000_000
                if container == .mkv {
                    // Matroska is written cluster by cluster: short clusters
                    // bound what a killed process loses the same way.
                    av_dict_set(&options, "cluster_time_limit", String(max(1, micros / 1000)), 0)
                } else {
                    av_dict_set(&options, "movflags", "+frag_keyframe+empty_moov+default_base_moof", 0)
                    av_dict_set(&options, "frag_duration", String(micros), 0)
                }
            }
            if let fragmentDuration { syncer = DataSyncer(path: partialPath, interval: fragmentDuration) }
            // Hand every completed fragment to the kernel at once, so a killed
            // process loses at most the fragment being built.
            ctx.pointee.flags |= 0x0200 // AVFMT_FLAG_FLUSH_PACKETS
            try check(avformat_write_header(ctx, &options), "avformat_write_header", partialPath)
            avio_flush(ctx.pointee.pb)
        } catch {
            if ctx.pointee.pb != nil { avio_closep(&ctx.pointee.pb) }
            avformat_free_context(ctx)
            context = nil
            unlink(partialPath)
            throw error
        }
    }

    /// One packet is held back until the next arrives, so its duration is
    /// the real distance to the next one rather than a muxer's guess.
    private var held: EncodedPacket?
    private var lastDuration: Int64 = 0

    /// Writes one packet (taking its data).
    public func write(_ packet: EncodedPacket) throws {
        guard context != nil, !finished else { return }
        if let previous = held {
            held = nil // a packet the muxer failed to take is not retried
            // A packet libavformat has taken or refused carries no timestamps
            // (AV_NOPTS_VALUE): never let that turn into an overflow.
            let (delta, overflow) = packet.rawPacket.pointee.dts.subtractingReportingOverflow(previous.rawPacket.pointee.dts)
            if !overflow, delta > 0 { lastDuration = delta }
            try emit(previous, duration: lastDuration)
        }
        held = packet
    }

    private func emit(_ packet: EncodedPacket, duration: Int64) throws {
        guard let context else { return }
        let raw = packet.rawPacket
        if raw.pointee.duration <= 0 { raw.pointee.duration = duration }
        raw.pointee.stream_index = stream.pointee.index
        av_packet_rescale_ts(raw, codecTimeBase, stream.pointee.time_base)
        bytesWritten += Int(raw.pointee.size)
        let keyframe = raw.pointee.flags & 1 != 0
        try check(av_interleaved_write_frame(context, raw), "av_interleaved_write_frame", partialPath)
        packetsWritten += 1
        // A keyframe closes the previous fragment (or cluster): get it onto
        // the storage, so a power cut loses little more than a fragment.
        if keyframe || packetsWritten % 16 == 0 { syncer?.request() }
    }

    /// Writes one audio packet (its time base the audio encoder's).
    public func writeAudio(_ packet: EncodedPacket) throws {
        guard let context, let audioStream, !finished else { return }
        let raw = packet.rawPacket
        raw.pointee.stream_index = audioStream.pointee.index
        av_packet_rescale_ts(raw, audioTimeBase, audioStream.pointee.time_base)
        bytesWritten += Int(raw.pointee.size)
        try check(av_interleaved_write_frame(context, raw), "av_interleaved_write_frame (audio)", partialPath)
        audioPacketsWritten += 1
    }

    public var hasAudio: Bool { audioStream != nil }

    /// Writes the trailer, flushes to disk, and renames `.partial` to the final name.
    public func finish() throws {
        guard let context, !finished else { return }
        if let last = held {
            held = nil
            try emit(last, duration: lastDuration)
        }
        finished = true
        syncer?.close()
        syncer = nil
        defer {
            avformat_free_context(context)
            self.context = nil
        }
        try check(av_write_trailer(context), "av_write_trailer", partialPath)
        avio_closep(&context.pointee.pb)
        let fd = try Syscalls.open(partialPath, O_RDONLY)
        try Syscalls.fsync(fd.rawValue, path: partialPath)
        fd.close()
        if rename(partialPath, path) != 0 { throw SystemError.errno("rename", "\(partialPath) → \(path)") }
        let directory = path.contains("/") ? String(path[..<path.lastIndex(of: "/")!]) : "."
        if let dir = try? Syscalls.open(directory.isEmpty ? "/" : directory, O_RDONLY | O_DIRECTORY) {
            try? Syscalls.fsync(dir.rawValue, path: directory)
        }
        // The recording is final; a checksum that cannot be written (a full
        // disk) is said, not turned into a failed recording.
        do { try Checksum.write(for: path) } catch { checksumError = "\(error)" }
    }

    /// Why the checksum file could not be written, if it could not.
    public private(set) var checksumError: String?

    /// Ends a recording that cannot finish cleanly (a full disk): closes the
    /// file without a trailer — fragmented MP4/MOV stays playable up to its
    /// last complete fragment — and gives it its final name.
    public func closeKeepingFragments() {
        guard let context, !finished else { return }
        finished = true
        held = nil
        syncer?.close()
        syncer = nil
        if context.pointee.pb != nil { avio_closep(&context.pointee.pb) }
        avformat_free_context(context)
        self.context = nil
        if let fd = try? Syscalls.open(partialPath, O_RDONLY) { try? Syscalls.fsync(fd.rawValue, path: partialPath) }
        if rename(partialPath, path) == 0 { try? Checksum.write(for: path) }
    }

    deinit {
        syncer?.close()
        if let context {
            // Not finished: leave the playable .partial file as it is.
            if context.pointee.pb != nil { avio_closep(&context.pointee.pb) }
            avformat_free_context(context)
        }
    }
}

/// Pushes a file's written data to the storage (fdatasync) in the background,
/// at most once per interval, so the writer never waits on a slow SD card and
/// a power cut loses little more than one interval.
final class DataSyncer: @unchecked Sendable {
    private let fd: Int32
    private let interval: UInt64
    private let queue = DispatchQueue(label: "obscura.datasync", qos: .utility)
    private let lock = NSLock()
    private var pending = false
    private var last: UInt64 = 0
    private var closed = false
    /// How many fdatasync calls were made (for tests and status).
    private(set) var syncs = 0

    init?(path: String, interval: Duration) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        self.fd = fd
        self.interval = UInt64(interval.components.seconds) * 1_000_000_000 + UInt64(interval.components.attoseconds / 1_000_000_000)
    }

    func request() {
        lock.lock()
        defer { lock.unlock() }
        guard !pending, !closed else { return }
        let now = Syscalls.monotonicNanoseconds()
        guard now &- last >= interval else { return }
        pending = true
        last = now
        queue.async { [self] in
            lock.lock()
            let open = !closed
            lock.unlock()
            if open { fdatasync(fd) }
            lock.lock()
            pending = false
            syncs += 1
            lock.unlock()
        }
    }

    /// Waits for a sync in flight and closes the descriptor.
    func close() {
        queue.sync {}
        lock.lock()
        defer { lock.unlock() }
        guard !closed else { return }
        closed = true
        _ = Glibc.close(fd)
    }

    deinit { if !closed { _ = Glibc.close(fd) } }
}

/// SHA-256 of finished recordings, beside each as `<name>.sha256` in
/// sha256sum's format (`<hex>  <name>`), so a copy can be verified with
/// `sha256sum -c` or `obscura pull`. Written after the recording has its
/// final name (via a temporary name and a rename): a recording with a
/// checksum is complete.
public enum Checksum {
    public static func write(for path: String) throws {
        let hex = try sha256(of: path)
        let name = (path as NSString).lastPathComponent
        let target = path + ".sha256"
        let directory = (path as NSString).deletingLastPathComponent
        let temporary = (directory.isEmpty ? "." : directory) + "/." + name + ".sha256.tmp"
        try Syscalls.writeDurably("\(hex)  \(name)\n".utf8, to: target, via: temporary)
    }

    /// The SHA-256 digest of `bytes`.
    public static func sha256(bytes: [UInt8]) -> [UInt8] {
        guard let context = av_sha_alloc() else { fatalError("av_sha_alloc: out of memory") }
        defer { av_free(UnsafeMutableRawPointer(context)) }
        av_sha_init(context, 256)
        bytes.withUnsafeBufferPointer { if let base = $0.baseAddress { av_sha_update(context, base, numericCast($0.count)) } }
        var digest = [UInt8](repeating: 0, count: 32)
        av_sha_final(context, &digest)
        return digest
    }

    /// The file's SHA-256 as lowercase hex (libavutil's implementation).
    public static func sha256(of path: String) throws -> String {
        let fd = try Syscalls.open(path, O_RDONLY)
        guard let context = av_sha_alloc() else { throw SystemError(call: "av_sha_alloc", code: ENOMEM) }
        defer { av_free(UnsafeMutableRawPointer(context)) }
        av_sha_init(context, 256)
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd.rawValue, $0.baseAddress!, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw SystemError.errno("read", path)
            }
            if n == 0 { break }
            buffer.withUnsafeBytes { av_sha_update(context, $0.bindMemory(to: UInt8.self).baseAddress!, numericCast(n)) }
        }
        var digest = [UInt8](repeating: 0, count: 32)
        av_sha_final(context, &digest)
        return digest.map { String(format: "%02x", $0) }.joined()
    }
}
