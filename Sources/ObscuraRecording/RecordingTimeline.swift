import ObscuraMedia

/// The timeline stage of a recording: where each camera frame goes in the
/// encoder's time (µs), shared by the movie file output, its pre-record
/// buffer and the asset writer.
///
/// Encoder time is the frame's sensor time minus the epoch (the first frame
/// placed, or a session start given) minus every pause. A pause is removed
/// whole: the first frame after it follows the last one before it by one
/// usual frame interval, so the file has no gap. A frame at or before the
/// last one placed is refused (time never runs backwards in a file). Frames
/// the camera skipped (gaps in its sequence numbers, outside pauses) are
/// counted.
struct RecordingTimeline: Sendable {
    /// Sensor time of encoder time zero; nil until the first frame.
    private(set) var epoch: UInt64?
    /// Pauses removed, in nanoseconds.
    private(set) var pausedTotal: UInt64 = 0
    private(set) var lastPTS: Int64 = -1
    /// Sensor time of the last frame placed.
    private(set) var lastTimestamp: UInt64?
    private(set) var lastSequence: UInt32?
    /// The usual distance between frames, from the last two placed.
    private(set) var lastInterval: UInt64 = 33_333_333
    private(set) var isPaused = false
    /// Frames missing from what was placed: those the camera never
    /// delivered, and those an output's queue dropped (`place` is told which
    /// of a gap's numbers were dropped). Each missing frame is counted once.
    private(set) var skippedFrames = 0
    private(set) var droppedFrames = 0
    /// Frames left out on purpose, evenly, to keep to a lower rate (the
    /// queue's `maxFrameRate`): no hole, neither skipped nor dropped.
    private(set) var thinnedFrames = 0

    init(epoch: UInt64? = nil) { self.epoch = epoch }

    /// A frame arrived while paused: it is left out, and the pause will be
    /// cut from the timeline when frames are taken again.
    mutating func framePaused() { isPaused = true }

    /// The encoder time a frame would have (nil: before the epoch). Ends a
    /// pause, and sets the epoch on the first frame. Call `place` to take it.
    mutating func pts(for frame: VideoFrame) -> Int64? {
        let t = frame.timestampNanoseconds
        if isPaused, let last = lastTimestamp, t > last {
            let gap = t - last
            if gap > lastInterval { pausedTotal += gap - lastInterval }
            isPaused = false
            lastSequence = nil  // frames left out while paused are not camera skips
        }
        let start = epoch ?? t
        epoch = start
        guard t >= start &+ pausedTotal else { return nil }
        return Int64(t &- start &- pausedTotal) / 1000
    }

    /// Takes the frame at `pts` (from `pts(for:)`); false if it would not
    /// come after the last frame placed.
    /// `dropped(after, before)`: how many of the frames numbered strictly
    /// between the two the output's queue dropped; `thinned`: how many it
    /// left out to keep to a lower rate.
    mutating func place(_ frame: VideoFrame, at pts: Int64,
                        dropped: (UInt32, UInt32) -> Int = { _, _ in 0 },
                        thinned: (UInt32, UInt32) -> Int = { _, _ in 0 }) -> Bool {
        guard pts > lastPTS else { return false }
        let t = frame.timestampNanoseconds
        let resumed = lastSequence == nil && lastTimestamp != nil
        if let last = lastSequence, frame.sequence > last &+ 1 {
            let gap = Int(frame.sequence &- last &- 1)
            let left = min(gap, max(0, thinned(last, frame.sequence)))
            let ours = min(gap - left, max(0, dropped(last, frame.sequence)))
            thinnedFrames += left
            droppedFrames += ours
            skippedFrames += gap - left - ours
        }
        lastSequence = frame.sequence
        lastPTS = pts
        if let last = lastTimestamp, !resumed, t > last { lastInterval = t - last }
        lastTimestamp = t
        return true
    }

    /// Where a file whose first packet has decode time `dts` (µs of
    /// encoder time) has its time zero on the camera's clock.
    func timeZero(dts: Int64) -> UInt64? {
        epoch.map { $0 &+ pausedTotal &+ UInt64(max(0, dts)) * 1000 }
    }

    /// Sound captured at sensor-clock time `timestamp`, in encoder time
    /// (ns); nil before the first frame or while paused.
    func audioTime(_ timestamp: UInt64) -> Int64? {
        guard let epoch, !isPaused else { return nil }
        return Int64(bitPattern: timestamp &- epoch &- pausedTotal)
    }

    /// Sensor time of encoder time `pts` (µs), for packets of this timeline.
    func sensorTime(pts: Int64) -> UInt64? {
        epoch.map { $0 &+ pausedTotal &+ UInt64(max(0, pts)) &* 1000 }
    }
}
