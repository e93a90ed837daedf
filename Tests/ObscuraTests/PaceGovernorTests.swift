import Testing
@testable import ObscuraService

/// The camera's rate steps down when the recorder stays behind its camera,
/// to what it kept up with, and back up once it has kept up for a while.
@Suite struct PaceGovernorTests {
    @Test func aRecorderBehindStepsTheCameraDownToWhatItKeptUpWithThenBackUp() {
        var g = PaceGovernor(nominal: 30, lowest: 2)
        // One window behind is not yet a trend.
        #expect(g.window(recorded: 40, dropped: 20) == nil)
        // Two in a row: down to what was kept up with (40 of 60 at 30 fps: 20).
        #expect(g.window(recorded: 40, dropped: 20) == .down(from: 30, to: 20, dropped: 20, of: 60))
        #expect(g.rate == 20 && g.steppedDown)
        // A few drops (under a tenth) are neither behind nor steady.
        for _ in 0..<30 { #expect(g.window(recorded: 38, dropped: 2) == nil) }
        #expect(g.rate == 20)
        // Still a little behind: at least one step (×0.75) down.
        _ = g.window(recorded: 30, dropped: 10)
        #expect(g.window(recorded: 30, dropped: 10) == .down(from: 20, to: 15, dropped: 10, of: 40))
        // Steady for fifteen windows: one step up, then on to the configured rate, never past it.
        for _ in 0..<14 { #expect(g.window(recorded: 30, dropped: 0) == nil) }
        #expect(g.window(recorded: 30, dropped: 0) == .up(from: 15, to: 20))
        for _ in 0..<14 { _ = g.window(recorded: 40, dropped: 0) }
        #expect(g.window(recorded: 40, dropped: 0) == .up(from: 20, to: 27))
        for _ in 0..<14 { _ = g.window(recorded: 54, dropped: 0) }
        #expect(g.window(recorded: 54, dropped: 0) == .up(from: 27, to: 30))
        for _ in 0..<30 { #expect(g.window(recorded: 60, dropped: 0) == nil) }
        #expect(g.rate == 30 && !g.steppedDown)
    }

    @Test func itNeverGoesBelowTheLowestRateAndAnEmptyWindowSaysNothing() {
        var g = PaceGovernor(nominal: 10, lowest: 4)
        #expect(g.window(recorded: 0, dropped: 0) == nil)
        for _ in 0..<20 { _ = g.window(recorded: 1, dropped: 19) }
        #expect(g.rate == 4)
        #expect(g.window(recorded: 1, dropped: 19) == nil)
        g.reset()
        #expect(g.rate == 10)
    }
}
