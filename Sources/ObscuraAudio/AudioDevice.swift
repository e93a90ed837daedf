import CALSA
import Foundation
import ObscuraMedia
import ObscuraSystem

/// An ALSA capture device (a USB microphone, a HAT's codec, the loopback driver).
public struct AudioCaptureDevice: Sendable, Equatable, CustomStringConvertible {
    /// The name to open: "hw:CARD=<id>,DEV=<n>".
    public let id: String
    /// The card's name and the PCM's, e.g. "USB Audio Device: USB Audio".
    public let name: String
    public let card: Int
    public let device: Int
    public var description: String { "\(id) (\(name))" }

    /// Every card's capture PCMs, in card order.
    public static func devices() -> [AudioCaptureDevice] {
        var found: [AudioCaptureDevice] = []
        var card: Int32 = -1
        while snd_card_next(&card) == 0, card >= 0 {
            var ctl: OpaquePointer?
            guard snd_ctl_open(&ctl, "hw:\(card)", 0) == 0, let ctl else { continue }
            defer { snd_ctl_close(ctl) }
            var cardInfo: OpaquePointer?
            snd_ctl_card_info_malloc(&cardInfo)
            defer { snd_ctl_card_info_free(cardInfo) }
            guard snd_ctl_card_info(ctl, cardInfo) == 0 else { continue }
            let cardID = String(cString: snd_ctl_card_info_get_id(cardInfo))
            let cardName = String(cString: snd_ctl_card_info_get_name(cardInfo))
            var pcmInfo: OpaquePointer?
            snd_pcm_info_malloc(&pcmInfo)
            defer { snd_pcm_info_free(pcmInfo) }
            var dev: Int32 = -1
            while snd_ctl_pcm_next_device(ctl, &dev) == 0, dev >= 0 {
                snd_pcm_info_set_device(pcmInfo, UInt32(dev))
                snd_pcm_info_set_subdevice(pcmInfo, 0)
                snd_pcm_info_set_stream(pcmInfo, SND_PCM_STREAM_CAPTURE)
                guard snd_ctl_pcm_info(ctl, pcmInfo) == 0 else { continue }
                let pcmName = String(cString: snd_pcm_info_get_name(pcmInfo))
                found.append(AudioCaptureDevice(id: "hw:CARD=\(cardID),DEV=\(dev)", name: "\(cardName): \(pcmName)",
                                                card: Int(card), device: Int(dev)))
            }
        }
        return found
    }
}

/// Audio capture errors, each naming the ALSA call and the device.
public struct AudioError: Error, CustomStringConvertible, Sendable, Equatable {
    public let description: String
    public init(_ description: String) { self.description = description }
    static func alsa(_ call: String, _ device: String, _ code: Int32) -> AudioError {
        AudioError("\(call) \(device): \(String(cString: snd_strerror(code)))")
    }
}

/// Captures from an ALSA device on its own thread and hands each period,
/// stamped on CLOCK_MONOTONIC, to its receivers. The PCM's own timestamps
/// (snd_pcm_htimestamp, monotonic) date each period: the time the driver
/// last moved its pointer, less the frames still waiting and the frames
/// just read. The sample clock and the monotonic clock drift apart (every
/// sound card's crystal is a little off); the timestamps show by how much,
/// and the recorder corrects for it.
///
/// The reading thread holds the PCM and the shared state, not the input;
/// `stop()` (or deinit) wakes a blocked read (snd_pcm_drop) and joins it.
public final class AudioDeviceInput: Sendable {
    public let deviceName: String
    /// The format the device accepted (it may differ from the one asked for: the
    /// nearest rate, the channels it has).
    public let format: AudioFormat
    public let periodFrames: Int
    private let pcm: PCM
    private let shared = Shared()

    /// ALSA's PCM handle. `@unchecked Sendable`: the handle never changes; the
    /// one reading thread reads it, and start/stop (serialised by `Shared.control`)
    /// start, drop and prepare it while that thread is not running, or (drop)
    /// to wake it.
    struct PCM: @unchecked Sendable {
        let handle: OpaquePointer
    }

    private final class Shared: Sendable {
        let state = Mutex(State())
        /// Serialises start and stop, and holds the reading thread.
        let control = Mutex<JoinableThread?>(nil)
    }
    private struct State {
        var receivers: [any AudioReceiver] = []
        var running = false
        var overruns = 0
        var lastError: String?
        var buffers = 0
        /// Whether the reading thread runs in the real-time class (nil: not started).
        var realtime: Bool?
    }

    /// The reading thread's real-time priority (SCHED_RR): low among
    /// real-time threads, above every ordinary one.
    static let readerPriority: Int32 = 10

    /// Opens `device` ("default", "hw:CARD=…,DEV=…", "plughw:1,0"; "auto"
    /// takes the first capture device) for `format`; fails naming the ALSA
    /// call when the device is missing or takes no such format.
    public init(device: String = "auto", format: AudioFormat = AudioFormat(), periodFrames: Int = 960) throws(AudioError) {
        var name = device
        if device == "auto" {
            guard let first = AudioCaptureDevice.devices().first else {
                throw AudioError("no audio capture device (ALSA lists none)")
            }
            name = first.id
        }
        deviceName = name
        var handle: OpaquePointer?
        var rc = snd_pcm_open(&handle, name, SND_PCM_STREAM_CAPTURE, 0)
        guard rc == 0, let handle else { throw .alsa("snd_pcm_open", name, rc) }
        pcm = PCM(handle: handle)
        var hw: OpaquePointer?
        snd_pcm_hw_params_malloc(&hw)
        defer { snd_pcm_hw_params_free(hw) }
        var rate = UInt32(format.sampleRate)
        var channels = UInt32(format.channels)
        var period = snd_pcm_uframes_t(periodFrames)
        // About a second of ring buffer: a reader held off the CPU for a
        // while on a starved board (the encoder's threads busy) catches up
        // instead of overrunning. Periods still come one at a time, so
        // nothing waits longer for them.
        var buffer = snd_pcm_uframes_t(max(periodFrames * 8, format.sampleRate))
        var dir: Int32 = 0
        func fail(_ call: String, _ code: Int32) -> AudioError {
            snd_pcm_close(handle)
            return .alsa(call, name, code)
        }
        rc = snd_pcm_hw_params_any(handle, hw); guard rc >= 0 else { throw fail("snd_pcm_hw_params_any", rc) }
        rc = snd_pcm_hw_params_set_access(handle, hw, SND_PCM_ACCESS_RW_INTERLEAVED)
        guard rc == 0 else { throw fail("snd_pcm_hw_params_set_access (interleaved)", rc) }
        rc = snd_pcm_hw_params_set_format(handle, hw, SND_PCM_FORMAT_S16_LE)
        guard rc == 0 else { throw fail("snd_pcm_hw_params_set_format (S16_LE)", rc) }
        rc = snd_pcm_hw_params_set_channels_near(handle, hw, &channels)
        guard rc == 0 else { throw fail("snd_pcm_hw_params_set_channels_near (\(format.channels))", rc) }
        rc = snd_pcm_hw_params_set_rate_near(handle, hw, &rate, &dir)
        guard rc == 0 else { throw fail("snd_pcm_hw_params_set_rate_near (\(format.sampleRate) Hz)", rc) }
        rc = snd_pcm_hw_params_set_period_size_near(handle, hw, &period, &dir)
        guard rc == 0 else { throw fail("snd_pcm_hw_params_set_period_size_near", rc) }
        rc = snd_pcm_hw_params_set_buffer_size_near(handle, hw, &buffer)
        guard rc == 0 else { throw fail("snd_pcm_hw_params_set_buffer_size_near", rc) }
        rc = snd_pcm_hw_params(handle, hw); guard rc == 0 else { throw fail("snd_pcm_hw_params", rc) }
        var sw: OpaquePointer?
        snd_pcm_sw_params_malloc(&sw)
        defer { snd_pcm_sw_params_free(sw) }
        snd_pcm_sw_params_current(handle, sw)
        rc = snd_pcm_sw_params_set_tstamp_mode(handle, sw, SND_PCM_TSTAMP_ENABLE)
        guard rc == 0 else { throw fail("snd_pcm_sw_params_set_tstamp_mode", rc) }
        rc = snd_pcm_sw_params_set_tstamp_type(handle, sw, SND_PCM_TSTAMP_TYPE_MONOTONIC)
        guard rc == 0 else { throw fail("snd_pcm_sw_params_set_tstamp_type (monotonic)", rc) }
        rc = snd_pcm_sw_params(handle, sw); guard rc == 0 else { throw fail("snd_pcm_sw_params", rc) }
        self.format = AudioFormat(sampleRate: Int(rate), channels: Int(channels))
        self.periodFrames = Int(period)
    }

    deinit {
        stop()
        snd_pcm_close(pcm.handle)
    }

    public func addReceiver(_ receiver: any AudioReceiver) {
        shared.state.withLock { s in if !s.receivers.contains(where: { $0 === receiver }) { s.receivers.append(receiver) } }
    }

    public func removeReceiver(_ receiver: any AudioReceiver) {
        shared.state.withLock { $0.receivers.removeAll { $0 === receiver } }
    }

    /// Overruns (the reader fell behind and samples were lost) so far.
    public var overruns: Int { shared.state.withLock { $0.overruns } }
    public var lastError: String? { shared.state.withLock { $0.lastError } }
    public var isRunning: Bool { shared.state.withLock { $0.running } }
    /// Whether the reading thread got the real-time class (nil before it started).
    public var readsInRealtime: Bool? { shared.state.withLock { $0.realtime } }

    public func start() throws(AudioError) {
        let (pcm, shared, format, periodFrames, deviceName) = (pcm, shared, format, periodFrames, deviceName)
        try shared.control.withLock { (thread: inout JoinableThread?) throws(AudioError) in
            guard thread == nil else { return }
            let rc = snd_pcm_start(pcm.handle)
            if rc < 0, snd_pcm_state(pcm.handle) != SND_PCM_STATE_RUNNING {
                throw .alsa("snd_pcm_start", deviceName, rc)
            }
            shared.state.withLock { $0.running = true }
            do {
                thread = try JoinableThread(name: "obscura-audio") {
                    Self.read(pcm, shared.state, format: format, periodFrames: periodFrames, deviceName: deviceName)
                }
            } catch {
                shared.state.withLock { $0.running = false }
                snd_pcm_drop(pcm.handle)
                snd_pcm_prepare(pcm.handle)
                throw AudioError("cannot start the reading thread of \(deviceName): \(error)")
            }
        }
    }

    /// Stops capturing; returns once the reading thread has ended (joined).
    public func stop() {
        shared.control.withLock { thread in
            guard let reader = thread else { return }
            shared.state.withLock { $0.running = false }
            snd_pcm_drop(pcm.handle) // wakes a blocked read
            reader.join()
            thread = nil
            snd_pcm_prepare(pcm.handle)
        }
    }

    /// Whole samples at `rate` between where the last period before an
    /// overrun ended and where the first after it starts (ns): what the
    /// overrun lost. None when the clock says nothing was lost.
    static func samplesLost(between end: UInt64, and start: UInt64, rate: UInt64) -> Int64 {
        guard start > end else { return 0 }
        return Int64((start - end) * rate / 1_000_000_000)
    }

    /// Reads periods until stopped: the reading thread.
    private static func read(_ pcm: PCM, _ state: borrowing Mutex<State>, format: AudioFormat, periodFrames: Int,
                             deviceName: String) {
        // The ring holds a second: a reader kept from the CPU longer than
        // that (a starved board) loses sound. So it runs ahead of ordinary
        // threads when the process may (root, CAP_SYS_NICE, RLIMIT_RTPRIO);
        // otherwise as an ordinary thread.
        do {
            try Syscalls.makeCurrentThreadRealtime(priority: Self.readerPriority)
            state.withLock { $0.realtime = true }
        } catch {
            state.withLock { $0.realtime = false }
        }
        let pcm = pcm.handle
        let channels = format.channels
        let rate = UInt64(format.sampleRate)
        var samples = [Int16](repeating: 0, count: periodFrames * channels)
        var index: Int64 = 0
        var overran = false
        var previousEnd: UInt64?
        while state.withLock({ $0.running }) {
            let n = samples.withUnsafeMutableBytes { snd_pcm_readi(pcm, $0.baseAddress, snd_pcm_uframes_t(periodFrames)) }
            if n < 0 {
                guard state.withLock({ $0.running }) else { break }
                let code = Int32(n)
                if code == -EPIPE || code == -ESTRPIPE {
                    // Overrun: samples were lost. The next timestamps say how many.
                    state.withLock { $0.overruns += 1 }
                    overran = true
                    snd_pcm_recover(pcm, code, 1)
                    snd_pcm_start(pcm)
                    continue
                }
                if code == -EAGAIN || code == -EINTR { continue }
                state.withLock { s in
                    s.lastError = AudioError.alsa("snd_pcm_readi", deviceName, code).description
                    s.running = false
                }
                break
            }
            if n == 0 { continue }
            var avail: snd_pcm_uframes_t = 0
            var ts = timespec()
            var stamp: UInt64
            if snd_pcm_htimestamp(pcm, &avail, &ts) == 0, ts.tv_sec > 0 {
                let then = UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
                stamp = then &- (UInt64(avail) + UInt64(n)) * 1_000_000_000 / rate
            } else {
                stamp = Syscalls.monotonicNanoseconds() &- UInt64(n) * 1_000_000_000 / rate
            }
            // Samples an overrun lost still count: the index skips them, so
            // the track gets silence for them rather than sliding early.
            if overran, let end = previousEnd {
                index += Self.samplesLost(between: end, and: stamp, rate: rate)
            }
            overran = false
            let buffer = AudioBuffer(format: format, samples: Array(samples[0..<(Int(n) * channels)]),
                                     timestampNanoseconds: stamp, sampleIndex: index)
            index += Int64(n)
            previousEnd = stamp &+ UInt64(n) * 1_000_000_000 / rate
            let receivers = state.withLock { s -> [any AudioReceiver] in
                s.buffers += 1
                return s.receivers
            }
            for r in receivers { r.receive(buffer) }
        }
    }
}

/// Audio for app code, like the video data output: an AsyncStream of
/// captured periods (the oldest dropped when the reader falls behind).
public final class AudioDataOutput: AudioReceiver, Sendable {
    public let buffers: AsyncStream<AudioBuffer>
    private let continuation: AsyncStream<AudioBuffer>.Continuation
    public init(bufferingNewest count: Int = 64) {
        (buffers, continuation) = AsyncStream<AudioBuffer>.makeStream(bufferingPolicy: .bufferingNewest(count))
    }
    public func receive(_ buffer: AudioBuffer) { continuation.yield(buffer) }
    public func finish() { continuation.finish() }
}
