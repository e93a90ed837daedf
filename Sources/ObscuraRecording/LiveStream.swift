import Foundation
import ObscuraSystem

/// The live view's wire format, from the kiosk's live socket through
/// `obscura view-serve` and SSH to `obscura view`:
///
/// 1. the viewer sends one line, `view NAME`;
/// 2. the kiosk answers one line of JSON (`Header`): `ok` and the stream's
///    codec, or `ok: false` and a message saying why not;
/// 3. then packets, each a 21-byte frame header — its length (u32), its
///    camera time in nanoseconds (u64), when the kiosk published it
///    (CLOCK_MONOTONIC nanoseconds, u64), flags (u8, bit 0: a key frame),
///    all big-endian — and its bytes (H.264/H.265 in Annex B).
public enum LiveStream {
    public struct Header: Codable, Sendable, Equatable {
        public var ok: Bool
        public var stream = "obscura-live"
        public var version = LiveStream.version
        public var codec: String?
        public var message: String?

        public init(ok: Bool, codec: String? = nil, message: String? = nil) {
            self.ok = ok
            self.codec = codec
            self.message = message
        }

        /// The header as the line that is sent.
        public var line: [UInt8] {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            return Array((try? encoder.encode(self)) ?? Data(#"{"ok":false}"#.utf8)) + [10]
        }
    }

    /// The largest packet a reader takes (a 4K key frame at a high bit rate is
    /// a few MiB): a longer length means the stream is not this one.
    public static let maxPacketBytes = 32 << 20
    /// The format's version, in the header: a reader refuses another.
    public static let version = 2
    static let frameHeaderBytes = 21

    public static func frameHeader(_ packet: LivePacket) -> [UInt8] {
        let length = UInt32(packet.data.count)
        var header = [UInt8](repeating: 0, count: frameHeaderBytes)
        for i in 0..<4 { header[i] = UInt8(truncatingIfNeeded: length >> UInt32(24 - 8 * i)) }
        for i in 0..<8 {
            header[4 + i] = UInt8(truncatingIfNeeded: packet.timestamp >> UInt64(56 - 8 * i))
            header[12 + i] = UInt8(truncatingIfNeeded: packet.published >> UInt64(56 - 8 * i))
        }
        header[20] = packet.isKeyframe ? 1 : 0
        return header
    }

    public enum ReadError: Error, CustomStringConvertible, Sendable {
        case notAStream(String)
        case refused(String)
        case tooLarge(Int)
        case ended

        public var description: String {
            switch self {
            case .notAStream(let what): "the other end is not an Obscura live view (it said: \(what))"
            case .refused(let why): "the kiosk refused the view: \(why)"
            case .tooLarge(let n): "a packet of \(n) bytes is more than a live view sends (\(maxPacketBytes)): the stream is broken"
            case .ended: "the live view ended"
            }
        }
    }

    /// Reads a live view from a descriptor (a socket or SSH's output).
    /// One owner; blocking.
    public final class Reader {
        let fd: Int32
        private var buffer: [UInt8] = []
        private var start = 0

        public init(fd: Int32) { self.fd = fd }

        /// The kiosk's answer; throws `refused` when it said no.
        public func header() throws -> Header {
            var line: [UInt8] = []
            while true {
                let byte = try bytes(1)[0]
                if byte == 10 { break }
                line.append(byte)
                if line.count > 4096 { throw ReadError.notAStream(String(decoding: line.prefix(80), as: UTF8.self)) }
            }
            guard let header = try? JSONDecoder().decode(Header.self, from: Data(line)), header.stream == "obscura-live" else {
                throw ReadError.notAStream(String(decoding: line.prefix(200), as: UTF8.self))
            }
            guard header.ok else { throw ReadError.refused(header.message ?? "no reason given") }
            guard header.version == LiveStream.version else {
                throw ReadError.notAStream("version \(header.version) of the live view; this obscura reads version \(LiveStream.version): install the same release on both ends")
            }
            return header
        }

        /// The next packet, or nil at the end of the stream.
        public func next() throws -> LivePacket? {
            let head: [UInt8]
            do { head = try bytes(frameHeaderBytes) } catch ReadError.ended { return nil }
            let length = head[0..<4].reduce(0) { $0 << 8 | Int($1) }
            let time = head[4..<12].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            let published = head[12..<20].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            guard length <= maxPacketBytes else { throw ReadError.tooLarge(length) }
            return LivePacket(data: try bytes(length), timestamp: time, isKeyframe: head[20] & 1 != 0, published: published)
        }

        /// Exactly `count` bytes; `ended` when the stream ends first.
        private func bytes(_ count: Int) throws -> [UInt8] {
            while buffer.count - start < count {
                if start > 0 {
                    buffer.removeFirst(start)
                    start = 0
                }
                var chunk = [UInt8](repeating: 0, count: max(65_536, count))
                let n = try chunk.withUnsafeMutableBytes { b throws(SystemError) in try Syscalls.read(fd, into: b, path: "the live view") }
                guard n > 0 else { throw ReadError.ended }
                buffer += chunk[0..<n]
            }
            defer { start += count }
            return Array(buffer[start..<(start + count)])
        }
    }
}
