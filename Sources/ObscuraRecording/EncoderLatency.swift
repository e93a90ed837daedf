import ObscuraSystem

/// How long frames spend inside the video encoder: the time from a frame
/// going in to its packet coming out. Packets leave in decode order, one per
/// frame, so the n-th packet out is paired with the n-th frame in (B-frame
/// reordering moves which frame a packet holds, not how many are inside).
///
/// Also says how long the oldest frame still inside has waited: an encoder
/// that takes frames and gives back no packet shows it growing.
struct EncoderLatency: Sendable {
    /// When each frame still inside went in, oldest first, with its sensor
    /// timestamp (CLOCK_MONOTONIC, ns; 0: none).
    private var entered: [(at: ContinuousClock.Instant, sensor: UInt64)] = []
    /// The longest time from a frame's sensor timestamp to its going into
    /// the encoder (capture, the queue and the conversion before it), and to
    /// its packet coming out, over the last report window (zero: no frame).
    private(set) var cameraToEncoderMax: Duration = .zero
    private(set) var cameraToPacketMax: Duration = .zero
    private var windowCameraToEncoder: Duration = .zero
    private var windowCameraToPacket: Duration = .zero
    private var head = 0
    /// The latency of the packets of the last report window.
    private var sum: Duration = .zero
    private var count = 0
    /// Mean latency over the last window that had packets.
    private(set) var mean: Duration = .zero
    private(set) var maximum: Duration = .zero

    var framesInside: Int { entered.count - head }
    /// Frames that went in since the last packet came out.
    private(set) var framesSincePacket = 0

    /// How long the oldest frame still inside has waited (zero when empty).
    func oldestWait(now: ContinuousClock.Instant = .now) -> Duration {
        head < entered.count ? now - entered[head].at : .zero
    }

    mutating func frameIn(at now: ContinuousClock.Instant = .now, sensorNanoseconds: UInt64 = 0,
                          monotonicNow: UInt64 = Syscalls.monotonicNanoseconds()) {
        entered.append((now, sensorNanoseconds))
        framesSincePacket += 1
        if sensorNanoseconds > 0, monotonicNow > sensorNanoseconds {
            windowCameraToEncoder = max(windowCameraToEncoder, .nanoseconds(Int64(monotonicNow - sensorNanoseconds)))
        }
    }

    mutating func packetsOut(_ n: Int, at now: ContinuousClock.Instant = .now,
                             monotonicNow: UInt64 = Syscalls.monotonicNanoseconds()) {
        if n > 0 { framesSincePacket = 0 }
        for _ in 0..<min(n, framesInside) {
            let latency = now - entered[head].at
            let sensor = entered[head].sensor
            if sensor > 0, monotonicNow > sensor {
                windowCameraToPacket = max(windowCameraToPacket, .nanoseconds(Int64(monotonicNow - sensor)))
            }
            head += 1
            sum += latency
            count += 1
            maximum = max(maximum, latency)
        }
        // Drop what was consumed once it is half the array.
        if head > 64 && head * 2 > entered.count {
            entered.removeFirst(head)
            head = 0
        }
    }

    /// Ends a report window: `mean` becomes this window's (kept from the last
    /// one when no packet came out).
    mutating func closeWindow() {
        if count > 0 { mean = sum / count }
        sum = .zero
        count = 0
        cameraToEncoderMax = windowCameraToEncoder
        cameraToPacketMax = windowCameraToPacket
        windowCameraToEncoder = .zero
        windowCameraToPacket = .zero
    }
}
