import CFFmpeg
import ObscuraFFmpeg
import Foundation
import ObscuraConversion
import ObscuraMedia

extension AudioCodec {
    /// libavcodec's encoder for the codec.
    var encoderName: String { self == .aac ? "aac" : "libopus" }
}

public struct AudioEncoderSettings: Sendable, Equatable {
    public var codec: AudioCodec = .aac
    public var bitRate = 96_000
    public init(codec: AudioCodec = .aac, bitRate: Int = 96_000) {
        self.codec = codec
        self.bitRate = bitRate
    }
}

/// Encodes captured audio on the video's timeline.
///
/// Each buffer arrives with the monotonic time of its first sample, made
/// relative to the recording's time zero by the caller. A sound card's
/// sample clock runs a little fast or slow against that clock (tens to
/// hundreds of parts per million: seconds per hour), so counting samples
/// alone lets the tracks slide apart. libswresample's compensation keeps
/// them together: the timestamps, smoothed against period jitter, go to
/// swr_next_pts, which stretches or squeezes the audio by at most 1 % —
/// inaudible — and inserts silence or drops samples only for jumps of over
/// 100 ms (an overrun). `compensatedSamples` says how much it corrected.
///
/// One owner (the recording's task); not Sendable.
public final class AudioEncoder {
    public let settings: AudioEncoderSettings
    public let inputFormat: AudioFormat
    public let codecParameters: CodecParameters
    public let sampleRate: Int
    private var context: UnsafeMutablePointer<AVCodecContext>?
    private var swr: OpaquePointer?
    private var fifo: OpaquePointer?
    private let frameSize: Int
    /// The next output sample's timestamp (in output samples), once known.
    private var nextPTS: Int64?
    /// Smoothed offset of the timestamps from the sample count, in ns.
    private var offset: Double?
    private var firstIndex: Int64?
    /// Output samples made so far and what the sample count alone would give.
    public private(set) var samplesOut: Int64 = 0
    private var samplesIn: Int64 = 0
    private var firstOutPTS: Int64 = 0
    /// Output samples still to drop from the start (they were before zero).
    private var trim: Int64 = 0

    /// Where the track's time zero is on the caller's timeline (ns): the
    /// track starts there, with silence before the first sample or the
    /// samples from before it left out.
    public let origin: Int64

    public init(settings: AudioEncoderSettings, inputFormat: AudioFormat, origin: Int64 = 0) throws {
        self.settings = settings
        self.inputFormat = inputFormat
        self.origin = origin
        guard let codec = avcodec_find_encoder_by_name(settings.codec.encoderName) else {
            throw EncoderError.encoderUnavailable(settings.codec.encoderName, available: AudioCodec.allCases.compactMap {
                avcodec_find_encoder_by_name($0.encoderName) == nil ? nil : $0.encoderName })
        }
        guard let ctx = avcodec_alloc_context3(codec) else { throw FFmpegError(call: "avcodec_alloc_context3", code: obscura_averror(ENOMEM)) }
        context = ctx
        // Opus runs at 48 kHz; AAC at the input's rate.
        sampleRate = settings.codec == .opus ? 48_000 : inputFormat.sampleRate
        ctx.pointee.sample_rate = Int32(sampleRate)
        ctx.pointee.sample_fmt = settings.codec == .aac ? AV_SAMPLE_FMT_FLTP : AV_SAMPLE_FMT_S16
        av_channel_layout_default(&ctx.pointee.ch_layout, Int32(inputFormat.channels))
        ctx.pointee.bit_rate = Int64(settings.bitRate)
        ctx.pointee.time_base = AVRational(num: 1, den: Int32(sampleRate))
        ctx.pointee.flags |= 1 << 22 // AV_CODEC_FLAG_GLOBAL_HEADER: MP4/MKV keep the config in the header
        var rc = avcodec_open2(ctx, codec, nil)
        guard rc == 0 else {
            avcodec_free_context(&context)
            throw FFmpegError(call: "avcodec_open2 (\(settings.codec.encoderName), \(sampleRate) Hz, \(inputFormat.channels) ch)", code: rc)
        }
        frameSize = ctx.pointee.frame_size > 0 ? Int(ctx.pointee.frame_size) : 960
        guard let parameters = avcodec_parameters_alloc() else { throw FFmpegError(call: "avcodec_parameters_alloc", code: obscura_averror(ENOMEM)) }
        avcodec_parameters_from_context(parameters, ctx)
        codecParameters = CodecParameters(parameters: parameters, timeBase: ctx.pointee.time_base)

        var inLayout = AVChannelLayout()
        av_channel_layout_default(&inLayout, Int32(inputFormat.channels))
        var s: OpaquePointer?
        rc = swr_alloc_set_opts2(&s, &ctx.pointee.ch_layout, ctx.pointee.sample_fmt, Int32(sampleRate),
                                 &inLayout, AV_SAMPLE_FMT_S16, Int32(inputFormat.sampleRate), 0, nil)
        guard rc == 0, let s else { throw FFmpegError(call: "swr_alloc_set_opts2", code: rc) }
        swr = s
        let raw = UnsafeMutableRawPointer(s)
        av_opt_set(raw, "flags", "res", 0)            // resample even at one rate, so it can stretch
        av_opt_set_double(raw, "min_comp", 0.002, 0)      // correct drift above 2 ms
        av_opt_set_double(raw, "max_soft_comp", 0.01, 0)  // by stretching at most 1 %
        av_opt_set_double(raw, "min_hard_comp", 0.1, 0)   // silence or drop only past 100 ms
        rc = swr_init(s)
        guard rc == 0 else { throw FFmpegError(call: "swr_init", code: rc) }
        guard let f = av_audio_fifo_alloc(ctx.pointee.sample_fmt, Int32(inputFormat.channels), Int32(frameSize * 4)) else {
            throw FFmpegError(call: "av_audio_fifo_alloc", code: obscura_averror(ENOMEM))
        }
        fifo = f
    }

    deinit {
        if fifo != nil { av_audio_fifo_free(fifo) }
        swr_free(&swr)
        avcodec_free_context(&context)
    }

    public var name: String { settings.codec.encoderName }

    /// Samples added (positive) or removed by the drift correction so far.
    public var compensatedSamples: Int64 { samplesOut - samplesIn * Int64(sampleRate) / Int64(inputFormat.sampleRate) }

    /// Encodes one buffer whose first sample is at `ptsNanoseconds` on the
    /// recording's timeline (may be negative: those samples are dropped).
    public func encode(_ buffer: AudioBuffer, ptsNanoseconds timelinePTS: Int64) throws -> [EncodedPacket] {
        guard let swr, let context else { return [] }
        let ptsNanoseconds = timelinePTS - origin
        let inRate = Int64(inputFormat.sampleRate)
        // The timestamp the sample count predicts, corrected by a slowly
        // following estimate of the offset: period-to-period jitter averages
        // out, the clocks' drift stays.
        let first = firstIndex ?? buffer.sampleIndex
        firstIndex = first
        let counted = Double(buffer.sampleIndex - first) * 1e9 / Double(inRate)
        let measured = Double(ptsNanoseconds) - counted
        if let o = offset { offset = o + (measured - o) * 0.02 } else { offset = measured }
        let smoothed = counted + offset!
        // swr_next_pts counts in 1/(in rate × out rate) of a second.
        let units = Int64((smoothed / 1e9 * Double(inRate) * Double(sampleRate)).rounded())
        let nextOut = swr_next_pts(swr, units)
        if nextPTS == nil {
            // The track starts at the file's time zero (a fragmented MP4 has
            // no edit list to say it starts later): silence before the first
            // sample, or the samples from before zero left out.
            let first = nextOut / inRate
            nextPTS = first
            firstOutPTS = 0
            if first > 0 {
                try writeSilence(Int(min(first, Int64(sampleRate) * 60)))
            } else {
                trim = -first
            }
        }
        samplesIn += Int64(buffer.frames)
        // Resample into the FIFO.
        let capacity = swr_get_out_samples(swr, Int32(buffer.frames)) + 64
        var planes = [UnsafeMutablePointer<UInt8>?](repeating: nil, count: 8)
        var linesize: Int32 = 0
        try check(av_samples_alloc(&planes, &linesize, Int32(inputFormat.channels), capacity, context.pointee.sample_fmt, 0), "av_samples_alloc")
        defer { av_freep(&planes[0]) }
        let converted = buffer.samples.withUnsafeBytes { raw -> Int32 in
            var input: UnsafePointer<UInt8>? = raw.bindMemory(to: UInt8.self).baseAddress
            return planes.withUnsafeMutableBufferPointer { out in
                withUnsafeMutablePointer(to: &input) { swr_convert(swr, out.baseAddress, capacity, $0, Int32(buffer.frames)) }
            }
        }
        try check(converted, "swr_convert")
        if converted > 0 {
            let written = planes.withUnsafeMutableBufferPointer { p in
                p.baseAddress!.withMemoryRebound(to: UnsafeMutableRawPointer?.self, capacity: 8) { av_audio_fifo_write(fifo, $0, converted) }
            }
            try check(written, "av_audio_fifo_write")
        }
        // Samples from before zero go, over as many buffers as they span.
        if trim > 0 {
            let dropped = min(Int32(clamping: trim), av_audio_fifo_size(fifo))
            av_audio_fifo_drain(fifo, dropped)
            trim -= Int64(dropped)
            samplesIn -= Int64(dropped) * inRate / Int64(sampleRate)
        }
        return try drain(flush: false)
    }

    private func writeSilence(_ count: Int) throws {
        guard count > 0, let context else { return }
        var planes = [UnsafeMutablePointer<UInt8>?](repeating: nil, count: 8)
        var linesize: Int32 = 0
        try check(av_samples_alloc(&planes, &linesize, Int32(inputFormat.channels), Int32(count), context.pointee.sample_fmt, 0), "av_samples_alloc")
        defer { av_freep(&planes[0]) }
        av_samples_set_silence(&planes, 0, Int32(count), Int32(inputFormat.channels), context.pointee.sample_fmt)
        let written = planes.withUnsafeMutableBufferPointer { p in
            p.baseAddress!.withMemoryRebound(to: UnsafeMutableRawPointer?.self, capacity: 8) { av_audio_fifo_write(fifo, $0, Int32(count)) }
        }
        try check(written, "av_audio_fifo_write (silence)")
        samplesIn += Int64(count) * Int64(inputFormat.sampleRate) / Int64(sampleRate)
    }

    /// Encodes what is left and drains the encoder.
    public func finish() throws -> [EncodedPacket] {
        var packets = try drain(flush: true)
        guard let context else { return packets }
        avcodec_send_frame(context, nil)
        packets += try receive()
        return packets
    }

    private func drain(flush: Bool) throws -> [EncodedPacket] {
        guard let context, let fifo else { return [] }
        var packets: [EncodedPacket] = []
        while av_audio_fifo_size(fifo) >= Int32(frameSize) || (flush && av_audio_fifo_size(fifo) > 0) {
            let count = min(Int32(frameSize), av_audio_fifo_size(fifo))
            guard let frame = av_frame_alloc() else { throw FFmpegError(call: "av_frame_alloc", code: obscura_averror(ENOMEM)) }
            var f: UnsafeMutablePointer<AVFrame>? = frame
            defer { av_frame_free(&f) }
            frame.pointee.nb_samples = count
            frame.pointee.format = context.pointee.sample_fmt.rawValue
            frame.pointee.sample_rate = context.pointee.sample_rate
            try check(av_channel_layout_copy(&frame.pointee.ch_layout, &context.pointee.ch_layout), "av_channel_layout_copy")
            try check(av_frame_get_buffer(frame, 0), "av_frame_get_buffer")
            let read = withUnsafeMutablePointer(to: &frame.pointee.data) { data in
                data.withMemoryRebound(to: UnsafeMutableRawPointer?.self, capacity: 8) { av_audio_fifo_read(fifo, $0, count) }
            }
            try check(read, "av_audio_fifo_read")
            frame.pointee.pts = firstOutPTS + samplesOut
            samplesOut += Int64(read)
            try check(avcodec_send_frame(context, frame), "avcodec_send_frame (\(name))")
            packets += try receive()
        }
        return packets
    }

    private func receive() throws -> [EncodedPacket] {
        guard let context else { return [] }
        var packets: [EncodedPacket] = []
        while true {
            guard let packet = av_packet_alloc() else { throw FFmpegError(call: "av_packet_alloc", code: obscura_averror(ENOMEM)) }
            let rc = avcodec_receive_packet(context, packet)
            if rc == obscura_averror(EAGAIN) || rc == obscura_averror_eof() {
                var p: UnsafeMutablePointer<AVPacket>? = packet
                av_packet_free(&p)
                break
            }
            if rc < 0 {
                var p: UnsafeMutablePointer<AVPacket>? = packet
                av_packet_free(&p)
                throw FFmpegError(call: "avcodec_receive_packet (\(name))", code: rc)
            }
            packets.append(EncodedPacket(taking: packet, timeBase: context.pointee.time_base))
        }
        return packets
    }
}
