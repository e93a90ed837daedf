import Testing
@testable import ObscuraService

/// The service withholds the watchdog's keep-alive only for a wedged
/// recording: frames come from the camera and none reaches the file.
@Suite struct RecordingLivenessTests {
    let start = ContinuousClock.now

    @Test func framesComingAndNoneWrittenForTenSecondsIsAWedge() {
        var l = RecordingLiveness()
        #expect(l.look(written: 50, delivered: 60, now: start) == nil)
        #expect(l.look(written: 50, delivered: 100, now: start + .seconds(9)) == nil)
        #expect(l.look(written: 50, delivered: 160, now: start + .seconds(10)) == RecordingLiveness.Wedge(stalled: .seconds(10), delivered: 100))
        // Written again: alive, and the count starts over.
        #expect(l.look(written: 51, delivered: 161, now: start + .seconds(12)) == nil)
        #expect(l.look(written: 51, delivered: 170, now: start + .seconds(21)) == nil)
    }

    @Test func aSilentCameraIsNotTheRecordersWedge() {
        var l = RecordingLiveness()
        #expect(l.look(written: 5, delivered: 8, now: start) == nil)
        // A starved board's camera silent for half a minute: nothing delivered, nothing written.
        #expect(l.look(written: 5, delivered: 8, now: start + .seconds(30)) == nil)
        // Then one frame, not written yet: only ten seconds after the last write does it count.
        #expect(l.look(written: 5, delivered: 9, now: start + .seconds(31)) == RecordingLiveness.Wedge(stalled: .seconds(31), delivered: 1))
    }

    @Test func notRecordingIsAlwaysAliveAndStartsAfresh() {
        var l = RecordingLiveness()
        #expect(l.look(written: 3, delivered: 10, now: start) == nil)
        #expect(l.look(written: nil, delivered: 90, now: start + .seconds(20)) == nil)
        // A new recording: its first look only sets the mark.
        #expect(l.look(written: 3, delivered: 95, now: start + .seconds(21)) == nil)
        #expect(l.look(written: 3, delivered: 99, now: start + .seconds(30)) == nil)
    }
}
