import Foundation
import Testing
@testable import ObscuraHealth
import ObscuraMedia

/// A frame in heap memory of `format` and `size` whose first plane's bytes
/// are `fill(x, y, byteInPixel)`. The storage lives as long as the frame.
private func frame(_ format: PixelFormat, _ size: PixelSize, bytesPerPixel: Int, time: UInt64 = 0,
                   fill: (Int, Int, Int) -> UInt8) -> VideoFrame {
    let stride = size.width * bytesPerPixel + 16   // a padded row, as cameras make them
    let length = stride * size.height
    let memory = UnsafeMutableRawPointer.allocate(byteCount: length, alignment: 64)
    let bytes = memory.assumingMemoryBound(to: UInt8.self)
    for y in 0..<size.height {
        for x in 0..<size.width {
            for b in 0..<bytesPerPixel { bytes[y * stride + x * bytesPerPixel + b] = fill(x, y, b) }
        }
    }
    let address = UInt(bitPattern: memory)
    return VideoFrame(format: format, size: size, planes: [FramePlane(base: memory, stride: stride, length: length)],
                      sequence: 0, timestampNanoseconds: time,
                      release: { UnsafeMutableRawPointer(bitPattern: address)?.deallocate() })
}

@Suite struct LumaGridTests {
    let size = PixelSize(width: 64, height: 36)
    let grid = LumaGrid(columns: 4, rows: 3)
    /// The grid's points on a 64×36 picture: x = 8, 24, 40, 56; y = 6, 18, 30.
    var expected: [UInt8] { [6, 18, 30].flatMap { y in [8, 24, 40, 56].map { x in UInt8(x + y) } } }

    @Test func readsEachFormatsLumaWhereItIs() throws {
        let luma: (Int, Int) -> UInt8 = { x, y in UInt8(x + y) }
        let cases: [(PixelFormat, Int, (Int, Int, Int) -> UInt8)] = [
            (.nv12, 1, { x, y, _ in luma(x, y) }),
            (.yuyv, 2, { x, y, b in b == 0 ? luma(x, y) : 128 }),
            (.uyvy, 2, { x, y, b in b == 1 ? luma(x, y) : 128 }),
            (.p010, 2, { x, y, b in b == 1 ? luma(x, y) : 0xC0 }),   // little-endian, the value in the high bits
            (.xrgb8888, 4, { x, y, b in b == 3 ? 0 : luma(x, y) }),  // grey: R = G = B
        ]
        for (format, bytes, fill) in cases {
            let f = frame(format, size, bytesPerPixel: bytes, fill: fill)
            let points = try #require(grid.sample(f), "\(format)")
            // RGB's weights sum to 256: a grey's luma is its value (less at most one for the shift).
            let tolerance = format == .xrgb8888 ? 1 : 0
            #expect(zip(points, expected).allSatisfy { abs(Int($0) - Int($1)) <= tolerance }, "\(format): \(points) for \(expected)")
        }
    }

    @Test func aFormatWithoutLumaIsNotRead() {
        let f = frame(.sbggr8, size, bytesPerPixel: 1) { _, _, _ in 0 }
        #expect(grid.sample(f) == nil)
        #expect(!LumaGrid.canRead(.sbggr8))
    }

    @Test func measuresTellFlatFromDetailed() {
        let flat = PictureMeasure(points: [UInt8](repeating: 90, count: 12), columns: 4)
        #expect(flat == PictureMeasure(mean: 90, spread: 0, detail: 0))
        // A checkerboard of 0 and 200: every neighbour differs by 200.
        let board = (0..<12).map { i -> UInt8 in (i / 4 + i % 4) % 2 == 0 ? 0 : 200 }
        let m = PictureMeasure(points: board, columns: 4)
        #expect(m.mean == 100 && m.spread == 100 && m.detail == 200)
    }
}

@Suite struct ConditionTrackerTests {
    let second: UInt64 = 1_000_000_000

    @Test func declaredOnceItHasHeldAndClearedOnceGone() {
        var t = ConditionTracker(hold: .seconds(10), clearAfter: .seconds(2))
        #expect(t.observe(true, at: 5 * second) == nil)
        #expect(t.observe(true, at: 14 * second) == nil)         // 9 s: not yet
        #expect(t.observe(true, at: 15 * second) == .declared(since: 5 * second))
        #expect(t.observe(true, at: 16 * second) == nil)         // said once
        #expect(t.observe(false, at: 20 * second) == nil)
        #expect(t.observe(false, at: 22 * second) == .cleared(after: 15 * second))
        #expect(!t.isDeclared)
    }

    @Test func aBreakStartsTheHoldAgain() {
        var t = ConditionTracker(hold: .seconds(10), clearAfter: .seconds(2))
        _ = t.observe(true, at: 0)
        _ = t.observe(false, at: 9 * second)                     // a moment's detail
        #expect(t.observe(true, at: 10 * second) == nil)
        #expect(t.observe(true, at: 19 * second) == nil)
        #expect(t.observe(true, at: 20 * second) == .declared(since: 10 * second))
        // Declared: a glimpse shorter than clearAfter does not clear it.
        _ = t.observe(false, at: 21 * second)
        #expect(t.observe(true, at: 22 * second) == nil && t.isDeclared)
    }
}

@Suite struct PictureHealthTests {
    let size = PixelSize(width: 320, height: 180)
    let frameTime: UInt64 = 33_333_333   // 30 fps, as sensor timestamps

    /// A picture at `level`, with a checkerboard of 20-pixel squares 100
    /// brighter when `detailed`, and noise of up to ±`noise` (a real
    /// sensor's); `seed` makes each frame's noise its own.
    func picture(level: Int, detailed: Bool = false, noise: Int, seed: Int, time: UInt64) -> VideoFrame {
        frame(.nv12, size, bytesPerPixel: 1, time: time) { x, y, _ in
            let n = noise == 0 ? 0 : ((x &* 7919 &+ y &* 104_729 &+ seed &* 1_299_709) % (2 * noise + 1)) - noise
            return UInt8(clamping: level + (detailed ? (x / 20 + y / 20) % 2 * 100 : 0) + n)
        }
    }

    @Test func aDarkFlatPictureIsDeclaredDarkAndWithoutDetailAfterTheHold() {
        var settings = PictureHealthSettings()
        settings.watched = [.dark, .noDetail]
        var health = PictureHealth(settings: settings)
        var declared: [PictureCondition: UInt64] = [:]
        let start: UInt64 = 1_000_000_000
        for i in 0..<(12 * 30) {
            let t = start + UInt64(i) * frameTime
            for c in health.look(at: picture(level: 16, noise: 0, seed: i, time: t)) where c.declared { declared[c.condition] = t }
        }
        // Declared at the first frame looked at 10 s or more after the first (5 a second: within 0.2 s).
        for condition in [PictureCondition.dark, .noDetail] {
            let at = declared[condition]
            #expect(at.map { $0 - start >= 10_000_000_000 && $0 - start <= 10_200_000_000 } == true,
                    "\(condition) declared at \(at.map { String($0 - start) } ?? "never") ns after the first frame")
        }
        // Five a second, by the frames' own timestamps.
        #expect((55...61).contains(health.looked), "looked at \(health.looked) frames in 12 s")
    }

    @Test func aNoisyPictureIsNeverFrozenAndARepeatedOneIs() {
        var settings = PictureHealthSettings()
        settings.hold = .seconds(2)
        var health = PictureHealth(settings: settings)
        var changes: [PictureHealth.Change] = []
        // 4 s of a lit, detailed, noisy scene (each frame's own noise), then 4 s of one frame repeated.
        for i in 0..<240 {
            let seed = i < 120 ? i : 120
            changes += health.look(at: picture(level: 60, detailed: true, noise: 6, seed: seed, time: UInt64(i) * frameTime + 1))
        }
        let frozen = changes.filter { $0.condition == .frozen && $0.declared }
        #expect(frozen.count == 1, "\(changes)")
        // Declared 2 s after the repeats began (at 4 s), not before.
        #expect(frozen.first.map { $0.since >= 120 * frameTime && $0.at >= 120 * frameTime + 2_000_000_000 } == true)
        #expect(!changes.contains { $0.condition == .dark || $0.condition == .noDetail }, "a lit, detailed scene: \(changes)")
    }

    /// A flat scene stays without detail through a sensor's noise: the grid's
    /// blocks average it away.
    @Test func noiseIsNotDetail() {
        var settings = PictureHealthSettings()
        settings.hold = .seconds(1)
        var health = PictureHealth(settings: settings)
        var changes: [PictureHealth.Change] = []
        for i in 0..<60 { changes += health.look(at: picture(level: 120, noise: 6, seed: i, time: UInt64(i) * frameTime + 1)) }
        #expect(changes.map(\.condition) == [.noDetail], "\(changes)")
    }

    @Test func frozenClearsWhenThePictureMovesAgain() {
        var settings = PictureHealthSettings()
        settings.hold = .seconds(1)
        settings.clearAfter = .seconds(1)
        var health = PictureHealth(settings: settings)
        var changes: [PictureHealth.Change] = []
        for i in 0..<180 {
            let seed = (60..<120).contains(i) ? 60 : i   // frozen from 2 s to 4 s
            changes += health.look(at: picture(level: 60, detailed: true, noise: 6, seed: seed, time: UInt64(i) * frameTime + 1))
        }
        #expect(changes.map { "\($0.condition.rawValue) \($0.declared)" } == ["frozen true", "frozen false"], "\(changes)")
    }

    @Test func framesWhoseTimeDoesNotAdvanceAreNotFrozen() {
        var settings = PictureHealthSettings()
        settings.hold = .milliseconds(100)
        settings.framesPerSecond = 0   // every frame
        var health = PictureHealth(settings: settings)
        let points = [UInt8](repeating: 100, count: settings.grid.columns * settings.grid.rows)
        _ = health.look(points: points, at: 5)
        #expect(health.look(points: points, at: 5).isEmpty)
        #expect(!health.declared.contains(.frozen))
    }
}
