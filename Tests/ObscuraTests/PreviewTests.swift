import Testing
@testable import ObscuraMedia
@testable import ObscuraPreview

@Suite struct PreviewLayoutTests {
    let screen = PreviewRect(x: 0, y: 0, width: 1024, height: 768)
    let vga = PixelSize(width: 636, height: 480)

    @Test func fitLetterboxesAndKeepsTheWholeFrame() {
        let (source, destination) = PreviewLayout.place(source: vga, rotation: 0, in: screen, gravity: .fit)
        #expect(source == PreviewRect(x: 0, y: 0, width: 636, height: 480))
        #expect(destination == PreviewRect(x: 3, y: 0, width: 1018, height: 768))
        // A wide frame on a tall area: bars above and below.
        let wide = PreviewLayout.place(source: PixelSize(width: 1920, height: 1080), rotation: 0,
                                       in: PreviewRect(x: 10, y: 20, width: 480, height: 800), gravity: .fit)
        #expect(wide.destination == PreviewRect(x: 10, y: 285, width: 480, height: 270))
    }

    @Test func fillCropsTheSourceAndCoversTheArea() {
        let (source, destination) = PreviewLayout.place(source: vga, rotation: 0, in: screen, gravity: .fill)
        #expect(destination == screen)
        #expect(source == PreviewRect(x: 0, y: 2, width: 636, height: 476))
        let hd = PreviewLayout.place(source: PixelSize(width: 1920, height: 1080), rotation: 0, in: screen, gravity: .fill)
        #expect(hd.source == PreviewRect(x: 240, y: 0, width: 1440, height: 1080))
    }

    @Test func stretchUsesEverything() {
        let (source, destination) = PreviewLayout.place(source: vga, rotation: 0, in: screen, gravity: .stretch)
        #expect(source.size == vga && destination == screen)
    }

    @Test func aQuarterTurnSwapsTheShapeOnScreen() {
        let fit = PreviewLayout.place(source: vga, rotation: 90, in: screen, gravity: .fit)
        #expect(fit.destination == PreviewRect(x: 222, y: 0, width: 580, height: 768))
        // Fill at 270: the crop is in the frame's own orientation (full height, narrow width).
        let fill = PreviewLayout.place(source: PixelSize(width: 1920, height: 1080), rotation: 270, in: screen, gravity: .fill)
        #expect(fill.destination == screen)
        #expect(fill.source.height == 1080 && fill.source.width == 810, "\(fill.source)")
    }

    @Test func destinationRectanglesParse() {
        #expect(PreviewRect(parsing: "320x240+100+50") == PreviewRect(x: 100, y: 50, width: 320, height: 240))
        #expect(PreviewRect(parsing: "320x240") == nil)
        #expect(PreviewRect(parsing: "320x240+-1+0") == nil)
    }

    @Test func onlyDRMHotplugUeventsCount() {
        func event(_ fields: [String]) -> [UInt8] { Array(fields.joined(separator: "\0").utf8) + [0] }
        #expect(HotplugMonitor.isDisplayHotplug(event(["change@/devices/platform/vkms/drm/card0", "ACTION=change",
                                                         "SUBSYSTEM=drm", "HOTPLUG=1", "DEVNAME=dri/card0"])))
        #expect(!HotplugMonitor.isDisplayHotplug(event(["add@/devices/virtual/input/input3", "ACTION=add", "SUBSYSTEM=input"])))
        #expect(!HotplugMonitor.isDisplayHotplug(event(["add@/devices/platform/vkms/drm/card0", "ACTION=add", "SUBSYSTEM=drm"])))
    }
}
