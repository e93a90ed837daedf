import CFFmpeg
import ObscuraFFmpeg
import Foundation

/// A recording's marks as a timed text track: what the recorder noticed
/// (a covered lens, a frozen picture, a step down under heat) at the time
/// it noticed it, found by any player's subtitle menu, `ffprobe`, or
/// `ffmpeg -i FILE -map 0:s -f srt -`. MP4 and MOV carry it as 3GPP timed
/// text (mov_text), Matroska as SubRip; the cues are made by libavcodec's
/// own encoder for each.
///
/// Each cue is written as its mark comes (a killed recording keeps it) and
/// shown for `cueMilliseconds`; one never starts before the last ended.
/// In MP4 and MOV the track is whole, and ahead of the video: empty samples
/// fill it (`fill`) before each video packet it does not cover reaches the
/// muxer. Otherwise libavformat's MP4 muxer puts in empty samples of its
/// own (of no duration, where a cue ended) whose durations in a fragmented
/// file come out wrong and move every later cue on (seen: a cue 0.8 s and
/// fillers 0.5 s late per fragment).
///
/// Owned by its `MovieWriter` (its thread); not Sendable.
final class MarkTrack {
    /// What each mark is shown for (it notes an instant; the journal and
    /// the status say how long a condition lasted).
    static let cueMilliseconds: Int64 = 1000
    /// The track's time base: milliseconds.
    static let timeBase = AVRational(num: 1, den: 1000)

    private var encoder: UnsafeMutablePointer<AVCodecContext>?
    /// Where the track's last sample ends (ms): cues never go back in time.
    private var lastEnd: Int64 = 0
    var filledTo: Int64 { lastEnd }
    /// How far past what the video needs the track is filled at a time (ms).
    static let fillAhead: Int64 = 250
    /// Whether the time between cues is filled (MP4, MOV).
    private let fills: Bool

    /// The encoder for `container`'s text track (`named`: libavcodec's
    /// encoder of that name instead); nil for a container that has none.
    init?(container: MovieContainer, named: String? = nil) throws {
        let id: AVCodecID
        switch container {
        case .mp4, .mov: id = AV_CODEC_ID_MOV_TEXT
        case .mkv: id = AV_CODEC_ID_SUBRIP
        default: return nil
        }
        let name = named ?? (id == AV_CODEC_ID_MOV_TEXT ? "mov_text" : "srt")
        guard let codec = avcodec_find_encoder_by_name(name), let ctx = avcodec_alloc_context3(codec) else {
            throw FFmpegError(call: "avcodec_find_encoder_by_name (\(name))", code: obscura_averror(ENOSYS))
        }
        fills = codec.pointee.id == AV_CODEC_ID_MOV_TEXT
        encoder = ctx
        ctx.pointee.time_base = Self.timeBase
        // The text encoders read their style from an ASS header (the
        // format's own: one default style, white on nothing).
        ctx.pointee.subtitle_header = UnsafeMutablePointer(mutating: av_strdup(Self.header)).map { UnsafeMutableRawPointer($0).assumingMemoryBound(to: UInt8.self) }
        ctx.pointee.subtitle_header_size = Int32(Self.header.utf8.count)
        let opened = avcodec_open2(ctx, codec, nil)
        guard opened >= 0 else {
            avcodec_free_context(&encoder)
            throw FFmpegError(call: "avcodec_open2 (\(String(cString: codec.pointee.name)))", code: opened)
        }
    }

    deinit { avcodec_free_context(&encoder) }

    /// Gives `stream` the track's parameters (and the encoder's sample
    /// description), and `timeBase`.
    func describe(_ stream: UnsafeMutablePointer<AVStream>, timeBase: AVRational) throws {
        guard let encoder else { return }
        let copied = avcodec_parameters_from_context(stream.pointee.codecpar, encoder)
        guard copied >= 0 else { throw FFmpegError(call: "avcodec_parameters_from_context (marks)", code: copied) }
        stream.pointee.time_base = timeBase
        av_dict_set(&stream.pointee.metadata, "title", "Obscura marks", 0)
        av_dict_set(&stream.pointee.metadata, "handler_name", "Obscura marks", 0)
    }

    /// The cue for `text` at `milliseconds` of the file's time (or where
    /// the last one ends), after the filler up to it: packets for `streamIndex`.
    func cue(_ text: String, at milliseconds: Int64, streamIndex: Int32) throws -> [UnsafeMutablePointer<AVPacket>] {
        let line = Self.plain(text)
        guard !line.isEmpty, let encoder else { return [] }
        let start = max(milliseconds, lastEnd)
        var packets = try fill(upTo: start, streamIndex: streamIndex).map { [$0] } ?? []
        do {
            packets.append(try cue(encoder, line, at: start, streamIndex: streamIndex))
        } catch {
            for p in packets { var q: UnsafeMutablePointer<AVPacket>? = p; av_packet_free(&q) }
            throw error
        }
        return packets
    }

    /// An empty sample from the last one's end to `milliseconds` (MP4 and
    /// MOV; nil when nothing is to fill).
    func fill(upTo milliseconds: Int64, streamIndex: Int32) throws -> UnsafeMutablePointer<AVPacket>? {
        guard fills, milliseconds > lastEnd else { return nil }
        // A 3GPP text sample: its text's length (16 bits), here none.
        let packet = try Self.packet(bytes: [0, 0], from: lastEnd, to: milliseconds, streamIndex: streamIndex)
        lastEnd = milliseconds
        return packet
    }

    private func cue(_ encoder: UnsafeMutablePointer<AVCodecContext>, _ line: String, at start: Int64,
                     streamIndex: Int32) throws -> UnsafeMutablePointer<AVPacket> {
        var buffer = [UInt8](repeating: 0, count: line.utf8.count * 2 + 1024)
        let size = buffer.withUnsafeMutableBufferPointer { obscura_encode_text(encoder, line, $0.baseAddress, Int32($0.count)) }
        guard size > 0 else { throw FFmpegError(call: "avcodec_encode_subtitle (marks)", code: size < 0 ? size : obscura_averror(EINVAL)) }
        let packet = try Self.packet(bytes: Array(buffer[0..<Int(size)]), from: start, to: start + Self.cueMilliseconds, streamIndex: streamIndex)
        lastEnd = start + Self.cueMilliseconds
        return packet
    }

    /// A packet of `bytes` shown from `start` to `end` (ms).
    private static func packet(bytes: [UInt8], from start: Int64, to end: Int64, streamIndex: Int32) throws -> UnsafeMutablePointer<AVPacket> {
        guard let packet = av_packet_alloc() else { throw FFmpegError(call: "av_packet_alloc (marks)", code: obscura_averror(ENOMEM)) }
        let made = av_new_packet(packet, Int32(bytes.count))
        guard made >= 0 else {
            var p: UnsafeMutablePointer<AVPacket>? = packet
            av_packet_free(&p)
            throw FFmpegError(call: "av_new_packet (marks)", code: made)
        }
        bytes.withUnsafeBytes { _ = memcpy(packet.pointee.data, $0.baseAddress!, bytes.count) }
        packet.pointee.pts = start
        packet.pointee.dts = start
        packet.pointee.duration = end - start
        packet.pointee.stream_index = streamIndex
        packet.pointee.flags |= AV_PKT_FLAG_KEY
        return packet
    }

    /// One line, without what ASS would read as markup.
    static func plain(_ text: String) -> String {
        var line = ""
        for u in text.unicodeScalars { line.unicodeScalars.append("\n\r{}\\".unicodeScalars.contains(u) ? " " : u) }
        return line.trimmingCharacters(in: .whitespaces)
    }

    static let header = """
        [Script Info]\r
        ScriptType: v4.00+\r
        PlayResX: 384\r
        PlayResY: 288\r
        \r
        [V4+ Styles]\r
        Format: Name, Fontname, Fontsize, PrimaryColour, SecondaryColour, OutlineColour, BackColour, Bold, Italic, Underline, StrikeOut, ScaleX, ScaleY, Spacing, Angle, BorderStyle, Outline, Shadow, Alignment, MarginL, MarginR, MarginV, Encoding\r
        Style: Default,Sans,16,&Hffffff,&Hffffff,&H0,&H0,0,0,0,0,100,100,0,0,1,1,0,2,10,10,10,0\r
        \r
        [Events]\r
        Format: Layer, Start, End, Style, Name, MarginL, MarginR, MarginV, Effect, Text\r

        """
}
