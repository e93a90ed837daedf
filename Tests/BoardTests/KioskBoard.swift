import TestSupport

/// One boot of an installed kiosk (systemd, deploy/install, the service
/// enabled) for the board tests that need nothing else: the service at boot,
/// its buttons and a kill; the preview; `obscura doctor`; a camera and an
/// encoder taken away mid-recording; the live view over
/// SSH; Prometheus scraping a recording; an
/// encrypting service and its pull; the retrieval account (last: it installs
/// again, with --allow-delete). Each begins with the kiosk as a fresh
/// boot has it (BoardScenarios.restoreInstalledState). The service's start
/// at boot is the first scenario, so it sees the boot itself.
enum KioskBoard {
    static let board = BoardScenarios(
        "kiosk",
        scenarios: [
            ("service-boot", VirtualBoardTests.ServiceBoardTests.bootScript),
            ("service-preview", VirtualBoardTests.ServiceBoardTests.previewScript),
            ("doctor", VirtualBoardTests.DoctorBoardTests.script),
            ("stage-camera", VirtualBoardTests.StageBoardTests.cameraScript),
            ("stage-encoder", VirtualBoardTests.StageBoardTests.encoderScript),
            ("live-view", VirtualBoardTests.LiveViewBoardTests.script),
            ("metrics-prometheus", VirtualBoardTests.MetricsBoardTests.prometheusScript),
            ("evidence", VirtualBoardTests.EvidenceBoardTests.script),
            ("retrieval", VirtualBoardTests.RetrievalBoardTests.script),
        ],
        prelude: BoardScenarios.keepInstalledState, between: BoardScenarios.restoreInstalledState,
        timeout: 3900, options: ["--systemd"])
}
