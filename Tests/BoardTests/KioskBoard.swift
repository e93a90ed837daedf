import TestSupport

/// One boot of an installed kiosk (systemd, deploy/install, the service
/// enabled) for the board tests that need nothing else: the service at boot,
/// its buttons and a kill; the preview; `obscura doctor`; a camera and an
/// encoder taken away mid-recording; the live view over
/// SSH; Prometheus scraping a recording; an
/// encrypting service and its pull; the retrieval account (last: it installs
/// again, with --allow-delete). Each begins with the kiosk as a fresh
/// boot has it (scenarios/Kiosk/restoreInstalledState.sh). The service's start
/// at boot is the first scenario, so it sees the boot itself.
enum KioskBoard {
    static let board = BoardScenarios(
        "kiosk",
        scenarios: [
            ("service-boot", "Kiosk/serviceBoot", []),
            ("service-preview", "Kiosk/servicePreview", []),
            ("doctor", "Kiosk/doctor", []),
            ("stage-camera", "Kiosk/stageCamera", [String(VirtualBoardTests.StageBoardTests.least)]),
            ("stage-encoder", "Kiosk/stageEncoder", [String(VirtualBoardTests.StageBoardTests.least)]),
            ("live-view", "Kiosk/liveView", []),
            ("metrics-prometheus", "Kiosk/metricsPrometheus", []),
            ("evidence", "Kiosk/evidence", VirtualBoardTests.EvidenceBoardTests.arguments),
            ("retrieval", "Kiosk/retrieval", []),
        ],
        prelude: "Kiosk/keepInstalledState", between: "Kiosk/restoreInstalledState",
        timeout: 3900, options: ["--systemd"])
}
