import Testing
@testable import ObscuraService

/// The camera's rate steps down when the recorder stays behind its camera,
/// to what it kept up with, and back up once it has kept up for a while. A
/// recording's start-up is not judged, and no step goes below half the rate.
@Suite struct PaceGovernorTests {
    /// A governor past its start-up windows.
    static func warmedUp(nominal: Double, lowest: Double) -> PaceGovernor {
        var g = PaceGovernor(nominal: nominal, lowest: lowest)
        for _ in 0..<PaceGovernor.warmUpWindows { #expect(g.window(recorded: 1, dropped: 30) == nil) }
        #expect(g.rate == nominal)
        return g
    }

    @Test func aRecorderBehindStepsTheCameraDownToWhatItKeptUpWithThenBackUp() {
        var g = Self.warmedUp(nominal: 30, lowest: 2)
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

    /// The start of a recording (its encoder's first frames) once dropped 5
    /// of 6 frames: taken for the board's pace, 30 fps became 5, and a 5 s
    /// clip held 5 frames. The start-up is not judged; after it, a recorder
    /// that kept up with a sixth steps to half, then on down as it stays behind.
    @Test func theStartUpIsNotJudgedAndNoStepGoesBelowHalf() {
        var g = PaceGovernor(nominal: 30, lowest: 1)
        for _ in 0..<PaceGovernor.warmUpWindows { #expect(g.window(recorded: 1, dropped: 5) == nil) }
        #expect(g.rate == 30 && !g.steppedDown)
        // Steady after the start: nothing to do.
        for _ in 0..<5 { #expect(g.window(recorded: 15, dropped: 0) == nil) }
        // Behind in earnest, keeping up with a sixth: half, then half again.
        _ = g.window(recorded: 1, dropped: 5)
        #expect(g.window(recorded: 1, dropped: 5) == .down(from: 30, to: 15, dropped: 5, of: 6))
        _ = g.window(recorded: 1, dropped: 5)
        #expect(g.window(recorded: 1, dropped: 5) == .down(from: 15, to: 7, dropped: 5, of: 6))
        // A new file: its start-up unjudged again, from the rate the last one left.
        g.startWarmUp()
        for _ in 0..<PaceGovernor.warmUpWindows { #expect(g.window(recorded: 1, dropped: 5) == nil) }
        #expect(g.rate == 7)
    }

    @Test func itNeverGoesBelowTheLowestRateAndAnEmptyWindowSaysNothing() {
        var g = Self.warmedUp(nominal: 10, lowest: 4)
        #expect(g.window(recorded: 0, dropped: 0) == nil)
        for _ in 0..<20 { _ = g.window(recorded: 1, dropped: 19) }
        #expect(g.rate == 4)
        #expect(g.window(recorded: 1, dropped: 19) == nil)
        g.reset()
        #expect(g.rate == 10)
    }
}
