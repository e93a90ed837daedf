import Foundation
import Logging
import ObscuraAge
import ObscuraAudio
import ObscuraCamera
import ObscuraCapture
import ObscuraEncoding
import ObscuraGPIO
import ObscuraMedia
import ObscuraMuxing
import ObscuraOverlay
import ObscuraPhoto
import ObscuraPreview
import ObscuraRecording
import ObscuraSystem

/// The control socket's commands (`ControlCommand`) carried out.
extension RecorderService {
    /// One command from the control socket; the reply is one JSON line.
    public func command(_ line: String) async -> String {
        switch ControlCommand.parse(line) {
        case .failure(let reply): return reply.line
        case .success(.status): return ControlReply.status(currentStatus())
        case .success(.recordStart):
            guard let path = await startRecording() else { return ControlReply(false, status.lastError ?? "cannot record").line }
            return ControlReply(true, "recording", file: path).line
        case .success(.recordStop):
            if (outages.resumeRecording && recording == nil) || outages.encoderDown {
                _ = cancelPendingResume()
                if state.isError { enter(.idle) }
                return ControlReply(true, "stopped: the recording will not go on when the stage is back").line
            }
            guard recording != nil else { return ControlReply(false, "not recording").line }
            await stopRecording()
            return ControlReply(true, "stopped", file: status.lastRecording).line
        case .success(.recordToggle):
            await toggleRecording()
            return ControlReply(true, state.name, file: recording?.file ?? status.lastRecording).line
        case .success(.photo):
            switch await takePhoto() {
            case .success(let path): return ControlReply(true, "photo taken", file: path).line
            case .failure(let f): return ControlReply(false, f.message).line
            }
        case .success(.flash(let mode)):
            setFlash(mode)
            return ControlReply(true, "flash \(mode.rawValue)").line
        case .success(.camera(let name, _)):
            return ControlReply(false, "no camera \"\(name)\": this kiosk records its profile's one camera (cameras are named by [cameras.NAME] tables)").line
        }
    }
}
