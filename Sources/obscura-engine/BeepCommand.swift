import ArgumentParser
import ObscuraCommandLine
import Foundation
import ObscuraSystem
import ObscuraAudio
import ObscuraMedia

struct BeepCommand: ParsableCommand {
    static let configuration = CommandDescriptions.beep

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
