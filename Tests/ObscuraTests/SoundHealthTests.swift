import Foundation
import Testing
import ObscuraHealth
import ObscuraMedia
@testable import ObscuraService

/// The sound watch on buffers made here: digital silence, a level held, a
/// quiet room, a tone, a tone clipped at full scale. Time is the buffers' own.
@Suite struct SoundHealthTests {
    static let rate = 48_000
    static let period = 1024

    /// `seconds` of buffers from `time` (ns), each sample made by `sample(i)`.
    static func buffers(_ seconds: Double, from time: UInt64, _ sample: (Int) -> Int16) -> [AudioBuffer] {
        let count = Int(seconds * Double(rate)) / period
        return (0..<count).map { b in
            let samples = (0..<period).map { sample(b * period + $0) }
            return AudioBuffer(format: AudioFormat(sampleRate: rate, channels: 1), samples: samples,
                               timestampNanoseconds: time + UInt64(b * period) * 1_000_000_000 / UInt64(rate),
                               sampleIndex: Int64(b * period))
        }
    }

    static func tone(_ amplitude: Double) -> (Int) -> Int16 {
        { i in Int16(max(-32768, min(32767, amplitude * sin(2 * Double.pi * 1000 * Double(i) / Double(rate))))) }
    }

    /// Noise of a quiet room: a few steps of 16 bits either way.
    static func room(_ i: Int) -> Int16 { Int16((i &* 2_654_435_761 >> 7) % 9) - 4 }

    static func settings() -> SoundHealthSettings {
        var s = SoundHealthSettings()
        s.hold = .seconds(2)
        s.clearAfter = .seconds(1)
        return s
    }

    /// Feeds `buffers`; each change with its time from `zero` in seconds.
    static func hear(_ health: inout SoundHealth, _ buffers: [AudioBuffer], zero: UInt64 = 0) -> [(SoundHealth.Change, Double)] {
        buffers.flatMap { b in health.hear(SoundSample(b)!).map { ($0, Double($0.at - zero) / 1e9) } }
    }

    @Test func digitalSilenceIsDeclaredAfterItsHoldAndClearsWithSound() {
        var health = SoundHealth(settings: Self.settings())
        var t: UInt64 = 1_000_000_000
        var changes = Self.hear(&health, Self.buffers(4, from: t) { _ in 0 }, zero: t)
        t += 4_000_000_000
        let declared = changes.filter { $0.0.declared }
        #expect(declared.map(\.0.condition) == [.silent])
        // Declared once it held 2 s, on a window's end (0.5 s), so by 2.5 s.
        if let d = declared.first { #expect(d.1 >= 2 && d.1 <= 2.6, "declared at \(d.1) s") }
        #expect(health.last?.peakDBFS == -.infinity)
        changes = Self.hear(&health, Self.buffers(3, from: t, Self.tone(12_000)), zero: t)
        let cleared = changes.filter { !$0.0.declared }
        #expect(cleared.map(\.0.condition) == [.silent])
        if let c = cleared.first { #expect(c.1 >= 1 && c.1 <= 1.6, "cleared at \(c.1) s") }
        #expect(health.declared.isEmpty)
    }

    @Test func aLevelHeldIsSilentAndAQuietRoomIsNot() {
        var held = SoundHealth(settings: Self.settings())
        #expect(Self.hear(&held, Self.buffers(3, from: 0) { _ in 517 }).map(\.0.condition) == [.silent])
        var room = SoundHealth(settings: Self.settings())
        #expect(Self.hear(&room, Self.buffers(3, from: 0, Self.room)).isEmpty)
        // The room's swing: a few steps of 16 bits, some 10 dB over the silence's -90 dBFS.
        #expect((-85.0 ... -75.0).contains(room.last?.swingDBFS ?? 0), "\(String(describing: room.last))")
    }

    @Test func aToneClippedAtFullScaleIsClippingAndALoudCleanOneIsNot() {
        var clipped = SoundHealth(settings: Self.settings())
        let changes = Self.hear(&clipped, Self.buffers(3, from: 0, Self.tone(65_000)))
        #expect(changes.map(\.0.condition) == [.clipping])
        #expect((clipped.last?.clippedShare ?? 0) > 0.3)
        var loud = SoundHealth(settings: Self.settings())
        // -1 dBFS: loud, never at full scale.
        #expect(Self.hear(&loud, Self.buffers(3, from: 0, Self.tone(32767 * pow(10, -1 / 20)))).isEmpty)
        #expect(loud.last?.clippedShare == 0)
    }

    @Test func onlyTheWatchedConditionsAreDeclared() {
        var s = Self.settings()
        s.watched = [.clipping]
        var health = SoundHealth(settings: s)
        #expect(Self.hear(&health, Self.buffers(4, from: 0) { _ in 0 }).isEmpty)
    }

    @Test func theHealthTableSetsTheSoundWatchAndNamesWhatIsWrong() throws {
        let c = try ServiceConfiguration.parsing("""
            [health]
            sound_conditions = ["clipping"]
            silence_dbfs = -80
            clip_share = 0.01
            hold_seconds = 3
            """)
        let sound = try #require(c.health.sound)
        #expect(sound.watched == [.clipping] && sound.silenceDBFS == -80 && sound.clipShare == 0.01 && sound.hold == .seconds(3))
        #expect(try ServiceConfiguration.parsing("[health]\nsound_conditions = []").health.sound == nil)
        #expect(try ServiceConfiguration.parsing("[health]\nenabled = false").health.sound == nil)
        #expect(try ServiceConfiguration.parsing("").health.sound?.watched == [.silent, .clipping])
        #expect { try ServiceConfiguration.parsing("[health]\nsound_conditions = [\"quiet\"]") } throws: { "\($0)".contains("silent") && "\($0)".contains("quiet") }
        #expect { try ServiceConfiguration.parsing("[health]\nsilence_dbfs = 3") } throws: { "\($0)".contains("health.silence_dbfs") }
    }
}
