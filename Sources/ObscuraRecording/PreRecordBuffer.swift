import ObscuraFFmpeg
import ObscuraEncoding

/// The last few seconds of encoded video, kept in memory so that a recording
/// can begin before the moment it was asked for.
///
/// Packets are kept in decode order, always starting at a keyframe, so the
/// buffer can be written into a file as it is. Old groups of pictures go when
/// the buffer holds more than `duration` before its newest packet or more than
/// `byteLimit` bytes; a group is dropped whole, never cut.
final class PreRecordBuffer {
    struct Entry {
        let packet: EncodedPacket
        /// Camera time of the packet's frame, nanoseconds.
        let timestamp: UInt64
    }

    let duration: Duration
    let byteLimit: Int
    private(set) var entries: [Entry] = []
    private(set) var bytes = 0
    /// Groups of pictures dropped for the byte limit (the time limit is the normal case).
    private(set) var droppedForBytes = 0

    init(duration: Duration, byteLimit: Int) {
        self.duration = duration
        self.byteLimit = byteLimit
    }

    var durationNanoseconds: UInt64 {
        UInt64(duration.components.seconds) * 1_000_000_000 + UInt64(duration.components.attoseconds / 1_000_000_000)
    }

    /// Adds a packet. A buffer never starts mid-group: until a keyframe comes,
    /// packets are not kept.
    func append(_ packet: EncodedPacket, timestamp: UInt64) {
        if entries.isEmpty && !packet.isKeyframe { return }
        entries.append(Entry(packet: packet, timestamp: timestamp))
        bytes += packet.size
        trim(now: timestamp)
        while bytes > byteLimit {
            droppedForBytes += 1
            dropFirstGroup()
        }
    }

    /// Drops groups that start too early: afterwards the buffer starts at the
    /// last keyframe at or before `now − duration` (or at its first keyframe
    /// when none is that old).
    func trim(now: UInt64) {
        let horizon = now >= durationNanoseconds ? now - durationNanoseconds : 0
        while let next = secondKeyframe(), entries[next].timestamp <= horizon {
            remove(upTo: next)
        }
    }

    /// Takes every packet, starting at the last keyframe at or before
    /// `now − duration`; the buffer is left empty.
    func take(now: UInt64) -> [Entry] {
        trim(now: now)
        defer {
            entries = []
            bytes = 0
        }
        return entries
    }

    /// Frames held (one packet per frame).
    var count: Int { entries.count }
    var oldestTimestamp: UInt64? { entries.first?.timestamp }

    private func secondKeyframe() -> Int? {
        entries.indices.dropFirst().first { entries[$0].packet.isKeyframe }
    }

    private func dropFirstGroup() {
        remove(upTo: secondKeyframe() ?? entries.count)
    }

    private func remove(upTo end: Int) {
        for entry in entries[..<end] { bytes -= entry.packet.size }
        entries.removeFirst(end)
    }
}
