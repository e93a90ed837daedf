import Foundation
import ObscuraCamera
import ObscuraEncoding
import ObscuraMuxing
import struct Synchronization.Atomic
import Testing
import TestSupport
@testable import ObscuraAudio
@testable import ObscuraCapture
@testable import ObscuraSoftwareCamera
@testable import ObscuraMedia
@testable import ObscuraRecording
@testable import ObscuraSystem

@Suite struct AudioEncoderTests {
    /// A card whose crystal runs 0.3 % fast: two minutes of its samples take
    /// 0.36 s less than two minutes on the camera's clock. Counting samples
    /// would put the end 0.36 s late; the corrected track ends where the
    /// timestamps say, within one video frame.
    @Test func theDriftCorrectionKeepsAudioOnTheCameraClock() throws {
        let format = AudioFormat(sampleRate: 48_000, channels: 1)
        let encoder = try AudioEncoder(settings: AudioEncoderSettings(codec: .aac), inputFormat: format)
        let cardRate = 48_000.0 * 1.003
        let period = 960
        let periods = 120 * 48_000 / period
        var packets = 0
        var lastPTS: Int64 = 0
        for k in 0..<periods {
            let ns = Int64(Double(k * period) / cardRate * 1e9)
            let buffer = AudioBuffer(format: format, samples: [Int16](repeating: Int16(k % 7), count: period),
                                     timestampNanoseconds: UInt64(ns), sampleIndex: Int64(k * period))
            for p in try encoder.encode(buffer, ptsNanoseconds: ns) { packets += 1; lastPTS = p.pts }
        }
        for p in try encoder.finish() { packets += 1; lastPTS = p.pts }
        let monotonicEnd = Double(periods * period) / cardRate      // where the last sample belongs, seconds
        let trackEnd = Double(encoder.samplesOut) / 48_000            // where the track ends
        #expect(abs(trackEnd - monotonicEnd) < 1.0 / 30, "track ends at \(trackEnd) s, the camera clock says \(monotonicEnd) s")
        #expect(abs(Double(lastPTS) / 48_000 - monotonicEnd) < 0.1)
        // Uncorrected it would be 0.36 s off: the correction removed about that many samples.
        #expect(encoder.compensatedSamples < -15_000 && encoder.compensatedSamples > -19_500, "\(encoder.compensatedSamples)")
        #expect(packets > periods * period / 1024 - 400)
    }

    /// An overrun halfway: half a second of samples never read. The capture
    /// thread's index skips what the card's clock says was lost, and the
    /// track gets that much silence at once: everything after the overrun
    /// stays where its timestamps put it, and the track ends where the last
    /// sample belongs.
    @Test func samplesAnOverrunLostBecomeSilenceAndTheRestStaysInPlace() throws {
        let format = AudioFormat(sampleRate: 48_000, channels: 1)
        let encoder = try AudioEncoder(settings: AudioEncoderSettings(codec: .aac), inputFormat: format)
        let period = 960, lost = 24_000
        var index: Int64 = 0, previousEnd: UInt64?
        for k in 0..<500 {
            // The card's own sample position: after period 250, half a second is gone.
            let position = Int64(k * period + (k >= 250 ? lost : 0))
            let stamp = UInt64(position) * 1_000_000_000 / 48_000
            if k == 250, let end = previousEnd { index += AudioDeviceInput.samplesLost(between: end, and: stamp, rate: 48_000) }
            let buffer = AudioBuffer(format: format, samples: [Int16](repeating: 100, count: period),
                                     timestampNanoseconds: stamp, sampleIndex: index)
            index += Int64(period)
            previousEnd = stamp + UInt64(period) * 1_000_000_000 / 48_000
            _ = try encoder.encode(buffer, ptsNanoseconds: Int64(stamp))
            if k == 300 {
                // A second after the overrun the track is where the card's clock is, not still catching up.
                let behind = Double(previousEnd!) / 1e9 - Double(encoder.samplesOut) / 48_000
                #expect(behind >= 0 && behind < 0.05, "a second after the overrun the track is \(behind) s behind the card's clock")
            }
        }
        _ = try encoder.finish()
        #expect(index == Int64(500 * period + lost), "the index counts the lost samples: \(index)")
        let end = Double(500 * period + lost) / 48_000
        let trackEnd = Double(encoder.samplesOut) / 48_000
        #expect(abs(trackEnd - end) < 1.0 / 30, "the track ends at \(trackEnd) s; its last sample belongs at \(end) s")
        #expect(encoder.compensatedSamples > lost - 2_000, "silence put in for the overrun: \(encoder.compensatedSamples) samples")
        #expect(AudioDeviceInput.samplesLost(between: 2_000_000_000, and: 1_000_000_000, rate: 48_000) == 0)
    }

    @Test func opusInAnMP4IsRefusedNamingTheContainerThatTakesIt() throws {
        let output = MovieFileOutput()
        output.audioConnected(AudioFormat())
        var settings = MovieSettings()
        settings.audio.codec = .opus
        #expect(throws: RecordingError.audioCodecNeedsContainer("opus", "mp4")) {
            _ = try output.startRecording(to: "/tmp/x.mp4", settings: settings)
        }
    }
}

@Suite(.serialized) struct AudioRecordingTests {
    /// Video from the synthetic camera (monotonic timestamps) and beeps
    /// delivered as a microphone would — periods stamped on the monotonic
    /// clock — make an MP4 with an AAC track in which every beep sits where
    /// the camera's clock puts it, within one frame.
    /// (With pre-recording: the sound before the trigger is in the file too.
    /// With a microphone that hands its periods over late — a USB one with
    /// a deep buffer, or a loaded machine — the sound still ends with the
    /// picture: the ending recording waits for it.)
    /// The camera and the microphone keep one clock, which the test drives
    /// on a frame interval every 2 ms:
    /// seconds of recording take what the encoding takes, and a busy machine
    /// makes neither late.
    @Test(arguments: [(MovieContainer.mp4, AudioCodec.aac, false, false, 0), (.mkv, .opus, false, false, 0), (.mp4, .aac, true, false, 0),
                      (.mp4, .aac, false, true, 0), (.mp4, .aac, false, false, 120)])
    func beepsLandAtTheirCameraTimes(container: MovieContainer, codec: AudioCodec, segmented: Bool, preRecorded: Bool,
                                     lateMilliseconds: Int) async throws {
        let output = MovieFileOutput()
        output.maxRecordedDuration = .seconds(preRecorded ? 2 : 5)
        if segmented { output.segmentDuration = .seconds(2) }
        let clock = ManualClock()
        let (_, session) = try pacedSession([output], clock: clock)
        let format = AudioFormat(sampleRate: 48_000, channels: 1)
        output.audioConnected(format)
        let dir = try TemporaryDirectory()
        let file = dir.path + "/beeps.\(container.rawValue)"
        var settings = MovieSettings()
        settings.audio.codec = codec
        if preRecorded { try output.armPreRecording(duration: .seconds(2), settings: settings) }
        try session.startRunning()
        // A frame interval every 2 ms: about 16 times real time. (Not held
        // back while the recording holds frames: an ending recording holds
        // its last while it waits for the sound of that moment, which comes
        // only as the clock moves on. A frame the camera skips for a busy
        // machine is a gap in the picture, which these checks allow.)
        let driving = clock.drive(by: .nanoseconds(33_333_333), every: .milliseconds(2)) { [clock] in clock.sleeping > 0 }
        defer { driving.cancel() }

        // A microphone thread: 20 ms periods on the camera's clock, a 60 ms
        // beep every 700 ms (times noted), each period handed over when it
        // is whole, `lateMilliseconds` later still.
        let beeps = Mutex<[UInt64]>([])
        let stop = Atomic<Bool>(false)
        let start = clock.nanoseconds
        let mic = Thread {
            var index: Int64 = 0
            while !stop.load(ordering: .relaxed) {
                let t = start + UInt64(index) * 1_000_000_000 / 48_000
                while clock.nanoseconds < t + 20_000_000 + UInt64(lateMilliseconds) * 1_000_000, !stop.load(ordering: .relaxed) { usleep(200) }
                var samples = [Int16](repeating: 0, count: 960)
                for i in 0..<960 {
                    let k = index + Int64(i)
                    let phase = k % 33_600 // 700 ms
                    if k >= 24_000, phase < 2_880 {
                        if phase == 0 { beeps.withLock { $0.append(start + UInt64(k) * 1_000_000_000 / 48_000) } }
                        samples[i] = Int16(12_000 * sin(2 * Double.pi * 1000 * Double(phase) / 48_000))
                    }
                }
                output.receive(AudioBuffer(format: format, samples: samples, timestampNanoseconds: t, sampleIndex: index))
                index += 960
            }
        }
        mic.start()
        if preRecorded { #expect(await waitUntil { clock.nanoseconds >= start + 3_500_000_000 }) }
        let events = try output.startRecording(to: file, settings: settings)
        var result: RecordingProgress?
        for await event in events { if case .finished(_, _, let p) = event { result = p } }
        stop.store(true, ordering: .relaxed)
        try session.stopRunning()
        output.disarmPreRecording()
        let progress = try #require(result)
        if preRecorded { #expect(progress.preRoll >= .seconds(2), "\(progress.preRoll)") }
        #expect(progress.audio.hasPrefix(codec == .aac ? "aac, 48000 Hz, mono" : "libopus, 48000 Hz, mono"), "\(progress.audio)")
        // Each file (each segment) on its own: its beeps where the camera's clock puts them.
        let files = segmented ? (1...3).map { dir.path + "/beeps-000\($0).mp4" } : [file]
        try #require(progress.segmentTimeZeros.count == files.count, "\(progress.segmentTimeZeros)")
        var checked = 0
        var scheduled = 0
        for (index, path) in files.enumerated() {
            let zero = progress.segmentTimeZeros[index]
            let streams = try runProgram("ffprobe", ["-v", "error", "-show_entries", "stream=codec_type,codec_name", "-of", "csv=p=0", path])
            #expect(streams.stdout.contains("h264,video") && streams.stdout.contains(codec == .aac ? "aac,audio" : "opus,audio"), "\(streams.stdout)")
            let length = Double(try runProgram("ffprobe", ["-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", path])
                .stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
            // The sound ends with the picture, within one audio frame
            // (AAC: 1024 samples, Opus: 960), by the packets' own times.
            let packets = try runProgram("ffprobe", ["-v", "error", "-show_entries", "packet=codec_type,pts_time,duration_time",
                                                     "-of", "csv=p=0", path]).stdout
            let frame = (codec == .aac ? 1024.0 : 960.0) / 48_000
            var times: [String: [Double]] = [:]
            for line in packets.split(separator: "\n") {
                let f = line.split(separator: ",")
                guard f.count >= 2, let pts = Double(f[1]) else { continue }
                times[String(f[0]), default: []].append(pts)
            }
            // A packet lasts until the next; the last audio packet one frame.
            // A segment's picture ends where the next segment's first frame
            // starts (the boundary, by the camera's clock); the last file's
            // with its last frame's interval.
            var ends: [String: Double] = [:]
            if index + 1 < progress.segmentTimeZeros.count {
                ends["video"] = Double(progress.segmentTimeZeros[index + 1] - zero) / 1e9
            } else if let v = times["video"]?.sorted(), v.count >= 2 {
                ends["video"] = v[v.count - 1] + (v[v.count - 1] - v[v.count - 2])
            }
            if let a = times["audio"]?.max() { ends["audio"] = a + frame }
            if let video = ends["video"], let audio = ends["audio"] {
                #expect(abs(audio - video) <= frame + 0.001, "\(path): the sound ends at \(audio) s, the picture at \(video) s")
            } else {
                Issue.record("\(path): no packet times: \(ends)")
            }
            let found = try beepTimes(in: path)
            let expected = beeps.withLock { $0 }.map { Double(Int64($0) - Int64(zero)) / 1e9 }.filter { $0 > 0.05 && $0 < length - 0.2 }
            // The beeps the microphone's schedule puts in this file (every
            // 700 ms, from 700 ms after its start): the ones it must have noted.
            let first = Double(Int64(start) - Int64(zero)) / 1e9 + 0.7
            let due = (0..<64).map { first + 0.7 * Double($0) }.filter { $0 > 0.05 && $0 < length - 0.2 }
            scheduled += due.count
            for e in expected {
                let nearest = found.min { abs($0 - e) < abs($1 - e) }
                #expect(nearest.map { abs($0 - e) < 1.0 / 30 } == true, "\(path): beep at \(e) s found at \(nearest ?? -1) s (all: \(found))")
                checked += 1
            }
        }
        // Every scheduled beep was checked, and seconds of sound hold some.
        #expect(checked == scheduled && checked >= 2, "\(checked) beeps checked, \(scheduled) scheduled")
    }
}

/// The beep player's dates (`obscura beep`, which the sound-sync board test
/// trusts): a beep is printed with its time only when its date on queueing
/// and its date once heard agree.
@Suite struct BeepDatesTests {
    /// A device whose dates the test scripts: frame times from `start` at
    /// 48 kHz, shifted by `skew` (what a stale pointer timestamp does), or
    /// nil while the stream does not run.
    final class ScriptedClock: PlaybackClock {
        var written: Int64 = 0
        var running = true
        var skew: Int64 = 0
        let start: Int64 = 5_000_000_000
        func timeOfFrame(_ index: Int64) -> UInt64? {
            running ? UInt64(start + index * 1_000_000_000 / 48_000 + skew) : nil
        }
    }

    @Test func twoDatesThatAgreeGiveTheBeepsTimeOnceItIsHeard() {
        let clock = ScriptedClock()
        var dates = BeepDates(again: 9_600)
        dates.add(beep: 1, frame: 24_000)
        clock.written = 24_960
        #expect(dates.date(clock).isEmpty, "dated once, not yet heard")
        clock.written += 4_800
        clock.skew = 3_000_000 // the pointer's step: within the 20 ms allowed
        #expect(dates.date(clock).isEmpty)
        clock.written += 4_800
        #expect(dates.date(clock) == ["beep 1 at 5500000000"])
        #expect(dates.date(clock, last: true).isEmpty, "each beep is said once")
    }

    @Test func datesThatDisagreeOrAStreamThatStoppedLeaveTheBeepUndated() {
        let clock = ScriptedClock()
        var dates = BeepDates(again: 9_600)
        dates.add(beep: 1, frame: 24_000)
        clock.written = 24_960
        clock.skew = -125_000_000 // queued while a stale timestamp stood
        #expect(dates.date(clock).isEmpty)
        clock.skew = 0
        dates.add(beep: 2, frame: 72_000)
        clock.written = 72_960
        #expect(dates.date(clock) == ["beep 1 undated: dated 5375000000, then 5500000000: 125 ms apart"])
        // Beep 2 was dated once; then the stream underran: after the silence
        // its second date could not be had (nor trusted), so it is undated.
        clock.running = false
        clock.written += 9_600
        #expect(dates.date(clock) == ["beep 2 undated: dated 6500000000, then not: no second date"])
        #expect(dates.date(clock, last: true).isEmpty)
    }

    @Test func aBeepQueuedBeforeTheStreamRunsIsDatedOnceItDoes() {
        let clock = ScriptedClock()
        clock.running = false
        var dates = BeepDates(again: 9_600)
        dates.add(beep: 1, frame: 0)
        clock.written = 960
        #expect(dates.date(clock).isEmpty)
        clock.running = true
        clock.written = 4_800
        #expect(dates.date(clock).isEmpty, "dated now, first time")
        clock.written = 14_400
        #expect(dates.date(clock) == ["beep 1 at 5000000000"])
        var never = BeepDates(again: 9_600)
        never.add(beep: 7, frame: 0)
        clock.running = false
        #expect(never.date(clock, last: true) == ["beep 7 undated: the stream never ran after it"])
    }
}
