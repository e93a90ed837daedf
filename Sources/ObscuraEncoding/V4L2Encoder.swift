import CFFmpeg
import ObscuraFFmpeg
import CV4L2
import Foundation
import ObscuraConversion
import ObscuraMedia
import ObscuraSystem
#if canImport(Glibc)
import Glibc
#endif

/// A V4L2 memory-to-memory codec node, found by what it does.
public struct V4L2CodecNode: Sendable, Equatable, CustomStringConvertible {
    public let path: String
    public let driver: String
    public let card: String
    public let multiplanar: Bool
    /// Fourccs of the OUTPUT queue (what goes in) and the CAPTURE queue (what comes out).
    public let inputs: [UInt32]
    public let outputs: [UInt32]

    public var description: String { "\(driver) (\(path))" }

    /// The memory-to-memory devices, found once per process (codec devices
    /// are part of the board; a recording should not wait for the scan).
    public static func discovered() -> [V4L2CodecNode] {
        cache.withLock { found in
            if let found { return found }
            let nodes = all()
            found = nodes
            return nodes
        }
    }
    private static let cache = Mutex<[V4L2CodecNode]?>(nil)

    /// Every /dev/video* that is a memory-to-memory device.
    public static func all() -> [V4L2CodecNode] {
        var nodes: [V4L2CodecNode] = []
        for n in 0..<64 {
            let path = "/dev/video\(n)"
            guard (try? Syscalls.checkAccess(path, F_OK)) != nil else { continue }
            var caps = om_caps()
            let fd = om_open(path, &caps, nil, 0)
            guard fd >= 0 else { continue }
            defer { Syscalls.close(fd) }
            guard caps.is_m2m != 0 else { continue }
            let mp = caps.multiplanar
            func formats(_ direction: Int32) -> [UInt32] {
                var list: [UInt32] = []
                var fourcc: UInt32 = 0
                var i: UInt32 = 0
                while om_enum_format(fd, mp, direction, i, &fourcc) == 0 { list.append(fourcc); i += 1 }
                return list
            }
            let driver = withUnsafeBytes(of: caps.driver) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
            let card = withUnsafeBytes(of: caps.card) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
            nodes.append(V4L2CodecNode(path: path, driver: driver, card: card, multiplanar: mp != 0,
                                       inputs: formats(Int32(OM_OUTPUT)), outputs: formats(Int32(OM_CAPTURE))))
        }
        return nodes
    }

    /// The V4L2 coded format of a codec.
    public static func codedFourCC(_ codec: VideoCodec) -> UInt32 {
        switch codec {
        case .h264: FourCC.code("H264")
        case .hevc: FourCC.code("HEVC")
        case .mjpeg: FourCC.code("MJPG")
        case .fwht: FourCC.code("FWHT")
        case .prores422: FourCC.code("apcn")
        }
    }
}

public enum V4L2EncoderError: Error, CustomStringConvertible, Equatable {
    /// No node encodes the codec (with what each node does).
    case noEncoder(codec: VideoCodec, nodes: [String])
    case inputNotTaken(PixelFormat, node: String, takes: [String])
    case sizeRejected(asked: PixelSize, got: PixelSize, node: String, range: String)
    case frameRateRejected(asked: Double, got: Double, node: String)
    case call(String)

    public var description: String {
        switch self {
        case .noEncoder(let codec, let nodes):
            "no V4L2 memory-to-memory encoder makes \(codec)"
                + (nodes.isEmpty ? " (no memory-to-memory device here)" : " (found: \(nodes.joined(separator: "; ")))")
        case .inputNotTaken(let format, let node, let takes):
            "\(node) does not take \(format) frames; it takes \(takes.joined(separator: ", "))"
        case .sizeRejected(let asked, let got, let node, let range):
            "\(node) rejects \(asked) (VIDIOC_S_FMT answered \(got)); it takes \(range)"
        case .frameRateRejected(let asked, let got, let node):
            "\(node) rejects \(Self.fps(asked)) fps (VIDIOC_S_PARM answered \(Self.fps(got)) fps)"
        case .call(let message): message
        }
    }

    static func fps(_ value: Double) -> String {
        value == value.rounded() ? String(Int(value)) : String(Double(Int(value * 1000)) / 1000)
    }
}

/// A V4L2 stateful memory-to-memory encoder (bcm2835-codec's H.264 on a
/// Raspberry Pi 4, vicodec's FWHT on the virtual board — the same code, only
/// the coded format differs).
///
/// Camera frames are imported into the raw (OUTPUT) queue by their dmabufs:
/// the hardware reads the camera's buffer, no CPU copy. Each camera buffer
/// keeps one queue slot (drivers keep the import per slot) and its frame is
/// held until the driver is done reading it. Frames that are not dmabufs, or
/// whose stride the driver will not take, are copied into MMAP buffers and
/// the copy is counted. The bitstream (CAPTURE queue) is MMAP. Stopping sends
/// V4L2_ENC_CMD_STOP and drains to the buffer flagged LAST.
public final class V4L2MemoryToMemoryEncoder: VideoEncoder {
    public let name: String
    public let codecParameters: CodecParameters
    public let copies: CopyCounter
    public let node: V4L2CodecNode
    /// Frames go in by dmabuf import (zero-copy) rather than copied into MMAP buffers.
    public let importsDmabufs: Bool
    public var isZeroCopy: Bool { importsDmabufs }
    /// What the driver did not offer or refused (for the log line).
    public private(set) var notes: [String] = []

    private let fd: OwnedFileDescriptor
    private let mp: Int32
    private let codec: VideoCodec
    private let rawFormat: om_format
    private var slots: [VideoFrame?]
    private var slotOwner: [UInt64?]      // dmabuf inode per slot (DMABUF)
    private var slotUse: [UInt64]
    private var useCounter: UInt64 = 0
    private var rawMappings: [MemoryMapping] = []
    private var codedMappings: [MemoryMapping] = []
    private var canForceKeyframe = true
    private var draining = false
    private var sawKeyframe = false

    /// The first node that encodes `codec` from `input` frames, or an error
    /// saying what each node does.
    public static func findNode(codec: VideoCodec, input: PixelFormat, nodes: [V4L2CodecNode] = V4L2CodecNode.discovered()) throws -> V4L2CodecNode {
        let coded = V4L2CodecNode.codedFourCC(codec)
        let encoders = nodes.filter { $0.outputs.contains(coded) && !$0.inputs.contains(coded) }
        guard let first = encoders.first else {
            throw V4L2EncoderError.noEncoder(codec: codec, nodes: nodes.map {
                "\($0): \($0.inputs.map { FourCC.string($0) }.joined(separator: " ")) → \($0.outputs.map { FourCC.string($0) }.joined(separator: " "))"
            })
        }
        let raw = FourCC.code(input.info?.v4l2FourCC ?? input.fourccString)
        guard let node = encoders.first(where: { $0.inputs.contains(raw) }) else {
            throw V4L2EncoderError.inputNotTaken(input, node: first.description, takes: first.inputs.map { FourCC.string($0) })
        }
        return node
    }

    /// Opens `node` (or the first that fits) for `settings`, taking frames of
    /// `input` laid out with `stride` bytes per line of plane 0. With
    /// `importDmabufs` frames are imported by dmabuf, else copied.
    /// (longer than 80 lines: the stateful encoder interface's set-up in its
    /// order, formats, buffers, streaming, which sets the stored properties.)
    public init(settings: VideoEncoderSettings, input: PixelFormat, stride: Int, importDmabufs: Bool,
                node: V4L2CodecNode? = nil, copies: CopyCounter = CopyCounter()) throws {
        let node = try node ?? Self.findNode(codec: settings.codec, input: input)
        self.node = node
        self.copies = copies
        codec = settings.codec
        var caps = om_caps()
        var err = [CChar](repeating: 0, count: 256)
        func message() -> String { err.withUnsafeBufferPointer { String(cString: $0.baseAddress!) } }
        let raw = om_open(node.path, &caps, &err, err.count)
        guard raw >= 0 else { throw V4L2EncoderError.call(message()) }
        fd = OwnedFileDescriptor(adopting: raw)
        mp = caps.multiplanar
        let size = settings.size
        guard let info = input.info else { throw EncoderError.unsupportedInput(input) }
        let rawFourCC = FourCC.code(info.v4l2FourCC)
        let frameBytes = info.bytesPerFrame(width: size.width, height: size.height)
        let where_ = "\(node.driver) (\(node.path))"

        // The coded side first (the stateful encoder interface), then the raw side.
        var coded = om_format()
        let codedSize = UInt32(max(512 << 10, frameBytes / 2))
        guard om_set_format(fd.rawValue, mp, Int32(OM_CAPTURE), V4L2CodecNode.codedFourCC(settings.codec), UInt32(size.width),
                            UInt32(size.height), 0, codedSize, &coded, &err, err.count) == 0 else {
            throw V4L2EncoderError.call("\(where_): \(message()) (coded \(settings.codec))")
        }
        var rawGot = om_format()
        guard om_set_format(fd.rawValue, mp, Int32(OM_OUTPUT), rawFourCC, UInt32(size.width), UInt32(size.height),
                            UInt32(stride), UInt32(frameBytes), &rawGot, &err, err.count) == 0 else {
            throw V4L2EncoderError.call("\(where_): \(message()) (raw \(input) \(size))")
        }
        let got = PixelSize(width: Int(rawGot.width), height: Int(rawGot.height))
        guard got == size, rawGot.fourcc == rawFourCC else {
            var range = om_frame_sizes()
            let text = om_frame_sizes_for(fd.rawValue, rawFourCC, &range) == 0
                ? "\(range.min_width)x\(range.min_height) to \(range.max_width)x\(range.max_height)"
                    + (range.step_width > 1 ? " in steps of \(range.step_width)x\(range.step_height)" : "")
                : "sizes it does not list"
            throw V4L2EncoderError.sizeRejected(asked: size, got: got, node: where_, range: text)
        }
        rawFormat = rawGot
        // Zero-copy needs the driver to take the camera's own line length.
        importsDmabufs = importDmabufs && Int(rawGot.bytes_per_line) == stride
        var notes: [String] = []
        if importDmabufs && !importsDmabufs {
            notes.append("the driver wants \(rawGot.bytes_per_line) bytes per line, the camera gives \(stride): frames are copied")
        }

        // Frame rate, where the driver has the call; controls where offered.
        notes += try Self.setFrameRate(fd.rawValue, mp: mp, settings.frameRate, on: where_)
        notes += Self.setControls(fd.rawValue, settings)

        // Buffers: the raw queue imports (or MMAPs), the coded queue is MMAP.
        let rawMemory = importsDmabufs ? Int32(OM_DMABUF) : Int32(OM_MMAP)
        let rawCount = om_request_buffers(fd.rawValue, mp, Int32(OM_OUTPUT), rawMemory, importsDmabufs ? 8 : 4, &err, err.count)
        guard rawCount > 0 else { throw V4L2EncoderError.call("\(where_): \(message()) (raw queue)") }
        slots = Array(repeating: nil, count: Int(rawCount))
        slotOwner = Array(repeating: nil, count: Int(rawCount))
        slotUse = Array(repeating: 0, count: Int(rawCount))
        if !importsDmabufs {
            for i in 0..<UInt32(rawCount) {
                var offset: UInt32 = 0, length: UInt32 = 0
                guard om_query_buffer(fd.rawValue, mp, Int32(OM_OUTPUT), i, &offset, &length, &err, err.count) == 0 else {
                    throw V4L2EncoderError.call("\(where_): \(message())")
                }
                rawMappings.append(try MemoryMapping(fd: fd.rawValue, offset: Int(offset), length: Int(length), writable: true))
            }
        }
        let codedCount = om_request_buffers(fd.rawValue, mp, Int32(OM_CAPTURE), Int32(OM_MMAP), 4, &err, err.count)
        guard codedCount > 0 else { throw V4L2EncoderError.call("\(where_): \(message()) (coded queue)") }
        for i in 0..<UInt32(codedCount) {
            var offset: UInt32 = 0, length: UInt32 = 0
            guard om_query_buffer(fd.rawValue, mp, Int32(OM_CAPTURE), i, &offset, &length, &err, err.count) == 0 else {
                throw V4L2EncoderError.call("\(where_): \(message())")
            }
            codedMappings.append(try MemoryMapping(fd: fd.rawValue, offset: Int(offset), length: Int(length)))
            guard om_queue_buffer(fd.rawValue, mp, Int32(OM_CAPTURE), Int32(OM_MMAP), i, nil, nil, nil, nil, 1, 0, &err, err.count) == 0 else {
                throw V4L2EncoderError.call("\(where_): \(message())")
            }
        }
        guard om_stream(fd.rawValue, mp, Int32(OM_OUTPUT), 1, &err, err.count) == 0,
              om_stream(fd.rawValue, mp, Int32(OM_CAPTURE), 1, &err, err.count) == 0 else {
            throw V4L2EncoderError.call("\(where_): \(message())")
        }

        codecParameters = try Self.codecParameters(settings)
        name = "\(node.driver) \(settings.codec) (V4L2 memory-to-memory, \(node.path))"
        self.notes = notes
    }

    /// The driver's frame rate (VIDIOC_S_PARM), where it has the call: a
    /// note when it has none, an error when it takes another rate.
    private static func setFrameRate(_ fd: Int32, mp: Int32, _ frameRate: Double, on where_: String) throws -> [String] {
        var err = [CChar](repeating: 0, count: 256)
        var num: UInt32 = 0, den: UInt32 = 0
        let rate = av_d2q(frameRate, 1000)
        let r = om_set_frame_rate(fd, mp, UInt32(rate.den), UInt32(rate.num), &num, &den, &err, err.count)
        if r == -ENOTTY { return ["no frame-rate setting (VIDIOC_S_PARM)"] }
        if r < 0 { throw V4L2EncoderError.call("\(where_): " + err.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }) }
        if num > 0, abs(Double(den) / Double(num) - frameRate) > frameRate * 0.01 {
            throw V4L2EncoderError.frameRateRejected(asked: frameRate, got: Double(den) / Double(num), node: where_)
        }
        return []
    }

    /// Keyframe interval, bit rate, headers and profile: applied where
    /// offered; a note for each the driver does not offer.
    private static func setControls(_ fd: Int32, _ settings: VideoEncoderSettings) -> [String] {
        var err = [CChar](repeating: 0, count: 256)
        var controls: [(UInt32, Int32, String)] = [(UInt32(OM_CID_GOP_SIZE), Int32(settings.maxKeyFrameInterval), "keyframe interval")]
        if let bitRate = settings.averageBitRate { controls.append((UInt32(OM_CID_BITRATE), Int32(clamping: bitRate), "bit rate")) }
        if settings.codec == .h264 || settings.codec == .hevc {
            controls.append((UInt32(OM_CID_REPEAT_SEQ_HEADER), 1, "repeated sequence headers"))
        }
        if settings.codec == .h264 {
            controls.append((UInt32(OM_CID_H264_I_PERIOD), Int32(settings.maxKeyFrameInterval), "H.264 I period"))
            if let profile = settings.profile, let value = ["baseline": 0, "constrained_baseline": 1, "main": 2, "high": 4][profile] {
                controls.append((UInt32(OM_CID_H264_PROFILE), Int32(value), "profile \(profile)"))
            }
        }
        return controls.filter { om_set_control(fd, $0.0, $0.1, &err, err.count) != 0 }.map { "\($0.2) not offered" }
    }

    /// What the muxer is told of the stream.
    private static func codecParameters(_ settings: VideoEncoderSettings) throws -> CodecParameters {
        guard let parameters = avcodec_parameters_alloc() else {
            throw FFmpegError(call: "avcodec_parameters_alloc", code: obscura_averror(ENOMEM))
        }
        parameters.pointee.codec_type = AVMEDIA_TYPE_VIDEO
        parameters.pointee.codec_id = switch settings.codec {
        case .h264: AV_CODEC_ID_H264
        case .hevc: AV_CODEC_ID_HEVC
        case .mjpeg: AV_CODEC_ID_MJPEG
        case .prores422: AV_CODEC_ID_PRORES
        case .fwht: AV_CODEC_ID_NONE  // no container knows it: an elementary stream
        }
        parameters.pointee.width = Int32(settings.size.width)
        parameters.pointee.height = Int32(settings.size.height)
        return CodecParameters(parameters: parameters, timeBase: AVRational(num: 1, den: 1_000_000), frameRate: settings.frameRate)
    }

    private var errBuffer = [CChar](repeating: 0, count: 256)
    private func failure(_ context: String) -> V4L2EncoderError {
        .call("\(node.driver) (\(node.path)): " + errBuffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) } + context)
    }

    public func encode(_ frame: VideoFrame, ptsMicroseconds: Int64, keyframe: Bool) throws -> [EncodedPacket] {
        copies.recordFrame()
        if keyframe, canForceKeyframe, om_set_control(fd.rawValue, UInt32(OM_CID_FORCE_KEY_FRAME), 1, &errBuffer, errBuffer.count) != 0 {
            canForceKeyframe = false
            notes.append("cannot force keyframes: a new file waits for the next one")
        }
        var packets = try collect(wait: 0)
        let slot = try freeSlot(for: frame, packets: &packets)
        let planes = frame.planes
        let total = planes.reduce(0) { $0 + $1.length }
        if importsDmabufs {
            let d = frame.dmabufs
            // One dmabuf for all planes (offsets from the first), as cameras hand NV12 and RGB.
            var fds: [Int32] = [d[0].fd]
            var offsets: [UInt32] = [UInt32(d[0].offset)]
            var lengths: [UInt32] = [UInt32(max(d[0].offset + total, d[0].length))]
            var used: [UInt32] = [UInt32(total)]
            if rawFormat.planes > 1 && d.count >= Int(rawFormat.planes) {
                fds = d.prefix(Int(rawFormat.planes)).map(\.fd)
                offsets = d.prefix(Int(rawFormat.planes)).map { UInt32($0.offset) }
                lengths = d.prefix(Int(rawFormat.planes)).map { UInt32($0.offset + $0.length) }
                used = planes.prefix(Int(rawFormat.planes)).map { UInt32($0.length) }
            }
            guard om_queue_buffer(fd.rawValue, mp, Int32(OM_OUTPUT), Int32(OM_DMABUF), UInt32(slot), fds, offsets, lengths, used,
                                  UInt32(fds.count), ptsMicroseconds, &errBuffer, errBuffer.count) == 0 else {
                throw failure(" (importing the camera's dmabuf)")
            }
        } else {
            let mapping = rawMappings[slot]
            let lineLength = Int(rawFormat.bytes_per_line)
            var offset = 0
            frame.withCPUAccess { planes in
                guard let info = frame.format.info else { return }
                for (p, plane) in planes.enumerated() {
                    let rows = info.rows(plane: p, height: frame.size.height)
                    let width = info.stride(plane: p, width: frame.size.width)
                    let destinationStride = lineLength * width / max(1, info.stride(plane: 0, width: frame.size.width))
                    for y in 0..<rows where offset + y * destinationStride + width <= mapping.length {
                        memcpy(mapping.base + offset + y * destinationStride, plane.base + y * plane.stride, width)
                    }
                    offset += destinationStride * rows
                }
            }
            copies.recordCopy(bytes: total)
            var used: [UInt32] = [UInt32(min(offset, mapping.length))]
            guard om_queue_buffer(fd.rawValue, mp, Int32(OM_OUTPUT), Int32(OM_MMAP), UInt32(slot), nil, nil, nil, &used, 1,
                                  ptsMicroseconds, &errBuffer, errBuffer.count) == 0 else {
                throw failure("")
            }
        }
        queued.insert(slot)
        if importsDmabufs { slots[slot] = frame }  // held until the driver is done reading it
        packets += try collect(wait: 0)
        return packets
    }

    /// A raw-queue slot for the frame: its camera buffer's own when it has
    /// one (drivers keep a dmabuf's import per slot), else a free one — one
    /// no buffer owns, or the least recently used; waits for the driver to
    /// hand one back when all are queued.
    private func freeSlot(for frame: VideoFrame, packets: inout [EncodedPacket]) throws -> Int {
        let inode: UInt64? = importsDmabufs
            ? (try? Syscalls.status(frame.dmabufs[0].fd, path: "dmabuf")).map { UInt64($0.st_ino) } ?? UInt64(frame.dmabufs[0].fd)
            : nil
        for attempt in 0..<200 {
            useCounter += 1
            if let inode, let own = slotOwner.firstIndex(of: inode) {
                if !queued.contains(own) {
                    slotUse[own] = useCounter
                    return own
                }
            } else {
                let free = slotOwner.indices.filter { !queued.contains($0) }
                if let pick = free.first(where: { slotOwner[$0] == nil }) ?? free.min(by: { slotUse[$0] < slotUse[$1] }) {
                    slotOwner[pick] = inode
                    slotUse[pick] = useCounter
                    return pick
                }
            }
            // Everything is with the driver: wait for it to finish one.
            if attempt > 0 { _ = om_poll(fd.rawValue, 10) }
            packets += try collect(wait: 0)
        }
        throw V4L2EncoderError.call("\(node.driver) (\(node.path)): the driver returned no raw buffer within 2 s (VIDIOC_DQBUF)")
    }

    /// Raw slots with the driver (queued, not yet handed back).
    private var queued: Set<Int> = []

    /// Takes back raw buffers the driver finished and coded buffers it
    /// filled; `wait` milliseconds for the first coded one.
    private func collect(wait: Int32) throws -> [EncodedPacket] {
        var packets: [EncodedPacket] = []
        var done = om_dequeued()
        let rawMemory = importsDmabufs ? Int32(OM_DMABUF) : Int32(OM_MMAP)
        while om_dequeue_buffer(fd.rawValue, mp, Int32(OM_OUTPUT), rawMemory, &done, &errBuffer, errBuffer.count) == 0 {
            if Int(done.index) < slots.count { slots[Int(done.index)] = nil }
            queued.remove(Int(done.index))
        }
        if wait > 0 { _ = om_poll(fd.rawValue, wait) }
        while true {
            let r = om_dequeue_buffer(fd.rawValue, mp, Int32(OM_CAPTURE), Int32(OM_MMAP), &done, &errBuffer, errBuffer.count)
            if r == -EAGAIN || r == -EPIPE { break }
            if r < 0 { throw failure(" (coded queue)") }
            let index = Int(done.index)
            if done.bytes_used > 0 && done.flags & UInt32(OM_FLAG_ERROR) == 0 {
                let mapping = codedMappings[index]
                // Drivers that say nothing of frame types (vicodec's encoder): the bitstream says.
                let typed = done.flags & 0x38 != 0  // KEYFRAME | PFRAME | BFRAME
                let keyframe = typed ? done.flags & UInt32(OM_FLAG_KEYFRAME) != 0
                    : Bitstream.isKeyframe(codec, UnsafeBufferPointer(start: (mapping.base + Int(done.data_offset)).assumingMemoryBound(to: UInt8.self),
                                                                     count: min(Int(done.bytes_used), mapping.length - Int(done.data_offset))))
                packets.append(try packet(from: mapping, offset: Int(done.data_offset), length: Int(done.bytes_used),
                                          pts: done.timestamp_us, keyframe: keyframe))
            }
            if done.flags & UInt32(OM_FLAG_LAST) != 0 {
                lastSeen = true
                break
            }
            guard om_queue_buffer(fd.rawValue, mp, Int32(OM_CAPTURE), Int32(OM_MMAP), UInt32(index), nil, nil, nil, nil, 1, 0,
                                  &errBuffer, errBuffer.count) == 0 else { throw failure(" (requeueing a coded buffer)") }
        }
        return packets
    }
    private var lastSeen = false

    private func packet(from mapping: MemoryMapping, offset: Int, length: Int, pts: Int64, keyframe: Bool) throws -> EncodedPacket {
        guard let packet = av_packet_alloc() else { throw FFmpegError(call: "av_packet_alloc", code: obscura_averror(ENOMEM)) }
        let count = min(length, mapping.length - offset)
        guard av_new_packet(packet, Int32(count)) == 0 else {
            var p: UnsafeMutablePointer<AVPacket>? = packet
            av_packet_free(&p)
            throw FFmpegError(call: "av_new_packet", code: obscura_averror(ENOMEM))
        }
        memcpy(packet.pointee.data, mapping.base + offset, count)  // the bitstream, not pixels
        packet.pointee.pts = pts
        packet.pointee.dts = pts
        if keyframe {
            packet.pointee.flags |= 1
            if !sawKeyframe { adoptHeaders(from: packet) }
            sawKeyframe = true
        }
        return EncodedPacket(taking: packet, timeBase: AVRational(num: 1, den: 1_000_000))
    }

    /// H.264/HEVC in MP4 want the parameter sets out of band: the first
    /// keyframe's (repeated in-band too) become the stream's extradata.
    private func adoptHeaders(from packet: UnsafeMutablePointer<AVPacket>) {
        guard codec == .h264 || codec == .hevc, codecParameters.parameters.pointee.extradata == nil else { return }
        let bytes = UnsafeBufferPointer(start: packet.pointee.data, count: Int(packet.pointee.size))
        let headers = AnnexB.parameterSets(bytes, hevc: codec == .hevc)
        guard !headers.isEmpty, let extra = av_mallocz(headers.count + 64)?.assumingMemoryBound(to: UInt8.self) else { return }
        headers.withUnsafeBufferPointer { extra.update(from: $0.baseAddress!, count: headers.count) }
        codecParameters.parameters.pointee.extradata = extra
        codecParameters.parameters.pointee.extradata_size = Int32(headers.count)
    }

    public func finish() throws -> [EncodedPacket] {
        guard !draining else { return [] }
        draining = true
        var packets: [EncodedPacket] = []
        if om_encoder_command(fd.rawValue, 1, &errBuffer, errBuffer.count) != 0 {
            notes.append("no VIDIOC_ENCODER_CMD: drained by waiting")
            for _ in 0..<50 where !queued.isEmpty { packets += try collect(wait: 20) }
            packets += try collect(wait: 50)
        } else {
            // Until the buffer flagged LAST (or 5 s).
            for _ in 0..<250 where !lastSeen { packets += try collect(wait: 20) }
            if !lastSeen { notes.append("the drain did not end with a LAST buffer") }
        }
        _ = om_stream(fd.rawValue, mp, Int32(OM_OUTPUT), 0, &errBuffer, errBuffer.count)
        _ = om_stream(fd.rawValue, mp, Int32(OM_CAPTURE), 0, &errBuffer, errBuffer.count)
        for i in slots.indices { slots[i] = nil }
        queued.removeAll()
        return packets
    }

    deinit {
        if !draining {
            _ = om_stream(fd.rawValue, mp, Int32(OM_OUTPUT), 0, &errBuffer, errBuffer.count)
            _ = om_stream(fd.rawValue, mp, Int32(OM_CAPTURE), 0, &errBuffer, errBuffer.count)
        }
    }
}

/// Frame types read from coded data, for drivers that do not flag them.
enum Bitstream {
    static func isKeyframe(_ codec: VideoCodec, _ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        switch codec {
        case .fwht:
            // struct fwht_cframe_hdr: magic1, magic2, version, width, height, flags (big endian); I frame = bit 10.
            guard bytes.count >= 24 else { return false }
            let flags = UInt32(bytes[20]) << 24 | UInt32(bytes[21]) << 16 | UInt32(bytes[22]) << 8 | UInt32(bytes[23])
            return flags & (1 << 10) != 0
        case .h264:
            return AnnexB.units(bytes).contains { !$0.isEmpty && bytes[$0.lowerBound] & 0x1f == 5 }
        case .hevc:
            return AnnexB.units(bytes).contains { !$0.isEmpty && (16...23).contains(Int(bytes[$0.lowerBound] >> 1) & 0x3f) }
        case .mjpeg, .prores422:
            return true
        }
    }
}

/// Annex B byte streams (H.264/HEVC as hardware encoders emit them).
enum AnnexB {
    /// NAL units between start codes.
    static func units(_ bytes: UnsafeBufferPointer<UInt8>) -> [Range<Int>] {
        var starts: [(Int, Int)] = []  // (start code position, payload start)
        var i = 0
        while i + 3 <= bytes.count {
            if bytes[i] == 0, bytes[i + 1] == 0, bytes[i + 2] == 1 {
                starts.append((i > 0 && bytes[i - 1] == 0 ? i - 1 : i, i + 3))
                i += 3
            } else {
                i += 1
            }
        }
        return starts.indices.map { k in starts[k].1..<(k + 1 < starts.count ? starts[k + 1].0 : bytes.count) }
    }

    /// The parameter-set NAL units (SPS, PPS; VPS for HEVC), each after a start code.
    static func parameterSets(_ bytes: UnsafeBufferPointer<UInt8>, hevc: Bool) -> [UInt8] {
        var out: [UInt8] = []
        for unit in units(bytes) where !unit.isEmpty {
            let header = bytes[unit.lowerBound]
            let type = hevc ? Int(header >> 1) & 0x3f : Int(header) & 0x1f
            let wanted = hevc ? (32...34).contains(type) : (type == 7 || type == 8)
            if wanted { out += [0, 0, 0, 1] + Array(bytes[unit]) }
        }
        return out
    }
}
