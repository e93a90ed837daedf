import CFFmpeg

/// An encoded access unit. Owns its AVPacket until a muxer takes it.
///
/// `@unchecked Sendable`: no lock, because it has one holder at a time — it
/// moves from the encoder to the recording's muxer; the pointer never changes
/// and only the current holder touches what it points to.
public final class EncodedPacket: @unchecked Sendable {
    package let packet: UnsafeMutablePointer<AVPacket>
    /// Time base of pts/dts.
    public let timeBase: (num: Int32, den: Int32)

    package init(taking packet: UnsafeMutablePointer<AVPacket>, timeBase: AVRational) {
        self.packet = packet
        self.timeBase = (timeBase.num, timeBase.den)
    }

    public var pts: Int64 { packet.pointee.pts }
    public var dts: Int64 { packet.pointee.dts }
    public var size: Int { Int(packet.pointee.size) }
    public var isKeyframe: Bool { packet.pointee.flags & 1 != 0 }
    /// Shifts the packet's timestamps back by `base` (its time base), so a new
    /// file starts at zero.
    public func rebase(by base: Int64) {
        guard base != 0 else { return }
        if packet.pointee.pts != obscura_av_nopts() { packet.pointee.pts -= base }
        if packet.pointee.dts != obscura_av_nopts() { packet.pointee.dts -= base }
    }

    /// A copy of the packet's bytes (compressed: a live viewer's share).
    public var bytes: [UInt8] {
        guard let data = packet.pointee.data, packet.pointee.size > 0 else { return [] }
        return Array(UnsafeBufferPointer(start: data, count: Int(packet.pointee.size)))
    }

    /// The packet itself, for a muxer (which takes its data).
    public var rawPacket: UnsafeMutablePointer<AVPacket> { packet }

    deinit {
        var p: UnsafeMutablePointer<AVPacket>? = packet
        av_packet_free(&p)
    }
}

/// Codec parameters handed from an encoder to a muxer.
///
/// `@unchecked Sendable`: both properties are `let`s, and the parameters are
/// written once, by the encoder's init, and only read afterwards.
public final class CodecParameters: @unchecked Sendable {
    public let parameters: UnsafeMutablePointer<AVCodecParameters>
    public let timeBase: AVRational
    /// One frame's duration at the nominal rate, in `timeBase` (0: unknown):
    /// what a muxer is told the newest frame lasts before the next one comes.
    public let frameInterval: Int64
    package init(parameters: UnsafeMutablePointer<AVCodecParameters>, timeBase: AVRational, frameRate: Double = 0) {
        self.parameters = parameters
        self.timeBase = timeBase
        frameInterval = frameRate > 0 ? Int64((Double(timeBase.den) / Double(timeBase.num) / frameRate).rounded()) : 0
    }
    deinit {
        var p: UnsafeMutablePointer<AVCodecParameters>? = parameters
        avcodec_parameters_free(&p)
    }

    /// Whether a stream with `other`'s parameters can follow this one in the
    /// same track: the same codec, size, profile and level, and the same
    /// headers (extradata: H.264's SPS and PPS), byte for byte.
    public func describesSameStream(as other: CodecParameters) -> Bool {
        let a = parameters.pointee, b = other.parameters.pointee
        guard a.codec_id == b.codec_id, a.width == b.width, a.height == b.height, a.format == b.format,
              a.profile == b.profile, a.level == b.level, a.extradata_size == b.extradata_size else { return false }
        guard a.extradata_size > 0 else { return true }
        guard let x = a.extradata, let y = b.extradata else { return false }
        let count = Int(a.extradata_size)
        return UnsafeBufferPointer(start: x, count: count).elementsEqual(UnsafeBufferPointer(start: y, count: count))
    }
}
