import ArgumentParser
import ObscuraCommandLine
import Foundation
import ObscuraSystem
import ObscuraAudio
import ObscuraMedia

struct ListenCommand: AsyncParsableCommand {
    static let configuration = CommandDescriptions.listen

    @Option(help: "ALSA capture device (see `obscura devices`), or auto.") var device: String = "auto"
    @Option(help: "Seconds to listen.") var seconds: Double = 5
    @Option(help: "Seconds per line.") var interval: Double = 0.5
    @Option(help: "Sample rate in Hz.") var rate: Int = 48_000
    @Option(help: "Channels.") var channels: Int = 1

    static func dBFS(_ x: Double) -> String { x <= 0 ? "-inf" : String(format: "%.1f", 20 * log10(x / 32768)) }

    func validate() throws {
        try Options.check {
            try Limits.runSeconds.check(seconds, "--seconds")
            try Limits.intervalSeconds.check(interval, "--interval")
            try Limits.sampleRate.check(rate, "--rate")
            try Limits.channels.check(channels, "--channels")
        }
    }

    func run() async throws {
        let input: AudioDeviceInput
        do { input = try AudioDeviceInput(device: device, format: AudioFormat(sampleRate: rate, channels: channels)) } catch {
            Log.note("error: \(error)")
            throw ExitCode.failure
        }
        Log.note("listening to \(input.deviceName): \(input.format)")
        let output = AudioDataOutput()
        input.addReceiver(output)
        do { try input.start() } catch {
            Log.note("error: \(error)")
            throw ExitCode.failure
        }
        let total = Int(seconds * Double(input.format.sampleRate))
        let perLine = max(1, Int(interval * Double(input.format.sampleRate)))
        var heard = 0, lineFrames = 0, peak = 0.0, sumSquares = 0.0, overallPeak = 0.0
        for await buffer in output.buffers {
            for s in buffer.samples {
                let v = abs(Double(s))
                peak = max(peak, v)
                sumSquares += v * v
            }
            lineFrames += buffer.frames
            heard += buffer.frames
            if lineFrames >= perLine || heard >= total {
                let rms = (sumSquares / Double(max(1, lineFrames * input.format.channels))).squareRoot()
                Log.output(String(format: "%6.2f s  peak %@ dBFS  rms %@ dBFS", Double(heard) / Double(input.format.sampleRate),
                                  Self.dBFS(peak), Self.dBFS(rms)))
                overallPeak = max(overallPeak, peak)
                lineFrames = 0; peak = 0; sumSquares = 0
            }
            if heard >= total { break }
        }
        input.stop()
        output.finish()
        Log.note("heard \(heard) frames, peak \(Self.dBFS(overallPeak)) dBFS, \(input.overruns) overruns")
    }
}
