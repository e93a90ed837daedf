import Foundation
import Testing
@testable import ObscuraHealth
@testable import ObscuraService

/// The tampering watch on grids made by hand: a scene with structure and a
/// sensor's noise, learned, then covered, sprayed, defocused or replaced,
/// and what must not alarm (dusk, the noise of a still scene).
@Suite struct TamperWatchTests {
    static let (columns, rows) = (32, 18)
    static let look: UInt64 = 200_000_000   // 5 looks a second, as the service

    /// A deterministic noise source (a linear congruential generator).
    struct Noise {
        var state: UInt64
        mutating func next(_ amplitude: Double) -> Double {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return (Double(state >> 33) / Double(1 << 31) - 0.5) * 2 * amplitude
        }
    }

    /// A view: a point's luma and its fine detail at each point, with noise.
    typealias View = @Sendable (Int, Int, inout Noise) -> (point: Double, fine: Double)

    static let walkway: View = { c, r, noise in
        let v = 128 + 50 * sin(Double(c) * 0.9 + Double(r) * 0.4) * cos(Double(r) * 0.7) + noise.next(3)
        return (v, 180 + noise.next(20))
    }
    static let elsewhere: View = { c, r, noise in
        let v = 128 + 50 * cos(Double(c) * 0.5 - Double(r) * 1.1) * sin(Double(c + r) * 0.3) + noise.next(3)
        return (v, 180 + noise.next(20))
    }

    struct Run {
        var watch: TamperWatch
        var time: UInt64 = 0
        var noise = Noise(state: 7)
        var changes: [TamperWatch.Change] = []

        init(settings: TamperSettings = Run.settings, reference: SceneReference? = nil) {
            watch = TamperWatch(settings: settings, columns: TamperWatchTests.columns, rows: TamperWatchTests.rows, reference: reference)
        }

        static var settings: TamperSettings {
            var s = TamperSettings()
            (s.hold, s.clearAfter) = (.seconds(10), .seconds(2))
            return s
        }

        /// `seconds` of looks at `view`.
        mutating func watch(_ view: View, seconds: Double) {
            for _ in 0..<Int(seconds * 5) {
                var points: [UInt8] = [], fine: [UInt16] = []
                for r in 0..<TamperWatchTests.rows {
                    for c in 0..<TamperWatchTests.columns {
                        let (p, f) = view(c, r, &noise)
                        points.append(UInt8(max(0, min(255, p.rounded()))))
                        fine.append(UInt16(max(0, f.rounded())))
                    }
                }
                changes += watch.look(points: points, fine: fine, at: time, dark: false)
                time += TamperWatchTests.look
            }
        }

        /// The conditions declared after `onset`, with seconds from it.
        func declared(after onset: UInt64) -> [(TamperCondition, Double)] {
            changes.filter { $0.declared && $0.at >= onset }.map { ($0.condition, Double($0.at - onset) / 1e9) }
        }
    }

    /// Learned on the walkway for 40 s (the reference trusts 30 s).
    static func learned() -> Run {
        var run = Run()
        run.watch(walkway, seconds: 40)
        #expect(run.watch.isLearned)
        #expect(run.changes.isEmpty, "the untouched scene alarmed: \(run.changes)")
        return run
    }

    /// `view` after the scene is learned: what is declared, and when.
    static func tampered(_ view: View, seconds: Double = 14) -> [(TamperCondition, Double)] {
        var run = learned()
        let onset = run.time
        run.watch(view, seconds: seconds)
        return run.declared(after: onset)
    }

    static func expectOnly(_ condition: TamperCondition, _ got: [(TamperCondition, Double)]) {
        #expect(got.map(\.0) == [condition], "declared: \(got)")
        // Declared within the hold and 2 s (the short-term mean's second, and a look's spacing).
        if let first = got.first { #expect(first.1 >= 10 && first.1 <= 12, "declared \(first.1) s after the onset") }
    }

    @Test func aHandOverTheLensIsCoveredWhateverItsNoise() {
        // Dim, the scene's structure gone, the noise of maximum gain.
        Self.expectOnly(.covered, Self.tampered { _, _, noise in (50 + noise.next(25), 150 + noise.next(60)) })
    }

    @Test func aSprayOverMostOfTheLensIsPartlyCovered() {
        // 85 % of the picture (the first 27 of 32 columns) under a translucent colour keeping a fifth of the scene.
        Self.expectOnly(.partlyCovered, Self.tampered { c, r, noise in
            let (p, f) = Self.walkway(c, r, &noise)
            return c < 27 ? (150 + (p - 128) * 0.2, f * 0.2) : (p, f)
        })
    }

    @Test func aLensOutOfFocusIsDefocused() {
        // The layout kept (a blurred scene's coarse structure), its fine detail lost.
        Self.expectOnly(.defocused, Self.tampered { c, r, noise in
            let (p, f) = Self.walkway(c, r, &noise)
            return (128 + (p - 128) * 0.8, f * 0.2)
        })
    }

    @Test func aCameraTurnedToAnotherSceneIsRedirected() {
        Self.expectOnly(.redirected, Self.tampered(Self.elsewhere))
    }

    @Test func duskAndASceneLitAgainRaiseNothing() {
        var run = Self.learned()
        let onset = run.time
        // Dusk: darker and flatter, fine detail with the contrast; then the lights on again.
        run.watch({ c, r, noise in
            let (p, f) = Self.walkway(c, r, &noise)
            return (60 + (p - 128) * 0.4 + noise.next(4), f * 0.4)
        }, seconds: 30)
        run.watch(Self.walkway, seconds: 10)
        #expect(run.declared(after: onset).isEmpty, "declared: \(run.declared(after: onset))")
    }

    @Test func aTamperedPictureIsNeverLearnedAndClearsWhenGone() {
        var run = Self.learned()
        let learnedLooks = run.watch.reference.looks
        let reference = run.watch.reference
        run.watch(Self.elsewhere, seconds: 60)
        #expect(run.watch.declared == [.redirected])
        // Learning stopped as the change was seen (a second at most learned of it).
        #expect(run.watch.reference.looks <= learnedLooks + 5)
        run.watch(Self.walkway, seconds: 4)
        #expect(run.watch.declared.isEmpty)
        #expect(run.changes.contains { !$0.declared && $0.condition == .redirected })
        #expect(run.watch.reference.looks > learnedLooks || run.watch.reference == reference)
    }

    @Test func aSavedReferenceJudgesAtOnceAfterARestart() throws {
        let run = Self.learned()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("obscura-scene-\(UUID())").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let environment = ["STATE_DIRECTORY": "\(folder):\(folder)/recordings"]
        let store = try #require(SceneReferenceStore(camera: "cam-1", width: 640, height: 480, environment: environment))
        #expect(store.path == "\(folder)/scene-reference.json")
        try store.save(run.watch.reference)
        let loaded = store.load()
        #expect(loaded.note == nil)
        #expect(loaded.reference == run.watch.reference)
        // A restarted watch given it judges at once: covered declared within the hold, with no learning first.
        var restarted = Run(reference: loaded.reference)
        #expect(restarted.watch.isLearned)
        restarted.watch({ _, _, noise in (50 + noise.next(25), 150 + noise.next(60)) }, seconds: 13)
        Self.expectOnly(.covered, restarted.declared(after: 0))
        // Another camera's, or another size's, is learned afresh, and said so.
        let other = try #require(SceneReferenceStore(camera: "cam-2", width: 640, height: 480, environment: environment))
        #expect(other.load().reference == nil)
        #expect(other.load().note?.contains("camera cam-1 at 640x480") == true)
        // A file that is not a reference: learned afresh, said so.
        try Data("{\"camera\":".utf8).write(to: URL(fileURLWithPath: store.path))
        #expect(store.load().reference == nil)
        #expect(store.load().note?.contains("could not be read") == true)
        // Each of a kiosk's cameras keeps its own beside the others.
        let door = try #require(SceneReferenceStore(camera: "cam-2", name: "door", width: 640, height: 480, environment: environment))
        #expect(door.path == "\(folder)/scene-reference-door.json")
        try door.save(run.watch.reference)
        #expect(door.load().reference == run.watch.reference && door.load().note == nil)
        // Without a state directory (run by hand), nothing is kept.
        #expect(SceneReferenceStore(camera: "cam-1", width: 640, height: 480, environment: [:]) == nil)
    }

    @Test func aReferenceOfAnotherGridIsNotUsed() {
        var small = SceneReference(columns: 4, rows: 3)
        small.learn(points: [Double](repeating: 100, count: 12), fine: [Double](repeating: 10, count: 12))
        let watch = TamperWatch(settings: Run.settings, columns: Self.columns, rows: Self.rows, reference: small)
        #expect(!watch.isLearned)
        #expect(watch.reference.columns == Self.columns)
    }
}
