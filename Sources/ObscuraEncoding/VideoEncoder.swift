import CFFmpeg
import ObscuraConversion
import ObscuraFFmpeg
import ObscuraMedia
@_exported import ObscuraSettings
import ObscuraSystem

/// What to encode, in the spirit of AVFoundation's video output settings.
public struct VideoEncoderSettings: Sendable, Equatable {
    public var codec: VideoCodec
    public var size: PixelSize
    /// The nominal frame rate (timestamps come from the camera; this guides rate control).
    public var frameRate: Double
    /// Average bit rate in bits per second; nil: the encoder's quality default.
    public var averageBitRate: Int?
    /// Maximum frames between keyframes.
    public var maxKeyFrameInterval: Int
    /// Encoder speed/quality preset (x264/x265 names).
    public var preset: String
    /// Profile, e.g. "high" for H.264 or a ProRes profile number.
    public var profile: String?
    /// Write codec headers out of band (MP4/MOV/MKV want this).
    public var globalHeader: Bool
    /// Encoder threads (0: the library decides).
    public var threads: Int
    /// Whether the encoder's delay is bounded, and how tightly (seconds): set,
    /// it holds frames worth at most that at `frameInterval` (`maxHeldFrames`);
    /// nil: whatever its preset and threads make it (frame threads,
    /// lookahead, B-frames). What it holds is lost when the power goes, so a
    /// recording bounds it.
    public var maxDelay: Double?
    /// The interval frames really come at (seconds, measured from the
    /// camera's timestamps: `HeldFramesGovernor`); nil: not known yet, and a
    /// bounded encoder holds no frame.
    public var frameInterval: Double?

    public init(codec: VideoCodec = .h264, size: PixelSize, frameRate: Double, averageBitRate: Int? = nil,
                maxKeyFrameInterval: Int? = nil, preset: String = "ultrafast", profile: String? = nil,
                globalHeader: Bool = true, threads: Int = 0, maxDelay: Double? = nil) {
        self.codec = codec
        self.size = size
        self.frameRate = frameRate
        self.averageBitRate = averageBitRate
        self.maxKeyFrameInterval = maxKeyFrameInterval ?? max(1, Int(frameRate.rounded()))
        self.preset = preset
        self.profile = profile
        self.globalHeader = globalHeader
        self.threads = threads
        self.maxDelay = maxDelay
    }

    /// Frames the encoder may hold when its delay is bounded: those worth
    /// `maxDelay` at the interval frames really come at (within a twentieth
    /// of a frame, for a camera's jitter), never the nominal rate's. A camera
    /// that runs slower than it says, or a recorder starved of CPU, hands the
    /// encoder frames far apart, and each frame held is then a whole interval
    /// that a power cut loses (three frames of a nominal 30 fps were two
    /// seconds at the 1.5 fps a starved board gave). Until the interval is
    /// measured, none: x264 then works with threads over slices of a frame
    /// rather than over frames. A bounded x264 times its rate control by the
    /// nominal rate (`force-cfr`); the file keeps the camera's timestamps.
    public var maxHeldFrames: Int? {
        guard let maxDelay else { return nil }
        guard let frameInterval, frameInterval > 0 else { return 0 }
        return max(0, Int((maxDelay / frameInterval + 0.05).rounded(.down)))
    }

    /// The options libx264 or libx265 gets to keep to `maxHeldFrames` (nil:
    /// none, or not bounded): what tells two bounded encoders' threading apart.
    public var boundParameters: String? {
        guard let held = maxHeldFrames, codec == .h264 || codec == .hevc else { return nil }
        return DelayBound(encoder: LibavVideoEncoder.encoderName(for: codec), preset: preset, threads: threads, maxFrames: held).parameters
    }
}

/// Encodes frames into packets. One owner; not thread-safe.
public protocol VideoEncoder: AnyObject {
    /// The encoder's name and why it was chosen (for the log).
    var name: String { get }
    /// Codec parameters for a muxer, valid after init.
    var codecParameters: CodecParameters { get }
    /// Sends one frame with its presentation time in microseconds; returns the
    /// packets ready. `keyframe` forces this frame to be a keyframe (IDR).
    func encode(_ frame: VideoFrame, ptsMicroseconds: Int64, keyframe: Bool) throws -> [EncodedPacket]
    /// Drains the encoder.
    func finish() throws -> [EncodedPacket]
    /// Whether frames reach the encoder without a CPU copy of their pixels.
    var isZeroCopy: Bool { get }
    /// Counts the frames encoded and every CPU copy of their pixels.
    var copies: CopyCounter { get }
}

/// Errors choosing or configuring an encoder.
public enum EncoderError: Error, CustomStringConvertible, Equatable {
    case encoderUnavailable(String, available: [String])
    case unsupportedInput(PixelFormat)
    case codecNeedsFormat(VideoCodec, given: PixelFormat, allowed: [PixelFormat])

    public var description: String {
        switch self {
        case .encoderUnavailable(let name, let available):
            "this FFmpeg has no encoder \(name); available here: \(available.joined(separator: ", "))"
        case .unsupportedInput(let format):
            "no conversion from pixel format \(format) is known to FFmpeg"
        case .codecNeedsFormat(let codec, let given, let allowed):
            "\(codec) needs the camera's active format to be "
                + allowed.map { "\($0) ('\($0.info?.avFoundationCode ?? $0.fourccString)')" }.joined(separator: " or ")
                + ", not \(given); choose such a format (preset inputPriority) or another codec"
        }
    }
}

/// A software encoder through libavcodec (libx264, libx265, prores_aw, mjpeg).
///
/// Frames whose layout the encoder takes directly are wrapped, not copied: the
/// AVFrame points at the camera's mapped planes and its buffer's release drops
/// the frame (returning it to the camera). Other layouts are converted with
/// swscale, and every conversion is counted on `copies`.
public final class LibavVideoEncoder: VideoEncoder {
    public let name: String
    public let codecParameters: CodecParameters
    public let copies: CopyCounter
    /// Owned from the moment it is allocated, so an init that throws after
    /// opening it frees it (and the codec's threads) too.
    private let owner: CodecContext
    private var context: UnsafeMutablePointer<AVCodecContext>? { owner.pointer }
    private let converter: PixelConverter?
    private let encoderFormat: AVPixelFormat
    /// Most frames the encoder holds as configured (nil: not bounded).
    public private(set) var heldFramesBound: Int?
    /// The options it was given to keep to that bound (`VideoEncoderSettings.boundParameters`).
    public private(set) var boundParameters: String?

    public static func encoderName(for codec: VideoCodec) -> String {
        switch codec {
        case .h264: "libx264"
        case .hevc: "libx265"
        case .prores422: "prores_aw"
        case .mjpeg: "mjpeg"
        case .fwht: "fwht (V4L2 only)"
        }
    }

    public init(settings: VideoEncoderSettings, input: PixelFormat, encoderName: String? = nil,
                copies: CopyCounter = CopyCounter()) throws {
        FFmpegLog.quietByDefault()
        guard settings.codec.accepts(input) else {
            throw EncoderError.codecNeedsFormat(settings.codec, given: input, allowed: settings.codec.requiredInputs ?? [])
        }
        let name = encoderName ?? Self.encoderName(for: settings.codec)
        guard let codec = avcodec_find_encoder_by_name(name) else {
            throw EncoderError.encoderUnavailable(name, available: Self.availableEncoders())
        }
        guard let ctx = avcodec_alloc_context3(codec) else {
            throw FFmpegError(call: "avcodec_alloc_context3", code: obscura_averror(ENOMEM), detail: name)
        }
        self.name = name
        self.copies = copies
        owner = CodecContext(ctx)
        ctx.pointee.width = Int32(settings.size.width)
        ctx.pointee.height = Int32(settings.size.height)
        ctx.pointee.time_base = AVRational(num: 1, den: 1_000_000)
        let rate = av_d2q(settings.frameRate, 1_000_000)
        ctx.pointee.framerate = rate
        ctx.pointee.gop_size = Int32(settings.maxKeyFrameInterval)
        ctx.pointee.thread_count = Int32(settings.threads)
        if let bitRate = settings.averageBitRate { ctx.pointee.bit_rate = Int64(bitRate) }
        if settings.globalHeader { ctx.pointee.flags |= Int32(1 << 22) } // AV_CODEC_FLAG_GLOBAL_HEADER

        // The encoder's pixel format: the camera's when the encoder takes it, else its first.
        let supported = Self.pixelFormats(codec)
        let inputAV = input.info?.ffmpegName.map { av_get_pix_fmt($0) } ?? AV_PIX_FMT_NONE
        let chosen: AVPixelFormat
        if inputAV != AV_PIX_FMT_NONE, supported.contains(inputAV) {
            chosen = inputAV
        } else if settings.codec == .prores422 {
            chosen = AV_PIX_FMT_YUV422P10LE
        } else if settings.codec == .mjpeg, supported.contains(AV_PIX_FMT_YUVJ420P) {
            // Standard JPEG is full range (the conversion expands it).
            chosen = AV_PIX_FMT_YUVJ420P
        } else if supported.contains(AV_PIX_FMT_YUV420P) {
            chosen = AV_PIX_FMT_YUV420P
        } else if supported.contains(AV_PIX_FMT_YUVJ420P) {
            chosen = AV_PIX_FMT_YUVJ420P
        } else {
            chosen = supported.first ?? AV_PIX_FMT_YUV420P
        }
        encoderFormat = chosen
        ctx.pointee.pix_fmt = chosen

        var options: OpaquePointer?
        defer { av_dict_free(&options) }
        if name.hasPrefix("libx26") {
            av_dict_set(&options, "preset", settings.preset, 0)
            // A forced keyframe (segment boundary) is an IDR: a file can start there.
            av_dict_set(&options, "forced-idr", "1", 0)
            if let held = settings.maxHeldFrames {
                let bound = DelayBound(encoder: name, preset: settings.preset, threads: settings.threads, maxFrames: held)
                if let params = bound.parameters { av_dict_set(&options, name == "libx264" ? "x264-params" : "x265-params", params, 0) }
                heldFramesBound = bound.heldFrames
                boundParameters = bound.parameters
            }
        }
        if let profile = settings.profile {
            av_dict_set(&options, "profile", profile, 0)
        }
        let opened = avcodec_open2(ctx, codec, &options)
        if opened < 0 {
            throw FFmpegError(call: "avcodec_open2", code: opened, detail: "\(name) \(settings.size) \(settings.frameRate) fps")
        }
        guard let parameters = avcodec_parameters_alloc() else {
            throw FFmpegError(call: "avcodec_parameters_alloc", code: obscura_averror(ENOMEM))
        }
        avcodec_parameters_from_context(parameters, ctx)
        codecParameters = CodecParameters(parameters: parameters, timeBase: ctx.pointee.time_base, frameRate: settings.frameRate)
        if chosen == inputAV {
            converter = nil
        } else {
            guard inputAV != AV_PIX_FMT_NONE else { throw EncoderError.unsupportedInput(input) }
            converter = try PixelConverter(from: inputAV, to: chosen, size: settings.size, copies: copies)
        }
    }

    /// The pixel format the encoder works in (FFmpeg's name).
    public var encoderPixelFormat: String { String(cString: av_get_pix_fmt_name(encoderFormat)) }
    /// Whether frames are wrapped without copying.
    public var isZeroCopy: Bool { converter == nil }

    static func pixelFormats(_ codec: UnsafePointer<AVCodec>) -> [AVPixelFormat] {
        var count: Int32 = 0
        guard let formats = obscura_codec_pixel_formats(codec, &count) else { return [] }
        return Array(UnsafeBufferPointer(start: formats, count: Int(count)))
    }

    public static func availableEncoders() -> [String] {
        ["libx264", "libx265", "prores_aw", "prores_ks", "mjpeg", "h264_v4l2m2m"].filter { avcodec_find_encoder_by_name($0) != nil }
    }

    public func encode(_ frame: VideoFrame, ptsMicroseconds: Int64) throws -> [EncodedPacket] {
        try encode(frame, ptsMicroseconds: ptsMicroseconds, keyframe: false)
    }

    public func encode(_ frame: VideoFrame, ptsMicroseconds: Int64, keyframe: Bool) throws -> [EncodedPacket] {
        guard let context else { return [] }
        copies.recordFrame()
        var avFrame: UnsafeMutablePointer<AVFrame>?
        if let converter {
            avFrame = try converter.convert(frame)
        } else {
            avFrame = try Self.wrap(frame, format: encoderFormat)
        }
        defer { av_frame_free(&avFrame) }
        avFrame!.pointee.pts = ptsMicroseconds
        if keyframe { avFrame!.pointee.pict_type = AV_PICTURE_TYPE_I }
        try check(avcodec_send_frame(context, avFrame), "avcodec_send_frame", name)
        return try receive()
    }

    public func finish() throws -> [EncodedPacket] {
        guard let context else { return [] }
        let sent = avcodec_send_frame(context, nil)
        if sent < 0 && sent != averrorEOF { try check(sent, "avcodec_send_frame(flush)", name) }
        return try receive()
    }

    private func receive() throws -> [EncodedPacket] {
        guard let context else { return [] }
        var packets: [EncodedPacket] = []
        while true {
            guard let packet = av_packet_alloc() else {
                throw FFmpegError(call: "av_packet_alloc", code: obscura_averror(ENOMEM))
            }
            let result = avcodec_receive_packet(context, packet)
            if result == averrorEAGAIN || result == averrorEOF {
                var p: UnsafeMutablePointer<AVPacket>? = packet
                av_packet_free(&p)
                return packets
            }
            if result < 0 {
                var p: UnsafeMutablePointer<AVPacket>? = packet
                av_packet_free(&p)
                throw FFmpegError(call: "avcodec_receive_packet", code: result, detail: name)
            }
            packets.append(EncodedPacket(taking: packet, timeBase: context.pointee.time_base))
        }
    }

    /// Wraps a frame's planes in an AVFrame without copying. The AVFrame's
    /// buffer holds the frame; when FFmpeg drops its last reference the frame
    /// is released (and goes back to the camera).
    static func wrap(_ frame: VideoFrame, format: AVPixelFormat) throws -> UnsafeMutablePointer<AVFrame> {
        guard let avFrame = av_frame_alloc() else {
            throw FFmpegError(call: "av_frame_alloc", code: obscura_averror(ENOMEM))
        }
        avFrame.pointee.format = format.rawValue
        avFrame.pointee.width = Int32(frame.size.width)
        avFrame.pointee.height = Int32(frame.size.height)
        // CPU reads happen inside the encoder until it drops the buffer.
        frame.beginCPUAccess()
        let opaque = Unmanaged.passRetained(frame).toOpaque()
        let total = frame.planes.reduce(0) { $0 + $1.length }
        let base = UnsafeMutablePointer(mutating: frame.planes[0].base.assumingMemoryBound(to: UInt8.self))
        guard let buffer = av_buffer_create(base, Int(total), { opaque, _ in
            guard let opaque else { return }
            let frame = Unmanaged<VideoFrame>.fromOpaque(opaque)
            frame.takeUnretainedValue().endCPUAccess()
            frame.release()
        }, opaque, Int32(1)) else { // AV_BUFFER_FLAG_READONLY
            frame.endCPUAccess()
            Unmanaged<VideoFrame>.fromOpaque(opaque).release()
            throw FFmpegError(call: "av_buffer_create", code: obscura_averror(ENOMEM))
        }
        avFrame.pointee.buf.0 = buffer
        withUnsafeMutableBytes(of: &avFrame.pointee.data) { data in
            let d = data.bindMemory(to: UnsafeMutablePointer<UInt8>?.self)
            for (i, plane) in frame.planes.enumerated() where i < 8 {
                d[i] = UnsafeMutablePointer(mutating: plane.base.assumingMemoryBound(to: UInt8.self))
            }
        }
        withUnsafeMutableBytes(of: &avFrame.pointee.linesize) { sizes in
            let s = sizes.bindMemory(to: Int32.self)
            for (i, plane) in frame.planes.enumerated() where i < 8 { s[i] = Int32(plane.stride) }
        }
        return avFrame
    }
}

/// An AVCodecContext with one owner, freed when it goes.
final class CodecContext {
    let pointer: UnsafeMutablePointer<AVCodecContext>
    init(_ pointer: UnsafeMutablePointer<AVCodecContext>) { self.pointer = pointer }
    deinit {
        var p: UnsafeMutablePointer<AVCodecContext>? = pointer
        avcodec_free_context(&p)
    }
}
