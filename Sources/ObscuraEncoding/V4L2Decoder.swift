import CV4L2
import Foundation
import ObscuraMedia
import ObscuraSystem

/// A V4L2 stateful memory-to-memory decoder (vicodec's FWHT decoder on the
/// virtual board): an elementary stream in, raw frames out. The stream is
/// fed in chunks — a stateful decoder finds the frame boundaries itself —
/// and the raw format is set up front, so a stream of that size and layout
/// decodes without a source-change round trip.
public final class V4L2MemoryToMemoryDecoder {
    public let node: V4L2CodecNode
    public let format: PixelFormat
    public let size: PixelSize
    private let fd: OwnedFileDescriptor
    private let mp: Int32
    private var lineLength: Int
    private var input: [MemoryMapping] = []
    private var output: [MemoryMapping] = []
    private var inputQueued: Set<Int> = []
    private var err = [CChar](repeating: 0, count: 256)
    private var last = false

    public init(codec: VideoCodec, format: PixelFormat, size: PixelSize) throws {
        let coded = V4L2CodecNode.codedFourCC(codec)
        let raw = FourCC.code(format.info?.v4l2FourCC ?? format.fourccString)
        let nodes = V4L2CodecNode.all()
        guard let node = nodes.first(where: { $0.inputs.contains(coded) && $0.outputs.contains(raw) }) else {
            throw V4L2EncoderError.call("no V4L2 decoder turns \(codec) into \(format) (found: \(nodes.map(\.description).joined(separator: ", ")))")
        }
        self.node = node
        self.format = format
        self.size = size
        var caps = om_caps()
        let opened = om_open(node.path, &caps, &err, err.count)
        guard opened >= 0 else { throw V4L2EncoderError.call(Self.text(err)) }
        fd = OwnedFileDescriptor(adopting: opened)
        mp = caps.multiplanar
        var got = om_format()
        guard om_set_format(fd.rawValue, mp, Int32(OM_OUTPUT), coded, UInt32(size.width), UInt32(size.height), 0, 1 << 20, &got, &err, err.count) == 0,
              om_set_format(fd.rawValue, mp, Int32(OM_CAPTURE), raw, UInt32(size.width), UInt32(size.height), 0, 0, &got, &err, err.count) == 0 else {
            throw V4L2EncoderError.call("\(node): " + Self.text(err))
        }
        lineLength = Int(got.bytes_per_line)
        // The stream side first; the frame side starts once the first data
        // is queued (the decoder reads the stream's header then).
        try setUp(Int32(OM_OUTPUT))
    }

    private var captureStarted = false

    private func setUp(_ direction: Int32) throws {
        if direction == Int32(OM_CAPTURE) {
            // The decoder has read the stream's header and may have picked a
            // frame format of its own (any that fits): ask for ours again.
            var got = om_format()
            let raw = FourCC.code(format.info?.v4l2FourCC ?? format.fourccString)
            guard om_set_format(fd.rawValue, mp, direction, raw, UInt32(size.width), UInt32(size.height), 0, 0, &got, &err, err.count) == 0 else {
                throw V4L2EncoderError.call("\(node): " + Self.text(err))
            }
            guard got.fourcc == raw, got.width == UInt32(size.width), got.height == UInt32(size.height) else {
                throw V4L2EncoderError.call("\(node) decodes this stream to \(FourCC.string(got.fourcc)) \(got.width)x\(got.height), not \(format) \(size)")
            }
            lineLength = Int(got.bytes_per_line)
        }
        let count = om_request_buffers(fd.rawValue, mp, direction, Int32(OM_MMAP), 4, &err, err.count)
        guard count > 0 else { throw V4L2EncoderError.call("\(node): " + Self.text(err)) }
        for i in 0..<UInt32(count) {
            var offset: UInt32 = 0, length: UInt32 = 0
            guard om_query_buffer(fd.rawValue, mp, direction, i, &offset, &length, &err, err.count) == 0 else {
                throw V4L2EncoderError.call("\(node): " + Self.text(err))
            }
            let mapping = try MemoryMapping(fd: fd.rawValue, offset: Int(offset), length: Int(length), writable: direction == Int32(OM_OUTPUT))
            if direction == Int32(OM_OUTPUT) {
                input.append(mapping)
            } else {
                output.append(mapping)
                guard om_queue_buffer(fd.rawValue, mp, direction, Int32(OM_MMAP), i, nil, nil, nil, nil, 1, 0, &err, err.count) == 0 else {
                    throw V4L2EncoderError.call("\(node): " + Self.text(err))
                }
            }
        }
        guard om_stream(fd.rawValue, mp, direction, 1, &err, err.count) == 0 else {
            throw V4L2EncoderError.call("\(node): " + Self.text(err))
        }
    }

    static func text(_ err: [CChar]) -> String { err.withUnsafeBufferPointer { String(cString: $0.baseAddress!) } }

    /// Feeds a chunk of the stream; returns the frames decoded so far (tightly packed rows).
    public func decode(_ chunk: Data) throws -> [Data] {
        var frames: [Data] = []
        var offset = 0
        while offset < chunk.count {
            frames += try collect()
            guard let slot = input.indices.first(where: { !inputQueued.contains($0) }) else {
                _ = om_poll(fd.rawValue, 20)
                continue
            }
            let count = min(input[slot].length, chunk.count - offset)
            _ = chunk.withUnsafeBytes { memcpy(input[slot].base, $0.baseAddress! + offset, count) }
            var used: [UInt32] = [UInt32(count)]
            guard om_queue_buffer(fd.rawValue, mp, Int32(OM_OUTPUT), Int32(OM_MMAP), UInt32(slot), nil, nil, nil, &used, 1, 0, &err, err.count) == 0 else {
                throw V4L2EncoderError.call("\(node): " + Self.text(err))
            }
            inputQueued.insert(slot)
            offset += count
            if !captureStarted {
                captureStarted = true
                try setUp(Int32(OM_CAPTURE))
            }
        }
        return frames + (try collect())
    }

    /// Stops the decoder and returns the frames still inside.
    public func finish() throws -> [Data] {
        var frames: [Data] = []
        if om_decoder_command(fd.rawValue, 1, &err, err.count) != 0 {
            for _ in 0..<50 { frames += try collect(); _ = om_poll(fd.rawValue, 20) }
        } else {
            for _ in 0..<250 where !last { _ = om_poll(fd.rawValue, 20); frames += try collect() }
        }
        _ = om_stream(fd.rawValue, mp, Int32(OM_OUTPUT), 0, &err, err.count)
        _ = om_stream(fd.rawValue, mp, Int32(OM_CAPTURE), 0, &err, err.count)
        return frames
    }

    private func collect() throws -> [Data] {
        var done = om_dequeued()
        while om_dequeue_buffer(fd.rawValue, mp, Int32(OM_OUTPUT), Int32(OM_MMAP), &done, &err, err.count) == 0 {
            inputQueued.remove(Int(done.index))
        }
        var frames: [Data] = []
        guard let info = format.info, captureStarted else { return frames }
        let rowBytes = info.stride(plane: 0, width: size.width)
        while true {
            let r = om_dequeue_buffer(fd.rawValue, mp, Int32(OM_CAPTURE), Int32(OM_MMAP), &done, &err, err.count)
            if r == -EAGAIN || r == -EPIPE { break }
            if r < 0 { throw V4L2EncoderError.call("\(node): " + Self.text(err)) }
            let mapping = output[Int(done.index)]
            if done.bytes_used > 0 && done.flags & UInt32(OM_FLAG_ERROR) == 0 {
                var frame = Data(count: info.bytesPerFrame(width: size.width, height: size.height))
                frame.withUnsafeMutableBytes { out in
                    // Plane 0 rows (the formats checked here are single-plane).
                    for y in 0..<size.height where (y + 1) * lineLength <= mapping.length {
                        memcpy(out.baseAddress! + y * rowBytes, mapping.base + Int(done.data_offset) + y * lineLength, rowBytes)
                    }
                }
                frames.append(frame)
            }
            if done.flags & UInt32(OM_FLAG_LAST) != 0 {
                last = true
                break
            }
            guard om_queue_buffer(fd.rawValue, mp, Int32(OM_CAPTURE), Int32(OM_MMAP), done.index, nil, nil, nil, nil, 1, 0, &err, err.count) == 0 else {
                throw V4L2EncoderError.call("\(node): " + Self.text(err))
            }
        }
        return frames
    }
}
