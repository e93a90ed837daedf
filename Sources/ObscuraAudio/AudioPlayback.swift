import CALSA
import Foundation
import ObscuraMedia

/// Plays samples on an ALSA device and says when each one is heard, on
/// CLOCK_MONOTONIC: the sample being played at the last pointer update
/// (snd_pcm_htimestamp) is the one written `delay` frames ago. Used to play
/// timed beeps for checking audio/video sync.
public final class AudioPlayback {
    public let deviceName: String
    public let format: AudioFormat
    private let pcm: OpaquePointer
    /// Frames written so far.
    public private(set) var written: Int64 = 0
    /// Times the device ran out of samples (the writer was kept from the
    /// CPU longer than the buffer lasts): silence was heard, and the stream
    /// waited for a full buffer again before it went on.
    public private(set) var underruns = 0

    public init(device: String, format: AudioFormat = AudioFormat(), bufferFrames: Int = 4800) throws(AudioError) {
        deviceName = device
        var handle: OpaquePointer?
        var rc = snd_pcm_open(&handle, device, SND_PCM_STREAM_PLAYBACK, 0)
        guard rc == 0, let handle else { throw .alsa("snd_pcm_open (playback)", device, rc) }
        pcm = handle
        rc = snd_pcm_set_params(handle, SND_PCM_FORMAT_S16_LE, SND_PCM_ACCESS_RW_INTERLEAVED, UInt32(format.channels),
                                UInt32(format.sampleRate), 0, UInt32(bufferFrames * 1_000_000 / format.sampleRate))
        guard rc == 0 else { snd_pcm_close(handle); throw .alsa("snd_pcm_set_params (\(format))", device, rc) }
        var sw: OpaquePointer?
        snd_pcm_sw_params_malloc(&sw)
        defer { snd_pcm_sw_params_free(sw) }
        snd_pcm_sw_params_current(handle, sw)
        snd_pcm_sw_params_set_tstamp_mode(handle, sw, SND_PCM_TSTAMP_ENABLE)
        snd_pcm_sw_params_set_tstamp_type(handle, sw, SND_PCM_TSTAMP_TYPE_MONOTONIC)
        rc = snd_pcm_sw_params(handle, sw)
        guard rc == 0 else { snd_pcm_close(handle); throw .alsa("snd_pcm_sw_params", device, rc) }
        self.format = format
    }

    deinit { snd_pcm_close(pcm) }

    /// Writes interleaved samples (blocking while the device's buffer is full).
    public func write(_ samples: [Int16]) throws(AudioError) {
        var offset = 0
        let frames = samples.count / format.channels
        while offset < frames {
            let n = samples.withUnsafeBytes { raw in
                snd_pcm_writei(pcm, raw.baseAddress! + offset * format.channels * 2, snd_pcm_uframes_t(frames - offset))
            }
            if n < 0 {
                if Int32(n) == -EPIPE { underruns += 1 }
                let rc = snd_pcm_recover(pcm, Int32(n), 1)
                if rc < 0 { throw .alsa("snd_pcm_writei", deviceName, Int32(n)) }
                continue
            }
            offset += Int(n)
            written += Int64(n)
        }
    }

    /// When frame `index` (counted from the first written) is heard, CLOCK_MONOTONIC ns;
    /// nil until the stream runs. A stream that is not running (before its
    /// buffer first fills, or after an underrun until it fills again) keeps
    /// the timestamp of its last pointer update, from before the silence: a
    /// frame dated by it would be said heard earlier than it is, by as long
    /// as the stream stood still.
    public func timeOfFrame(_ index: Int64) -> UInt64? {
        guard snd_pcm_state(pcm) == SND_PCM_STATE_RUNNING else { return nil }
        var avail: snd_pcm_uframes_t = 0
        var ts = timespec()
        guard snd_pcm_htimestamp(pcm, &avail, &ts) == 0, ts.tv_sec > 0 else { return nil }
        var bufferSize: snd_pcm_uframes_t = 0, periodSize: snd_pcm_uframes_t = 0
        snd_pcm_get_params(pcm, &bufferSize, &periodSize)
        let delay = Int64(bufferSize) - Int64(avail)
        let playing = written - delay // the frame heard at ts
        let at = Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
        return UInt64(at + (index - playing) * 1_000_000_000 / Int64(format.sampleRate))
    }

    public func drain() { snd_pcm_drain(pcm) }
}
