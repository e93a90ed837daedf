import Testing
@testable import ObscuraService

/// The service's state carries the recording in progress from its start to
/// its file's end, whatever state is entered meanwhile.
@Suite struct ServiceStateTests {
    let file = RecordingInProgress(file: "/r/a.mp4", started: .now, onDrive: false, retry: false)
    let failure = ServiceFailure(message: "encoder failed", reason: .encoder)

    @Test func aRecordingEndsAsContinuingUntilWhatComesNextIsDecided() {
        var s = ServiceState.recording(file)
        #expect(s.name == "recording" && s.isRecording && s.recording?.file == "/r/a.mp4")
        s.recordingEnded()
        guard case .continuing = s else { Issue.record("\(s)"); return }
        #expect(s.name == "recording" && s.isRecording && s.recording == nil)
    }

    @Test func enteringIdleOrAnErrorKeepsAFileStillOpen() {
        var tryAgain = file
        tryAgain.retry = true
        // A try of the encoder's, told to stop: idle to the owner, its file still carried.
        let idle = ServiceState.idle.carrying(tryAgain)
        guard case .finishing(let r) = idle else { Issue.record("\(idle)"); return }
        #expect(idle.name == "idle" && !idle.isRecording && r.retry)
        let failed = ServiceState.error(failure, recording: nil).carrying(tryAgain)
        #expect(failed.name == "error" && failed.recording?.file == "/r/a.mp4" && failed.failure == failure)
        #expect(ServiceState.stopping(nil).carrying(file).recording?.file == "/r/a.mp4")
        var ended = idle
        ended.recordingEnded()
        guard case .idle = ended else { Issue.record("\(ended)"); return }
    }

    @Test func aPhotoGoesBackToTheStateAsItIsWhenItEnds() {
        var s = ServiceState.photo(then: .error(failure, recording: file))
        #expect(s.name == "photo" && s.failure == failure && s.recording?.file == "/r/a.mp4")
        s.updateRecording { $0.firstFrameSaid = true }
        #expect(s.recording?.firstFrameSaid == true)
        // The file under the photo finished meanwhile: what the photo goes back to has none.
        s.recordingEnded()
        guard case .photo(let then) = s, case .error(let f, nil) = then else { Issue.record("\(s)"); return }
        #expect(f == failure)
    }

    @Test func everyNameIsOneTheMetricsList() {
        let states: [ServiceState] = [.starting, .idle, .photo(then: .idle), .recording(file), .continuing, .finishing(file),
                                      .error(failure, recording: nil), .stopping(nil)]
        for s in states { #expect(ServiceState.names.contains(s.name), "\(s)") }
        #expect(Set(states.map(\.name)) == Set(ServiceState.names))
    }
}
