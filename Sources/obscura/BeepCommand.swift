import ArgumentParser
import Foundation
import ObscuraSystem
import ObscuraAudio
import ObscuraMedia

struct BeepCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "beep",
        abstract: "Play timed beeps on an audio device, printing when each is heard (to check audio/video sync).",
        discussion: """
        Plays a short tone every --every seconds, silence between, and prints \
        "beep N at T" with T the moment its first sample is played, in \
        CLOCK_MONOTONIC nanoseconds — the clock of camera timestamps and of \
        `obscura record`'s "time zero". Each beep is dated twice, when queued \
        and once heard; when the two disagree (the player was kept from the CPU \
        between) it prints "beep N undated: " and why, instead. With the ALSA loopback \
        driver, play on hw:Loopback,0 and record from hw:Loopback,1.
        """)

    @Option(help: "ALSA playback device.") var device: String = "default"
    @Option(help: "Seconds between beeps.") var every: Double = 1
    @Option(help: "Number of beeps.") var count: Int = 10
    @Option(help: "Seconds of silence before the first beep.") var lead: Double = 0.5
    @Option(help: "Tone frequency in Hz.") var frequency: Double = 1000
    @Option(help: "Tone length in milliseconds.") var length: Int = 60
    @Option(help: "Sample rate in Hz.") var rate: Int = 48_000
    @Option(help: "Tone level in dBFS (default about -8.7); above 0 the tone is clipped at full scale, like an overdriven microphone.")
    var level: Double?

    func validate() throws {
        try Options.check {
            try Limits.beepEverySeconds.check(every, "--every")
            try Limits.count.check(count, "--count")
            try Limits.delaySeconds.check(lead, "--lead")
            try Limits.toneHz.check(frequency, "--frequency")
            try Limits.beepMilliseconds.check(length, "--length")
            try Limits.sampleRate.check(rate, "--rate")
            if let level { try Limits.toneDBFS.check(level, "--level") }
            guard Double(length) / 1000 < every else { throw UserFacingError("--every (\(every) s) must be longer than --length (\(length) ms)") }
        }
    }

    func run() throws {
        let player: AudioPlayback
        do { player = try AudioPlayback(device: device, format: AudioFormat(sampleRate: rate, channels: 1)) } catch {
            Log.note("error: \(error)")
            throw ExitCode.failure
        }
        let chunk = rate / 50 // 20 ms
        let amplitude = level.map { 32767 * pow(10, $0 / 20) } ?? 12_000
        let spacing = Int64(every * Double(rate))
        let first = Int64(lead * Double(rate))
        let toneFrames = Int64(length * rate / 1000)
        let end = first + spacing * Int64(count - 1) + toneFrames + Int64(rate / 2)
        var position: Int64 = 0
        var dates = BeepDates(again: Int64(rate / 5))
        while position < end {
            var samples = [Int16](repeating: 0, count: chunk)
            for i in 0..<chunk {
                let k = position + Int64(i)
                guard k >= first else { continue }
                let offset = (k - first) % spacing
                let beep = (k - first) / spacing
                if beep < count, offset < toneFrames {
                    samples[i] = Int16(max(-32768, min(32767, amplitude * sin(2 * Double.pi * frequency * Double(offset) / Double(rate)))))
                    if offset == 0 { dates.add(beep: Int(beep) + 1, frame: k) }
                }
            }
            do { try player.write(samples) } catch {
                Log.note("error: \(error)")
                throw ExitCode.failure
            }
            position += Int64(chunk)
            for line in dates.date(player) { Log.output(line) }
        }
        player.drain()
        for line in dates.date(player, last: true) { Log.output(line) }
        if player.underruns > 0 { Log.note("beep: \(player.underruns) underruns (silences while the player was kept from the CPU)") }
    }
}

/// Each beep's onset dated twice: once the device has it queued, and again
/// `again` frames of writing later, once it has been heard. The two agree
/// within a few milliseconds (the device's pointer moves in steps); when they
/// do not, the player was kept from the CPU between a pointer update and its
/// timestamp, and no date of that beep can be vouched for: it is said
/// undated ("beep N undated: …"), not printed with a wrong time.
struct BeepDates {
    /// Frames written between a beep's two dates.
    let again: Int64
    /// How far apart two dates of one beep may be.
    var agreeNanoseconds: Int64 = 20_000_000
    private var pending: [(beep: Int, frame: Int64, first: UInt64?, writtenAt: Int64)] = []

    init(again: Int64) { self.again = again }

    mutating func add(beep: Int, frame: Int64) { pending.append((beep, frame, nil, 0)) }

    /// Lines for the beeps dated by now: "beep N at T" (T in CLOCK_MONOTONIC
    /// ns), or "beep N undated: …". `last`: the stream has been drained, so
    /// every beep still waiting is dated once more, or said undated.
    mutating func date(_ player: AudioPlayback, last: Bool = false) -> [String] {
        var lines: [String] = []
        for i in pending.indices {
            if pending[i].first == nil {
                pending[i].first = player.timeOfFrame(pending[i].frame)
                pending[i].writtenAt = player.written
                if !last { continue }
            }
            guard let first = pending[i].first else {
                lines.append("beep \(pending[i].beep) undated: the stream never ran after it")
                pending[i].beep = 0
                continue
            }
            guard last || player.written - pending[i].writtenAt >= again else { continue }
            let second = player.timeOfFrame(pending[i].frame)
            let apart = second.map { abs(Int64(bitPattern: $0 &- first)) }
            if let apart, apart <= agreeNanoseconds {
                lines.append("beep \(pending[i].beep) at \(first)")
            } else {
                let text = apart.map { "\($0 / 1_000_000) ms apart" } ?? "no second date"
                lines.append("beep \(pending[i].beep) undated: dated \(first), then \(second.map(String.init) ?? "not"): \(text)")
            }
            pending[i].beep = 0
        }
        pending.removeAll { $0.beep == 0 }
        return lines
    }
}
